package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/lbconfig"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

var (
	_ resource.ResourceWithConfigure        = (*nginxConfigResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*nginxConfigResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*nginxConfigResource)(nil)
	_ resource.ResourceWithConfigValidators = (*nginxConfigResource)(nil)
	_ resource.ResourceWithUpgradeState     = (*nginxConfigResource)(nil)
	_ resource.ResourceWithImportState      = (*nginxConfigResource)(nil)
)

// NewNginxConfigResource is the constructor of kha_nginx_config.
func NewNginxConfigResource() resource.Resource {
	return &nginxConfigResource{hostres.Resource[nginxConfigModel, *nginxConfigModel]{Name: "nginx_config"}}
}

type nginxConfigResource struct {
	hostres.Resource[nginxConfigModel, *nginxConfigModel]
}

// The lifecycle's optional hooks the model implements (internal/hostres/hooks.go).
var (
	_ hostres.PlanChecker    = (*nginxConfigModel)(nil)
	_ hostres.HandingOver    = (*nginxConfigModel)(nil)
	_ hostres.ConflictMover  = (*nginxConfigModel)(nil)
	_ hostres.DriftShower    = (*nginxConfigModel)(nil)
	_ hostres.HostReader     = (*nginxConfigModel)(nil)
	_ hostres.HostWatcher    = (*nginxConfigModel)(nil)
	_ hostres.AppliedWatcher = (*nginxConfigModel)(nil)
	_ watchedService         = (*nginxConfigModel)(nil)
)

// debianStreamModule is where Debian's libnginx-mod-stream puts the module.
const debianStreamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"

var nginxKind = lbKind{
	lb:               lbconfig.Nginx,
	name:             "nginx (stream)",
	configPath:       "/etc/nginx/nginx.conf",
	manifestPath:     "/etc/kubernetes/manifests/nginx-proxy.yml",
	validateCommand:  "nginx -t -q -c %s",
	reloadCommand:    "systemctl reload-or-restart nginx",
	preflightCommand: "nginx -e stderr -c %s -g 'daemon off;'",
	destroyCommand:   "systemctl stop nginx",
	streamModule:     debianStreamModule,
}

type nginxConfigModel struct {
	lbConfigModel
	StreamModule      types.String       `tfsdk:"stream_module"`
	WorkerConnections types.Int64        `tfsdk:"worker_connections"`
	Servers           *nginxServersModel `tfsdk:"servers"`
}

// nginxServersModel is what nginx sets on each apiserver.
type nginxServersModel struct {
	FailTimeout types.String `tfsdk:"fail_timeout"`
}

func (m *nginxConfigModel) spec() lbconfig.Spec {
	s := m.lbConfigModel.sharedSpec(nginxKind)
	if !m.StreamModule.IsNull() {
		s.Runtime.NginxStreamModule = m.StreamModule.ValueString()
	}
	// nginx checks nothing actively: there is no certificate to verify and
	// no request that anonymous auth could refuse.
	s.HealthCheck.InsecureSkipVerify = true
	s.AnonymousAuthOff = false
	s.Runtime.NginxWorkerConnections = int(m.WorkerConnections.ValueInt64())
	s.Servers.FailTimeout = durationOf(ptrOrZero(m.Servers).FailTimeout)
	return s
}

func (m *nginxConfigModel) Render(*nginxConfigModel) (hostres.Rendered, diag.Diagnostics) {
	return m.lbConfigModel.render(nginxKind, m.spec(), lbconfig.RenderNginx)
}

// RenderServing renders the config with extra listen addresses (HandingOver).
func (m *nginxConfigModel) RenderServing(extra []string) (hostres.Rendered, diag.Diagnostics) {
	return m.lbConfigModel.renderServing(nginxKind, m.spec(), extra, lbconfig.RenderNginx)
}

// CheckPlan shows its timing warnings in every plan.
func (m *nginxConfigModel) CheckPlan() diag.Diagnostics {
	planUnwatched(m)
	return problemDiagnostics(m.spec().CheckTiming(lbconfig.Nginx))
}

// ImportState takes host:port:<config_path>.
func (r *nginxConfigResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importLB(ctx, &r.Resource, nginxKind, func(m *nginxConfigModel) *lbConfigModel { return &m.lbConfigModel }, req, resp)
}

func (r *nginxConfigResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	validateConfig(ctx, req, resp, lbSpecProblems((*nginxConfigModel).spec))
}

func (r *nginxConfigResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = lbSchema(ctx, nginxKind, "~> "+lbconfig.NginxNote+"\n\n"+
		"nginx's passive checks see only connections: a refused or timed-out connect takes the apiserver out of rotation "+
		"for `servers.fail_timeout` and the client's connection goes to the next one at once. They never speak HTTP, so they "+
		"behave the same whether the apiservers allow anonymous requests or not (`--anonymous-auth`): a hardened cluster "+
		"needs no setting here, and an apiserver that accepts connections but answers nothing useful is never noticed.\n\n"+
		"Unlike kubespray, which leaves nginx's defaults (unlimited retries, no time limit), a client's connection tries "+
		"each backend at most once: `proxy_next_upstream_tries` is the number of backends (the fallback included) and "+
		"`proxy_next_upstream_timeout` is (backends + 1) × `proxy_timeouts.connect`, so with every apiserver down a client gets "+
		"an error in seconds.",
		map[string]schema.Attribute{
			"worker_connections": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 1000000)},
				MarkdownDescription: "nginx `worker_connections`. Default: `max_connections`, at least 1024. Unlike kubespray's " +
					"fixed 16384, the default follows `max_connections`, so the limit set there is the one that holds."},
			"servers": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "What nginx sets on each apiserver (`server` lines). Unset, every setting takes its default.",
				Attributes: map[string]schema.Attribute{
					"fail_timeout": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
						MarkdownDescription: "How long an apiserver whose connect failed stays out of rotation (nginx `fail_timeout`, " +
							"whole seconds; `max_fails=1`). Default `5s`. Unlike kubespray, which leaves nginx's 10s, kha retries a " +
							"recovered apiserver sooner; a still-dead one costs a client only the 1s connect timeout."},
				},
			},
			"stream_module": schema.StringAttribute{Optional: true,
				MarkdownDescription: "`load_module` path of the stream module. Default with `systemd`: Debian's `" + debianStreamModule +
					"`; with `static_pod`: none (the official image has it built in). Set `\"\"` for builds with it built in."},
		})
}

// UpgradeState carries states of versions 0 and 1 into version 2's groups.
func (r *nginxConfigResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return lbStateUpgraders(lbMove{"fail_timeout", "servers", "fail_timeout"})
}

func (m *nginxConfigModel) ConflictName() string { return m.lbConflictName(nginxKind) }

func (m *nginxConfigModel) ConflictMove(attr string) (string, string) {
	return m.lbConflictMove(nginxKind, attr)
}

func (m *nginxConfigModel) service() (remote.Service, bool) { return m.serviceOfKind(nginxKind) }

func (m *nginxConfigModel) serviceText() (name, summary, reload string) {
	return m.serviceTextOfKind(nginxKind)
}

func (m *nginxConfigModel) ReadHost(ctx context.Context, c hostres.Host, destroying bool) error {
	return readService(ctx, c, destroying, m)
}

func (m *nginxConfigModel) WatchHost(ctx context.Context, c hostres.Host, id string) diag.Diagnostics {
	return watchService(ctx, c, id, m)
}

func (m *nginxConfigModel) WatchApplied(ctx context.Context, c hostres.Host) diag.Diagnostics {
	return serviceApplied(ctx, c, m.ID.ValueString(), m)
}
