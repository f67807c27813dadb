package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	fwpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/lbconfig"
	"github.com/kha/terraform-provider-kha/internal/problem"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

// This file holds what kha_haproxy_config and kha_nginx_config share: the
// attributes, the model and the rendering into a config file and, with
// delivery static_pod, a kubelet manifest.

// lbKind is what differs between the two load balancers, as data.
type lbKind struct {
	lb                             lbconfig.Kind
	name                           string // in descriptions
	configPath, manifestPath       string
	validateCommand, reloadCommand string
	destroyCommand                 string
	// preflightCommand runs a throwaway instance in the foreground.
	preflightCommand string
	// streamModule is nginx's load_module path on systemd hosts.
	streamModule string
}

// Delivery modes.
const (
	deliverySystemd   = "systemd"
	deliveryStaticPod = "static_pod"
)

// lbConfigModel holds the attributes both kinds share.
type lbConfigModel struct {
	hostres.Common
	DestroyCommand    types.String          `tfsdk:"destroy_command"`
	Role              types.String          `tfsdk:"role"`
	Listen            *lbListenModel        `tfsdk:"listen"`
	Backends          []lbBackendModel      `tfsdk:"backends"`
	Balance           types.String          `tfsdk:"balance"`
	LocalFirst        types.String          `tfsdk:"local_first"`
	HealthcheckPort   types.Int64           `tfsdk:"healthcheck_port"`
	ProxyTimeouts     *lbProxyTimeoutsModel `tfsdk:"proxy_timeouts"`
	Monitoring        *lbMonitoringModel    `tfsdk:"monitoring"`
	StaticPod         *lbStaticPodModel     `tfsdk:"static_pod"`
	Fallback          *lbFallbackModel      `tfsdk:"fallback"`
	VerifyAfterReload types.Bool            `tfsdk:"verify_after_reload"`
	VerifyTimeout     types.String          `tfsdk:"verify_timeout"`
	MaxConnections    types.Int64           `tfsdk:"max_connections"`
	PIDFile           types.String          `tfsdk:"pid_file"`
	Delivery          types.String          `tfsdk:"delivery"`
	ConfigPath        types.String          `tfsdk:"config_path"`
	ManifestPath      types.String          `tfsdk:"manifest_path"`
	ValidateCommand   types.String          `tfsdk:"validate_command"`
	PreflightCommand  types.String          `tfsdk:"preflight_command"`
	ReloadCommand     types.String          `tfsdk:"reload_command"`
	Rendered          types.String          `tfsdk:"rendered"`
	Manifest          types.String          `tfsdk:"manifest"`
	Handover          types.Bool            `tfsdk:"handover"`
	HandoverSHA256    types.String          `tfsdk:"handover_sha256"`
	serviceWatch
}

type lbListenModel struct {
	Address     types.String `tfsdk:"address"`
	IPv6Address types.String `tfsdk:"ipv6_address"`
	Port        types.Int64  `tfsdk:"port"`
}

// The optional settings, grouped: a null object costs the framework one
// value where its attributes at the top cost one each, in every request.
type lbProxyTimeoutsModel struct {
	Connect types.String `tfsdk:"connect"`
	Client  types.String `tfsdk:"client"`
	Server  types.String `tfsdk:"server"`
}

type lbMonitoringModel struct {
	HealthcheckListen types.String `tfsdk:"healthcheck_listen"`
	Metrics           types.Bool   `tfsdk:"metrics"`
	MetricsListen     types.String `tfsdk:"metrics_listen"`
	Logs              types.Bool   `tfsdk:"logs"`
}

type lbStaticPodModel struct {
	Image         types.String `tfsdk:"image"`
	Name          types.String `tfsdk:"name"`
	CPURequest    types.String `tfsdk:"cpu_request"`
	MemoryRequest types.String `tfsdk:"memory_request"`
}

type lbBackendModel struct {
	Name          types.String `tfsdk:"name"`
	Address       types.String `tfsdk:"address"`
	Port          types.Int64  `tfsdk:"port"`
	AnonymousAuth types.Bool   `tfsdk:"anonymous_auth"`
	// ShutdownDelay and MinRequestTimeout are the apiserver's flags.
	ShutdownDelay     types.String `tfsdk:"shutdown_delay_duration"`
	MinRequestTimeout types.Int64  `tfsdk:"min_request_timeout"`
}

type lbFallbackModel struct {
	Address types.String `tfsdk:"address"`
	Port    types.Int64  `tfsdk:"port"`
}

func (m *lbConfigModel) Fields() *hostres.Common { return &m.Common }

// lbAttributes are the schema of lbConfigModel, with the kind's own
// attributes and the host attributes.
func lbAttributes(ctx context.Context, k lbKind, own map[string]schema.Attribute) map[string]schema.Attribute {
	attrs := map[string]schema.Attribute{
		"role": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(string(lbconfig.NodeLocal)),
			Validators: []validator.String{stringvalidator.OneOf(string(lbconfig.NodeLocal), string(lbconfig.External))},
			MarkdownDescription: "`node_local` (default): a proxy on the node's loopback in front of every apiserver, " +
				"kubespray's localhost load balancer. `external`: a load balancer on a VIP for the whole cluster. It binds " +
				"the VIP before keepalived gives it to a node (on the first apply no node of the pair holds it), so every " +
				"node of a VIP pair needs `net.ipv4.ip_nonlocal_bind=1` (and `net.ipv6.ip_nonlocal_bind=1` for an IPv6 " +
				"VIP), persisted in `/etc/sysctl.d`: the `kha_file` recipe `nonlocal_bind` does it.",
		},
		"listen": schema.SingleNestedAttribute{
			Required: true,
			MarkdownDescription: "Where to listen: pass `kha_cluster_endpoints.<name>.local_lb_listen` for a node-local " +
				"load balancer, or `{ address = \"<VIP>\", port = 8443 }` for an external one.",
			Attributes: map[string]schema.Attribute{
				"address":      schema.StringAttribute{Required: true, MarkdownDescription: "IPv4 (or IPv6) address to bind."},
				"ipv6_address": schema.StringAttribute{Optional: true, MarkdownDescription: "Second, IPv6, address to bind (`::1` on dual-stack nodes)."},
				"port":         schema.Int64Attribute{Required: true, Validators: portValidator, MarkdownDescription: "Port to bind."},
			},
		},
		"backends": schema.ListNestedAttribute{
			Required:            true,
			MarkdownDescription: "The apiservers, usually `kha_cluster_endpoints.<name>.apiserver_backends`.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name":    schema.StringAttribute{Required: true, MarkdownDescription: "Server name (the node name)."},
				"address": schema.StringAttribute{Required: true, MarkdownDescription: "IP address, unbracketed."},
				"port":    schema.Int64Attribute{Required: true, Validators: portValidator, MarkdownDescription: "apiserver port."},
				"anonymous_auth": schema.BoolAttribute{Optional: true,
					MarkdownDescription: "Whether the apiserver answers anonymous requests (`kha_cluster_endpoints`' " +
						"`apiserver_anonymous_auth`); `false` makes an anonymous `https` health check a plan error. Default `true`."},
				"shutdown_delay_duration": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
					MarkdownDescription: "The apiserver's `--shutdown-delay-duration` (`kha_cluster_endpoints`' " +
						"`apiserver_shutdown_delay_duration`). Set, the plan warns when HAProxy's health check (`health_check.interval` " +
						"× `health_check.fall`) needs longer to take a stopping apiserver out of rotation; nginx checks nothing " +
						"actively, so it notices only the closed port and retries the connection on the next apiserver. Unset: not checked."},
				"min_request_timeout": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 86400)},
					MarkdownDescription: "The apiserver's `--min-request-timeout`, in seconds (`kha_cluster_endpoints`' " +
						"`apiserver_min_request_timeout`). Set, the plan warns when `client_timeout` or `server_timeout` would " +
						"cut a quiet watch, `kubectl logs -f` or `exec` sooner. Unset: not checked."},
			}},
		},
		"fallback": schema.SingleNestedAttribute{
			Optional: true,
			MarkdownDescription: "A last-resort server, used only while every backend is down: the external load balancer or VIP, " +
				"usually `kha_cluster_endpoints.<name>.local_lb_fallback`. A node that loses its direct routes to the " +
				"apiservers (a partition, a firewall change) keeps its API path through it, as Talos KubePrism and the k3s agent " +
				"load balancer do. A DNS name must resolve when the load balancer starts (nginx refuses to start otherwise; " +
				"HAProxy starts without it).",
			Attributes: map[string]schema.Attribute{
				"address": schema.StringAttribute{Required: true, MarkdownDescription: "IP address or DNS name."},
				"port":    schema.Int64Attribute{Required: true, Validators: portValidator, MarkdownDescription: "Port."},
			},
		},
		"monitoring": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "How the load balancer itself can be watched: where `healthcheck_port` answers, its metrics and " +
				"its logs. Unset, every setting takes its default.",
			Attributes: map[string]schema.Attribute{
				"healthcheck_listen": schema.StringAttribute{Optional: true,
					Validators: []validator.String{stringvalidator.OneOf(lbconfig.HealthcheckListenLoopback, lbconfig.HealthcheckListenAll)},
					MarkdownDescription: "Where `healthcheck_port` answers: `loopback` (`127.0.0.1`, and `[::1]` with an IPv6 listen " +
						"address), or `all` addresses. Default: `loopback` for `role = \"node_local\"`, whose checks run on the node " +
						"(a static pod's probes, which then ask `127.0.0.1`; a monitoring agent on the host), and `all` for " +
						"`role = \"external\"`, which a cloud load balancer or another host checks (keepalived's track script on " +
						"the same host reads loopback either way). Unlike kubespray, whose node-local proxy answers its health " +
						"port on every address of every node, a node-local load balancer tells nobody outside the node whether it " +
						"runs unless this is `all`."},
				"metrics": schema.BoolAttribute{Optional: true,
					MarkdownDescription: "Serve metrics on `healthcheck_port`: HAProxy's built-in Prometheus exporter at `/metrics` (Debian's " +
						"haproxy and the official image have it), nginx's `stub_status` at `/stub_status` (what kubespray serves there). " +
						"They answer only connections made to a loopback address of the host (`127.0.0.1`, `::1`) unless " +
						"`metrics_listen = \"all\"`. HAProxy's verification after a reload reads `/metrics` from the host's loopback. " +
						"Default `true`."},
				"metrics_listen": schema.StringAttribute{Optional: true,
					Validators: []validator.String{stringvalidator.OneOf(lbconfig.MetricsListenLoopback, lbconfig.MetricsListenAll)},
					MarkdownDescription: "Where the metrics answer. `loopback` (default): only connections made to a loopback address of " +
						"the host, i.e. a scraper on the host itself (a Prometheus agent in the host network) and kha's own verification; " +
						"from any other address, `/metrics` and `/stub_status` are not served, while `/healthz` answers on every address. " +
						"`all`: on every address `healthcheck_port` binds, **without authentication**: anyone who reaches the port " +
						"reads the node names, backend addresses and states, and session counts. Choose it only behind a firewall " +
						"that limits the port to your monitoring. Needs `metrics` and `healthcheck_port`. Unlike kubespray, whose nginx " +
						"serves `stub_status` on every address, kha keeps the metrics on the host unless told."},
				"logs": schema.BoolAttribute{Optional: true,
					MarkdownDescription: "Log connections and every health check change (HAProxy `option tcplog`, `option log-health-checks`): " +
						"to stdout with `static_pod` (the kubelet keeps it), to syslog (`/dev/log`, journald) with `systemd`. nginx logs " +
						"errors to stderr either way. Default `true`."},
			},
		},
		"proxy_timeouts": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "Timeouts of the connections the load balancer proxies. Unset, every one takes its default.",
			Attributes: map[string]schema.Attribute{
				"connect": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
					MarkdownDescription: "Timeout of a connection to an apiserver. Default `1s`, as kubespray's nginx (`proxy_connect_timeout`). " +
						"Unlike kubespray's HAProxy (`timeout connect 30s`), a dead apiserver costs a client about a second before the " +
						"next one is tried, not half a minute."},
				"client": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
					MarkdownDescription: "How long a proxied connection may stay idle on the client's side (HAProxy `timeout client`; " +
						"nginx's `proxy_timeout` is the longer of `client` and `server`); watches hold connections for minutes. Default `10m` " +
						"(kubespray: HAProxy 5m, `loadbalancer_apiserver_keepalive_timeout`; nginx `proxy_timeout 10m`)."},
				"server": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
					MarkdownDescription: "How long a proxied connection may stay idle on the apiserver's side (HAProxy `timeout server`). " +
						"Default `10m` (kubespray: HAProxy 15m; nginx `proxy_timeout 10m`)."},
			},
		},
		"static_pod": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "The static pod's settings, with `delivery = \"static_pod\"`. Unset, every one takes its default.",
			Attributes: map[string]schema.Attribute{
				"image": schema.StringAttribute{Optional: true, Validators: []validator.String{imageValidator()},
					MarkdownDescription: "Image. Default: kubespray's."},
				"name": schema.StringAttribute{Optional: true, Validators: []validator.String{podNameValidator()},
					MarkdownDescription: "Pod name. Default: kubespray's."},
				"cpu_request": schema.StringAttribute{Optional: true, Validators: []validator.String{quantityValidator()},
					MarkdownDescription: "CPU request. Default `25m`."},
				"memory_request": schema.StringAttribute{Optional: true, Validators: []validator.String{quantityValidator()},
					MarkdownDescription: "Memory request. Default `32M`."},
			},
		},
		"verify_after_reload": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
			MarkdownDescription: "After the reload, wait until the load balancer serves: HAProxy reports at least one apiserver up " +
				"after a passing health check (through `healthcheck_port`, when set), and a TLS handshake through the listen " +
				"address (node-local role) reaches an apiserver. Otherwise the previous configuration is restored and reloaded " +
				"and the apply fails with what the load balancer said: which apiservers are down and why. kha reaches the " +
				"host's loopback through the SSH connection (TCP forwarding must be allowed for the connection's user). Set " +
				"`false` while bootstrapping a cluster whose apiservers do not run yet. Default `true`."},
		"verify_timeout": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("30s"),
			Validators:          []validator.String{durationValidator()},
			MarkdownDescription: "How long the verification waits for the load balancer to serve. Default `30s`."},
		"balance": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(lbconfig.BalanceLeastConn),
			Validators:          []validator.String{stringvalidator.OneOf(lbconfig.BalanceLeastConn, lbconfig.BalanceRoundRobin)},
			MarkdownDescription: "`leastconn` (default) or `roundrobin`.",
		},
		"local_first": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Name of the backend to prefer, e.g. a control-plane node's own apiserver; the others " +
				"become backups used only while it is down.",
		},
		"healthcheck_port": schema.Int64Attribute{
			Optional: true, Validators: portValidator,
			MarkdownDescription: "Port serving `/healthz` for the load balancer itself, on the addresses `healthcheck_listen` " +
				"says (`kha_cluster_endpoints`' `local_lb.healthcheck_port`), and the `metrics` on the host's loopback only " +
				"(see `metrics_listen`). Static pods get liveness and readiness probes on it. " +
				"With `role = \"external\"`, HAProxy's `/healthz` fails while no apiserver is up, so `kha_keepalived_config`'s track script " +
				"moves the VIP to a load balancer that reaches the control plane; nginx's reports only that nginx runs.",
		},
		"max_connections": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 1000000)},
			MarkdownDescription: "Connection limit. Default `4000`."},
		"pid_file": schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()},
			MarkdownDescription: "PID file path written into the config; unset leaves it to the service."},
		"delivery": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(deliverySystemd),
			Validators: []validator.String{stringvalidator.OneOf(deliverySystemd, deliveryStaticPod)},
			MarkdownDescription: "`systemd` (default): the config file for the host's own service, validated with the host's " +
				"binary and reloaded. `static_pod`: the config file plus a kubelet static pod manifest (kubespray's " +
				"`" + string(k.lb) + "` pod) whose config checksum annotation makes the kubelet restart the pod on changes. " +
				"Switching from `static_pod` to `systemd` removes the manifest after the service is reloaded, so the kubelet " +
				"stops the pod.",
		},
		"config_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(k.configPath),
			Validators: []validator.String{managedPathValidator()},
			MarkdownDescription: fmt.Sprintf("Where the config goes. Default `%s`. Changing it removes the old file after the "+
				"new one is in place.", k.configPath)},
		"manifest_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(k.manifestPath),
			Validators: []validator.String{managedPathValidator()},
			MarkdownDescription: fmt.Sprintf("Static pod manifest path (delivery `static_pod`), written with mode `0600` as kubeadm and "+
				"kubespray write theirs. Default `%s`.", k.manifestPath)},
		"validate_command": schema.StringAttribute{Optional: true, Computed: true,
			MarkdownDescription: "Checks the new config before it replaces the old one. " + validateCommandPaths + " " +
				fmt.Sprintf("Default with `systemd`: `%s`; with `static_pod`: none (the host may not have the binary).", k.validateCommand)},
		"preflight_command": schema.StringAttribute{Optional: true, Computed: true,
			MarkdownDescription: fmt.Sprintf("Runs a throwaway instance of the load balancer in the foreground on the new "+
				"config (`%%s` is its path) before the config replaces the live one: the same backends and health checks, "+
				"listening on loopback ports of its own. kha checks it as `verify_after_reload` checks the live one, and stops "+
				"it. A config that passes `validate_command` but serves nothing (a CA that signed no apiserver, a client "+
				"certificate the apiservers refuse, a firewall) fails the apply while the live load balancer keeps serving, "+
				"without a single failed request. Runs when `verify_after_reload` is on. Default with `systemd`: `%s`; with "+
				"`static_pod`: none (the host may not have the binary; the verification after the kubelet restarts the pod "+
				"still rolls back). `\"\"` turns it off. Needs `timeout(1)` on the host.", k.preflightCommand)},
		"reload_command": schema.StringAttribute{Optional: true, Computed: true,
			MarkdownDescription: fmt.Sprintf("Run after the config is in place; if it fails, or outlasts the timeout, the previous config is restored. "+
				"Default with `systemd`: `%s`; with `static_pod`: none (the kubelet restarts the pod).", k.reloadCommand)},
		"destroy_command": schema.StringAttribute{Optional: true, Computed: true,
			MarkdownDescription: fmt.Sprintf("Run after the files are removed on destroy. Default with `systemd`: `%s`; "+
				"with `static_pod`: none (removing the manifest stops the pod).", k.destroyCommand)},
		"rendered": schema.StringAttribute{Computed: true,
			MarkdownDescription: "The rendered config, known at plan time even when `ssh.host` is not: usable without `ssh` for cloud-init or other tooling."},
		"handover": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Move `listen` in one apply without a failed request: an apply that changes `listen` puts a " +
				"configuration in place that serves the previous address and port too, so that clients still pointed there " +
				"keep working while the kubeconfigs and the cluster's copies of the endpoint move. A `kha_handover` of this " +
				"resource, applied after those (`depends_on`), then drops the previous address. Until it does, `rendered` " +
				"and the state show the final configuration, and the host's interim one counts as in sync. Needs " +
				"`delivery = \"systemd\"`. Unlike kubespray, which rewrites the load balancer and the kubeconfigs in one " +
				"step and leaves clients without an endpoint in between, kha keeps both until every client has moved. " +
				"Default `false`: the previous address goes with the apply that moves it."},
		"manifest":        schema.StringAttribute{Computed: true, MarkdownDescription: "The static pod manifest (delivery `static_pod`), known at plan time."},
		"handover_sha256": hostres.HandoverSHA256Attribute,
		"running_command": runningCommandAttribute(k.name),
		"service_running": serviceRunningAttribute(k.name, "Asked of `running_command` when set, else of the process "+
			"`pid_file` names (when it is "+string(k.lb)+"), else of the systemd unit that the default `reload_command` restarts. "+
			"Null where nothing tells: a static pod (the kubelet's to restart), a host without systemd, or a `reload_command` "+
			"of your own without `pid_file` or `running_command`."),
	}
	for name, a := range own {
		attrs[name] = a
	}
	return hostres.WithHostAttributes(ctx, attrs, "`host:port:path` of the config file when delivered over SSH, else the rendered digest.",
		"Digest of the files to deliver (the config, and the manifest with `static_pod`), known at plan time.")
}

// lbSchema is the schema of a load balancer resource: the shared
// attributes and description, with the kind's own.
func lbSchema(ctx context.Context, k lbKind, description string, own map[string]schema.Attribute) schema.Schema {
	return schema.Schema{Version: 2, MarkdownDescription: lbDescription(k, description), Attributes: lbAttributes(ctx, k, own)}
}

// lbMove is a top-level attribute of schema versions 0 and 1 that version
// 2 keeps in a nested object.
type lbMove struct{ from, object, to string }

// sharedLBMoves are the moves of both load balancers.
var sharedLBMoves = []lbMove{
	{"healthcheck_listen", "monitoring", "healthcheck_listen"}, {"metrics", "monitoring", "metrics"},
	{"metrics_listen", "monitoring", "metrics_listen"}, {"logs", "monitoring", "logs"},
	{"connect_timeout", "proxy_timeouts", "connect"}, {"client_timeout", "proxy_timeouts", "client"},
	{"server_timeout", "proxy_timeouts", "server"},
	{"image", "static_pod", "image"}, {"pod_name", "static_pod", "name"},
	{"cpu_request", "static_pod", "cpu_request"}, {"memory_request", "static_pod", "memory_request"},
}

// lbFilledIn are the values, as JSON, that schema versions 0 and 1 put in
// the state by themselves when the configuration left the attribute
// unset, for the resource's role.
var lbFilledIn = map[string]func(role string) string{
	"healthcheck_listen": func(role string) string {
		return strconv.Quote(lbconfig.Spec{Role: lbconfig.Role(role)}.WithDefaults().HealthcheckListen)
	},
	"metrics":        func(string) string { return "true" },
	"metrics_listen": func(string) string { return strconv.Quote(lbconfig.MetricsListenLoopback) },
	"logs":           func(string) string { return "true" },
}

// lbStateUpgraders carry a state of schema version 0 or 1, which had
// every setting at the top, into version 2's nested objects, then on as
// every resource's state (hostres.UpgradeUnversionedState). A value the
// earlier schema filled in itself is dropped, not moved: a configuration
// that left it unset sets no object either, and its first plan after the
// upgrade shows no change.
func lbStateUpgraders(own ...lbMove) map[int64]resource.StateUpgrader {
	moves := append(slices.Clone(sharedLBMoves), own...)
	upgrade := resource.StateUpgrader{StateUpgrader: func(ctx context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
		var attrs map[string]json.RawMessage
		if req.RawState == nil || json.Unmarshal(req.RawState.JSON, &attrs) != nil {
			hostres.UpgradeUnversionedState(ctx, req, resp) // says what it cannot read
			return
		}
		var role string
		_ = json.Unmarshal(attrs["role"], &role)
		objects := map[string]map[string]json.RawMessage{}
		for _, move := range moves {
			v, ok := attrs[move.from]
			delete(attrs, move.from)
			if filledIn := lbFilledIn[move.from]; !ok || string(v) == "null" || filledIn != nil && string(v) == filledIn(role) {
				continue
			}
			if objects[move.object] == nil {
				objects[move.object] = map[string]json.RawMessage{}
			}
			objects[move.object][move.to] = v
		}
		for name, object := range objects {
			attrs[name], _ = json.Marshal(object) // a map of raw JSON always marshals
		}
		moved, _ := json.Marshal(attrs)
		req.RawState = &tfprotov6.RawState{JSON: moved}
		hostres.UpgradeUnversionedState(ctx, req, resp)
	}}
	return map[int64]resource.StateUpgrader{0: upgrade, 1: upgrade}
}

// lbDescription is the shared part of both resources' descriptions.
func lbDescription(k lbKind, extra string) string {
	return "Renders a " + k.name + " apiserver load balancer and, with `ssh`, keeps it on a host: a node-local proxy on " +
		"loopback in front of every apiserver (kubespray's localhost load balancer), or an external load balancer on a " +
		"VIP. The usual case takes its inputs from `kha_cluster_endpoints`:\n\n" +
		"```terraform\nlisten   = kha_cluster_endpoints.cluster.local_lb_listen\nbackends = kha_cluster_endpoints.cluster.apiserver_backends\n```\n\n" +
		"`rendered`, `manifest` and `sha256` are known at plan time, also when the host's address is not (hosts created " +
		"in the same run), so without `ssh` the resource only renders. With `ssh`, the files go through the same engine as " +
		"`kha_file`: validated before they replace the previous ones, reloaded, restored on failure, and checked for drift " +
		"on every refresh. A changed `ssh.host` or `ssh.port` replaces the resource: the old host is cleaned up.\n\n" + extra +
		hostres.ImportDoc("the config file", "host:port:<config_path>")
}

// imported is the config file of an imported state, which has no listen
// (every configuration has one), until the first apply.
func (m *lbConfigModel) imported() (hostres.Rendered, bool) {
	if m.Listen != nil {
		return hostres.Rendered{}, false
	}
	return hostres.ImportedFile(&m.Common, m.ConfigPath.ValueString(), "", 0o644), true
}

// importLB imports a load balancer's config file by its config_path.
func importLB[M any, P hostres.Model[M]](ctx context.Context, r *hostres.Resource[M, P], k lbKind, lb func(*M) *lbConfigModel,
	req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	r.ImportRendered(ctx, req, resp, "10.0.0.21:22:"+k.configPath, false, "", func(m *M, p, _ string) {
		lb(m).ConfigPath = types.StringValue(p)
	})
}

// sharedSpec is the part of the renderer's input the attributes both
// kinds have decide; each kind's spec adds its own.
func (m *lbConfigModel) sharedSpec(k lbKind) lbconfig.Spec {
	s := lbconfig.Spec{
		Role:            lbconfig.Role(m.Role.ValueString()),
		Balance:         m.Balance.ValueString(),
		LocalFirst:      m.LocalFirst.ValueString(),
		HealthcheckPort: int(m.HealthcheckPort.ValueInt64()),
		MaxConn:         int(m.MaxConnections.ValueInt64()),
		Runtime:         lbconfig.Runtime{PIDFile: m.PIDFile.ValueString()},
	}
	s.Listen = m.listenAddrs()
	mon := ptrOrZero(m.Monitoring)
	s.HealthcheckListen = mon.HealthcheckListen.ValueString() // unset: the role's (WithDefaults)
	for _, b := range m.Backends {
		s.Backends = append(s.Backends, lbconfig.Backend{Name: b.Name.ValueString(), Address: b.Address.ValueString(), Port: int(b.Port.ValueInt64())})
	}
	// The schema's validators admit only durations Go parses.
	timeouts := ptrOrZero(m.ProxyTimeouts)
	s.Timeouts.Connect = durationOf(timeouts.Connect)
	s.Timeouts.Client = durationOf(timeouts.Client)
	s.Timeouts.Server = durationOf(timeouts.Server)
	for _, b := range m.Backends {
		s.AnonymousAuthOff = s.AnonymousAuthOff || (known(b.AnonymousAuth) && !b.AnonymousAuth.ValueBool())
		s.APIServer = demanding(s.APIServer, b)
	}
	if fb := m.Fallback; fb != nil {
		s.Fallback = &lbconfig.Backend{Name: "fallback", Address: fb.Address.ValueString(), Port: int(fb.Port.ValueInt64())}
	}
	// Unset (or unknown) stands for the default, true.
	s.Observability = lbconfig.Observability{Logs: !mon.Logs.Equal(types.BoolValue(false)), Metrics: !mon.Metrics.Equal(types.BoolValue(false)),
		ExposeMetrics: mon.MetricsListen.ValueString() == lbconfig.MetricsListenAll, LogTarget: lbconfig.LogSyslog}
	if m.Delivery.ValueString() == deliveryStaticPod {
		s.Observability.LogTarget = lbconfig.LogStdout
	} else {
		s.Runtime.NginxStreamModule = k.streamModule
	}
	return s
}

// demanding adds a backend's apiserver flags to f, keeping the ones the
// load balancer must meet: the shortest shutdown delay, the longest
// minimum request timeout.
func demanding(f endpoints.APIServerFlags, b lbBackendModel) endpoints.APIServerFlags {
	if d := durationOf(b.ShutdownDelay); known(b.ShutdownDelay) && (f.ShutdownDelay == nil || d < *f.ShutdownDelay) {
		f.ShutdownDelay = &d
	}
	if known(b.MinRequestTimeout) {
		if d := time.Duration(b.MinRequestTimeout.ValueInt64()) * time.Second; f.MinRequestTimeout == nil || d > *f.MinRequestTimeout {
			f.MinRequestTimeout = &d
		}
	}
	return f
}

// lbRenames address the renderer's findings to this schema: the
// renderer's listen list is this schema's listen object, its first
// address `address` and its second `ipv6_address`, with one `port`.
var lbRenames = problem.Renames{
	{From: problem.Root("listen").Index(0).At("port"), To: problem.Root("listen").At("port")},
	{From: problem.Root("listen").Index(1).At("port"), To: problem.Root("listen").At("port")},
	{From: problem.Root("listen").Index(0).At("address"), To: problem.Root("listen").At("address")},
	{From: problem.Root("listen").Index(1).At("address"), To: problem.Root("listen").At("ipv6_address")},
	{From: problem.Root("listen").Index(0), To: problem.Root("listen").At("address")},
	{From: problem.Root("listen").Index(1), To: problem.Root("listen").At("ipv6_address")},
}

// lbProblems are a spec's problems, addressed to this schema's
// attributes.
func lbProblems(s lbconfig.Spec) problem.Problems {
	return s.Validate().Rebase(lbRenames.Apply)
}

// lbSpecProblems reads a load balancer model's problems for validateConfig.
func lbSpecProblems[M any](spec func(*M) lbconfig.Spec) func(*M) problem.Problems {
	return func(m *M) problem.Problems { return lbProblems(spec(m)) }
}

// render fills rendered and manifest and returns the files to deliver:
// the config, then the manifest. renderer is the kind's.
func (m *lbConfigModel) render(k lbKind, s lbconfig.Spec, renderer func(lbconfig.Spec) (string, error)) (hostres.Rendered, diag.Diagnostics) {
	var diags diag.Diagnostics
	if out, ok := m.imported(); ok {
		return out, diags
	}
	systemd := m.Delivery.ValueString() != deliveryStaticPod
	if !systemd && m.Handover.ValueBool() {
		diags.AddAttributeError(fwpath.Root("handover"), "Handover Needs systemd Delivery",
			"handover = true serves the previous listen address until kha_handover ends it, which a static pod cannot: the "+
				"kubelet restarts the pod for every change of its configuration. Set delivery = \"systemd\", or leave handover unset.")
		return hostres.Rendered{}, diags
	}
	// Optional and computed: unknown in the plan exactly when not set.
	orDefault := func(v types.String, systemdDefault string) types.String {
		if known(v) {
			return v
		}
		if systemd {
			return types.StringValue(systemdDefault)
		}
		return types.StringValue("")
	}
	m.ValidateCommand = orDefault(m.ValidateCommand, k.validateCommand)
	m.PreflightCommand = orDefault(m.PreflightCommand, k.preflightCommand)
	m.ReloadCommand = orDefault(m.ReloadCommand, k.reloadCommand)
	m.DestroyCommand = orDefault(m.DestroyCommand, k.destroyCommand)
	if ps := lbProblems(s); ps.HasErrors() {
		appendProblems(&diags, ps, true)
		return hostres.Rendered{}, diags
	}
	text, err := renderer(s)
	if err != nil {
		diags.AddError("Rendering Failed", err.Error()+". This is always a bug in the provider.")
		return hostres.Rendered{}, diags
	}
	configPath := m.ConfigPath.ValueString()
	config := remote.File{Path: configPath, Content: []byte(text), Mode: 0o644, CreateParentDirs: true,
		ValidateCommand: m.ValidateCommand.ValueString(), ReloadCommand: m.ReloadCommand.ValueString(),
		// A service that stopped is reloaded though its configuration
		// stays: the reload command starts it.
		ReloadAgain: m.stopped}
	if systemd {
		config.Verify = m.verifier(k, s, text)
	}
	// With static_pod, the config file goes first and the manifest that
	// makes the kubelet run it after: the throwaway instance precedes both.
	config.Preflight = m.preflight(k, s)
	files := []remote.Item{config}
	m.Rendered = types.StringValue(text)
	healthListen := s.WithDefaults().HealthcheckListen
	m.Manifest = types.StringNull()
	if !systemd {
		pod := ptrOrZero(m.StaticPod)
		manifest, err := lbconfig.RenderStaticPod(lbconfig.Pod{Kind: k.lb, Name: pod.Name.ValueString(), Image: pod.Image.ValueString(),
			ConfigDir: path.Dir(configPath), ConfigSHA256: remote.SHA256([]byte(text)), HealthcheckPort: s.HealthcheckPort,
			HealthOnLoopback: healthListen == lbconfig.HealthcheckListenLoopback,
			CAFile:           s.HealthCheck.CAFile, ClientCert: s.HealthCheck.ClientCert, CPURequest: pod.CPURequest.ValueString(), MemoryRequest: pod.MemoryRequest.ValueString()})
		if err != nil {
			diags.AddAttributeError(fwpath.Root("config_path"), "Invalid Static Pod", err.Error())
			return hostres.Rendered{}, diags
		}
		m.Manifest = types.StringValue(manifest)
		// The kubelet restarts the pod once the manifest changes: that is
		// when the new configuration runs.
		files = append(files, remote.File{Path: m.ManifestPath.ValueString(), Content: []byte(manifest), Mode: staticPodManifestMode,
			CreateParentDirs: true, Verify: m.verifier(k, s, text)})
	}
	return hostres.Rendered{Files: files, RemoveCommand: m.DestroyCommand.ValueString()}, diags
}

// verifyTimeout is how long a verification may take, and whether
// verification is on.
func (m *lbConfigModel) verifyTimeout() (time.Duration, bool) {
	return durationOr(m.VerifyTimeout, 30*time.Second), !m.VerifyAfterReload.Equal(types.BoolValue(false))
}

// verifier is the check after a reload, or nil when it is turned off.
func (m *lbConfigModel) verifier(k lbKind, s lbconfig.Spec, text string) remote.Verifier {
	timeout, on := m.verifyTimeout()
	if !on {
		return nil
	}
	return lbVerifier{lbconfig.VerificationFor(k.lb, s, text, timeout)}
}

// preflight is the throwaway instance that runs the config before it
// replaces the live one, or nil when it is turned off.
func (m *lbConfigModel) preflight(k lbKind, s lbconfig.Spec) *remote.Preflight {
	command := m.PreflightCommand.ValueString()
	timeout, on := m.verifyTimeout()
	if command == "" || !on {
		return nil
	}
	return &remote.Preflight{Command: command, Timeout: timeout, Candidate: func(dir string) ([]byte, remote.Verifier, error) {
		// Ports below Linux's ephemeral range, where nothing listens by
		// chance often; a taken one makes the instance exit, and the
		// engine tries again with others.
		listen, health := 20000+rand.IntN(12000), 20000+rand.IntN(12000)
		for health == listen {
			health = 20000 + rand.IntN(12000)
		}
		p, err := lbconfig.PreflightFor(k.lb, s, listen, health, path.Join(dir, "nginx.pid"), timeout)
		if err != nil {
			return nil, nil, err
		}
		return []byte(p.Config), lbVerifier{p.Verification}, nil
	}}
}

// lbVerifier runs a load balancer's verification through the connection
// to its host.
type lbVerifier struct{ v lbconfig.Verification }

func (l lbVerifier) Verify(ctx context.Context, c *remote.Client) error {
	return l.v.Run(ctx, c.DialTCP)
}

// MarshalJSON keeps the verification in a handover's record, for
// kha_handover to prove the final configuration with (decodeLBVerifier).
func (l lbVerifier) MarshalJSON() ([]byte, error) { return json.Marshal(l.v) }

// decodeLBVerifier is the verifier a handover's record keeps.
func decodeLBVerifier(raw json.RawMessage) (remote.Verifier, error) {
	var v lbconfig.Verification
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("the handover's verification: %w", err)
	}
	return lbVerifier{v}, nil
}

func (m *lbConfigModel) HandoverOn() bool                 { return m.Handover.ValueBool() }
func (m *lbConfigModel) HandoverPath() string             { return m.ConfigPath.ValueString() }
func (m *lbConfigModel) SetHandoverSHA256(v types.String) { m.HandoverSHA256 = v }

// listenAddrs are the addresses `listen` binds: its address, then its
// IPv6 address, on its port.
func (m *lbConfigModel) listenAddrs() []lbconfig.ListenAddr {
	if m.Listen == nil {
		return nil
	}
	port := int(m.Listen.Port.ValueInt64())
	out := []lbconfig.ListenAddr{{Address: m.Listen.Address.ValueString(), Port: port}}
	if v6 := m.Listen.IPv6Address.ValueString(); v6 != "" {
		out = append(out, lbconfig.ListenAddr{Address: v6, Port: port})
	}
	return out
}

// Places are the listen addresses, "address:port".
func (m *lbConfigModel) Places() []string {
	var out []string
	for _, l := range m.listenAddrs() {
		out = append(out, endpoints.HostPort(l.Address, l.Port))
	}
	return out
}

// renderServing renders a copy of m whose spec also listens on extra
// ("address:port", from places).
func (m lbConfigModel) renderServing(k lbKind, s lbconfig.Spec, extra []string, renderer func(lbconfig.Spec) (string, error)) (hostres.Rendered, diag.Diagnostics) {
	for _, p := range extra {
		host, port, err := net.SplitHostPort(p)
		n, perr := strconv.Atoi(port)
		if err != nil || perr != nil {
			var diags diag.Diagnostics
			diags.AddError("Internal Error", fmt.Sprintf("a previous listen address %q does not parse. This is always a bug in the provider.", p))
			return hostres.Rendered{}, diags
		}
		s.Listen = append(s.Listen, lbconfig.ListenAddr{Address: host, Port: n})
	}
	return m.render(k, s, renderer)
}

// staticPodManifestMode is the mode of the static pod manifests kha
// writes: kubeadm's and kubespray's, readable by root (the kubelet) alone.
const staticPodManifestMode = 0o600

// lbConflictName is a load balancer's name in a conflict: its role and where
// it listens.
func (m *lbConfigModel) lbConflictName(k lbKind) string {
	name := fmt.Sprintf("kha_%s_config with role = %q", k.lb, m.Role.ValueString())
	if m.Listen != nil {
		name += " listening on " + net.JoinHostPort(m.Listen.Address.ValueString(), fmt.Sprint(m.Listen.Port.ValueInt64()))
	}
	return name
}

// coLocatedDoc names the documentation of two load balancers on one node.
const coLocatedDoc = `"Running a node-local and an external load balancer on one node"`

// lbConflictMove is how a load balancer gives up a file, as the section
// coLocatedDoc of its documentation shows: a service of its own (the
// systemd template unit of kha_etcd_access's example, which reads
// /etc/kha/<instance>-proxy.<ext>), or for a static pod a directory and a
// pod name of its own.
func (m *lbConfigModel) lbConflictMove(k lbKind, attr string) (string, string) {
	instance := "local"
	if m.Role.ValueString() == string(lbconfig.External) {
		instance = "external"
	}
	see := fmt.Sprintf("%s in the kha_%s_config documentation", coLocatedDoc, k.lb)
	unit := fmt.Sprintf("%s@%s", k.lb, instance)
	switch {
	case attr == "manifest_path":
		ext := path.Ext(k.manifestPath)
		return fmt.Sprintf("set `manifest_path = \"%s-%s%s\"` and `static_pod = { name = \"%s-%s\" }`, with `config_path` in a directory of its own",
			strings.TrimSuffix(k.manifestPath, ext), instance, ext, k.lb, instance), see
	case attr != "config_path":
		return fmt.Sprintf("set `%s` to another file", attr), ""
	case m.Delivery.ValueString() == deliveryStaticPod:
		return fmt.Sprintf("set `config_path = \"%s-%s/%s\"` (the pod reads the file of that name in the config's directory)",
			path.Dir(k.configPath), instance, path.Base(k.configPath)), see
	}
	pid := ""
	if k.lb == lbconfig.Nginx { // nginx writes the PID file its config names; HAProxy's unit passes one
		pid = fmt.Sprintf(", `pid_file = \"/run/%s.pid\"`", strings.ReplaceAll(unit, "@", "-"))
	}
	return fmt.Sprintf("run it as a service of its own: set `config_path = \"/etc/kha/%s-proxy%s\"`%s, "+
		"`reload_command = \"systemctl enable %s && systemctl reload-or-restart %s\"` and `destroy_command = \"systemctl disable --now %s\"`, "+
		"with the template unit %s@.service from a kha_file (Debian and Ubuntu ship none)",
		instance, path.Ext(k.configPath), pid, unit, unit, unit, k.lb), see
}

// service is how to tell whether the load balancer kha configured with
// systemd runs (watchedService).
func (m *lbConfigModel) serviceOfKind(k lbKind) (remote.Service, bool) {
	if m.Delivery.ValueString() == deliveryStaticPod {
		return remote.Service{}, false
	}
	return m.serviceWatch.serviceOf(string(k.lb)+".service", string(k.lb), m.PIDFile.ValueString(), m.ReloadCommand.ValueString(), k.reloadCommand)
}

// serviceTextOfKind names the load balancer in its warning.
func (m *lbConfigModel) serviceTextOfKind(k lbKind) (name, summary, reload string) {
	return k.name, "Load Balancer Not Running", m.ReloadCommand.ValueString()
}

// PathSettings: the attributes that set its files' paths.
func (m *lbConfigModel) PathSettings() []hostres.PathSetting {
	return []hostres.PathSetting{{Attribute: fwpath.Root("config_path"), Value: m.ConfigPath}, {Attribute: fwpath.Root("manifest_path"), Value: m.ManifestPath}}
}

// ShowsDrift: a load balancer's configuration is rendered from addresses
// and ports alone, nothing secret.
func (m *lbConfigModel) ShowsDrift() bool { return true }
