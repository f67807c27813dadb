package provider

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	fwpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
	"github.com/kha/terraform-provider-kha/internal/lbconfig"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

// lbConfigResource is kha_haproxy_config and kha_nginx_config: one
// implementation, parameterised by the load balancer kind.
type lbConfigResource struct {
	renderedFilesResource
	kind lbConfigKind
}

func newLBConfigResource(kind lbConfigKind) *lbConfigResource {
	r := &lbConfigResource{kind: kind}
	r.renderer = r
	return r
}

// lbConfigKind holds what differs between HAProxy and nginx.
type lbConfigKind struct {
	lb          lbconfig.Kind
	typeSuffix  string
	description string
	// defaults per delivery
	configPath                     string
	manifestPath                   string
	validateCommand, reloadCommand string
	destroyCommand                 string
	streamModule                   string // nginx on systemd hosts
	kindAttributes                 map[string]schema.Attribute
	newModel                       func() lbModel
	render                         func(lbconfig.Spec) (string, error)
}

// lbModel is a kind's model: the shared attributes plus its own, which
// it writes into the renderer's spec.
type lbModel interface {
	renderedModel
	common() *lbConfigModel
	applyKindAttributes(spec *lbconfig.Spec)
}

var (
	_ resource.ResourceWithConfigure      = (*lbConfigResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*lbConfigResource)(nil)
	_ resource.ResourceWithValidateConfig = (*lbConfigResource)(nil)
)

// Delivery modes.
const (
	deliverySystemd   = "systemd"
	deliveryStaticPod = "static_pod"
)

// lbConfigModel holds the attributes both kinds share.
type lbConfigModel struct {
	renderedFields
	Role            types.String     `tfsdk:"role"`
	Listen          *lbListenModel   `tfsdk:"listen"`
	Backends        []lbBackendModel `tfsdk:"backends"`
	Balance         types.String     `tfsdk:"balance"`
	LocalFirst      types.String     `tfsdk:"local_first"`
	HealthcheckPort types.Int64      `tfsdk:"healthcheck_port"`
	ConnectTimeout  types.String     `tfsdk:"connect_timeout"`
	IdleTimeout     types.String     `tfsdk:"idle_timeout"`
	MaxConnections  types.Int64      `tfsdk:"max_connections"`
	PIDFile         types.String     `tfsdk:"pid_file"`
	Delivery        types.String     `tfsdk:"delivery"`
	ConfigPath      types.String     `tfsdk:"config_path"`
	ManifestPath    types.String     `tfsdk:"manifest_path"`
	Image           types.String     `tfsdk:"image"`
	PodName         types.String     `tfsdk:"pod_name"`
	CPURequest      types.String     `tfsdk:"cpu_request"`
	MemoryRequest   types.String     `tfsdk:"memory_request"`
	ValidateCommand types.String     `tfsdk:"validate_command"`
	ReloadCommand   types.String     `tfsdk:"reload_command"`
	Rendered        types.String     `tfsdk:"rendered"`
	Manifest        types.String     `tfsdk:"manifest"`
}

type lbListenModel struct {
	Address     types.String `tfsdk:"address"`
	IPv6Address types.String `tfsdk:"ipv6_address"`
	Port        types.Int64  `tfsdk:"port"`
}

type lbBackendModel struct {
	Name    types.String `tfsdk:"name"`
	Address types.String `tfsdk:"address"`
	Port    types.Int64  `tfsdk:"port"`
}

func (r *lbConfigResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + r.kind.typeSuffix
}

func durationValidator() validator.String {
	return stringvalidator.RegexMatches(durationPattern, "must be a duration such as \"500ms\", \"10s\" or \"10m\"")
}

func (r *lbConfigResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	k := r.kind
	attrs := map[string]schema.Attribute{
		"role": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(string(lbconfig.NodeLocal)),
			Validators: []validator.String{stringvalidator.OneOf(string(lbconfig.NodeLocal), string(lbconfig.External))},
			MarkdownDescription: "`node_local` (default): a proxy on the node's loopback in front of every apiserver, " +
				"kubespray's localhost load balancer. `external`: a load balancer on a VIP for the whole cluster; on a " +
				"standby node of a VIP pair it needs `net.ipv4.ip_nonlocal_bind=1` to start.",
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
			MarkdownDescription: "The apiservers, usually `kha_cluster_endpoints.<name>.local_lb_backends`.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name":    schema.StringAttribute{Required: true, MarkdownDescription: "Server name (the node name)."},
				"address": schema.StringAttribute{Required: true, MarkdownDescription: "IP address, unbracketed."},
				"port":    schema.Int64Attribute{Required: true, Validators: portValidator, MarkdownDescription: "apiserver port."},
			}},
		},
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
			MarkdownDescription: "Port serving `/healthz` for the load balancer itself, on all addresses " +
				"(`kha_cluster_endpoints`' `local_lb.healthcheck_port`). Static pods get liveness and readiness probes on it. " +
				"With `role = \"external\"`, HAProxy's `/healthz` fails while no apiserver is up, so `kha_keepalived_config`'s track script " +
				"moves the VIP to a load balancer that reaches the control plane; nginx's reports only that nginx runs.",
		},
		"connect_timeout": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
			MarkdownDescription: "Timeout of a connection to an apiserver. Default `1s`."},
		"idle_timeout": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
			MarkdownDescription: "How long an idle proxied connection stays open; watches hold connections for minutes. Default `10m`."},
		"max_connections": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 1000000)},
			MarkdownDescription: "Connection limit. Default `4000`."},
		"pid_file": schema.StringAttribute{Optional: true, MarkdownDescription: "PID file path written into the config; unset leaves it to the service."},
		"delivery": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(deliverySystemd),
			Validators: []validator.String{stringvalidator.OneOf(deliverySystemd, deliveryStaticPod)},
			MarkdownDescription: "`systemd` (default): the config file for the host's own service, validated with the host's " +
				"binary and reloaded. `static_pod`: the config file plus a kubelet static pod manifest (kubespray's " +
				"`" + string(k.lb) + "` pod) whose config checksum annotation makes the kubelet restart the pod on changes.",
		},
		"config_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(k.configPath),
			MarkdownDescription: fmt.Sprintf("Where the config goes. Default `%s`.", k.configPath)},
		"manifest_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(k.manifestPath),
			MarkdownDescription: fmt.Sprintf("Static pod manifest path (delivery `static_pod`). Default `%s`.", k.manifestPath)},
		"image":          schema.StringAttribute{Optional: true, MarkdownDescription: "Static pod image. Default: kubespray's."},
		"pod_name":       schema.StringAttribute{Optional: true, MarkdownDescription: "Static pod name. Default: kubespray's."},
		"cpu_request":    schema.StringAttribute{Optional: true, MarkdownDescription: "Static pod CPU request. Default `25m`."},
		"memory_request": schema.StringAttribute{Optional: true, MarkdownDescription: "Static pod memory request. Default `32M`."},
		"validate_command": schema.StringAttribute{Optional: true, Computed: true,
			MarkdownDescription: fmt.Sprintf("Checks the new config before it replaces the old one (`%%s` is its path). "+
				"Default with `systemd`: `%s`; with `static_pod`: none (the host may not have the binary).", k.validateCommand)},
		"reload_command": schema.StringAttribute{Optional: true, Computed: true,
			MarkdownDescription: fmt.Sprintf("Run after the config is in place; if it fails the previous config is restored. "+
				"Default with `systemd`: `%s`; with `static_pod`: none (the kubelet restarts the pod).", k.reloadCommand)},
		"rendered": schema.StringAttribute{Computed: true,
			MarkdownDescription: "The rendered config, known at plan time: usable without `ssh` for cloud-init or other tooling."},
		"manifest": schema.StringAttribute{Computed: true, MarkdownDescription: "The static pod manifest (delivery `static_pod`), known at plan time."},
	}
	for name, a := range k.kindAttributes {
		attrs[name] = a
	}
	for name, a := range renderedAttributes(fmt.Sprintf("Run after the files are removed on destroy. Default with `systemd`: `%s`; "+
		"with `static_pod`: none (removing the manifest stops the pod).", k.destroyCommand)) {
		attrs[name] = a
	}
	resp.Schema = schema.Schema{MarkdownDescription: k.description, Attributes: attrs}
}

// spec builds the renderer's input; problems come back with the schema's
// attribute paths.
func (r *lbConfigResource) spec(model lbModel) lbconfig.Spec {
	m := model.common()
	s := lbconfig.Spec{
		Role:            lbconfig.Role(m.Role.ValueString()),
		Balance:         m.Balance.ValueString(),
		LocalFirst:      m.LocalFirst.ValueString(),
		HealthcheckPort: int(m.HealthcheckPort.ValueInt64()),
		MaxConn:         int(m.MaxConnections.ValueInt64()),
		Runtime:         lbconfig.Runtime{PIDFile: m.PIDFile.ValueString()},
	}
	if m.Listen != nil {
		s.Listen = append(s.Listen, lbconfig.ListenAddr{Address: m.Listen.Address.ValueString(), Port: int(m.Listen.Port.ValueInt64())})
		if v6 := m.Listen.IPv6Address.ValueString(); v6 != "" {
			s.Listen = append(s.Listen, lbconfig.ListenAddr{Address: v6, Port: int(m.Listen.Port.ValueInt64())})
		}
	}
	for _, b := range m.Backends {
		s.Backends = append(s.Backends, lbconfig.Backend{Name: b.Name.ValueString(), Address: b.Address.ValueString(), Port: int(b.Port.ValueInt64())})
	}
	// The schema's validators admit only durations Go parses.
	s.Timeouts.Connect, _ = time.ParseDuration(m.ConnectTimeout.ValueString())
	s.Timeouts.Idle, _ = time.ParseDuration(m.IdleTimeout.ValueString())
	if m.Delivery.ValueString() == deliverySystemd {
		s.Runtime.NginxStreamModule = r.kind.streamModule
	}
	model.applyKindAttributes(&s)
	return s
}

// lbAttributePath maps the renderer's paths onto the schema: its listen
// list is this schema's listen object.
func lbAttributePath(p endpoints.Path) endpoints.Path {
	if len(p) >= 2 && p[0] == "listen" {
		if i, ok := p[1].(int); ok {
			attr := "address"
			if len(p) > 2 && p[2] == "port" {
				attr = "port"
			} else if i == 1 {
				attr = "ipv6_address"
			}
			return endpoints.Path{"listen", attr}
		}
	}
	return p
}

func (r *lbConfigResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	if !req.Config.Raw.IsFullyKnown() {
		return
	}
	m := r.kind.newModel()
	resp.Diagnostics.Append(req.Config.Get(ctx, m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	problems := r.spec(m).Validate()
	for i := range problems {
		problems[i].Path = lbAttributePath(problems[i].Path)
	}
	appendProblems(&resp.Diagnostics, problems, true)
}

func (r *lbConfigResource) newModel() renderedModel { return r.kind.newModel() }

// files fills rendered and manifest and returns the files to deliver:
// the config, then the manifest.
func (r *lbConfigResource) files(planModel, configModel renderedModel) ([]remote.File, diag.Diagnostics) {
	var diags diag.Diagnostics
	model := planModel.(lbModel)
	m, config := model.common(), configModel.(lbModel).common()
	m.ValidateCommand, m.ReloadCommand = config.ValidateCommand, config.ReloadCommand
	r.commandDefaults(m)
	s := r.spec(model)
	if ps := s.Validate(); ps.HasErrors() {
		for i := range ps {
			ps[i].Path = lbAttributePath(ps[i].Path)
		}
		appendProblems(&diags, ps, true)
		return nil, diags
	}
	text, err := r.kind.render(s)
	if err != nil {
		diags.AddError("Rendering Failed", err.Error()+". This is always a bug in the provider.")
		return nil, diags
	}
	configPath := m.ConfigPath.ValueString()
	files := []remote.File{{Path: configPath, Content: []byte(text), Mode: 0o644, CreateParentDirs: true,
		ValidateCommand: m.ValidateCommand.ValueString(), ReloadCommand: m.ReloadCommand.ValueString()}}
	m.Rendered = types.StringValue(text)
	m.Manifest = types.StringNull()
	if m.Delivery.ValueString() == deliveryStaticPod {
		manifest, err := lbconfig.RenderStaticPod(lbconfig.Pod{Kind: r.kind.lb, Name: m.PodName.ValueString(), Image: m.Image.ValueString(),
			ConfigDir: path.Dir(configPath), ConfigSHA256: lbconfig.SHA256(text), HealthcheckPort: s.HealthcheckPort,
			CAFile: s.HealthCheck.CAFile, CPURequest: m.CPURequest.ValueString(), MemoryRequest: m.MemoryRequest.ValueString()})
		if err != nil {
			diags.AddAttributeError(fwpath.Root("config_path"), "Invalid Static Pod", err.Error())
			return nil, diags
		}
		m.Manifest = types.StringValue(manifest)
		files = append(files, remote.File{Path: m.ManifestPath.ValueString(), Content: []byte(manifest), Mode: 0o640, CreateParentDirs: true})
	}
	return files, diags
}

// commandDefaults fills the delivery-dependent command defaults.
func (r *lbConfigResource) commandDefaults(m *lbConfigModel) {
	systemd := m.Delivery.ValueString() == deliverySystemd
	pick := func(v types.String, systemdDefault string) types.String {
		if !v.IsNull() && !v.IsUnknown() {
			return v
		}
		if systemd {
			return types.StringValue(systemdDefault)
		}
		return types.StringValue("")
	}
	m.ValidateCommand = pick(m.ValidateCommand, r.kind.validateCommand)
	m.ReloadCommand = pick(m.ReloadCommand, r.kind.reloadCommand)
	m.DestroyCommand = pick(m.DestroyCommand, r.kind.destroyCommand)
}

// durationPattern accepts what both HAProxy and Go parse.
var durationPattern = regexp.MustCompile(`^[0-9]+(ms|s|m|h)$`)

// lbDescription is the shared part of both resources' descriptions.
func lbDescription(name, extra string) string {
	return "Renders a " + name + " apiserver load balancer and, with `ssh`, keeps it on a host: a node-local proxy on " +
		"loopback in front of every apiserver (kubespray's localhost load balancer), or an external load balancer on a " +
		"VIP. The usual case takes its inputs from `kha_cluster_endpoints`:\n\n" +
		"```terraform\nlisten   = kha_cluster_endpoints.cluster.local_lb_listen\nbackends = kha_cluster_endpoints.cluster.local_lb_backends\n```\n\n" +
		"`rendered`, `manifest` and `sha256` are known at plan time, so without `ssh` the resource only renders. With " +
		"`ssh`, the files go through the same engine as `kha_file`: validated before they replace the previous ones, " +
		"reloaded, restored on failure, and checked for drift on every refresh.\n\n" + extra +
		"\n\n-> Import is not supported; adopt an existing file with `kha_file` or let the first apply replace it."
}
