package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/lbconfig"
)

// debianStreamModule is where Debian's libnginx-mod-stream puts the module.
const debianStreamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"

// NewNginxConfigResource is the constructor of kha_nginx_config.
func NewNginxConfigResource() resource.Resource {
	return newLBConfigResource(lbConfigKind{
		lb:              lbconfig.Nginx,
		typeSuffix:      "_nginx_config",
		description:     lbDescription("nginx (stream)", "~> "+lbconfig.NginxNote),
		configPath:      "/etc/nginx/nginx.conf",
		manifestPath:    "/etc/kubernetes/manifests/nginx-proxy.yml",
		validateCommand: "nginx -t -q -c %s",
		reloadCommand:   "systemctl reload-or-restart nginx",
		destroyCommand:  "systemctl stop nginx",
		streamModule:    debianStreamModule,
		kindAttributes: map[string]schema.Attribute{
			"stream_module": schema.StringAttribute{Optional: true,
				MarkdownDescription: "`load_module` path of the stream module. Default with `systemd`: Debian's `" + debianStreamModule +
					"`; with `static_pod`: none (the official image has it built in). Set `\"\"` for builds with it built in."},
		},
		newModel: func() lbModel { return &nginxConfigModel{} },
		render:   lbconfig.RenderNginx,
	})
}

type nginxConfigModel struct {
	lbConfigModel
	StreamModule types.String `tfsdk:"stream_module"`
}

func (m *nginxConfigModel) common() *lbConfigModel { return &m.lbConfigModel }

func (m *nginxConfigModel) applyKindAttributes(s *lbconfig.Spec) {
	if !m.StreamModule.IsNull() {
		s.Runtime.NginxStreamModule = m.StreamModule.ValueString()
	}
	// nginx checks nothing actively; there is no certificate to verify.
	s.HealthCheck.InsecureSkipVerify = true
}
