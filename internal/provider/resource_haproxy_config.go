package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/lbconfig"
)

var (
	_ resource.ResourceWithConfigure        = (*haproxyConfigResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*haproxyConfigResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*haproxyConfigResource)(nil)
	_ resource.ResourceWithConfigValidators = (*haproxyConfigResource)(nil)
	_ resource.ResourceWithUpgradeState     = (*haproxyConfigResource)(nil)
)

// NewHAProxyConfigResource is the constructor of kha_haproxy_config.
func NewHAProxyConfigResource() resource.Resource { return &haproxyConfigResource{} }

type haproxyConfigResource struct {
	hostResource[haproxyConfigModel, *haproxyConfigModel]
}

var haproxyKind = lbKind{
	lb:              lbconfig.HAProxy,
	name:            "HAProxy",
	configPath:      "/etc/haproxy/haproxy.cfg",
	manifestPath:    "/etc/kubernetes/manifests/haproxy.yml",
	validateCommand: "haproxy -c -q -f %s",
	reloadCommand:   "systemctl reload-or-restart haproxy",
	destroyCommand:  "systemctl stop haproxy",
}

type haproxyConfigModel struct {
	lbConfigModel
	HealthCheck *healthCheckModel `tfsdk:"health_check"`
	StatsSocket types.String      `tfsdk:"stats_socket"`
}

type healthCheckModel struct {
	Path               types.String `tfsdk:"path"`
	CAFile             types.String `tfsdk:"ca_file"`
	InsecureSkipVerify types.Bool   `tfsdk:"insecure_skip_verify"`
	Interval           types.String `tfsdk:"interval"`
	Fall               types.Int64  `tfsdk:"fall"`
	Rise               types.Int64  `tfsdk:"rise"`
}

func (m *haproxyConfigModel) spec() lbconfig.Spec {
	s := m.lbConfigModel.spec(haproxyKind)
	s.Runtime.StatsSocket = m.StatsSocket.ValueString()
	if hc := m.HealthCheck; hc != nil {
		interval, _ := time.ParseDuration(hc.Interval.ValueString())
		s.HealthCheck = lbconfig.HealthCheck{Path: hc.Path.ValueString(), CAFile: hc.CAFile.ValueString(),
			InsecureSkipVerify: hc.InsecureSkipVerify.ValueBool(), Interval: interval,
			Fall: int(hc.Fall.ValueInt64()), Rise: int(hc.Rise.ValueInt64())}
	}
	return s
}

func (m *haproxyConfigModel) render(*haproxyConfigModel) (rendered, diag.Diagnostics) {
	return m.lbConfigModel.render(haproxyKind, m.spec(), lbconfig.RenderHAProxy)
}

func (r *haproxyConfigResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_haproxy_config"
}

func (r *haproxyConfigResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	validateLB(ctx, req.Config, (*haproxyConfigModel).spec, &resp.Diagnostics)
}

func (r *haproxyConfigResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = lbSchema(ctx, haproxyKind,
		"HAProxy checks every apiserver actively over HTTPS (`GET /readyz`, verified against `health_check.ca_file`) "+
			"and marks a dead or hung one down in about a second with the defaults, closing its sessions so clients "+
			"reconnect to a live apiserver.",
		map[string]schema.Attribute{
			"health_check": schema.SingleNestedAttribute{
				Required: true,
				MarkdownDescription: "Active health checks of the apiservers. Give `ca_file` so they verify the apiservers' " +
					"certificates, or opt out with `insecure_skip_verify = true`.",
				Attributes: map[string]schema.Attribute{
					"path": schema.StringAttribute{Optional: true, MarkdownDescription: "HTTPS path to check. Default `/readyz` (anonymous on kube-apiserver)."},
					"ca_file": schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()},
						MarkdownDescription: "Cluster CA file on the load balancer's host, e.g. `/etc/kubernetes/pki/ca.crt`; mounted into static pods."},
					"insecure_skip_verify": schema.BoolAttribute{Optional: true, MarkdownDescription: "Check without verifying certificates (`verify none`)."},
					"interval": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
						MarkdownDescription: "Time between checks. Default `500ms`."},
					"fall": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 100)},
						MarkdownDescription: "Failed checks before a server is marked down. Default `2`."},
					"rise": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 100)},
						MarkdownDescription: "Passed checks before a server is marked up again. Default `2`."},
				},
			},
			"stats_socket": schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()},
				MarkdownDescription: "Admin socket path (`expose-fd listeners`, for seamless reloads and `show servers state`)."},
		})
}
