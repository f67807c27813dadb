package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/lbconfig"
)

var (
	_ resource.ResourceWithConfigure        = (*nginxConfigResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*nginxConfigResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*nginxConfigResource)(nil)
	_ resource.ResourceWithConfigValidators = (*nginxConfigResource)(nil)
	_ resource.ResourceWithUpgradeState     = (*nginxConfigResource)(nil)
)

// NewNginxConfigResource is the constructor of kha_nginx_config.
func NewNginxConfigResource() resource.Resource { return &nginxConfigResource{} }

type nginxConfigResource struct {
	hostResource[nginxConfigModel, *nginxConfigModel]
}

// debianStreamModule is where Debian's libnginx-mod-stream puts the module.
const debianStreamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"

var nginxKind = lbKind{
	lb:              lbconfig.Nginx,
	name:            "nginx (stream)",
	configPath:      "/etc/nginx/nginx.conf",
	manifestPath:    "/etc/kubernetes/manifests/nginx-proxy.yml",
	validateCommand: "nginx -t -q -c %s",
	reloadCommand:   "systemctl reload-or-restart nginx",
	destroyCommand:  "systemctl stop nginx",
	streamModule:    debianStreamModule,
}

type nginxConfigModel struct {
	lbConfigModel
	StreamModule types.String `tfsdk:"stream_module"`
}

func (m *nginxConfigModel) spec() lbconfig.Spec {
	s := m.lbConfigModel.spec(nginxKind)
	if !m.StreamModule.IsNull() {
		s.Runtime.NginxStreamModule = m.StreamModule.ValueString()
	}
	// nginx checks nothing actively; there is no certificate to verify.
	s.HealthCheck.InsecureSkipVerify = true
	return s
}

func (m *nginxConfigModel) render(*nginxConfigModel) (rendered, diag.Diagnostics) {
	return m.lbConfigModel.render(nginxKind, m.spec(), lbconfig.RenderNginx)
}

func (r *nginxConfigResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_nginx_config"
}

func (r *nginxConfigResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	validateLB(ctx, req.Config, (*nginxConfigModel).spec, &resp.Diagnostics)
}

func (r *nginxConfigResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = lbSchema(ctx, nginxKind, "~> "+lbconfig.NginxNote, map[string]schema.Attribute{
		"stream_module": schema.StringAttribute{Optional: true,
			MarkdownDescription: "`load_module` path of the stream module. Default with `systemd`: Debian's `" + debianStreamModule +
				"`; with `static_pod`: none (the official image has it built in). Set `\"\"` for builds with it built in."},
	})
}
