package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	fwpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/lbconfig"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

var (
	_ resource.ResourceWithConfigure        = (*haproxyConfigResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*haproxyConfigResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*haproxyConfigResource)(nil)
	_ resource.ResourceWithConfigValidators = (*haproxyConfigResource)(nil)
	_ resource.ResourceWithUpgradeState     = (*haproxyConfigResource)(nil)
	_ resource.ResourceWithImportState      = (*haproxyConfigResource)(nil)
)

// NewHAProxyConfigResource is the constructor of kha_haproxy_config.
func NewHAProxyConfigResource() resource.Resource {
	return &haproxyConfigResource{hostres.Resource[haproxyConfigModel, *haproxyConfigModel]{Name: "haproxy_config"}}
}

type haproxyConfigResource struct {
	hostres.Resource[haproxyConfigModel, *haproxyConfigModel]
}

// The lifecycle's optional hooks the model implements (internal/hostres/hooks.go).
var (
	_ hostres.PlanChecker    = (*haproxyConfigModel)(nil)
	_ hostres.HandingOver    = (*haproxyConfigModel)(nil)
	_ hostres.ConflictMover  = (*haproxyConfigModel)(nil)
	_ hostres.DriftShower    = (*haproxyConfigModel)(nil)
	_ hostres.HostReader     = (*haproxyConfigModel)(nil)
	_ hostres.HostWatcher    = (*haproxyConfigModel)(nil)
	_ hostres.AppliedWatcher = (*haproxyConfigModel)(nil)
	_ watchedService         = (*haproxyConfigModel)(nil)
)

var haproxyKind = lbKind{
	lb:               lbconfig.HAProxy,
	name:             "HAProxy",
	configPath:       "/etc/haproxy/haproxy.cfg",
	manifestPath:     "/etc/kubernetes/manifests/haproxy.yml",
	validateCommand:  "haproxy -c -q -f %s",
	reloadCommand:    "systemctl reload-or-restart haproxy",
	preflightCommand: "haproxy -db -f %s",
	destroyCommand:   "systemctl stop haproxy",
}

type haproxyConfigModel struct {
	lbConfigModel
	HealthCheck *healthCheckModel    `tfsdk:"health_check"`
	Servers     *haproxyServersModel `tfsdk:"servers"`
	StatsSocket types.String         `tfsdk:"stats_socket"`
	RunAs       types.String         `tfsdk:"run_as"`
}

// haproxyServersModel is what HAProxy sets on each apiserver.
type haproxyServersModel struct {
	SlowStart types.String `tfsdk:"slowstart"`
	MaxConn   types.Int64  `tfsdk:"maxconn"`
	MaxQueue  types.Int64  `tfsdk:"maxqueue"`
}

type healthCheckModel struct {
	Type               types.String `tfsdk:"type"`
	Path               types.String `tfsdk:"path"`
	CAFile             types.String `tfsdk:"ca_file"`
	InsecureSkipVerify types.Bool   `tfsdk:"insecure_skip_verify"`
	ClientCert         types.String `tfsdk:"client_cert"`
	Interval           types.String `tfsdk:"interval"`
	Fall               types.Int64  `tfsdk:"fall"`
	Rise               types.Int64  `tfsdk:"rise"`
}

// kubeadmCA is where kubeadm puts the cluster CA on every node.
const kubeadmCA = "/etc/kubernetes/pki/ca.crt"

// defaultRunAs is the user and group of Debian's stock haproxy.cfg, which
// its haproxy package creates.
const defaultRunAs = "haproxy:haproxy"

func (m *haproxyConfigModel) spec() lbconfig.Spec {
	s := m.lbConfigModel.sharedSpec(haproxyKind)
	s.Runtime.User, s.Runtime.Group = m.runAs()
	s.Runtime.StatsSocket = m.StatsSocket.ValueString()
	servers := ptrOrZero(m.Servers)
	s.Servers.SlowStart = durationOf(servers.SlowStart)
	s.Servers.MaxConn = int(servers.MaxConn.ValueInt64())
	s.Servers.MaxQueue = int(servers.MaxQueue.ValueInt64())
	hc := ptrOrZero(m.HealthCheck)
	interval := durationOf(hc.Interval)
	s.HealthCheck = lbconfig.HealthCheck{Type: hc.Type.ValueString(), Path: hc.Path.ValueString(), CAFile: hc.CAFile.ValueString(),
		InsecureSkipVerify: hc.InsecureSkipVerify.ValueBool(), ClientCert: hc.ClientCert.ValueString(), Interval: interval,
		Fall: int(hc.Fall.ValueInt64()), Rise: int(hc.Rise.ValueInt64())}
	if hc.CAFile.IsNull() && !s.HealthCheck.InsecureSkipVerify && s.HealthCheck.Type != lbconfig.CheckTCP {
		s.HealthCheck.CAFile = kubeadmCA
	}
	return s
}

// runAs is the user and group HAProxy drops root to: run_as, else
// defaultRunAs under systemd; none for run_as = "root", and none in a
// static pod, whose image runs HAProxy as its own user.
func (m *haproxyConfigModel) runAs() (user, group string) {
	runAs := m.RunAs.ValueString()
	switch {
	case m.Delivery.ValueString() == deliveryStaticPod:
		return "", ""
	case m.RunAs.IsNull():
		runAs = defaultRunAs
	case runAs == "root":
		return "", ""
	}
	user, group, _ = strings.Cut(runAs, ":")
	return user, group
}

// checkRunAs refuses run_as in a static pod: the container runs as the
// image's user, not as root, so there is no root to drop.
func (m *haproxyConfigModel) checkRunAs() diag.Diagnostics {
	var diags diag.Diagnostics
	if known(m.RunAs) && m.Delivery.ValueString() == deliveryStaticPod {
		diags.AddAttributeError(fwpath.Root("run_as"), "run_as Needs systemd Delivery",
			"run_as is the user HAProxy started as root drops to. In a static pod the image runs HAProxy as its own user "+
				"(haproxy, the official image's), not as root. Remove run_as, or set delivery = \"systemd\".")
	}
	return diags
}

func (m *haproxyConfigModel) Render(*haproxyConfigModel) (hostres.Rendered, diag.Diagnostics) {
	if d := m.checkRunAs(); d.HasError() {
		return hostres.Rendered{}, d
	}
	return m.lbConfigModel.render(haproxyKind, m.spec(), lbconfig.RenderHAProxy)
}

// RenderServing renders the config with extra listen addresses (HandingOver).
func (m *haproxyConfigModel) RenderServing(extra []string) (hostres.Rendered, diag.Diagnostics) {
	if d := m.checkRunAs(); d.HasError() {
		return hostres.Rendered{}, d
	}
	return m.lbConfigModel.renderServing(haproxyKind, m.spec(), extra, lbconfig.RenderHAProxy)
}

// CheckPlan shows its timing warnings in every plan.
func (m *haproxyConfigModel) CheckPlan() diag.Diagnostics {
	planUnwatched(m)
	return problemDiagnostics(m.spec().CheckTiming(lbconfig.HAProxy))
}

// ImportState takes host:port:<config_path>.
func (r *haproxyConfigResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importLB(ctx, &r.Resource, haproxyKind, func(m *haproxyConfigModel) *lbConfigModel { return &m.lbConfigModel }, req, resp)
}

func (r *haproxyConfigResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	validateConfig(ctx, req, resp, lbSpecProblems((*haproxyConfigModel).spec))
}

func (r *haproxyConfigResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = lbSchema(ctx, haproxyKind,
		"HAProxy checks every apiserver actively over HTTPS (`GET /readyz`, verified against `health_check.ca_file`) "+
			"and marks a dead or hung one down in about a second with the defaults, closing its sessions so clients "+
			"reconnect to a live apiserver. On a hardened cluster (kube-apiserver `--anonymous-auth=false`), use "+
			"`health_check.type = \"https_client_cert\"` or `\"tcp\"`: an anonymous check gets 401 from every apiserver, "+
			"so the plan fails when `backends` say so (`kha_cluster_endpoints.<name>.apiserver_backends` does).",
		map[string]schema.Attribute{
			"health_check": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Active health checks of the apiservers. Without it: `type = \"https\"`, `GET /readyz` every " +
					"500ms, verified against kubeadm's `" + kubeadmCA + "`. Unlike kubespray, which checks `/healthz` every 15s " +
					"with `verify none`, kha checks `/readyz` twice a second against the cluster CA, so an apiserver that shuts " +
					"down, hangs or is impersonated leaves rotation within about a second. nginx, by contrast, has no active checks.",
				Attributes: map[string]schema.Attribute{
					"type": schema.StringAttribute{Optional: true,
						Validators: []validator.String{stringvalidator.OneOf(lbconfig.CheckHTTPS, lbconfig.CheckHTTPSClientCert, lbconfig.CheckTCP)},
						MarkdownDescription: "`https` (default): an anonymous `GET` of `path`, verified against `ca_file`; needs " +
							"kube-apiserver's `--anonymous-auth=true` (the default), and is a plan error against backends whose " +
							"`anonymous_auth` is `false`. `https_client_cert`: the same request, presenting `client_cert`; works " +
							"on hardened clusters. `tcp`: a TCP connect only (Epiphany's `option tcp-check`), no credentials " +
							"needed, but a hung apiserver that accepts connections passes."},
					"path": schema.StringAttribute{Optional: true,
						MarkdownDescription: "HTTPS path to check. Default `/readyz`. Unlike kubespray's `/healthz`, `/readyz` fails " +
							"as soon as an apiserver starts shutting down or loses etcd, so clients leave it before it stops serving."},
					"ca_file": schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()},
						MarkdownDescription: "Cluster CA file on the load balancer's host, to verify the apiservers' certificates; " +
							"mounted into static pods. Default `" + kubeadmCA + "` (kubeadm's), unless `insecure_skip_verify` is set " +
							"or `type` is `tcp`. On a host that is not a node (an external load balancer), copy the CA there with " +
							"`kha_file` and give its path."},
					"insecure_skip_verify": schema.BoolAttribute{Optional: true,
						MarkdownDescription: "Check without verifying certificates (`verify none`, kubespray's choice): any TLS " +
							"server at a backend's address passes."},
					"client_cert": schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()},
						MarkdownDescription: "With `type = \"https_client_cert\"`: a PEM file on the host with a client certificate " +
							"the apiservers accept and its key, or the certificate with its key in the file of the same name " +
							"ending in `.key`; kubeadm's `/etc/kubernetes/pki/apiserver-kubelet-client.crt` works on control-plane " +
							"nodes. Elsewhere, deliver a dedicated certificate with `kha_file`, whose `content_wo` keeps the key " +
							"out of state and plans. With `delivery = \"static_pod\"` both files are mounted into the pod, so " +
							"the key must be in the `.key` file."},
					"interval": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
						MarkdownDescription: "Time between checks. Default `500ms`. Unlike kubespray's 15s, a dead apiserver is " +
							"out of rotation in about a second, not half a minute."},
					"fall": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 100)},
						MarkdownDescription: "Failed checks before a server is marked down. Default `2`, as kubespray."},
					"rise": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 100)},
						MarkdownDescription: "Passed checks before a server is marked up again. Default `2`, as kubespray."},
				},
			},
			"servers": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "What HAProxy sets on each apiserver (`server` lines). Unset, every setting takes its default.",
				Attributes: map[string]schema.Attribute{
					"slowstart": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
						MarkdownDescription: "Ramp a recovered apiserver's weight up over this time (HAProxy `slowstart`). Default none. " +
							"Unlike kubespray's 60s, none by default: `leastconn` already sends a recovered apiserver only new " +
							"connections, and a ramp keeps the survivors loaded for a minute longer."},
					"maxconn": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 1000000)},
						MarkdownDescription: "Connection limit per apiserver (HAProxy `maxconn` on each server). Default none (the global " +
							"`max_connections` bounds all). Unlike kubespray's 1000, none by default: with one apiserver left, a " +
							"per-server limit queues the rest of the cluster's watches instead of serving them."},
					"maxqueue": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 1000000)},
						MarkdownDescription: "Queue limit per apiserver (HAProxy `maxqueue`), with `maxconn`. Default none " +
							"(kubespray: 256)."},
				},
			},
			"run_as": schema.StringAttribute{Optional: true, Validators: []validator.String{runAsValidator()},
				MarkdownDescription: "`user:group` HAProxy drops root to once it has bound its sockets and read its " +
					"certificates (HAProxy's `user` and `group` in `global`); in master-worker mode (`-Ws`, Debian's unit) " +
					"the workers that serve run as them, and the master keeps root to reload. Default `haproxy:haproxy` " +
					"with `delivery = \"systemd\"`, as Debian's stock `haproxy.cfg` (Debian's and Ubuntu's haproxy package " +
					"creates both). `\"root\"` names none: HAProxy runs as the user its service starts it as, root under " +
					"Debian's unit. A host without the user or group fails the validate step (`haproxy -c`) before the " +
					"configuration is put in place, and the one in place keeps serving; `haproxy -c -f` without `-q` says " +
					"`cannot find user id`. Not with `delivery = \"static_pod\"`: " +
					"the official image runs HAProxy as its own `haproxy` user already, not as root."},
			"stats_socket": schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()},
				MarkdownDescription: "Admin socket path (`level admin`, `expose-fd listeners`): for `show servers state`, " +
					"runtime changes, and reload scripts that start a new HAProxy with `-sf` and hand it the listening sockets " +
					"with `-x <socket>`. HAProxy in master-worker mode (`-W`, or `-Ws` as Debian's systemd unit and the " +
					"examples run it) hands them to the new worker without a socket: ten reloads of kha's configuration under " +
					"load refused no connection and no health check with none set (HAProxy 2.6). Default none."},
		})
}

// UpgradeState carries states of versions 0 and 1 into version 2's groups.
func (r *haproxyConfigResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return lbStateUpgraders(lbMove{"slowstart", "servers", "slowstart"}, lbMove{"server_maxconn", "servers", "maxconn"},
		lbMove{"server_maxqueue", "servers", "maxqueue"})
}

func (m *haproxyConfigModel) ConflictName() string { return m.lbConflictName(haproxyKind) }

func (m *haproxyConfigModel) ConflictMove(attr string) (string, string) {
	return m.lbConflictMove(haproxyKind, attr)
}

func (m *haproxyConfigModel) service() (remote.Service, bool) { return m.serviceOfKind(haproxyKind) }

func (m *haproxyConfigModel) serviceText() (name, summary, reload string) {
	return m.serviceTextOfKind(haproxyKind)
}

func (m *haproxyConfigModel) ReadHost(ctx context.Context, c hostres.Host, destroying bool) error {
	return readService(ctx, c, destroying, m)
}

func (m *haproxyConfigModel) WatchHost(ctx context.Context, c hostres.Host, id string) diag.Diagnostics {
	return watchService(ctx, c, id, m)
}

func (m *haproxyConfigModel) WatchApplied(ctx context.Context, c hostres.Host) diag.Diagnostics {
	return serviceApplied(ctx, c, m.ID.ValueString(), m)
}
