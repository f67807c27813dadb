package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

var (
	_ resource.ResourceWithConfigure        = (*hostsEntriesResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*hostsEntriesResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*hostsEntriesResource)(nil)
	_ resource.ResourceWithConfigValidators = (*hostsEntriesResource)(nil)
	_ resource.ResourceWithUpgradeState     = (*hostsEntriesResource)(nil)
	_ resource.ResourceWithImportState      = (*hostsEntriesResource)(nil)
)

// NewHostsEntriesResource is the constructor of kha_hosts_entries.
func NewHostsEntriesResource() resource.Resource {
	return &hostsEntriesResource{hostres.Resource[hostsEntriesModel, *hostsEntriesModel]{Name: "hosts_entries"}}
}

type hostsEntriesResource struct {
	hostres.Resource[hostsEntriesModel, *hostsEntriesModel]
}

// The lifecycle's optional hooks the model implements (internal/hostres/hooks.go).
var (
	_ hostres.DriftShower = (*hostsEntriesModel)(nil)
)

type hostsEntriesModel struct {
	hostres.Common
	DestroyCommand types.String   `tfsdk:"destroy_command"`
	Entries        []types.String `tfsdk:"entries"`
	Path           types.String   `tfsdk:"path"`
	Marker         types.String   `tfsdk:"marker"`
	Block          types.String   `tfsdk:"block"`
}

func (m *hostsEntriesModel) Fields() *hostres.Common { return &m.Common }

func (r *hostsEntriesResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"entries": schema.ListAttribute{
			Required: true, ElementType: types.StringType,
			MarkdownDescription: "Lines of the block: an IP address and host names, e.g. `kha_cluster_endpoints.<name>.hosts_entries` " +
				"(`10.0.0.100 api.k8s.example.com`: the load balancer's name, as kubespray up to v2.28 wrote it).",
		},
		"path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("/etc/hosts"),
			Validators:          []validator.String{managedPathValidator()},
			MarkdownDescription: "The file. Default `/etc/hosts`. Changing it (or `marker`) removes the old block after the new one is in place."},
		"marker": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("entries"),
			Validators: []validator.String{stringvalidator.RegexMatches(hostres.MarkerPattern, "must be letters, digits, '.', '-' or '_'")},
			MarkdownDescription: "Names the block (`# BEGIN kha <marker>` … `# END kha <marker>`), so several resources can " +
				"manage blocks in one file; two with one marker in one file of one host fail the plan. Default `entries`."},
		"block":           schema.StringAttribute{Computed: true, MarkdownDescription: "The block as it stands in the file, markers included; known at plan time."},
		"destroy_command": schema.StringAttribute{Optional: true, MarkdownDescription: "Run after the block is removed on destroy. Default: none."},
	}
	resp.Schema = schema.Schema{
		Version: 1,
		MarkdownDescription: "Keeps a marked block of lines in a host's `/etc/hosts` (or another file of that format): " +
			"every other line stays as it is. Re-applying replaces the block where it stands rather than adding one; an " +
			"edit inside the block, or its removal, shows in the next plan; destroy removes only the block.\n\n" +
			"Several resources may keep blocks in one file (each with its own `marker`), in parallel and from several " +
			"Terraform runs: changes of one directory wait for each other (`flock` on the host, on a directory " +
			"`.kha-lock` that kha keeps next to the file, mode `0700`, which no other local user can open). A block whose marker " +
			"lines were damaged by hand (a deleted `# END` line) is refused with its lines, never repaired by deleting " +
			"what follows; a file with CRLF line endings keeps them. The file is rewritten through a copy renamed into " +
			"place, keeping its mode and owner; where it is a mount point (a container's `/etc/hosts`), it is written in " +
			"place instead." + hostres.ImportDoc("the block", "host:port:path") + " A block with another `marker` than `entries` is " +
			"imported as `host:port:path#marker`.",
		Attributes: hostres.WithHostAttributes(ctx, attrs, "`host:port:path` of the file when delivered over SSH, else the block's digest.",
			"Digest of the block, markers included, known at plan time."),
	}
}

func (r *hostsEntriesResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var list types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("entries"), &list)...)
	if list.IsUnknown() || list.IsNull() || resp.Diagnostics.HasError() {
		return
	}
	var entries []types.String
	resp.Diagnostics.Append(list.ElementsAs(ctx, &entries, false)...)
	resp.Diagnostics.Append(checkEntries(entries)...)
}

func checkEntries(entries []types.String) diag.Diagnostics {
	var diags diag.Diagnostics
	for i, e := range entries {
		if e.IsUnknown() {
			continue
		}
		if err := endpoints.CheckHostsEntry(e.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("entries").AtListIndex(i), "Invalid Hosts Entry", err.Error())
		}
	}
	return diags
}

// ImportState takes host:port:path, or host:port:path#marker.
func (r *hostsEntriesResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	r.ImportRendered(ctx, req, resp, "10.0.0.21:22:/etc/hosts or 10.0.0.21:22:/etc/hosts#apiserver", true, "entries",
		func(m *hostsEntriesModel, p, marker string) {
			m.Path, m.Marker = types.StringValue(p), types.StringValue(marker)
		})
}

func (m *hostsEntriesModel) Render(config *hostsEntriesModel) (hostres.Rendered, diag.Diagnostics) {
	if config == nil && m.Entries == nil { // imported: the block found, until the first apply
		return hostres.ImportedFile(&m.Common, m.Path.ValueString(), m.Marker.ValueString(), 0), nil
	}
	diags := checkEntries(m.Entries)
	if diags.HasError() {
		return hostres.Rendered{}, diags
	}
	lines := make([]string, len(m.Entries))
	for i, e := range m.Entries {
		lines[i] = strings.Join(strings.Fields(e.ValueString()), " ")
	}
	content := strings.Join(lines, "\n")
	m.Block = types.StringValue(remote.BlockLines(m.Marker.ValueString(), content))
	return hostres.Rendered{Files: []remote.Item{remote.Block{Path: m.Path.ValueString(), Marker: m.Marker.ValueString(), Content: []byte(content)}},
		RemoveCommand: m.DestroyCommand.ValueString()}, diags
}

func (m *hostsEntriesModel) ConflictName() string {
	name := fmt.Sprintf("kha_hosts_entries with marker = %q", m.Marker.ValueString())
	if len(m.Entries) > 0 {
		name += fmt.Sprintf(" and entries = [%q", m.Entries[0].ValueString())
		if len(m.Entries) > 1 {
			name += ", …"
		}
		name += "]"
	}
	return name
}

// PathSettings: the attributes that set its files' paths.
func (m *hostsEntriesModel) PathSettings() []hostres.PathSetting {
	return []hostres.PathSetting{{Attribute: path.Root("path"), Value: m.Path}}
}

// ShowsDrift: a hosts block is addresses and names, nothing secret.
func (m *hostsEntriesModel) ShowsDrift() bool { return true }
