package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// The host lifecycle, for a newcomer. Every resource that keeps files on
// a host (kha_file, the load balancers, keepalived, kube-vip, kubeconfigs,
// serving certificates, ...) is a hostResource with its own model; the
// model renders files and may implement the optional hooks of
// host_hooks.go, which lists them in the order they are called.
//
//   - Plan (host_plan.go, planRun): render from the configuration alone,
//     so sha256 and everything rendered is known at plan time; reserve the
//     host's files against the walk's other resources (reservations.go);
//     plan id, destroy_actions, trusted_host_key and remote_sha256 (drift
//     found by the last refresh shows as a change, with a warning).
//   - Apply (host_apply.go, applyRun): wait for the rollout's turn, connect
//     with a verified host key, let a HostReader read the host, put each
//     file with the resource's claim (remote.Claim: the host saves what it
//     replaces) or a handover's interim configuration, roll back on
//     failure, remove what the plan no longer has.
//   - Refresh (host_read.go): read the files' digests; drift, an
//     unreachable host or write-only credentials are remembered, not
//     errors.
//   - Destroy (host_destroy.go): put back or delete each file as
//     destroy_actions says, last first; on_destroy = "keep" drops only
//     kha's records.
//   - Import (host_import.go): connect, record the file found, and let
//     the next apply adopt it.
//
// Beside the state, each resource keeps one privateRecord in Terraform's
// private data (private_record.go): its claim, the last refresh's drift
// or unreachable host, a pending handover. A new host resource is a
// model with fields() (embedding hostFields), render, conflictName and
// pathSettings, a schema built with withHostAttributes, and the hooks it
// needs, asserted in its file.

// hostResource is the one lifecycle of every resource that keeps files
// (or marked blocks) on a host: render at plan time from the rendering
// inputs alone (`ssh` may still be unknown), deliver over SSH,
// observe drift by digest, remove what the configuration no longer has,
// and clean the host on destroy. A resource embeds it with its model type
// and declares only its schema and how the model renders to files.
type hostResource[M any, P hostModel[M]] struct {
	// name is the resource type's name after the provider's: "file"
	// for kha_file.
	name string
	data *providerData
}

func (r *hostResource[M, P]) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + r.name
}

// rendered is what a resource keeps on its host.
type rendered struct {
	files []remote.Item
	// removeCommand runs after the files are removed on destroy.
	removeCommand string
	// alwaysDelivered resources go to a host without an `ssh` attribute
	// (all from default_ssh); the others only render without one.
	alwaysDelivered bool
	// rollback, when set, holds for each file what puts the host back to
	// how it was before this apply (nil: nothing to undo), removed with
	// Remove: after a failed file, those before it are rolled back.
	rollback []*remote.EditedFile
}

// hostFields are the attributes every host resource has.
type hostFields struct {
	ID             types.String   `tfsdk:"id"`
	SSH            types.Object   `tfsdk:"ssh"`
	KeepOnDestroy  types.Bool     `tfsdk:"keep_on_destroy"`
	OnDestroy      types.String   `tfsdk:"on_destroy"`
	DestroyActions types.Map      `tfsdk:"destroy_actions"`
	Adopt          types.Bool     `tfsdk:"adopt"`
	SHA256         types.String   `tfsdk:"sha256"`
	RemoteSHA256   types.String   `tfsdk:"remote_sha256"`
	TrustedHostKey types.String   `tfsdk:"trusted_host_key"`
	RolloutGroup   types.String   `tfsdk:"rollout_group"`
	Timeouts       timeouts.Value `tfsdk:"timeouts"`
}

// Default timeouts of the operations that wait on a host.
const (
	defaultApplyTimeout = 10 * time.Minute
	defaultReadTimeout  = 5 * time.Minute
)

// The values of on_destroy, and what destroy_actions says besides them.
const (
	onDestroyRestore  = "restore"
	onDestroyDelete   = "delete"
	onDestroyKeep     = "keep"
	actionRemoveBlock = "remove block"
	actionUndoEdit    = "undo edit"
)

// hostAttributes are the schema of hostFields; what the digests cover is
// the resource's to say.
func hostAttributes(ctx context.Context, idDescription, sha256Description string) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"id":  schema.StringAttribute{Computed: true, MarkdownDescription: idDescription},
		"ssh": resourceSSHAttribute(),
		"keep_on_destroy": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			DeprecationMessage: `Use on_destroy = "keep" instead.`,
			MarkdownDescription: "Leave the files on the host when the resource is destroyed, as `on_destroy = \"keep\"` does. " +
				"Default `false`. Deprecated: use `on_destroy`."},
		"on_destroy": schema.StringAttribute{Optional: true, Computed: true,
			Validators: []validator.String{stringvalidator.OneOf(onDestroyRestore, onDestroyDelete, onDestroyKeep)},
			MarkdownDescription: "What destroy does with each whole file the resource wrote: `restore` puts back the file " +
				"that was at the path before kha first wrote it, byte for byte with its mode and owner, and deletes a file " +
				"kha created; `delete` deletes the file either way; `keep` leaves it and does not contact the host (the way " +
				"out for a host that is gone for good). Default `restore`; `keep` for a resource brought in by `terraform " +
				"import`. A path the resource stops writing is treated the same way during the update, and `destroy_actions` " +
				"shows what it means for each file. The guide \"What a host needs\" (\"What destroy gives back\") says where " +
				"the saved file waits and what to do when it is gone."},
		"destroy_actions": schema.MapAttribute{ElementType: types.StringType, Computed: true,
			MarkdownDescription: "What destroy will do, by path (`path#marker` for a marked block): `restore` (put back the " +
				"file that was there before kha), `delete` (a file kha created, or `on_destroy = \"delete\"`), `keep`, " +
				"`remove block` or `undo edit` (the rest of the file stays). Unknown until an apply has looked at the " +
				"host; null when the resource delivers nothing (no `ssh`)."},
		"adopt": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Take over a file whose record on the host names another kha resource as its owner: " +
				"one of another configuration or workspace, or one destroyed with `on_destroy = \"keep\"`. Without it " +
				"apply refuses such a file before changing anything, and says who owns it (resource type, the " +
				"directory Terraform ran in, the machine and the time): two resources that write one file overwrite " +
				"each other on every apply. `terraform import` adopts the file it imports. Default `false`."},
		"sha256": schema.StringAttribute{Computed: true, MarkdownDescription: sha256Description},
		"remote_sha256": schema.StringAttribute{Computed: true,
			MarkdownDescription: "Digest of what the host had at the last refresh: equal to `sha256` while the host has what the " +
				"configuration wants (content, and for whole files their mode and named owner and group). It differs after a " +
				"change made outside Terraform, which the next apply puts right; the plan's warning says what changed. Null " +
				"without `ssh`, and when a single file is missing."},
		"trusted_host_key": schema.StringAttribute{Computed: true,
			MarkdownDescription: "With `ssh.insecure_trust_on_first_use` and no `host_key` or `known_hosts`, the host key seen at the " +
				"first connection, which every later connection must present. To accept a legitimate new key, set `ssh.host_key` " +
				"to it: a pinned key replaces the recorded one."},
		"rollout_group": schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			MarkdownDescription: "The rollout group this resource's changes roll out in, under the provider's `rollout` policy " +
				"(its `groups` entry of this name, else `rollout` itself): canaries first, then batches, and with " +
				"`stop_on_failure` no further host of the group after a failure. Default: the resource type (`kha_file`), so each " +
				"kind of change rolls out on its own. Give resources of several types one group to roll them out as one change, " +
				"or a group each to let independent changes proceed independently. Changing it changes nothing on the host."},
		"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Read: true, Update: true, Delete: true,
			CreateDescription: "How long creating may take, connecting, validating and reloading included. Default `10m`.",
			ReadDescription:   "How long a refresh may take. Default `5m`.",
			UpdateDescription: "How long an update may take. Default `10m`.",
			DeleteDescription: "How long removing the files and running the destroy command may take. Default `10m`."}),
	}
}

// withHostAttributes adds hostAttributes to a resource's own.
func withHostAttributes(ctx context.Context, own map[string]schema.Attribute, idDescription, sha256Description string) map[string]schema.Attribute {
	for name, a := range hostAttributes(ctx, idDescription, sha256Description) {
		own[name] = a
	}
	return own
}

func (r *hostResource[M, P]) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *hostResource[M, P]) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{sshValidator{}}
}

// sshOf is a resource's `ssh` with the provider's default_ssh applied.
func (r *hostResource[M, P]) sshOf(ctx context.Context, h *hostFields, trusted types.String) (resolvedSSH, diag.Diagnostics) {
	c, diags := sshFrom(ctx, h.SSH)
	if diags.HasError() {
		return resolvedSSH{}, diags
	}
	m, err := resolveSSH(c, r.data.sshDefaults(), trusted.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("ssh"), "Invalid Connection", err.Error())
	}
	return m, diags
}

// purpose says what a connection is for, which sets how long connecting
// may take: ssh.timeout to change the host, ssh.refresh_timeout to read it.
type purpose int

const (
	toChange purpose = iota
	toRead
)

// connect opens (or reuses) the pooled connection.
func (r *hostResource[M, P]) connect(ctx context.Context, m resolvedSSH, to purpose) (*remote.Client, diag.Diagnostics) {
	client, err := r.dial(ctx, m, to)
	var diags diag.Diagnostics
	if err != nil {
		diags.AddAttributeError(path.Root("ssh"), connectSummary(err), err.Error())
	}
	return client, diags
}

// connectSummary is the summary of a connect error; the engine's errors
// all say "SSH Connection Failed".
func connectSummary(err error) string {
	var internal internalError
	if errors.As(err, &internal) {
		return internal.summary
	}
	return "SSH Connection Failed"
}

// internalError is a failure of the provider, not of the connection.
type internalError struct{ summary, detail string }

func (e internalError) Error() string { return e.detail }

// dial is connect with the engine's error as it is, which says whether
// the host did not answer (remote.Unreachable).
func (r *hostResource[M, P]) dial(ctx context.Context, m resolvedSSH, to purpose) (*remote.Client, error) {
	return dialPooled(ctx, r.data, m, to)
}

// dialPooled gets the pool's client for a resolved connection, for the
// purpose; the engine's error stays as it is.
func dialPooled(ctx context.Context, data *providerData, m resolvedSSH, to purpose) (*remote.Client, error) {
	if len(m.unknown) > 0 {
		return nil, internalError{"Connection Not Known", "ssh." + strings.Join(m.unknown, ", ssh.") +
			" is still unknown. This is always a bug in the provider."}
	}
	if data == nil {
		return nil, internalError{"Provider Not Configured", "The provider was not configured. This is always a bug in the provider."}
	}
	if to == toRead {
		return data.pool.GetForRead(ctx, m.cfg)
	}
	return data.pool.Get(ctx, m.cfg)
}

// unreachable is the warning of a read that gave up on a host that does
// not answer: the resource keeps what it had, and the plan goes on.
func unreachable(id string, err error) diag.Diagnostics {
	var diags diag.Diagnostics
	diags.AddAttributeWarning(path.Root("ssh"), "Host Unreachable: "+addressOfID(id),
		fmt.Sprintf("%s was not read: the host did not answer (%v).\n\nThe resource keeps its prior state: no change on "+
			"the host is assumed, and the plan goes on for every other host. A change to this resource fails until the host "+
			"answers; how long a read tries is ssh.refresh_timeout (default 20s), how long a change tries is ssh.timeout.",
			id, err))
	return diags
}

// delivered says whether a model goes to a host.
func delivered(out rendered, h *hostFields) bool {
	return out.alwaysDelivered || !h.SSH.IsNull()
}

// filesDigest is the digest of a set of files as the drift check compares
// it: a single file's own digest, or for several the SHA-256 of their
// paths and digests.
func filesDigest(files []remote.Item, digests []string) string {
	if len(files) == 1 {
		return digests[0]
	}
	var b strings.Builder
	for i, f := range files {
		path, marker := f.Place()
		fmt.Fprintf(&b, "%s\x00%s\x00%s\n", path, marker, digests[i])
	}
	return remote.SHA256([]byte(b.String()))
}

// desiredDigest is the digest of the files the configuration wants.
func desiredDigest(files []remote.Item) string {
	digests := make([]string, len(files))
	for i, f := range files {
		digests[i] = f.Digest()
	}
	return filesDigest(files, digests)
}

// hostID is the ID of a delivered resource: host:port:path of its first
// file.
func hostID(cfg remote.Config, files []remote.Item) string {
	return cfg.Address() + ":" + idPath(files)
}

// idPath is the path a delivered resource's id names: its first file's.
func idPath(files []remote.Item) string {
	path, _ := files[0].Place()
	return path
}

// addressOfID returns the host:port part of a hostID, or "".
func addressOfID(id string) string {
	i := strings.Index(id, ":/")
	if i <= 0 {
		return ""
	}
	if _, _, err := net.SplitHostPort(id[:i]); err != nil {
		return ""
	}
	return id[:i]
}

// privateStore is a response's private state, which an update's response
// holds the prior values of.
type privateStore interface {
	privateState
	privateSetter
}

// stateOnlyAttributes are the attributes that say nothing about the host
// until destroy.
var stateOnlyAttributes = []string{"keep_on_destroy", "on_destroy", "destroy_actions", "adopt", "rollout_group", "timeouts", "allow_quorum_risk", "check_vip"}

// changesStateOnly says whether a plan differs from the prior state only
// in stateOnlyAttributes.
func changesStateOnly(plan, prior tftypes.Value) bool {
	var planned, was map[string]tftypes.Value
	if plan.As(&planned) != nil || prior.As(&was) != nil || len(planned) != len(was) {
		return false
	}
	for name, v := range planned {
		if !slices.Contains(stateOnlyAttributes, name) && !v.Equal(was[name]) {
			return false
		}
	}
	return true
}

// readHost lets a HostReader model read its host, and renders it again
// from what it read; for other models out, what they rendered, stands.
func (r *hostResource[M, P]) readHost(ctx context.Context, client *remote.Client, model, config *M, out rendered) (rendered, diag.Diagnostics) {
	reader, ok := any(P(model)).(HostReader)
	if !ok {
		return out, nil
	}
	tflog.Debug(ctx, "reading what the host has before changing it")
	client.RememberReads() // the edits that follow start from what it reads
	if err := reader.ReadHost(ctx, client, config == nil); err != nil {
		var diags diag.Diagnostics
		diags.AddError("Reading the Host Failed", err.Error())
		return rendered{}, diags
	}
	return P(model).Render(config)
}

// summary joins the details of a diagnostics' errors.
func summary(d diag.Diagnostics) string {
	var parts []string
	for _, e := range d.Errors() {
		parts = append(parts, e.Detail())
	}
	return strings.Join(parts, "; ")
}

// loadState reads a state for Read and Delete: what it delivered, the
// connection it was delivered over, and the private record. ok is false
// when the state delivered nothing (or on error).
func (r *hostResource[M, P]) loadState(ctx context.Context, st tfsdk.State, private privateState, state *M, diags *diag.Diagnostics) (out rendered, m resolvedSSH, rec privateRecord, ok bool) {
	diags.Append(st.Get(ctx, state)...)
	if diags.HasError() {
		return out, m, rec, false
	}
	h := P(state).Fields()
	out, d := P(state).Render(nil)
	diags.Append(d...)
	if diags.HasError() || !delivered(out, h) {
		return out, m, rec, false
	}
	m, d = r.sshOf(ctx, h, h.TrustedHostKey)
	diags.Append(d...)
	rec, d = readPrivateRecord(ctx, private)
	diags.Append(d...)
	return out, m, rec, !diags.HasError()
}
