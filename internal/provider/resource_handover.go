package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

var (
	_ resource.ResourceWithConfigure        = (*handoverResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*handoverResource)(nil)
	_ resource.ResourceWithConfigValidators = (*handoverResource)(nil)
)

// NewHandoverResource is the constructor of kha_handover.
func NewHandoverResource() resource.Resource {
	return &handoverResource{hostres.Resource[handoverModel, *handoverModel]{Name: "handover"}}
}

type handoverResource struct {
	hostres.Resource[handoverModel, *handoverModel]
}

// The lifecycle's optional hooks the model implements (internal/hostres/hooks.go).
var (
	_ hostres.DestroyLeaver = (*handoverModel)(nil)
)

type handoverModel struct {
	hostres.Common
	TargetID     types.String `tfsdk:"target_id"`
	TargetSHA256 types.String `tfsdk:"target_sha256"`
}

func (m *handoverModel) Fields() *hostres.Common { return &m.Common }

// LeavesOnDestroy: a pending handover stays its target's.
func (m *handoverModel) LeavesOnDestroy() {}

// PathSettings: no attribute sets the path of the record it keeps; its
// target's id names the configuration beside it.
func (m *handoverModel) PathSettings() []hostres.PathSetting { return nil }

func (m *handoverModel) ConflictName() string {
	return fmt.Sprintf("kha_handover of %q", m.TargetID.ValueString())
}

func (r *handoverResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"target_id": schema.StringAttribute{Required: true,
			Validators: []validator.String{stringvalidator.RegexMatches(targetIDPattern, "must be the `id` of a kha_haproxy_config, "+
				"kha_nginx_config or kha_keepalived_config delivered over SSH (host:port:/path)")},
			MarkdownDescription: "The `id` of the resource whose handover this ends: a `kha_haproxy_config`, `kha_nginx_config` " +
				"or `kha_keepalived_config` with `handover = true`."},
		"target_sha256": schema.StringAttribute{Required: true,
			Validators: []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^[0-9a-f]{64}$`),
				"must be the target's `handover_sha256`, a hex SHA-256 digest")},
			MarkdownDescription: "The target's `handover_sha256`: the digest of the final configuration, its path and the " +
				"commands that put it in place, as this configuration renders them. This resource runs and writes only what a " +
				"record with this digest holds: a record that Terraform did not plan (written by anyone else, or by an older " +
				"configuration) fails the apply and is not used. It changes with every change of the target, which makes " +
				"Terraform apply this resource in the same run, after the target and after everything this resource `depends_on`."},
	}
	attrs = hostres.WithHostAttributes(ctx, attrs, "`host:port:path` of the handover's record, `handover` in the private directory (`.<name>.kha`, mode `0700`) that kha "+
		"keeps next to the file the target's id names.",
		"Digest of a host with no handover pending; `remote_sha256` differs while one is.")
	attrs["on_destroy"] = schema.StringAttribute{Optional: true, Computed: true,
		Validators:          []validator.String{stringvalidator.OneOf(hostres.OnDestroyKeep)},
		MarkdownDescription: "Always `keep`: destroy does not contact the host; a pending handover is its target's to end or remove."}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Ends the handover of a load balancer or keepalived resource with `handover = true`: once " +
			"the clients have moved to its new address, it drops the previous one, so that a port or a VIP moves in one " +
			"apply without a failed request:\n\n" +
			"1. the target's apply serves the new address **and** the previous one (an interim configuration, validated, " +
			"reloaded and verified like any other), and leaves a record of its final configuration in the private directory kha keeps next " +
			"to it (`.<name>.kha`, mode `0700`, the connection's effective user's: no other local user can write or swap a record " +
			"whose commands kha runs; a record anyone else could have written is reported and never used);\n" +
			"2. the kubeconfigs (`kha_kubeconfig_server`) and the cluster's copies of the endpoint " +
			"(`kha_endpoint_configmaps`) move to the new address;\n" +
			"3. this resource, which `depends_on` them, puts the final configuration in place through the same steps: " +
			"validated, reloaded, verified, and put back with the interim one on any failure.\n\n" +
			"```terraform\nresource \"kha_handover\" \"vip\" {\n  for_each      = kha_haproxy_config.vip\n" +
			"  target_id     = each.value.id\n  target_sha256 = each.value.handover_sha256\n  ssh           = { host = each.value.ssh.host }\n" +
			"  depends_on    = [kha_kubeconfig_server.node, kha_endpoint_configmaps.cluster]\n}\n```\n\n" +
			"With nothing pending, apply changes nothing. A final configuration that its target has changed since is left " +
			"to the target. Refresh reports a pending handover as drift, so an apply that failed half way ends it in the " +
			"next run, again after the clients. Destroy does not contact the host.",
		Attributes: attrs,
	}
}

// targetIDPattern is a delivered resource's id: host:port:/absolute/path.
var targetIDPattern = regexp.MustCompile(`^.+:[0-9]+:/.+$`)

// targetPath is the target's configuration path, from its id.
func (m *handoverModel) targetPath() string {
	id := m.TargetID.ValueString()
	address := hostres.AddressOfID(id)
	if address == "" {
		return ""
	}
	return strings.TrimPrefix(id, address+":")
}

func (m *handoverModel) Render(*handoverModel) (hostres.Rendered, diag.Diagnostics) {
	var diags diag.Diagnostics
	targetPath := m.targetPath()
	if !strings.HasPrefix(targetPath, "/") {
		diags.AddAttributeError(path.Root("target_id"), "Invalid Target", fmt.Sprintf("%q is not the id of a resource "+
			"delivered over SSH (host:port:/path): pass the target's id, e.g. kha_haproxy_config.vip[each.key].id.", m.TargetID.ValueString()))
		return hostres.Rendered{}, diags
	}
	return hostres.Rendered{AlwaysDelivered: true, Files: []remote.Item{remote.Handover{Path: targetPath, Seal: m.TargetSHA256.ValueString(),
		Verifier: decodeLBVerifier}}}, diags
}
