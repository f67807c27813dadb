package hostres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	datasourceschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/kha/terraform-provider-kha/internal/problem"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

// SSHModel is an `ssh` object in each of its shapes: a resource's `ssh`,
// the provider's `default_ssh` (no write-only fields: provider
// configuration is never stored) and the data source's `ssh` (no secrets,
// no trust on first use). SSHFrom decodes every shape into it; the fields
// a shape has no attribute for stay null. Null fields of a resource's or
// the data source's `ssh` inherit the provider's.
type SSHModel struct {
	Host                    types.String `tfsdk:"host"`
	Port                    types.Int64  `tfsdk:"port"`
	User                    types.String `tfsdk:"user"`
	Password                types.String `tfsdk:"password"`
	PasswordWO              types.String `tfsdk:"password_wo"`
	PrivateKey              types.String `tfsdk:"private_key"`
	PrivateKeyWO            types.String `tfsdk:"private_key_wo"`
	Certificate             types.String `tfsdk:"certificate"`
	Agent                   types.Bool   `tfsdk:"agent"`
	AgentIdentity           types.String `tfsdk:"agent_identity"`
	HostKey                 types.String `tfsdk:"host_key"`
	KnownHosts              types.String `tfsdk:"known_hosts"`
	InsecureTrustOnFirstUse types.Bool   `tfsdk:"insecure_trust_on_first_use"`
	Timeout                 types.String `tfsdk:"timeout"`
	RefreshTimeout          types.String `tfsdk:"refresh_timeout"`
	Sudo                    types.Bool   `tfsdk:"sudo"`
	BastionHost             types.String `tfsdk:"bastion_host"`
	BastionPort             types.Int64  `tfsdk:"bastion_port"`
	BastionUser             types.String `tfsdk:"bastion_user"`
	BastionPrivateKey       types.String `tfsdk:"bastion_private_key"`
	BastionPrivateKeyWO     types.String `tfsdk:"bastion_private_key_wo"`
	BastionHostKey          types.String `tfsdk:"bastion_host_key"`
}

// sshField describes one `ssh` attribute for every shape.
type sshField struct {
	name        string
	kind        string // "string", "int", "bool"
	sensitive   bool
	writeOnly   bool // a *_wo twin, resources only
	description string
}

var sshFields = []sshField{
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
	{name: "host_key", kind: "string", description: "The host's public key of any type (`ssh-ed25519 AAAA…`, `ecdsa-sha2-nistp256 AAAA…`, `ssh-rsa AAAA…`: a line of `ssh-keyscan` without the host name), or the key of the CA that signs its host certificate. kha asks the host for a key of that type, so pinning one of a host's several keys is enough. The connection is refused when the host presents another key."},
	{name: "known_hosts", kind: "string", description: "known_hosts content (not a path) to verify host keys with, e.g. the output of `ssh-keyscan` as it is; hashed names and `@cert-authority` lines are honoured, and the host is asked for a key of a type listed for it: Ed25519 first, then ECDSA, then RSA, as OpenSSH does, whatever the order of the lines (`ssh-keyscan` lists RSA first, whose signature costs the host far more CPU on every connection). Convenient on `default_ssh` for many hosts. The plan fails when it has no line for the host."},
	{name: "insecure_trust_on_first_use", kind: "bool", description: "Without `host_key` or `known_hosts`, accept the key presented at the first connection, whenever that is (the first apply, or the first refresh after this is turned on or after an import), and record it in the resource's `trusted_host_key`; every later connection must present the same key. Vulnerable to interception on that first connection."},
	{name: "timeout", kind: "string", description: "How long create, update and destroy keep trying to connect, as a Go duration (`30s`, `5m`). Default `5m`; the resource's `timeouts` bound it too. Reads (refresh, import, the data source) use `refresh_timeout`. Only failures that heal while a host boots are retried (connection refused, no route, connection timeouts); a name that does not resolve, a refused login or a wrong host key fail at once, and the error says what was retried and for how long."},
	{name: "refresh_timeout", kind: "string", description: "How long refresh (and import) keeps trying to connect, as a Go duration (`20s`, `1m`). Default `20s`, or `timeout` when that is shorter. A host that does not answer within it (connection refused, no route, connection timeouts) is a warning naming the host, and the resource keeps its prior state, so that the plan goes on for every other host: the plan that takes a dead node out of the load balancers works while it is dead. A wrong host key or a refused login stays an error. Create, update and destroy use `timeout`."},
	{name: "sudo", kind: "bool", description: "Run privileged steps through `sudo -n` (the user needs passwordless sudo)."},
	{name: "bastion_host", kind: "string", description: "Jump host to connect through."},
	{name: "bastion_port", kind: "int", description: "SSH port of the jump host. Default `22`."},
	{name: "bastion_user", kind: "string", description: "Login user on the jump host. Default: `user`."},
	{name: "bastion_private_key", kind: "string", sensitive: true, description: "Private key for the jump host. Default: `private_key`. Stored in state when set on a resource: prefer `bastion_private_key_wo`."},
	{name: "bastion_private_key_wo", kind: "string", sensitive: true, writeOnly: true, description: "Write-only `bastion_private_key`. Requires Terraform 1.11 or later."},
	{name: "bastion_host_key", kind: "string", description: "Public key of the jump host, or of the CA that signs its host certificate."},
}

// sshShape is the `ssh` object of one kind of schema: which fields it has,
// and what it says about itself.
type sshShape struct {
	has         func(sshField) bool
	description string
}

var (
	// resourceSSH is the `ssh` of resources that write to a host.
	resourceSSH = sshShape{
		has: func(sshField) bool { return true },
		description: "How to reach the host over SSH, with the field names of Terraform's provisioner " +
			"`connection` block (Terraform reserves the name `connection` itself). Unset fields inherit the provider's " +
			"`default_ssh`. Host keys are always verified. The provider's page (\"Logging in\") and the guide \"Verifying " +
			"hosts\" explain the fields once, for every resource. Spell the keys exactly: Terraform drops a key it does " +
			"not know inside `ssh = { … }` without a word (`prot = 2222` dials port 22). A plan that creates the resource " +
			"lists the three write-only fields as `(sensitive, write-only attribute)` whether they are set or not; the guide " +
			"\"Rolling out changes\" (\"A fleet's plan\") says what keeps a fleet's plan short.",
	}
	// providerSSH is the provider's `default_ssh`.
	providerSSH = sshShape{
		has: func(f sshField) bool { return !f.writeOnly },
		description: "Connection settings every resource's `ssh` inherits, field by field. Provider " +
			"configuration is never written to state, so secrets set here (`private_key`, `password`) stay out of it " +
			"and remain available for refresh, import and destroy.",
	}
	// dataSourceSSH has no secrets, because a data source's arguments are
	// stored in state, and no trust on first use, which a data source
	// could not record.
	dataSourceSSH = sshShape{
		has: func(f sshField) bool { return !f.sensitive && f.name != "insecure_trust_on_first_use" },
		description: "Read the certificate on a control-plane node over SSH (with `address`: make the TLS handshake " +
			"from that node). Unset fields inherit the provider's `default_ssh`, which is where the private key or password " +
			"goes: a data source's arguments are stored in state, so this block has no secret fields. Host keys are always " +
			"verified, against `host_key`, `known_hosts` or a host CA (here or on `default_ssh`): a data source has nowhere " +
			"to record a key, so it never trusts on first use, even when `default_ssh.insecure_trust_on_first_use` is set " +
			"for the resources.",
	}
)

// sshAttributes builds the attributes a shape has for one of the
// framework's schema packages (resource, provider, data source: each has
// its own attribute types); attribute makes one from a field.
func sshAttributes[A any](shape sshShape, attribute func(sshField) A) map[string]A {
	attrs := map[string]A{}
	for _, f := range sshFields {
		if shape.has(f) {
			attrs[f.name] = attribute(f)
		}
	}
	return attrs
}

// sshPortValidator keeps `port` a TCP port.
var sshPortValidator = []validator.Int64{int64validator.Between(1, 65535)}

func ResourceSSHAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true, MarkdownDescription: resourceSSH.description,
		Attributes: sshAttributes(resourceSSH, func(f sshField) schema.Attribute {
			switch f.kind {
			case "int":
				return schema.Int64Attribute{Optional: true, Validators: sshPortValidator, MarkdownDescription: f.description}
			case "bool":
				return schema.BoolAttribute{Optional: true, MarkdownDescription: f.description}
			}
			// A write-only value is never in plan or state, yet its sensitive
			// mark stays: a sensitive variable given to it marks the path in
			// state anyway, and a resource imported (whose state has only the
			// schema's marks) would then plan an update that changes nothing.
			return schema.StringAttribute{Optional: true, Sensitive: f.sensitive, WriteOnly: f.writeOnly, MarkdownDescription: f.description}
		})}
}

func ProviderSSHAttribute() providerschema.SingleNestedAttribute {
	return providerschema.SingleNestedAttribute{Optional: true, MarkdownDescription: providerSSH.description,
		Attributes: sshAttributes(providerSSH, func(f sshField) providerschema.Attribute {
			switch f.kind {
			case "int":
				return providerschema.Int64Attribute{Optional: true, Validators: sshPortValidator, MarkdownDescription: f.description}
			case "bool":
				return providerschema.BoolAttribute{Optional: true, MarkdownDescription: f.description}
			}
			return providerschema.StringAttribute{Optional: true, Sensitive: f.sensitive, MarkdownDescription: f.description}
		})}
}

func DataSourceSSHAttribute() datasourceschema.SingleNestedAttribute {
	return datasourceschema.SingleNestedAttribute{Optional: true, MarkdownDescription: dataSourceSSH.description,
		Attributes: sshAttributes(dataSourceSSH, func(f sshField) datasourceschema.Attribute {
			switch f.kind {
			case "int":
				return datasourceschema.Int64Attribute{Optional: true, Validators: sshPortValidator, MarkdownDescription: f.description}
			case "bool":
				return datasourceschema.BoolAttribute{Optional: true, MarkdownDescription: f.description}
			}
			return datasourceschema.StringAttribute{Optional: true, Sensitive: f.sensitive, MarkdownDescription: f.description}
		})}
}

// ProviderDataFrom is what the provider's Configure gave a resource or a
// data source; nil before it ran.
func ProviderDataFrom(v any, diags *diag.Diagnostics) *ProviderData {
	if v == nil {
		return nil
	}
	data, ok := v.(*ProviderData)
	if !ok {
		diags.AddError("Unexpected Provider Data", fmt.Sprintf("got %T. This is always a bug in the provider.", v))
	}
	return data
}

// SSHFrom decodes an `ssh` object of any shape into the one model; the
// fields its shape has no attribute for stay null. Null gives an empty
// model: everything from the provider's default_ssh.
func SSHFrom(ctx context.Context, obj types.Object) (SSHModel, diag.Diagnostics) {
	var m SSHModel
	if obj.IsNull() || obj.IsUnknown() {
		return m, nil
	}
	attrTypes, values := make(map[string]attr.Type, len(sshFields)), make(map[string]attr.Value, len(sshFields))
	given := obj.Attributes()
	for _, f := range sshFields {
		v, ok := given[f.name]
		if !ok {
			v = nullOf(f.kind)
		}
		attrTypes[f.name], values[f.name] = v.Type(ctx), v
	}
	full, diags := types.ObjectValue(attrTypes, values)
	if diags.HasError() {
		return m, diags
	}
	diags.Append(full.As(ctx, &m, basetypes.ObjectAsOptions{})...)
	return m, diags
}

// nullOf is the null value of a field of this kind.
func nullOf(kind string) attr.Value {
	switch kind {
	case "int":
		return types.Int64Null()
	case "bool":
		return types.BoolNull()
	}
	return types.StringNull()
}

// pick returns the first non-null value and whether it is known: a
// resource's setting wins over the provider's default.
func pick[T interface {
	IsNull() bool
	IsUnknown() bool
}](vs ...T) (T, bool) {
	for _, v := range vs {
		if !v.IsNull() {
			return v, !v.IsUnknown()
		}
	}
	var zero T
	return zero, true
}

// ResolvedSSH is a resource's or the data source's `ssh` with the
// provider's default_ssh applied: the engine's configuration. unknown
// names the settings whose values Terraform does not know yet.
type ResolvedSSH struct {
	Config  remote.Config
	Unknown []string
}

// addressKnown says whether the host and port are known: what decides
// which host a resource lives on.
func (m ResolvedSSH) addressKnown() bool {
	return !slices.Contains(m.Unknown, "host") && !slices.Contains(m.Unknown, "port")
}

// ResolveSSH applies the provider's default_ssh under a resource's `ssh`;
// write-only fields win over their stored twins.
func ResolveSSH(r SSHModel, defaults *SSHModel, trustedHostKey string) (ResolvedSSH, error) {
	var d SSHModel
	if defaults != nil {
		d = *defaults
	}
	var m ResolvedSSH
	str := func(name string, vs ...types.String) string {
		v, ok := pick(vs...)
		if !ok {
			m.Unknown = append(m.Unknown, name)
		}
		return v.ValueString()
	}
	num := func(name string, vs ...types.Int64) int {
		v, ok := pick(vs...)
		if !ok {
			m.Unknown = append(m.Unknown, name)
		}
		return int(v.ValueInt64())
	}
	flag := func(name string, vs ...types.Bool) bool {
		v, ok := pick(vs...)
		if !ok {
			m.Unknown = append(m.Unknown, name)
		}
		return v.ValueBool()
	}
	duration := func(name string, vs ...types.String) (time.Duration, error) {
		s := str(name, vs...)
		if s == "" {
			return 0, nil
		}
		t, err := time.ParseDuration(s)
		if err != nil || t <= 0 {
			return 0, fmt.Errorf("ssh.%s %q is not a positive duration such as \"30s\" or \"5m\"", name, s)
		}
		return t, nil
	}
	timeout, err := duration("timeout", r.Timeout, d.Timeout)
	if err != nil {
		return m, err
	}
	if timeout == 0 {
		timeout = remote.DefaultTimeout
	}
	refreshTimeout, err := duration("refresh_timeout", r.RefreshTimeout, d.RefreshTimeout)
	if err != nil {
		return m, err
	}
	m.Config = remote.Config{
		Host:                    str("host", r.Host, d.Host),
		Port:                    num("port", r.Port, d.Port),
		User:                    str("user", r.User, d.User),
		Password:                str("password", r.PasswordWO, r.Password, d.Password),
		PrivateKey:              str("private_key", r.PrivateKeyWO, r.PrivateKey, d.PrivateKey),
		Certificate:             str("certificate", r.Certificate, d.Certificate),
		Agent:                   flag("agent", r.Agent, d.Agent),
		AgentIdentity:           str("agent_identity", r.AgentIdentity, d.AgentIdentity),
		HostKey:                 str("host_key", r.HostKey, d.HostKey),
		KnownHosts:              str("known_hosts", r.KnownHosts, d.KnownHosts),
		InsecureTrustOnFirstUse: flag("insecure_trust_on_first_use", r.InsecureTrustOnFirstUse, d.InsecureTrustOnFirstUse),
		TrustedHostKey:          trustedHostKey,
		Timeout:                 timeout,
		RefreshTimeout:          refreshTimeout,
		Sudo:                    flag("sudo", r.Sudo, d.Sudo),
	}
	if host := str("bastion_host", r.BastionHost, d.BastionHost); host != "" {
		m.Config.Bastion = &remote.Config{
			Host:       host,
			Port:       num("bastion_port", r.BastionPort, d.BastionPort),
			User:       str("bastion_user", r.BastionUser, d.BastionUser, r.User, d.User),
			PrivateKey: str("bastion_private_key", r.BastionPrivateKeyWO, r.BastionPrivateKey, d.BastionPrivateKey, r.PrivateKeyWO, r.PrivateKey, d.PrivateKey),
			Agent:      m.Config.Agent,
			HostKey:    str("bastion_host_key", r.BastionHostKey, d.BastionHostKey),
			KnownHosts: m.Config.KnownHosts,
			Timeout:    timeout,
			// RefreshTimeout: the target's budget bounds the dial through the bastion.
		}
	}
	return m, nil
}

// SSHValidator checks a resource's `ssh` at validate time, as far
// as it can without the provider's defaults: a secret given both as a
// stored attribute and as its write-only twin, and keys, certificates and
// known_hosts that do not parse.
type SSHValidator struct{}

var _ resource.ConfigValidator = SSHValidator{}

func (SSHValidator) Description(context.Context) string {
	return "ssh secrets are given once, and keys, certificates and known_hosts parse"
}

func (v SSHValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (SSHValidator) ValidateResource(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var obj types.Object
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("ssh"), &obj)...)
	if resp.Diagnostics.HasError() || obj.IsNull() || obj.IsUnknown() {
		return
	}
	c, diags := SSHFrom(ctx, obj)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	at := path.Root("ssh")
	for secret, twins := range problem.Sorted(map[string][2]types.String{
		"password":            {c.Password, c.PasswordWO},
		"private_key":         {c.PrivateKey, c.PrivateKeyWO},
		"bastion_private_key": {c.BastionPrivateKey, c.BastionPrivateKeyWO},
	}) {
		if !twins[0].IsNull() && !twins[1].IsNull() {
			resp.Diagnostics.AddAttributeError(at.AtName(secret+"_wo"), "Secret Given Twice",
				fmt.Sprintf("ssh.%s and ssh.%s_wo are both set; keep one (the write-only %s_wo stays out of plan and state).", secret, secret, secret))
		}
	}
	// Each check parses what is known and set on the resource itself.
	fail := func(attr string, err error) {
		if err != nil {
			resp.Diagnostics.AddAttributeError(at.AtName(attr), "Invalid SSH Setting", "ssh."+attr+": "+err.Error())
		}
	}
	for attr, v := range problem.Sorted(map[string]types.String{"private_key": c.PrivateKey, "private_key_wo": c.PrivateKeyWO,
		"bastion_private_key": c.BastionPrivateKey, "bastion_private_key_wo": c.BastionPrivateKeyWO}) {
		if known(v) {
			fail(attr, remote.CheckCredentials(v.ValueString(), ""))
		}
	}
	if key := firstKnown(c.PrivateKeyWO, c.PrivateKey); key != "" && known(c.Certificate) && remote.CheckCredentials(key, "") == nil {
		fail("certificate", remote.CheckCredentials(key, c.Certificate.ValueString()))
	}
	for attr, v := range problem.Sorted(map[string]types.String{"host_key": c.HostKey, "bastion_host_key": c.BastionHostKey}) {
		if known(v) {
			fail(attr, remote.CheckHostKey(v.ValueString()))
		}
	}
	if known(c.KnownHosts) {
		fail("known_hosts", remote.CheckKnownHosts(c.KnownHosts.ValueString()))
	}
	for attr, one := range problem.Sorted(map[string]SSHModel{"timeout": {Timeout: c.Timeout}, "refresh_timeout": {RefreshTimeout: c.RefreshTimeout}}) {
		if _, err := ResolveSSH(one, nil, ""); err != nil {
			resp.Diagnostics.AddAttributeError(at.AtName(attr), "Invalid SSH Setting", err.Error())
		}
	}
}

func firstKnown(vs ...types.String) string {
	for _, v := range vs {
		if known(v) {
			return v.ValueString()
		}
	}
	return ""
}
