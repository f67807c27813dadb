package provider

import (
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// connectionSettings is the provider's `default_ssh`, and the part
// of a resource's `connection` that can also be stored. Null fields of a
// resource's connection inherit the provider's.
type connectionSettings struct {
	Host                    types.String `tfsdk:"host"`
	Port                    types.Int64  `tfsdk:"port"`
	User                    types.String `tfsdk:"user"`
	Password                types.String `tfsdk:"password"`
	PrivateKey              types.String `tfsdk:"private_key"`
	Certificate             types.String `tfsdk:"certificate"`
	Agent                   types.Bool   `tfsdk:"agent"`
	AgentIdentity           types.String `tfsdk:"agent_identity"`
	HostKey                 types.String `tfsdk:"host_key"`
	KnownHosts              types.String `tfsdk:"known_hosts"`
	InsecureTrustOnFirstUse types.Bool   `tfsdk:"insecure_trust_on_first_use"`
	Timeout                 types.String `tfsdk:"timeout"`
	Sudo                    types.Bool   `tfsdk:"sudo"`
	BastionHost             types.String `tfsdk:"bastion_host"`
	BastionPort             types.Int64  `tfsdk:"bastion_port"`
	BastionUser             types.String `tfsdk:"bastion_user"`
	BastionPrivateKey       types.String `tfsdk:"bastion_private_key"`
	BastionHostKey          types.String `tfsdk:"bastion_host_key"`
}

// connectionModel is a resource's `connection`: the settings plus the
// write-only twins of the secrets. The provider has no write-only fields
// because its configuration is never stored.
type connectionModel struct {
	connectionSettings
	PasswordWO          types.String `tfsdk:"password_wo"`
	PrivateKeyWO        types.String `tfsdk:"private_key_wo"`
	BastionPrivateKeyWO types.String `tfsdk:"bastion_private_key_wo"`
}

// connectionField describes one connection attribute for both schemas.
type connectionField struct {
	name        string
	kind        string // "string", "int", "bool"
	sensitive   bool
	writeOnly   bool // a *_wo twin, resources only
	description string
}

var connectionFields = []connectionField{
	{name: "host", kind: "string", description: "Address or name of the host."},
	{name: "port", kind: "int", description: "SSH port. Default `22`."},
	{name: "user", kind: "string", description: "Login user. Default `root`; with a non-root user set `sudo = true`."},
	{name: "password", kind: "string", sensitive: true, description: "Password for password and keyboard-interactive authentication. Stored in state when set on a resource: prefer `password_wo`, or set it on the provider's `default_ssh`."},
	{name: "password_wo", kind: "string", sensitive: true, writeOnly: true, description: "Write-only `password`: never stored in plan or state. Requires Terraform 1.11 or later. Refresh and destroy run without configuration, so they need credentials from `default_ssh` or the agent."},
	{name: "private_key", kind: "string", sensitive: true, description: "Private key (OpenSSH or PEM text, unencrypted) for public-key authentication. Stored in state when set on a resource: prefer `private_key_wo`, or set it on the provider's `default_ssh`."},
	{name: "private_key_wo", kind: "string", sensitive: true, writeOnly: true, description: "Write-only `private_key`: never stored in plan or state. Requires Terraform 1.11 or later. Refresh and destroy run without configuration, so they need credentials from `default_ssh` or the agent."},
	{name: "certificate", kind: "string", description: "SSH user certificate (`ssh-ed25519-cert-v01@openssh.com AAAA…`) signing `private_key`."},
	{name: "agent", kind: "bool", description: "Authenticate with the SSH agent at `SSH_AUTH_SOCK`."},
	{name: "agent_identity", kind: "string", description: "Use only the agent key with this comment or SHA256 fingerprint."},
	{name: "host_key", kind: "string", description: "The host's public key (`ssh-ed25519 AAAA…`, as `ssh-keyscan` prints it without the host name), or the key of the CA that signs its host certificate. The connection is refused when the host presents another key."},
	{name: "known_hosts", kind: "string", description: "known_hosts content (not a path) to verify host keys with; `@cert-authority` lines are honoured. Convenient on `default_ssh` for many hosts."},
	{name: "insecure_trust_on_first_use", kind: "bool", description: "Without `host_key` or `known_hosts`, accept the key presented at the first connection and record it in the resource's `trusted_host_key`; every later connection must present the same key. Vulnerable to interception on the first connection."},
	{name: "timeout", kind: "string", description: "How long to keep trying to connect, as a Go duration (`30s`, `5m`). Default `5m`. Authentication and host key failures are not retried."},
	{name: "sudo", kind: "bool", description: "Run privileged steps through `sudo -n` (the user needs passwordless sudo)."},
	{name: "bastion_host", kind: "string", description: "Jump host to connect through."},
	{name: "bastion_port", kind: "int", description: "SSH port of the jump host. Default `22`."},
	{name: "bastion_user", kind: "string", description: "Login user on the jump host. Default: `user`."},
	{name: "bastion_private_key", kind: "string", sensitive: true, description: "Private key for the jump host. Default: `private_key`. Stored in state when set on a resource: prefer `bastion_private_key_wo`."},
	{name: "bastion_private_key_wo", kind: "string", sensitive: true, writeOnly: true, description: "Write-only `bastion_private_key`. Requires Terraform 1.11 or later."},
	{name: "bastion_host_key", kind: "string", description: "Public key of the jump host, or of the CA that signs its host certificate."},
}

var portValidator = []validator.Int64{int64validator.Between(1, 65535)}

// resourceConnectionAttribute is the `connection` attribute of resources
// that write to a host.
func resourceConnectionAttribute() schema.SingleNestedAttribute {
	attrs := map[string]schema.Attribute{}
	for _, f := range connectionFields {
		switch f.kind {
		case "string":
			attrs[f.name] = schema.StringAttribute{Optional: true, Sensitive: f.sensitive, WriteOnly: f.writeOnly, MarkdownDescription: f.description}
		case "int":
			attrs[f.name] = schema.Int64Attribute{Optional: true, Validators: portValidator, MarkdownDescription: f.description}
		case "bool":
			attrs[f.name] = schema.BoolAttribute{Optional: true, MarkdownDescription: f.description}
		}
	}
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "How to reach the host over SSH, with the field names of Terraform's provisioner " +
			"`connection` block (Terraform reserves the name `connection` itself). Unset fields inherit the provider's " +
			"`default_ssh`. Host keys are always verified.",
		Attributes: attrs,
	}
}

// providerConnectionAttribute is the provider's `default_ssh`.
func providerConnectionAttribute() providerschema.SingleNestedAttribute {
	attrs := map[string]providerschema.Attribute{}
	for _, f := range connectionFields {
		if f.writeOnly {
			continue
		}
		switch f.kind {
		case "string":
			attrs[f.name] = providerschema.StringAttribute{Optional: true, Sensitive: f.sensitive, MarkdownDescription: f.description}
		case "int":
			attrs[f.name] = providerschema.Int64Attribute{Optional: true, Validators: portValidator, MarkdownDescription: f.description}
		case "bool":
			attrs[f.name] = providerschema.BoolAttribute{Optional: true, MarkdownDescription: f.description}
		}
	}
	return providerschema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Connection settings every resource's `connection` inherits, field by field. Provider " +
			"configuration is never written to state, so secrets set here (`private_key`, `password`) stay out of it " +
			"and remain available for refresh, import and destroy.",
		Attributes: attrs,
	}
}

// firstString returns the first known, non-null value.
func firstString(vs ...types.String) string {
	for _, v := range vs {
		if !v.IsNull() && !v.IsUnknown() {
			return v.ValueString()
		}
	}
	return ""
}

func firstInt(vs ...types.Int64) int {
	for _, v := range vs {
		if !v.IsNull() && !v.IsUnknown() {
			return int(v.ValueInt64())
		}
	}
	return 0
}

func firstBool(vs ...types.Bool) bool {
	for _, v := range vs {
		if !v.IsNull() && !v.IsUnknown() {
			return v.ValueBool()
		}
	}
	return false
}

// remoteConfig merges a resource's connection over the provider's
// defaults; write-only fields win over their stored twins.
func remoteConfig(c *connectionModel, defaults *connectionSettings, trustedHostKey string) (remote.Config, error) {
	var r connectionModel
	var d connectionSettings
	if c != nil {
		r = *c
	}
	if defaults != nil {
		d = *defaults
	}
	timeout := remote.DefaultTimeout
	if s := firstString(r.Timeout, d.Timeout); s != "" {
		t, err := time.ParseDuration(s)
		if err != nil || t <= 0 {
			return remote.Config{}, fmt.Errorf("ssh.timeout %q is not a positive duration such as \"30s\" or \"5m\"", s)
		}
		timeout = t
	}
	cfg := remote.Config{
		Host:                    firstString(r.Host, d.Host),
		Port:                    firstInt(r.Port, d.Port),
		User:                    firstString(r.User, d.User),
		Password:                firstString(r.PasswordWO, r.Password, d.Password),
		PrivateKey:              firstString(r.PrivateKeyWO, r.PrivateKey, d.PrivateKey),
		Certificate:             firstString(r.Certificate, d.Certificate),
		Agent:                   firstBool(r.Agent, d.Agent),
		AgentIdentity:           firstString(r.AgentIdentity, d.AgentIdentity),
		HostKey:                 firstString(r.HostKey, d.HostKey),
		KnownHosts:              firstString(r.KnownHosts, d.KnownHosts),
		InsecureTrustOnFirstUse: firstBool(r.InsecureTrustOnFirstUse, d.InsecureTrustOnFirstUse),
		TrustedHostKey:          trustedHostKey,
		Timeout:                 timeout,
		Sudo:                    firstBool(r.Sudo, d.Sudo),
	}
	if host := firstString(r.BastionHost, d.BastionHost); host != "" {
		cfg.Bastion = &remote.Config{
			Host:       host,
			Port:       firstInt(r.BastionPort, d.BastionPort),
			User:       firstString(r.BastionUser, d.BastionUser, r.User, d.User),
			PrivateKey: firstString(r.BastionPrivateKeyWO, r.BastionPrivateKey, d.BastionPrivateKey, r.PrivateKeyWO, r.PrivateKey, d.PrivateKey),
			Agent:      cfg.Agent,
			HostKey:    firstString(r.BastionHostKey, d.BastionHostKey),
			KnownHosts: cfg.KnownHosts,
			Timeout:    timeout,
		}
	}
	return cfg, nil
}
