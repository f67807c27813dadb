package provider

import (
	"context"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

var (
	_ resource.Resource                     = (*fileResource)(nil)
	_ resource.ResourceWithConfigure        = (*fileResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*fileResource)(nil)
	_ resource.ResourceWithImportState      = (*fileResource)(nil)
	_ resource.ResourceWithConfigValidators = (*fileResource)(nil)
	_ resource.ResourceWithUpgradeState     = (*fileResource)(nil)
)

// NewFileResource is the constructor of kha_file.
func NewFileResource() resource.Resource {
	return &fileResource{hostres.Resource[fileModel, *fileModel]{Name: "file"}}
}

type fileResource struct {
	hostres.Resource[fileModel, *fileModel]
}

type fileModel struct {
	hostres.Common
	Path             types.String `tfsdk:"path"`
	Content          types.String `tfsdk:"content"`
	ContentWO        types.String `tfsdk:"content_wo"`
	Mode             types.String `tfsdk:"mode"`
	Owner            types.String `tfsdk:"owner"`
	Group            types.String `tfsdk:"group"`
	ValidateCommand  types.String `tfsdk:"validate_command"`
	ReloadCommand    types.String `tfsdk:"reload_command"`
	DestroyCommand   types.String `tfsdk:"destroy_command"`
	CreateParentDirs types.Bool   `tfsdk:"create_parent_dirs"`
}

func (m *fileModel) Fields() *hostres.Common { return &m.Common }

// Render is the one file. The write-only content is known only while
// planning and applying; a state carries its digest instead.
//
//nolint:unparam // the hostres.Model interface's signature: other models report findings
func (m *fileModel) Render(config *fileModel) (hostres.Rendered, diag.Diagnostics) {
	mode, _ := strconv.ParseUint(m.Mode.ValueString(), 8, 32)
	f := remote.File{
		Path:             m.Path.ValueString(),
		Content:          []byte(m.Content.ValueString()),
		Mode:             uint32(mode),
		Owner:            m.Owner.ValueString(),
		Group:            m.Group.ValueString(),
		ValidateCommand:  m.ValidateCommand.ValueString(),
		ReloadCommand:    m.ReloadCommand.ValueString(),
		CreateParentDirs: m.CreateParentDirs.ValueBool(),
	}
	switch {
	case config != nil && !config.ContentWO.IsNull():
		f.Content = []byte(config.ContentWO.ValueString())
	case config == nil && m.Content.IsNull():
		f.SHA256 = m.SHA256.ValueString()
	}
	return hostres.Rendered{Files: []remote.Item{f}, RemoveCommand: m.DestroyCommand.ValueString(), AlwaysDelivered: true}, nil
}

func (r *fileResource) ConfigValidators(ctx context.Context) []resource.ConfigValidator {
	return append(r.Resource.ConfigValidators(ctx),
		resourcevalidator.ExactlyOneOf(path.MatchRoot("content"), path.MatchRoot("content_wo")))
}

func (r *fileResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Version: 1,
		MarkdownDescription: "A file on a host, kept in place over SSH: the engine every `kha` resource that touches a host " +
			"uses, available for any other configuration file.\n\n" +
			"Each apply uploads the content into a private directory next to the target, sets owner and mode, runs " +
			"`validate_command` on it, and only then, if Terraform is still there to commit, renames it atomically over " +
			"the target and runs `reload_command`. When any step fails (or Terraform is interrupted before the commit), " +
			"the previous file stays (or is restored) byte for byte and nothing half-written is left behind; the error " +
			"names the host and the step.\n\n" +
			"Refresh reads the file's SHA-256, mode, owner and group on the host: an edit made outside Terraform, a " +
			"changed mode or a deleted file shows in the next plan and is put right by apply. A host that does not answer is a " +
			"warning, never a silent removal from state.\n\n" +
			"Destroy gives the host back what it had (`on_destroy`): a file that was at the path before kha comes back " +
			"byte for byte with its mode and owner, and a file kha created goes. An apply whose file the host has " +
			"already (content, mode and owner) writes nothing and runs no `reload_command`.\n\n" +
			"-> **Import** takes `host:port:path`. It reads the file's digest and mode, and its content only when every " +
			"user of the host may read it (mode `o+r`, e.g. a CA certificate), so that the plan after importing a file " +
			"the configuration has already is empty. Other files may hold secrets and are never read: the plan after " +
			"their import records `content`, and the apply writes nothing when the host has it. An imported file stays " +
			"on destroy unless `on_destroy` says otherwise.\n\n" +
			"-> **Secrets.** `content` is stored in state and shown in plans, like any attribute. For secret content use " +
			"`content_wo` (Terraform 1.11+): it is never stored or shown, only its digest is. Keep SSH secrets on the " +
			"provider's `default_ssh` (provider configuration is never stored) or in the `*_wo` attributes. Refresh, import " +
			"and destroy run without the resource's configuration, so they can only use `default_ssh`, the SSH agent, or " +
			"secrets stored in state.",
		Attributes: hostres.WithHostAttributes(ctx, map[string]schema.Attribute{
			"path": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Absolute path of the file on the host. Changing it replaces the resource (the old file is removed). " +
					"The names kha keeps for itself next to the files it manages are refused at plan: `.kha-lock`, " +
					"`.<name>.kha`, `.<name>.kha.handover`, `.<name>.kha.previous`, `.<name>.kha.original` and " +
					"`.<name>.kha-<anything>` (and paths inside them). So that those fit in a file name's 255 bytes " +
					"(`NAME_MAX`), the file's own name has at most 237 bytes.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{managedPathValidator()},
			},
			"content": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Content of the file; stored in state and shown in plans. Exactly one of `content` and " +
					"`content_wo` is required.",
			},
			"content_wo": schema.StringAttribute{
				Optional: true, Sensitive: true, WriteOnly: true,
				MarkdownDescription: "Write-only content of the file, for secrets: never stored in plan or state; `sha256` " +
					"records its digest, so a change still plans an update. Requires Terraform 1.11 or later.",
			},
			"mode": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString("0644"),
				MarkdownDescription: "Permission bits in octal. Default `0644`. A changed mode on the host shows as drift.",
				Validators:          []validator.String{modeValidator()},
			},
			"owner": schema.StringAttribute{
				Optional:            true,
				Validators:          []validator.String{accountValidator()},
				MarkdownDescription: "Owner (name or numeric id). Default: the connecting user (root with `sudo`). When set, another owner on the host shows as drift.",
			},
			"group": schema.StringAttribute{
				Optional:            true,
				Validators:          []validator.String{accountValidator()},
				MarkdownDescription: "Group (name or numeric id). Default: the owner's primary group. When set, another group on the host shows as drift.",
			},
			"validate_command": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Command that checks the new file before it replaces the old one, e.g. `haproxy -c -f %s` " +
					"or `nginx -t -c %s`. " + validateCommandPaths + " A non-zero exit fails the apply and keeps the previous file.",
			},
			"reload_command": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Command run after the file is in place, e.g. `systemctl reload haproxy`. If it fails, " +
					"or outlasts the timeout, the previous file is restored and the command run again (a first create removes " +
					"the new file). Destroy does not run it: see `destroy_command`.",
			},
			"destroy_command": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Command run after the file is removed on destroy, e.g. `systemctl stop haproxy@etcd` " +
					"or `sysctl --system`; not run when the file was already gone. Default: none.",
			},
			"create_parent_dirs": schema.BoolAttribute{
				Optional: true, Computed: true,
				Default:             booldefault.StaticBool(true),
				MarkdownDescription: "Create missing parent directories (mode `0755`). Default `true`.",
			},
		}, "`host:port:path`, the import ID.", "SHA-256 of the content (`content` or `content_wo`), known at plan time."),
	}
}

// ImportState takes `host:port:path` (IPv6 hosts in brackets:
// `[fd00::1]:22:/etc/haproxy/haproxy.cfg`). Credentials and the host key
// come from the provider's default_ssh. The file's digest and mode are
// read, and its content only when every user of the host may read it
// (o+r): other files may hold secrets, so the configuration says what
// they should be and the next apply records it, writing nothing when the
// host has it already.
func (r *fileResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	m := fileModel{CreateParentDirs: types.BoolValue(true)}
	p, client := r.ImportHost(ctx, req.ID, "10.0.0.11:22:/etc/haproxy/haproxy.cfg or [fd00::11]:22:/etc/kha/nginx.conf", &m.Common, resp.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if !hostres.FilePathPattern.MatchString(p) {
		resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("%q in %q is not an absolute path to a file.", p, req.ID))
		return
	}
	m.Path = types.StringValue(p)
	// The file's digest and mode, never its content.
	seen, err := client.Observe(ctx, []remote.Item{remote.File{Path: p}})
	if err == nil && !seen[0].Exists {
		err = fmt.Errorf("%s has no file at %s", client.Address(), p)
	}
	if err != nil {
		resp.Diagnostics.AddError("Importing Remote File Failed", err.Error())
		return
	}
	m.Mode, m.SHA256 = types.StringValue(fmt.Sprintf("%04o", seen[0].Mode)), types.StringValue(seen[0].SHA256)
	if seen[0].Mode&0o004 != 0 {
		if content, err := client.ReadFile(ctx, p); err == nil && remote.SHA256(content) == seen[0].SHA256 && utf8.Valid(content) {
			m.Content = types.StringValue(string(content))
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (m *fileModel) ConflictName() string {
	return fmt.Sprintf("kha_file with path = %q", m.Path.ValueString())
}

// PathSettings: the attributes that set its files' paths.
func (m *fileModel) PathSettings() []hostres.PathSetting {
	return []hostres.PathSetting{{Attribute: path.Root("path"), Value: m.Path}}
}
