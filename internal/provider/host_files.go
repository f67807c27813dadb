package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"golang.org/x/crypto/ssh"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// hostFiles is the Terraform side of the managed-file engine, shared by
// every resource that writes to a host: it applies a set of files over
// one pooled connection, observes them for drift and removes them.
//
// Drift is tracked as two digests: `sha256` of what the configuration
// wants and `remote_sha256` of what the host has, so an edit made outside
// Terraform shows as an in-place update.
type hostFiles struct {
	data *providerData
}

// deliveredFields are the attributes every resource that writes to a host
// has: the connection, the two digests of the drift check and the host key
// recorded on first use.
type deliveredFields struct {
	ID             types.String     `tfsdk:"id"`
	KeepOnDestroy  types.Bool       `tfsdk:"keep_on_destroy"`
	SSH            *connectionModel `tfsdk:"ssh"`
	SHA256         types.String     `tfsdk:"sha256"`
	RemoteSHA256   types.String     `tfsdk:"remote_sha256"`
	TrustedHostKey types.String     `tfsdk:"trusted_host_key"`
}

// privateUnobserved marks a state whose refresh could not reach the host
// because its only credentials are write-only; the plan then looks.
const privateUnobserved = "unobserved"

// privateState is the part of a request or response's private state the
// helpers use.
type privateState interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// ConfigValidators refuses a secret given both as a stored attribute and
// as its write-only twin.
func (h *hostFiles) ConfigValidators(context.Context) []resource.ConfigValidator {
	var validators []resource.ConfigValidator
	for _, secret := range []string{"password", "private_key", "bastion_private_key"} {
		validators = append(validators, resourcevalidator.Conflicting(
			path.MatchRoot("ssh").AtName(secret), path.MatchRoot("ssh").AtName(secret+"_wo")))
	}
	return validators
}

func (h *hostFiles) configure(req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	data, ok := req.ProviderData.(*providerData)
	if !ok {
		resp.Diagnostics.AddError("Unexpected Provider Data", fmt.Sprintf("got %T. This is always a bug in the provider.", req.ProviderData))
		return
	}
	h.data = data
}

func (h *hostFiles) defaults() *connectionSettings {
	if h.data == nil {
		return nil
	}
	return h.data.defaults
}

// config merges a resource's connection with the provider's defaults.
func (h *hostFiles) config(c *connectionModel, trusted types.String) (remote.Config, error) {
	trustedKey := ""
	if !trusted.IsUnknown() {
		trustedKey = trusted.ValueString()
	}
	cfg, err := remoteConfig(c, h.defaults(), trustedKey)
	if err == nil {
		err = cfg.Validate()
	}
	return cfg, err
}

// connect opens (or reuses) the connection for a resource.
func (h *hostFiles) connect(ctx context.Context, c *connectionModel, trusted types.String) (*remote.Client, remote.Config, diag.Diagnostics) {
	var diags diag.Diagnostics
	cfg, err := h.config(c, trusted)
	if err != nil {
		diags.AddAttributeError(path.Root("ssh"), "Invalid Connection", err.Error())
		return nil, cfg, diags
	}
	if h.data == nil {
		diags.AddError("Provider Not Configured", "The provider was not configured. This is always a bug in the provider.")
		return nil, cfg, diags
	}
	client, err := h.data.pool.Get(ctx, cfg)
	if err != nil {
		diags.AddAttributeError(path.Root("ssh"), "SSH Connection Failed", err.Error())
		return nil, cfg, diags
	}
	return client, cfg, diags
}

// filesDigest is the digest the drift check compares: a single file's
// SHA-256, or for several the SHA-256 of their paths and digests.
func filesDigest(paths, digests []string) string {
	if len(digests) == 1 {
		return digests[0]
	}
	h := sha256.New()
	for i := range paths {
		fmt.Fprintf(h, "%s\x00%s\n", paths[i], digests[i])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func contentDigest(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

// desiredDigest is the digest of the files the configuration wants.
func desiredDigest(files []remote.File) string {
	paths, digests := make([]string, len(files)), make([]string, len(files))
	for i, f := range files {
		paths[i], digests[i] = f.Path, f.Digest()
	}
	return filesDigest(paths, digests)
}

// put applies the files in order and returns the digest the host now has
// and, on first use, the host key to trust from now on.
func (h *hostFiles) put(ctx context.Context, conn *connectionModel, trusted types.String, files []remote.File) (observed, hostKey string, diags diag.Diagnostics) {
	client, _, diags := h.connect(ctx, conn, trusted)
	if diags.HasError() {
		return "", "", diags
	}
	paths, digests := make([]string, len(files)), make([]string, len(files))
	for i, f := range files {
		digest, err := client.Put(ctx, f)
		if err != nil {
			diags.AddError("Applying File Failed", err.Error())
			return "", "", diags
		}
		paths[i], digests[i] = f.Path, digest
	}
	return filesDigest(paths, digests), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(client.HostKey()))), diags
}

// observe reads the files' digests; ok is false when the stored settings
// hold no credentials (write-only secrets), which refresh never sees.
func (h *hostFiles) observe(ctx context.Context, conn *connectionModel, trusted types.String, files []remote.File) (observed types.String, ok bool, diags diag.Diagnostics) {
	if _, err := h.config(conn, trusted); err != nil {
		tflog.Info(ctx, "refresh cannot reach the host without the configuration's credentials", map[string]any{"reason": err.Error()})
		return types.StringNull(), false, nil
	}
	client, _, diags := h.connect(ctx, conn, trusted)
	if diags.HasError() {
		return types.StringNull(), true, diags
	}
	paths, digests := filePaths(files), make([]string, len(files))
	for i, f := range files {
		digest, err := client.Observe(ctx, f)
		if err != nil {
			diags.AddError("Reading Remote File Failed", err.Error())
			return types.StringNull(), true, diags
		}
		if digest == "" {
			return types.StringNull(), true, diags
		}
		digests[i] = digest
	}
	return types.StringValue(filesDigest(paths, digests)), true, diags
}

// refresh is Read's share: it records what the host has, or marks the
// state unobserved when refresh has no credentials.
func (h *hostFiles) refresh(ctx context.Context, conn *connectionModel, trusted types.String, files []remote.File, remoteDigest *types.String, private privateSetter) diag.Diagnostics {
	observed, ok, diags := h.observe(ctx, conn, trusted, files)
	if diags.HasError() {
		return diags
	}
	if ok {
		*remoteDigest = observed
	}
	diags.Append(private.SetKey(ctx, privateUnobserved, []byte(fmt.Sprint(!ok)))...)
	return diags
}

// planRemote plans `remote_sha256` for an update: back to the desired
// digest, so drift shows as "<observed>" -> "<desired>". When refresh
// could not look, the plan looks with the configuration's credentials and
// leaves the value unknown if the host differs.
func (h *hostFiles) planRemote(ctx context.Context, private privateState, conn *connectionModel, trusted types.String, files []remote.File, desired string) (types.String, diag.Diagnostics) {
	unobserved, diags := private.GetKey(ctx, privateUnobserved)
	if string(unobserved) != "true" {
		return types.StringValue(desired), diags
	}
	observed, _, d := h.observe(ctx, conn, trusted, files)
	diags.Append(d...)
	if observed.ValueString() != desired {
		tflog.Info(ctx, "files changed outside Terraform", map[string]any{"paths": filePaths(files)})
		return types.StringUnknown(), diags
	}
	return types.StringValue(desired), diags
}

// remove deletes the files (last first) and runs reload after the last.
func (h *hostFiles) remove(ctx context.Context, conn *connectionModel, trusted types.String, files []remote.File, reload string) diag.Diagnostics {
	if _, err := h.config(conn, trusted); err != nil {
		var diags diag.Diagnostics
		diags.AddAttributeError(path.Root("ssh"), "No Credentials to Remove Files",
			err.Error()+". Destroy runs without the resource's configuration, so write-only secrets are not available: "+
				"set them on the provider's default_ssh or use the SSH agent, or set keep_on_destroy = true.")
		return diags
	}
	client, _, diags := h.connect(ctx, conn, trusted)
	if diags.HasError() {
		return diags
	}
	for i := len(files) - 1; i >= 0; i-- {
		reloadNow := ""
		if i == 0 {
			reloadNow = reload
		}
		if err := client.Remove(ctx, files[i], reloadNow); err != nil {
			diags.AddError("Removing File Failed", err.Error())
			return diags
		}
	}
	return diags
}
