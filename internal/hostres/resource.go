package hostres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"regexp"
	"slices"
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

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// Resource is the one lifecycle of every resource that keeps files
// (or marked blocks) on a host: render at plan time from the rendering
// inputs alone (`ssh` may still be unknown), deliver over SSH,
// observe drift by digest, remove what the configuration no longer has,
// and clean the host on destroy. A resource embeds it with its model type
// and declares only its schema and how the model renders to files.
type Resource[M any, P Model[M]] struct {
	// Name is the resource type's name after the provider's: "file"
	// for kha_file.
	Name string
	data *ProviderData
}

// NewModel is a new, empty model of the resource: what its plan and
// state decode into (the provider's tests match it against the schema).
func (r *Resource[M, P]) NewModel() any { return new(M) }

func (r *Resource[M, P]) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + r.Name
}

// Rendered is what a resource keeps on its host.
type Rendered struct {
	Files []remote.Item
	// RemoveCommand runs after the files are removed on destroy.
	RemoveCommand string
	// AlwaysDelivered resources go to a host without an `ssh` attribute
	// (all from default_ssh); the others only render without one.
	AlwaysDelivered bool
	// Rollback, when set, holds for each file what puts the host back to
	// how it was before this apply (nil: nothing to undo), removed with
	// Remove: after a failed file, those before it are rolled back.
	Rollback []*remote.EditedFile
}

// Common are the attributes every host resource has.
type Common struct {
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
	DefaultApplyTimeout = 10 * time.Minute
	DefaultReadTimeout  = 5 * time.Minute
)

// The values of on_destroy, and what destroy_actions says besides them.
const (
	OnDestroyRestore  = "restore"
	OnDestroyDelete   = "delete"
	OnDestroyKeep     = "keep"
	actionRemoveBlock = "remove block"
	actionUndoEdit    = "undo edit"
)

// hostAttributes are the schema of Common; what the digests cover is
// the resource's to say.
func hostAttributes(ctx context.Context, idDescription, sha256Description string) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"id":  schema.StringAttribute{Computed: true, MarkdownDescription: idDescription},
		"ssh": ResourceSSHAttribute(),
		"keep_on_destroy": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			DeprecationMessage: `Use on_destroy = "keep" instead.`,
			MarkdownDescription: "Leave the files on the host when the resource is destroyed, as `on_destroy = \"keep\"` does. " +
				"Default `false`. Deprecated: use `on_destroy`."},
		"on_destroy": schema.StringAttribute{Optional: true, Computed: true,
			Validators: []validator.String{stringvalidator.OneOf(OnDestroyRestore, OnDestroyDelete, OnDestroyKeep)},
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
		"timeouts": timeoutsAttribute(ctx),
	}
}

// timeoutsAttribute is the `timeouts` of every host resource.
func timeoutsAttribute(ctx context.Context) schema.Attribute {
	return timeouts.Attributes(ctx, timeouts.Opts{Create: true, Read: true, Update: true, Delete: true,
		CreateDescription: "How long creating may take, connecting, validating and reloading included, from the resource's " +
			"turn in the provider's `rollout` on (the wait for it is not counted). Default `10m`.",
		ReadDescription: "How long a refresh may take. Default `5m`.",
		UpdateDescription: "How long an update may take, from the resource's turn in the provider's `rollout` on (the wait " +
			"for it is not counted). Default `10m`.",
		DeleteDescription: "How long removing the files and running the destroy command may take. Default `10m`."})
}

// WithHostAttributes adds hostAttributes to a resource's own.
func WithHostAttributes(ctx context.Context, own map[string]schema.Attribute, idDescription, sha256Description string) map[string]schema.Attribute {
	for name, a := range hostAttributes(ctx, idDescription, sha256Description) {
		own[name] = a
	}
	return own
}

func (r *Resource[M, P]) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = ProviderDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *Resource[M, P]) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{SSHValidator{}}
}

// sshOf is a resource's `ssh` with the provider's default_ssh applied.
func (r *Resource[M, P]) sshOf(ctx context.Context, h *Common, trusted types.String) (ResolvedSSH, diag.Diagnostics) {
	return resolveSSH(ctx, r.data, h.SSH, trusted)
}

// resolveSSH is an `ssh` attribute with the provider's default_ssh applied.
func resolveSSH(ctx context.Context, data *ProviderData, ssh types.Object, trusted types.String) (ResolvedSSH, diag.Diagnostics) {
	c, diags := SSHFrom(ctx, ssh)
	if diags.HasError() {
		return ResolvedSSH{}, diags
	}
	m, err := ResolveSSH(c, data.SSHDefaults(), trusted.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("ssh"), "Invalid Connection", err.Error())
	}
	return m, diags
}

// Reach connects to the host of a resource whose lifecycle is its own
// (kha_endpoint_configmaps) as the lifecycle's runs connect to theirs:
// ssh with default_ssh applied, for the purpose, the host key recorded in
// trustedHostKey on first use. No Host comes back without a reason: a
// refresh that cannot connect (write-only credentials, which the state
// does not keep, or a host that does not answer: the Unreachable warning)
// keeps what the resource had; every other failure is an error at ssh.
// id names the resource in the warning.
func Reach(ctx context.Context, data *ProviderData, ssh types.Object, trustedHostKey *types.String, to Purpose, id string) (Host, diag.Diagnostics) {
	m, diags := resolveSSH(ctx, data, ssh, *trustedHostKey)
	if diags.HasError() {
		return nil, diags
	}
	if err := m.Config.Validate(); err != nil && len(m.Unknown) == 0 {
		if to == ToRead {
			tflog.Info(ctx, "refresh cannot reach the host without the configuration's credentials; the next apply reads it", nil)
			return nil, diags
		}
		diags.AddAttributeError(path.Root("ssh"), "Invalid Connection", err.Error())
		return nil, diags
	}
	tflog.Debug(ctx, "connecting", map[string]any{"host": m.Config.Address()})
	host, err := DialHost(ctx, data, m, to)
	switch {
	case to == ToRead && remote.Unreachable(err):
		return nil, append(diags, Unreachable(id, err)...)
	case err != nil:
		diags.AddAttributeError(path.Root("ssh"), ConnectSummary(err), err.Error())
		return nil, diags
	}
	if m.Config.TrustsOnFirstUse() && trustedHostKey.IsNull() || trustedHostKey.IsUnknown() {
		*trustedHostKey = types.StringNull()
		if m.Config.TrustsOnFirstUse() {
			key, d := TrustedKeyOf(host)
			if diags.Append(d...); d.HasError() {
				return nil, diags
			}
			*trustedHostKey = key
		}
	}
	return host, diags
}

// Purpose says what a connection is for, which sets how long connecting
// may take: ssh.timeout to change the host, ssh.refresh_timeout to read it.
type Purpose int

const (
	ToChange Purpose = iota
	// ToRead is a refresh's: a host that does not answer leaves the
	// resource as it was.
	ToRead
	// ToImport reads as a refresh does, but an import has nothing to
	// keep: a host that does not answer fails it.
	ToImport
)

// connect connects to the host (the pool reuses its connection).
func (r *Resource[M, P]) connect(ctx context.Context, m ResolvedSSH, to Purpose) (Host, diag.Diagnostics) {
	host, err := r.dial(ctx, m, to)
	var diags diag.Diagnostics
	if err != nil {
		diags.AddAttributeError(path.Root("ssh"), ConnectSummary(err), err.Error())
	}
	return host, diags
}

// ConnectSummary is the summary of a connect error; the engine's errors
// all say "SSH Connection Failed".
func ConnectSummary(err error) string {
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
func (r *Resource[M, P]) dial(ctx context.Context, m ResolvedSSH, to Purpose) (Host, error) {
	return DialHost(ctx, r.data, m, to)
}

// DialHost gets the host a resolved connection reaches through the
// provider's dialer, for the purpose; the engine's error stays as it is.
func DialHost(ctx context.Context, data *ProviderData, m ResolvedSSH, to Purpose) (Host, error) {
	if len(m.Unknown) > 0 {
		return nil, internalError{"Connection Not Known", "ssh." + strings.Join(m.Unknown, ", ssh.") +
			" is still unknown. This is always a bug in the provider."}
	}
	if data == nil {
		return nil, internalError{"Provider Not Configured", "The provider was not configured. This is always a bug in the provider."}
	}
	return data.dial(ctx, m.Config, to)
}

// Unreachable is the warning of a read that gave up on a host that does
// not answer: the resource keeps what it had, and the plan goes on.
func Unreachable(id string, err error) diag.Diagnostics {
	var diags diag.Diagnostics
	diags.AddAttributeWarning(path.Root("ssh"), "Host Unreachable: "+AddressOfID(id),
		fmt.Sprintf("%s was not read: the host did not answer (%v).\n\nThe resource keeps its prior state: no change on "+
			"the host is assumed, and the plan goes on for every other host. A change to this resource fails until the host "+
			"answers; how long a read tries is ssh.refresh_timeout (default 20s), how long a change tries is ssh.timeout.",
			id, err))
	return diags
}

// delivered says whether a model goes to a host.
func delivered(out Rendered, h *Common) bool {
	return out.AlwaysDelivered || !h.SSH.IsNull()
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

// DesiredDigest is the digest of the files the configuration wants.
func DesiredDigest(files []remote.Item) string {
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

// AddressOfID returns the host:port part of a hostID, or "".
func AddressOfID(id string) string {
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
func (r *Resource[M, P]) readHost(ctx context.Context, client Host, model, config *M, out Rendered) (Rendered, diag.Diagnostics) {
	reader, ok := any(P(model)).(HostReader)
	if !ok {
		return out, nil
	}
	tflog.Debug(ctx, "reading what the host has before changing it")
	client.RememberReads() // the edits that follow start from what it reads
	if err := reader.ReadHost(ctx, client, config == nil); err != nil {
		var diags diag.Diagnostics
		diags.AddError("Reading the Host Failed", err.Error())
		return Rendered{}, diags
	}
	return P(model).Render(config)
}

// Summary joins the details of a diagnostics' errors.
func Summary(d diag.Diagnostics) string {
	var parts []string
	for _, e := range d.Errors() {
		parts = append(parts, e.Detail())
	}
	return strings.Join(parts, "; ")
}

// loadState reads a state for Read and Delete: what it delivered, the
// connection it was delivered over, and the private record. ok is false
// when the state delivered nothing (or on error).
func (r *Resource[M, P]) loadState(ctx context.Context, st tfsdk.State, private privateState, state *M, diags *diag.Diagnostics) (out Rendered, m ResolvedSSH, rec privateRecord, ok bool) {
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

// configOf is the configuration as the lifecycle and Model.Render read
// it: the plan's values, with the configuration's own `ssh` (the plan has
// no write-only credentials), on_destroy (null unless set) and top-level
// write-only attributes, each read alone. Nothing else a model reads
// differs between the two, and decoding the whole configuration costs as
// much as decoding the plan.
func configOf[M any](ctx context.Context, cfg tfsdk.Config, plan *M) (M, diag.Diagnostics) {
	config := *plan
	var diags diag.Diagnostics
	for name, a := range cfg.Schema.GetAttributes() {
		if name != "ssh" && name != "on_destroy" && !a.IsWriteOnly() {
			continue
		}
		field, ok := fieldTagged(reflect.ValueOf(&config).Elem(), name)
		if !ok {
			diags.AddError("Attribute Not in the Model", fmt.Sprintf("The model has no field for %q. This is always a bug in the provider.", name))
			continue
		}
		diags.Append(cfg.GetAttribute(ctx, path.Root(name), field.Addr().Interface())...)
	}
	return config, diags
}

// fieldTagged is the field of a model struct, or of a struct it embeds,
// that holds the attribute name.
func fieldTagged(v reflect.Value, name string) (reflect.Value, bool) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Tag.Get("tfsdk") == name {
			return v.Field(i), true
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if field, ok := fieldTagged(v.Field(i), name); ok {
				return field, true
			}
		}
	}
	return reflect.Value{}, false
}

// FilePathPattern is an absolute, clean path to a file (no "." or ".."
// components, no trailing slash, no NUL or newline): what the SSH engine
// can carry safely.
var FilePathPattern = regexp.MustCompile(`^(/(\.\.[^/\x00\n]+|\.[^./\x00\n][^/\x00\n]*|[^./\x00\n][^/\x00\n]*))+$`)

// MarkerPattern is what a block marker may hold.
var MarkerPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// known reports whether a value is neither null nor unknown.
func known(v attr.Value) bool { return !v.IsNull() && !v.IsUnknown() }

// objectTypes are the attribute types of a nested object attribute
// (`ssh`, `timeouts`).
func objectTypes(a schema.Attribute) map[string]attr.Type {
	return a.GetType().(attr.TypeWithAttributeTypes).AttributeTypes() //nolint:forcetypeassert // an object by construction
}
