package provider

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

var (
	_ resource.Resource                     = (*fileResource)(nil)
	_ resource.ResourceWithConfigure        = (*fileResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*fileResource)(nil)
	_ resource.ResourceWithImportState      = (*fileResource)(nil)
	_ resource.ResourceWithConfigValidators = (*fileResource)(nil)
)

// NewFileResource is the constructor of kha_file.
func NewFileResource() resource.Resource { return &fileResource{} }

type fileResource struct {
	hostFiles
}

type fileModel struct {
	deliveredFields
	Path             types.String `tfsdk:"path"`
	Content          types.String `tfsdk:"content"`
	Mode             types.String `tfsdk:"mode"`
	Owner            types.String `tfsdk:"owner"`
	Group            types.String `tfsdk:"group"`
	ValidateCommand  types.String `tfsdk:"validate_command"`
	ReloadCommand    types.String `tfsdk:"reload_command"`
	CreateParentDirs types.Bool   `tfsdk:"create_parent_dirs"`
}

var modePattern = regexp.MustCompile(`^0?[0-7]{3}$`)

func (r *fileResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_file"
}

func (r *fileResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A file on a host, kept in place over SSH: the engine every `kha` resource that touches a host " +
			"uses, available for any other configuration file.\n\n" +
			"Each apply uploads the content to a temporary file next to the target, sets owner and mode, runs " +
			"`validate_command` on it, renames it atomically over the target and runs `reload_command`. When any step " +
			"fails, the previous file stays (or is restored) byte for byte, nothing half-written is left behind, and the " +
			"error names the host and the step.\n\n" +
			"Refresh reads the file's SHA-256 on the host: an edit made outside Terraform, or a deleted file, shows as " +
			"a change in the next plan and is put right by apply. An unreachable host is an error, never a silent " +
			"removal from state. Only the content's digest and non-secret connection settings are stored.\n\n" +
			"-> Secrets: prefer the provider's `default_ssh` (provider configuration is never stored) or the " +
			"`*_wo` write-only attributes (Terraform 1.11+). Refresh, import and destroy run without the resource's " +
			"configuration, so they can only use `default_ssh`, the SSH agent, or secrets stored in state.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`host:port:path`, the import ID.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"path": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Absolute path of the file on the host. Changing it replaces the resource (the old file is removed).",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^/[^\x00\n]*[^/]$`), "must be an absolute file path without NUL or newline")},
			},
			"content": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Content of the file.",
			},
			"mode": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString("0644"),
				MarkdownDescription: "Permission bits in octal. Default `0644`.",
				Validators:          []validator.String{stringvalidator.RegexMatches(modePattern, "must be octal permission bits such as \"0644\"")},
			},
			"owner": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Owner (name or id). Default: the connecting user (root with `sudo`).",
			},
			"group": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Group (name or id). Default: the owner's primary group.",
			},
			"validate_command": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Command that checks the new file before it replaces the old one; every `%s` becomes the " +
					"quoted path of the uploaded copy, e.g. `haproxy -c -f %s` or `nginx -t -c %s`. A non-zero exit fails the " +
					"apply and keeps the previous file.",
			},
			"reload_command": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Command run after the file is in place (and after it is removed on destroy), e.g. " +
					"`systemctl reload haproxy`. If it fails, the previous file is restored and the command run again.",
			},
			"create_parent_dirs": schema.BoolAttribute{
				Optional: true, Computed: true,
				Default:             booldefault.StaticBool(true),
				MarkdownDescription: "Create missing parent directories (mode `0755`). Default `true`.",
			},
			"keep_on_destroy": schema.BoolAttribute{
				Optional: true, Computed: true,
				Default:             booldefault.StaticBool(false),
				MarkdownDescription: "Leave the file on the host when the resource is destroyed. Default `false`.",
			},
			"ssh": resourceConnectionAttribute(),
			"sha256": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "SHA-256 of `content`, known at plan time.",
			},
			"remote_sha256": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "SHA-256 of the file as last seen on the host; null when the file is missing. " +
					"It differs from `sha256` when the file was changed outside Terraform.",
			},
			"trusted_host_key": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "With `ssh.insecure_trust_on_first_use`, the host key seen at the first connection, " +
					"which later connections must present.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		},
	}
}

func (r *fileResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.configure(req, resp)
}

func fileID(cfg remote.Config, p string) string { return cfg.Address() + ":" + p }

func (m *fileModel) files() []remote.File {
	mode, _ := strconv.ParseUint(m.Mode.ValueString(), 8, 32)
	return []remote.File{{
		Path:             m.Path.ValueString(),
		Content:          []byte(m.Content.ValueString()),
		Mode:             uint32(mode),
		Owner:            m.Owner.ValueString(),
		Group:            m.Group.ValueString(),
		ValidateCommand:  m.ValidateCommand.ValueString(),
		ReloadCommand:    m.ReloadCommand.ValueString(),
		CreateParentDirs: m.CreateParentDirs.ValueBool(),
	}}
}

func (r *fileResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan, config fileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if plan.Content.IsUnknown() {
		plan.SHA256, plan.RemoteSHA256 = types.StringUnknown(), types.StringUnknown()
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	desired := desiredDigest(plan.files())
	plan.SHA256 = types.StringValue(desired)

	trustOnFirstUse := false
	if req.Config.Raw.IsFullyKnown() {
		cfg, err := r.config(config.SSH, plan.TrustedHostKey)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("ssh"), "Invalid Connection", err.Error())
			return
		}
		plan.ID = types.StringValue(fileID(cfg, plan.Path.ValueString()))
		trustOnFirstUse = cfg.InsecureTrustOnFirstUse && cfg.HostKey == "" && cfg.KnownHosts == ""
	}
	if req.State.Raw.IsNull() { // create
		plan.RemoteSHA256 = types.StringValue(desired)
		plan.TrustedHostKey = types.StringNull()
		if trustOnFirstUse {
			plan.TrustedHostKey = types.StringUnknown() // recorded by the first connection
		}
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	var state fileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var d diag.Diagnostics
	plan.RemoteSHA256, d = r.planRemote(ctx, req.Private, config.SSH, state.TrustedHostKey, plan.files(), desired)
	resp.Diagnostics.Append(d...)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *fileResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.apply(ctx, req.Plan, req.Config, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *fileResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.apply(ctx, req.Plan, req.Config, &resp.State, resp.Private, &resp.Diagnostics)
}

// apply puts the planned file with the configuration's credentials and
// records what the host now has.
func (r *fileResource) apply(ctx context.Context, planned tfsdk.Plan, cfg tfsdk.Config, state *tfsdk.State, private privateSetter, diags *diag.Diagnostics) {
	var plan, config fileModel
	diags.Append(planned.Get(ctx, &plan)...)
	diags.Append(cfg.Get(ctx, &config)...)
	if diags.HasError() {
		return
	}
	observed, hostKey, d := r.put(ctx, config.SSH, plan.TrustedHostKey, plan.files())
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	plan.RemoteSHA256 = types.StringValue(observed)
	if plan.TrustedHostKey.IsUnknown() {
		plan.TrustedHostKey = types.StringValue(hostKey)
	}
	diags.Append(state.Set(ctx, &plan)...)
	diags.Append(private.SetKey(ctx, privateUnobserved, []byte("false"))...)
}

func (r *fileResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state fileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	p := state.Path.ValueString()
	if state.Content.IsNull() { // just imported: adopt what the host has
		client, cfg, diags := r.connect(ctx, state.SSH, state.TrustedHostKey)
		resp.Diagnostics.Append(diags...)
		if resp.Diagnostics.HasError() {
			return
		}
		rf, err := client.ReadFile(ctx, p)
		if err == nil && !rf.Exists {
			err = fmt.Errorf("%s has no file at %s", cfg.Address(), p)
		}
		var content []byte
		if err == nil {
			content, err = client.FetchFile(ctx, p)
		}
		if err != nil {
			resp.Diagnostics.AddError("Importing Remote File Failed", err.Error())
			return
		}
		state.Content = types.StringValue(string(content))
		state.SHA256 = types.StringValue(contentDigest(string(content)))
		state.Mode = types.StringValue(fmt.Sprintf("%04o", rf.Mode))
	}
	resp.Diagnostics.Append(r.refresh(ctx, state.SSH, state.TrustedHostKey, state.files(), &state.RemoteSHA256, resp.Private)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *fileResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state fileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || state.KeepOnDestroy.ValueBool() {
		return
	}
	resp.Diagnostics.Append(r.remove(ctx, state.SSH, state.TrustedHostKey, state.files(), state.ReloadCommand.ValueString())...)
}

// ImportState takes `host:port:path` (IPv6 hosts in brackets:
// `[fd00::1]:22:/etc/haproxy/haproxy.cfg`). Credentials and the host key
// come from the provider's default_ssh.
func (r *fileResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	i := strings.Index(req.ID, ":/")
	var host, port string
	var err error
	if i > 0 {
		host, port, err = net.SplitHostPort(req.ID[:i])
	}
	portNum, perr := strconv.Atoi(port)
	if i <= 0 || err != nil || perr != nil {
		resp.Diagnostics.AddError("Invalid Import ID",
			fmt.Sprintf("%q is not host:port:path, e.g. 10.0.0.11:22:/etc/haproxy/haproxy.cfg or [fd00::11]:22:/etc/kha/nginx.conf.", req.ID))
		return
	}
	p := req.ID[i+1:]
	conn := connectionModel{}
	conn.Host, conn.Port = types.StringValue(host), types.Int64Value(int64(portNum))
	m := fileModel{Path: types.StringValue(p), Mode: types.StringNull(), CreateParentDirs: types.BoolValue(true)}
	m.ID, m.KeepOnDestroy, m.SSH = types.StringValue(req.ID), types.BoolValue(false), &conn
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
