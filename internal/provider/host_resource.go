package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
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
	"golang.org/x/crypto/ssh"

	"github.com/kha/terraform-provider-kha/internal/problem"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

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

// hostModel is what a resource's model gives the lifecycle.
type hostModel[M any] interface {
	*M
	// fields are the attributes every host resource has.
	fields() *hostFields
	// render returns the files to keep, filling the attributes rendering
	// computes. It reads the plan (or the state); config carries the
	// write-only values and is nil when rendering a state. Attributes
	// that are optional and computed without a default read as unset
	// when unknown: the plan leaves them unknown exactly when the
	// configuration does not set them.
	render(config *M) (rendered, diag.Diagnostics)
	// claimant names it in the plan error of another resource that
	// would manage one of its files (claims.go).
	claimant
}

// planWarner is a host model whose plans warn of what its configuration
// does not make invalid: shown in every plan, not again at apply.
type planWarner interface {
	planWarnings() problem.Problems
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

// hostReader is a model that reads its host before the lifecycle changes
// it (apply and destroy), and renders again from what it read: what to
// record of what was there, which steps the change needs, and, for a
// destroy, what cannot be given back.
type hostReader interface {
	readHost(ctx context.Context, c *remote.Client, destroying bool) error
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

// Private state keys.
const (
	// privateOwnership holds the resource's claim (ownership).
	privateOwnership = "ownership"

	// privateUnobserved marks a state whose refresh could not reach the
	// host because its only credentials are write-only; the plan looks.
	privateUnobserved = "unobserved"
	// privateDrift holds what the last refresh found changed on the host.
	privateDrift = "drift"
	// privateUnreachable holds why the last refresh could not reach the
	// host: a plan to destroy the resource fails with it, before any host
	// is changed.
	privateUnreachable = "unreachable"
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

// renderInputsKnown says whether every attribute but `ssh` and
// the timeouts is known, which is all rendering needs.
func renderInputsKnown(raw tftypes.Value) bool {
	var attrs map[string]tftypes.Value
	if err := raw.As(&attrs); err != nil {
		return false
	}
	for name, v := range attrs {
		if name != "ssh" && name != "timeouts" && !v.IsFullyKnown() {
			return false
		}
	}
	return true
}

func (r *hostResource[M, P]) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		resp.Diagnostics.Append(planDestroy(ctx, "kha_"+r.name, req.State, req.Private)...)
		return
	}
	if !renderInputsKnown(req.Config.Raw) {
		return // inputs still unknown: computed values stay unknown
	}
	var plan, config M
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	out, diags := P(&plan).render(&config)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if w, ok := any(P(&plan)).(planWarner); ok {
		appendProblems(&resp.Diagnostics, w.planWarnings(), false)
	}
	h := P(&plan).fields()
	desired := desiredDigest(out.files)
	h.SHA256 = types.StringValue(desired)
	resp.Diagnostics.Append(planHandoverSHA256(P(&plan), out)...)
	var state M
	if !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	}
	prior := P(&state).fields()
	wasDelivered := !req.State.Raw.IsNull() && addressOfID(prior.ID.ValueString()) != ""
	h.OnDestroy = onDestroyFor(P(&plan), P(&config).fields().OnDestroy, prior.OnDestroy)
	if !delivered(out, h) {
		h.ID, h.RemoteSHA256, h.TrustedHostKey = types.StringValue(desired), types.StringNull(), types.StringNull()
		h.DestroyActions = types.MapNull(types.StringType)
		if wasDelivered {
			resp.RequiresReplace = append(resp.RequiresReplace, path.Root("ssh")) // destroy cleans the old host
		}
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}

	m, diags := r.sshOf(ctx, P(&config).fields(), prior.TrustedHostKey)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	h.RemoteSHA256 = types.StringValue(desired)
	h.ID = types.StringUnknown()
	if m.addressKnown() {
		if m.cfg.Host == "" {
			resp.Diagnostics.AddAttributeError(path.Root("ssh").AtName("host"), "Missing Host",
				"ssh.host is not set here or on the provider's default_ssh: set the host's address.")
			return
		}
		h.ID = types.StringValue(hostID(m.cfg, out.files))
		resp.Diagnostics.Append(r.data.claim(m, P(&plan), desired, out.files, req.Plan.Raw)...)
	}
	if len(m.unknown) == 0 {
		if err := m.cfg.Validate(); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("ssh"), "Invalid Connection", err.Error())
			return
		}
	}
	moved := wasDelivered && (!m.addressKnown() || addressOfID(prior.ID.ValueString()) != m.cfg.Address())
	if moved {
		// Another host: destroy cleans the old one, create fills the new.
		resp.RequiresReplace = append(resp.RequiresReplace, path.Root("ssh"))
	}
	// What the host saved is known of the files this resource put on
	// the same host before; a replacement starts afresh.
	var own ownership
	onHost := wasDelivered && !moved
	if onHost {
		var d diag.Diagnostics
		own, d = readOwnership(ctx, req.Private)
		resp.Diagnostics.Append(d...)
	}
	h.DestroyActions = destroyActions(out.files, h, func(p string) (bool, bool) { return own.savedKnown(p, onHost) }, false)

	h.TrustedHostKey = types.StringNull()
	verificationUnknown := slices.Contains(m.unknown, "host_key") || slices.Contains(m.unknown, "known_hosts") ||
		slices.Contains(m.unknown, "insecure_trust_on_first_use")
	if m.cfg.TrustsOnFirstUse() || verificationUnknown {
		h.TrustedHostKey = types.StringUnknown() // recorded by the first connection
		if wasDelivered && !moved && known(prior.TrustedHostKey) && m.cfg.TrustsOnFirstUse() {
			h.TrustedHostKey = prior.TrustedHostKey
		}
	}
	if wasDelivered && !moved {
		var d diag.Diagnostics
		h.RemoteSHA256, d = r.planRemote(ctx, req.Private, m, prior.ID.ValueString(), out.files, desired, h.TrustedHostKey)
		resp.Diagnostics.Append(d...)
		resp.Diagnostics.Append(warnPendingHandover(ctx, req.Private, prior.ID.ValueString())...)
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// planDestroy fails the plan to destroy a resource whose host did not
// answer the refresh, unless on_destroy = "keep" spares the host: destroy
// would fail on it after ssh.timeout, and by then the plan's other
// destroys would have changed the other hosts.
func planDestroy(ctx context.Context, typeName string, state tfsdk.State, private privateState) diag.Diagnostics {
	var diags diag.Diagnostics
	if state.Raw.IsNull() {
		return diags
	}
	var h hostFields
	diags.Append(state.GetAttribute(ctx, path.Root("id"), &h.ID)...)
	diags.Append(state.GetAttribute(ctx, path.Root("keep_on_destroy"), &h.KeepOnDestroy)...)
	diags.Append(state.GetAttribute(ctx, path.Root("on_destroy"), &h.OnDestroy)...)
	raw, d := private.GetKey(ctx, privateUnreachable)
	diags.Append(d...)
	var why string
	if diags.HasError() || h.keeps() || len(raw) == 0 || json.Unmarshal(raw, &why) != nil {
		return diags
	}
	detail := why + "\n\nDestroying removes the resource's files from the host, which did not answer the refresh; " +
		"nothing is destroyed on any host while it fails."
	diags.AddAttributeError(path.Root("ssh"), "SSH Connection Failed",
		detail+hostGoneHint(detail)+destroyWayOut(typeName, h.ID.ValueString()))
	return diags
}

// planRemote plans `remote_sha256` for an update: back to the desired
// digest, so drift shows as "<observed>" -> "<desired>", with a warning
// that says what changed. When refresh could not look (write-only
// credentials), the plan looks with the configuration's credentials and
// leaves the value unknown if the host differs.
func (r *hostResource[M, P]) planRemote(ctx context.Context, private privateState, m resolvedSSH, id string, files []remote.Item, desired string, trusted types.String) (types.String, diag.Diagnostics) {
	var diags diag.Diagnostics
	raw, d := private.GetKey(ctx, privateDrift)
	diags.Append(d...)
	var drift []string
	if len(raw) > 0 && json.Unmarshal(raw, &drift) == nil && len(drift) > 0 {
		// The ID (host:port:path) in the summary keeps Terraform from
		// folding the warnings of several hosts into one.
		diags.AddWarning("Changed Outside Terraform: "+id, "The host no longer has what this resource put there; apply puts it back:\n  "+
			strings.Join(drift, "\n  "))
	}
	unobserved, d := private.GetKey(ctx, privateUnobserved)
	diags.Append(d...)
	if string(unobserved) != "true" || len(m.unknown) > 0 {
		return types.StringValue(desired), diags
	}
	m.cfg.TrustedHostKey = trusted.ValueString()
	o, d := r.observe(ctx, m, id, files, false)
	diags.Append(d...)
	if o.unreachable == nil && o.digest.ValueString() != desired {
		return types.StringUnknown(), diags
	}
	return types.StringValue(desired), diags
}

// privateState is the part of a request's private state the lifecycle
// reads, and privateSetter the part of a response's it writes.
type privateState interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// privateStore is a response's private state, which an update's response
// holds the prior values of.
type privateStore interface {
	privateState
	privateSetter
}

// trustedKeyOf is the key the client's host presented, to record on
// first use. A connection lost (and not re-established) since has none:
// an error, never a key recorded from nothing.
func trustedKeyOf(client *remote.Client) (types.String, diag.Diagnostics) {
	var diags diag.Diagnostics
	key := client.HostKey()
	if key == nil {
		diags.AddAttributeError(path.Root("ssh"), "Host Key Not Recorded", fmt.Sprintf("the connection to %s was lost before "+
			"its host key could be recorded (ssh.insecure_trust_on_first_use); nothing was recorded: run the command again",
			client.Address()))
		return types.StringUnknown(), diags
	}
	return types.StringValue(strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))), diags
}

// observation is what a read of the host found.
type observation struct {
	digest types.String // remote_sha256
	drift  []string
	client *remote.Client // the connection it read over
	// unreachable is why the host did not answer; nothing was read.
	unreachable error
}

// observe connects to read the files' digests and says how the host
// differs; with show, the drift of a whole file's content lists the
// changed lines (changedLines). A host that does not answer is a warning
// (unreachable).
func (r *hostResource[M, P]) observe(ctx context.Context, m resolvedSSH, id string, files []remote.Item, show bool) (observation, diag.Diagnostics) {
	var diags diag.Diagnostics
	o := observation{digest: types.StringNull()}
	client, err := r.dial(ctx, m, toRead)
	if remote.Unreachable(err) {
		o.unreachable = err
		return o, unreachable(id, err)
	}
	if err != nil {
		diags.AddAttributeError(path.Root("ssh"), connectSummary(err), err.Error())
		return o, diags
	}
	o.client = client
	seen, err := client.Observe(ctx, files)
	if remote.Unreachable(err) { // it stopped answering on a connection made while it still did
		o.unreachable = err
		return o, unreachable(id, err)
	}
	if err != nil {
		diags.AddError("Reading Remote Files Failed", err.Error())
		return o, diags
	}
	digests := make([]string, len(files))
	for i, f := range files {
		digests[i] = seen[i].SHA256
		if n := seen[i].Notice; n.Detail != "" {
			diags.AddWarning(n.Summary+": "+id, n.Detail)
		}
		if d := f.Drift(seen[i]); d != "" {
			changed := ""
			if show && seen[i].Exists && seen[i].SHA256 != f.Digest() {
				switch it := f.(type) {
				case remote.File:
					if it.SHA256 == "" {
						changed = changedLines(ctx, client, it)
					}
				case remote.Block:
					if it.SHA256 == "" {
						changed = changedBlockLines(it, seen[i].State)
					}
				}
			}
			if changed != "" {
				d += ":\n    " + strings.ReplaceAll(changed, "\n", "\n    ")
			}
			o.drift = append(o.drift, remote.Printable(d))      // the host's text, shown as text
			if seen[i].Exists && seen[i].SHA256 == f.Digest() { // the content is right, its metadata is not
				digests[i] = remote.SHA256([]byte(d))
			}
		}
	}
	if len(files) != 1 || seen[0].Exists { // a single missing file: null
		o.digest = types.StringValue(filesDigest(files, digests))
	}
	return o, diags
}

func (r *hostResource[M, P]) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.apply(ctx, req.Plan, req.Config, nil, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *hostResource[M, P]) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.apply(ctx, req.Plan, req.Config, &req.State, &resp.State, resp.Private, &resp.Diagnostics)
}

// apply puts the planned files on the host, then removes from it every
// file or block the prior state had and the plan no longer has. Each whole
// file carries the resource's ownership claim (owned): a create, or the first
// apply after an import, saves on the host what it replaces.
func (r *hostResource[M, P]) apply(ctx context.Context, planned tfsdk.Plan, cfg tfsdk.Config, priorState *tfsdk.State, state *tfsdk.State, private privateStore, diags *diag.Diagnostics) {
	var plan, config, prior M
	diags.Append(planned.Get(ctx, &plan)...)
	diags.Append(cfg.Get(ctx, &config)...)
	if priorState != nil {
		diags.Append(priorState.Get(ctx, &prior)...)
	}
	if diags.HasError() {
		return
	}
	h := P(&plan).fields()
	h.OnDestroy = onDestroyFor(P(&plan), P(&config).fields().OnDestroy, P(&prior).fields().OnDestroy)
	own, d := readOwnership(ctx, private)
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	if priorState != nil && changesStateOnly(planned.Raw, priorState.Raw) {
		// on_destroy, keep_on_destroy or timeouts: nothing on the host
		// changes, so a host that is gone for good can still be let go
		// of this way.
		tflog.Info(ctx, "only what destroy does or timeouts changed; the host is not contacted")
		if out, d := P(&plan).render(&config); !d.HasError() {
			own.settle(h, out.files)
		}
		diags.Append(state.Set(ctx, &plan)...)
		return
	}
	timeout, d := h.Timeouts.Create(ctx, defaultApplyTimeout)
	if priorState != nil {
		timeout, d = h.Timeouts.Update(ctx, defaultApplyTimeout)
	}
	diags.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, d := P(&plan).render(&config)
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	if !delivered(out, h) {
		h.DestroyActions = types.MapNull(types.StringType)
		diags.Append(state.Set(ctx, &plan)...)
		return
	}
	m, d := r.sshOf(ctx, P(&config).fields(), h.TrustedHostKey)
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	ticket, d := r.admit(ctx, h, hostID(m.cfg, out.files))
	if d.HasError() {
		diags.Append(d...)
		if priorState != nil {
			diags.Append(state.Set(ctx, &prior)...) // not attempted: the state stays
		}
		return
	}
	var outcomes []remote.Outcome
	if ticket != nil {
		defer func() { ticket.done(changedHost(outcomes), diags.HasError()) }()
	}
	client, d := r.connect(ctx, m, toChange)
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	if h.TrustedHostKey.IsUnknown() {
		if h.TrustedHostKey, d = trustedKeyOf(client); d.HasError() {
			diags.Append(d...)
			return
		}
	}
	if out, d = r.readHost(ctx, client, &plan, &config, out); d.HasError() {
		diags.Append(d...)
		return
	}
	var old rendered
	priorDelivered := false
	if priorState != nil {
		var d diag.Diagnostics
		old, d = P(&prior).render(nil)
		priorDelivered = !d.HasError() && delivered(old, P(&prior).fields())
	}
	// What a create finds at a path was there before kha; an update of a
	// resource that kept no claim finds its own files.
	capture := own.Imported || (own.ID == "" && !priorDelivered)
	if own.ID == "" {
		own = newOwnership(false)
	}
	var interim *interimPlan
	if priorDelivered {
		interim, d = planInterim(ctx, P(&plan), P(&prior), private, out)
		diags.Append(d...)
		if diags.HasError() {
			return
		}
	}
	h.ID = types.StringValue(hostID(m.cfg, out.files))
	onHost := out
	if interim != nil {
		if err := interim.putRecord(ctx, client, own.ID); err != nil {
			diags.AddError("Applying File Failed", err.Error())
			diags.Append(state.Set(ctx, &prior)...)
			return
		}
		onHost = interim.out
	}
	onHost.files = r.owned(onHost.files, own, h, capture)
	failed, put, outcomes := r.putAll(ctx, client, m, onHost, diags)
	own.record(onHost.files, outcomes)
	if failed {
		if interim != nil {
			if err := removeRecord(ctx, client, interim.at); err != nil {
				diags.AddWarning("Handover Record Left on the Host", err.Error())
			}
		}
		switch {
		case priorState == nil && put > 0:
			// Earlier files are on the host: keep a (tainted) state so
			// that the next apply replaces the resource and cleans up.
			h.RemoteSHA256 = types.StringNull()
			own.settle(h, out.files)
			diags.Append(state.Set(ctx, &plan)...)
		case priorState != nil && put > 0 && editsOnly(onHost.files) && holdsAll(onHost.files, old.files):
			// Only the state can take these changes back (what the model
			// read before them, as kha_kubeconfig_server's
			// previous_servers): it keeps the plan's, which has every
			// path of the prior state's and those this apply added; the
			// refresh shows what the host has.
			h.RemoteSHA256 = types.StringNull()
			diags.Append(state.Set(ctx, &plan)...)
		case priorState != nil:
			diags.Append(state.Set(ctx, &prior)...) // the state it had, with the claim its files may carry now
		}
		diags.Append(own.write(ctx, private)...)
		return
	}
	if priorDelivered {
		r.removeLeftovers(ctx, client, r.owned(old.files, own, h, false), out.files, diags)
		if diags.HasError() {
			return
		}
	}
	own.Imported = false
	own.settle(h, out.files)
	h.RemoteSHA256 = types.StringValue(h.SHA256.ValueString())
	diags.Append(state.Set(ctx, &plan)...)
	diags.Append(own.write(ctx, private)...)
	diags.Append(private.SetKey(ctx, privateUnobserved, []byte("false"))...)
	diags.Append(setDrift(ctx, private, nil)...)
	diags.Append(private.SetKey(ctx, privateUnreachable, nil)...)
	if interim != nil {
		diags.Append(setPrivateJSON(ctx, private, privateHandover, interim.pending())...)
	} else {
		diags.Append(private.SetKey(ctx, privateHandover, nil)...)
	}
}

// putAll puts out's files on the host in order. After a failure it puts
// back what the files before the failed one changed, where the model
// says how (rollback), and reports how many files the host keeps (or may
// keep: remote.LeftInPlace) of this apply: 0 when it is as it was.
// outcomes are the puts' that succeeded.
func (r *hostResource[M, P]) putAll(ctx context.Context, client *remote.Client, m resolvedSSH, out rendered, diags *diag.Diagnostics) (failed bool, kept int, outcomes []remote.Outcome) {
	for i, f := range out.files {
		outcome, err := client.Put(ctx, f)
		if err == nil {
			outcomes = append(outcomes, outcome)
			continue
		}
		left, detail := 0, err.Error()
		if remote.LeftInPlace(err) {
			left = 1
			detail += "\n\nThe resource stays in state with what the host had before this apply (a failed create as " +
				"tainted): the next apply, or destroy, takes the change back from there."
		}
		diags.AddError("Applying File Failed", detail)
		reload := ""
		if remote.ReloadedAfterSwap(err) {
			reload = f.Reload()
		}
		if i > 0 && len(out.rollback) > 0 && r.rollBack(ctx, m, out.rollback[:i], reload, diags) {
			return true, left, outcomes
		}
		return true, i + left, outcomes
	}
	return false, len(out.files), outcomes
}

// holdsAll says whether items has every place that old has.
func holdsAll(items, old []remote.Item) bool {
	for _, o := range old {
		path, marker := o.Place()
		if !slices.ContainsFunc(items, func(it remote.Item) bool {
			p, m := it.Place()
			return p == path && m == marker
		}) {
			return false
		}
	}
	return true
}

// editsOnly says whether every item is an edit (remote.EditedFile): a
// change whose undo the state holds, with no record of it on the host.
func editsOnly(items []remote.Item) bool {
	for _, it := range items {
		switch it.(type) {
		case remote.EditedFile, *remote.EditedFile:
		default:
			return false
		}
	}
	return len(items) > 0
}

// hostGoneHint is the way out that a destroy which cannot reach its host
// adds, unless the engine's error says it already (a host given up on).
func hostGoneHint(detail string) string {
	if strings.Contains(detail, remote.GoneHint) {
		return ""
	}
	return "\n\n" + remote.GoneHint
}

// destroyWayOut names the resource whose destroy cannot reach its host,
// which Terraform's error for a destroy does not (it has no configuration
// to point at), and the ways to let it go that need no host.
func destroyWayOut(typeName, id string) string {
	return fmt.Sprintf("\n\nThis is %s %q. To let it go without its host: terraform state rm <address> (OpenTofu: tofu "+
		"state rm <address>), where terraform state list -id=%s prints <address>; or set on_destroy = \"keep\" on it and "+
		"apply with -refresh=false first, then destroy with -refresh=false.", typeName, id, remote.ShellQuote(id))
}

// stateOnlyAttributes are the attributes that say nothing about the host
// until destroy.
var stateOnlyAttributes = []string{"keep_on_destroy", "on_destroy", "destroy_actions", "adopt", "rollout_group", "timeouts"}

// dropRecords leaves the files on the host and removes kha's records of
// them, so that a later resource may write them without adopt. It never
// fails a destroy: a host that did not answer the refresh is not
// contacted, and any failure is a warning that the records stay.
func (r *hostResource[M, P]) dropRecords(ctx context.Context, private privateState, m resolvedSSH, files []remote.Item, diags *diag.Diagnostics) {
	var records []remote.File
	for _, it := range files {
		if f, ok := it.(remote.File); ok && f.Claim != nil {
			f.Claim.Keep = true
			records = append(records, f)
		}
	}
	unreachable, _ := private.GetKey(ctx, privateUnreachable)
	if len(records) == 0 || len(unreachable) > 0 || m.cfg.Validate() != nil {
		return
	}
	tflog.Info(ctx, "on_destroy = keep: leaving the files, removing kha's records of them")
	client, err := r.dial(ctx, m, toRead)
	for _, f := range records {
		if err == nil {
			err = client.Remove(ctx, f, "")
		}
		if err != nil {
			diags.AddWarning("Record Left on the Host", fmt.Sprintf("%s stays as on_destroy = \"keep\" asks, and so does kha's "+
				"record of it (%v): a resource that writes the file later needs adopt = true.", f.Path, err))
			return
		}
	}
}

// leftToItsOwner says whether a removal is done: it succeeded, or the file
// was another resource's (adopt), which a warning says.
func leftToItsOwner(err error, diags *diag.Diagnostics) bool {
	if err == nil {
		return true
	}
	if errors.Is(err, remote.ErrClaimedElsewhere) {
		diags.AddWarning("File Left to Its New Owner", err.Error())
		return true
	}
	return false
}

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

// readHost lets a hostReader model read its host, and renders it again
// from what it read; for other models out, what they rendered, stands.
func (r *hostResource[M, P]) readHost(ctx context.Context, client *remote.Client, model, config *M, out rendered) (rendered, diag.Diagnostics) {
	reader, ok := any(P(model)).(hostReader)
	if !ok {
		return out, nil
	}
	tflog.Debug(ctx, "reading what the host has before changing it")
	client.RememberReads() // the edits that follow start from what it reads
	if err := reader.readHost(ctx, client, config == nil); err != nil {
		var diags diag.Diagnostics
		diags.AddError("Reading the Host Failed", err.Error())
		return rendered{}, diags
	}
	return P(model).render(config)
}

// rollBack undoes, last first, what the files before a failed one
// changed, over a fresh connection (the failure may have been a lost
// one), running reload after the last undo when the failed file's reload
// ran. It reports whether the host is back as it was; when it is not,
// the error says what is left.
func (r *hostResource[M, P]) rollBack(ctx context.Context, m resolvedSSH, undo []*remote.EditedFile, reload string, diags *diag.Diagnostics) bool {
	client, d := r.connect(ctx, m, toChange)
	if d.HasError() {
		diags.AddError("Rolling Back Failed", "the files changed before the failure could not be put back: "+
			summary(d)+". The next apply puts the resource right.")
		return false
	}
	first := slices.IndexFunc(undo, func(f *remote.EditedFile) bool { return f != nil })
	for i := len(undo) - 1; i >= 0; i-- {
		if undo[i] == nil {
			continue
		}
		f := *undo[i]
		if i == first {
			f.ReloadCommand = reload
		}
		tflog.Info(ctx, "rolling back a file changed before the failure", map[string]any{"path": f.Path, "reload": reload != ""})
		if err := client.Remove(ctx, f, ""); err != nil {
			diags.AddError("Rolling Back Failed", fmt.Sprintf("%s was changed before the failure and could not be put back: %v. "+
				"The next apply puts the resource right.", undo[i].Path, err))
			return false
		}
	}
	return true
}

// summary joins the details of a diagnostics' errors.
func summary(d diag.Diagnostics) string {
	var parts []string
	for _, e := range d.Errors() {
		parts = append(parts, e.Detail())
	}
	return strings.Join(parts, "; ")
}

// setDrift records what a refresh found changed, as private state (JSON).
func setDrift(ctx context.Context, private privateSetter, drift []string) diag.Diagnostics {
	if len(drift) == 0 {
		return private.SetKey(ctx, privateDrift, nil)
	}
	return setPrivateJSON(ctx, private, privateDrift, drift)
}

// setPrivateJSON records v under key as JSON, as private state must be.
func setPrivateJSON(ctx context.Context, private privateSetter, key string, v any) diag.Diagnostics {
	raw, err := json.Marshal(v)
	if err != nil {
		var diags diag.Diagnostics
		diags.AddError("Internal Error", "encoding private state "+key+": "+err.Error())
		return diags
	}
	return private.SetKey(ctx, key, raw)
}

// removeLeftovers removes the files of the prior state that the new set
// does not have (a changed path, a static pod given up for systemd),
// after the new ones are in place and reloaded.
func (r *hostResource[M, P]) removeLeftovers(ctx context.Context, client *remote.Client, old, current []remote.Item, diags *diag.Diagnostics) {
	type place struct{ path, marker string }
	keep := map[place]bool{}
	for _, f := range current {
		path, marker := f.Place()
		keep[place{path, marker}] = true
	}
	for i := len(old) - 1; i >= 0; i-- {
		if path, marker := old[i].Place(); !keep[place{path, marker}] {
			if err := client.Remove(ctx, old[i], ""); !leftToItsOwner(err, diags) {
				diags.AddError("Removing Old File Failed", err.Error())
				return
			}
		}
	}
}

// importHost serves a resource's ImportState: it splits an ID
// host:port:<rest> (IPv6 hosts in brackets), fills h's id, ssh,
// keep_on_destroy and timeouts, and connects with the provider's defaults
// and the usual host key rules. example is an ID to show when the ID does
// not parse; rest is the part after host:port:.
func (r *hostResource[M, P]) importHost(ctx context.Context, id, example string, h *hostFields, private privateSetter, diags *diag.Diagnostics) (rest string, client *remote.Client) {
	address := addressOfID(id)
	host, port, _ := net.SplitHostPort(address)
	portNum, err := strconv.Atoi(port)
	rest = strings.TrimPrefix(id, address+":")
	if address == "" || err != nil || rest == "" {
		diags.AddError("Invalid Import ID", fmt.Sprintf("%q is not host:port:path, e.g. %s.", id, example))
		return "", nil
	}
	// The port the configuration leaves out stays out, so the plan after
	// the import does not change it.
	importedPort := types.Int64Value(int64(portNum))
	if defaults := r.data.sshDefaults(); portNum == 22 && (defaults == nil || defaults.Port.IsNull()) ||
		defaults != nil && defaults.Port.ValueInt64() == int64(portNum) {
		importedPort = types.Int64Null()
	}
	ssh, d := types.ObjectValueFrom(ctx, attributeTypes(resourceSSHAttribute()), sshModel{Host: types.StringValue(host), Port: importedPort})
	diags.Append(d...)
	if diags.HasError() {
		return "", nil
	}
	// The file was there before: destroy leaves it unless the
	// configuration says otherwise, and the next apply adopts it.
	h.ID, h.KeepOnDestroy, h.SSH = types.StringValue(id), types.BoolValue(false), ssh
	h.OnDestroy, h.Adopt = types.StringValue(onDestroyKeep), types.BoolValue(false)
	h.DestroyActions = types.MapValueMust(types.StringType, map[string]attr.Value{rest: types.StringValue(onDestroyKeep)})
	diags.Append(newOwnership(true).write(ctx, private)...)
	h.Timeouts.Object = types.ObjectNull(attributeTypes(hostAttributes(ctx, "", "")["timeouts"]))
	resolved, d := r.sshOf(ctx, h, types.StringNull())
	diags.Append(d...)
	if diags.HasError() {
		return "", nil
	}
	client, d = r.connect(ctx, resolved, toRead)
	diags.Append(d...)
	return rest, client
}

// onHost reads a state for Read and Delete: what it delivered, and the
// connection it was delivered over. ok is false when the state delivered
// nothing (or on error).
func (r *hostResource[M, P]) onHost(ctx context.Context, st tfsdk.State, state *M, diags *diag.Diagnostics) (out rendered, m resolvedSSH, ok bool) {
	diags.Append(st.Get(ctx, state)...)
	if diags.HasError() {
		return out, m, false
	}
	h := P(state).fields()
	out, d := P(state).render(nil)
	diags.Append(d...)
	if diags.HasError() || !delivered(out, h) {
		return out, m, false
	}
	m, d = r.sshOf(ctx, h, h.TrustedHostKey)
	diags.Append(d...)
	return out, m, !diags.HasError()
}

func (r *hostResource[M, P]) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state M
	out, m, ok := r.onHost(ctx, req.State, &state, &resp.Diagnostics)
	if !ok {
		return
	}
	h := P(&state).fields()
	timeout, d := h.Timeouts.Read(ctx, defaultReadTimeout)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := m.cfg.Validate(); err != nil || len(m.unknown) > 0 {
		// Write-only credentials are not stored: the plan looks instead.
		tflog.Info(ctx, "refresh cannot reach the host without the configuration's credentials; the plan will look", nil)
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateUnobserved, []byte("true"))...)
		return
	}
	o, d := r.observe(ctx, m, h.ID.ValueString(), out.files, showsDrift(P(&state)))
	resp.Diagnostics.Append(d...)
	if o.unreachable != nil {
		// The prior state and what it found stay; a destroy plan fails.
		why, _ := json.Marshal(o.unreachable.Error()) // private state is JSON; a string always encodes
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateUnreachable, why)...)
		return
	}
	if resp.Diagnostics.HasError() {
		return
	}
	if m.cfg.TrustsOnFirstUse() && h.TrustedHostKey.IsNull() {
		// Trust on first use turned on for an existing resource, or an
		// import: the connection that read the files records the key.
		if h.TrustedHostKey, d = trustedKeyOf(o.client); d.HasError() {
			resp.Diagnostics.Append(d...)
			return
		}
	}
	acceptInterim(ctx, req.Private, resp.Private, h, &o, &resp.Diagnostics)
	h.RemoteSHA256 = o.digest
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateUnobserved, []byte("false"))...)
	resp.Diagnostics.Append(setDrift(ctx, resp.Private, o.drift)...)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateUnreachable, nil)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *hostResource[M, P]) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state M
	out, m, ok := r.onHost(ctx, req.State, &state, &resp.Diagnostics)
	h := P(&state).fields()
	if !ok {
		return
	}
	own, d := readOwnership(ctx, req.Private)
	resp.Diagnostics.Append(d...)
	timeout, d := h.Timeouts.Delete(ctx, defaultApplyTimeout)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if h.keeps() {
		r.dropRecords(ctx, req.Private, m, r.owned(out.files, own, h, false), &resp.Diagnostics)
		return
	}
	if err := m.cfg.Validate(); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("ssh"), "No Credentials to Remove Files",
			err.Error()+". Destroy runs without the resource's configuration, so write-only secrets are not available: "+
				"set them on the provider's default_ssh or use the SSH agent, or set on_destroy = \"keep\".")
		return
	}
	client, d := r.connect(ctx, m, toChange)
	if d.HasError() {
		for _, e := range d.Errors() {
			resp.Diagnostics.AddAttributeError(path.Root("ssh"), e.Summary(), e.Detail()+hostGoneHint(e.Detail())+
				destroyWayOut("kha_"+r.name, h.ID.ValueString()))
		}
		return
	}
	out, d = r.readHost(ctx, client, &state, nil, out)
	if resp.Diagnostics.Append(d...); d.HasError() {
		return
	}
	files := r.owned(out.files, own, h, false)
	for i := len(files) - 1; i >= 0; i-- {
		command := ""
		if i == 0 {
			command = out.removeCommand
		}
		if err := client.Remove(ctx, files[i], command); !leftToItsOwner(err, &resp.Diagnostics) {
			resp.Diagnostics.AddError("Removing File Failed", err.Error())
			return
		}
	}
	if _, ok := any(P(&state)).(handingOver); ok && len(out.files) > 0 {
		if err := removeRecord(ctx, client, idPath(out.files)); err != nil {
			resp.Diagnostics.AddWarning("Handover Record Left on the Host", err.Error())
		}
	}
}
