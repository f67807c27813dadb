package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/keepalived"
	"github.com/kha/terraform-provider-kha/internal/problem"
	"github.com/kha/terraform-provider-kha/internal/remote"
	"github.com/kha/terraform-provider-kha/internal/vipcheck"
)

var (
	_ resource.ResourceWithConfigure        = (*keepalivedConfigResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*keepalivedConfigResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*keepalivedConfigResource)(nil)
	_ resource.ResourceWithConfigValidators = (*keepalivedConfigResource)(nil)
	_ resource.ResourceWithUpgradeState     = (*keepalivedConfigResource)(nil)
	_ resource.ResourceWithImportState      = (*keepalivedConfigResource)(nil)
)

// NewKeepalivedConfigResource is the constructor of kha_keepalived_config.
func NewKeepalivedConfigResource() resource.Resource {
	return &keepalivedConfigResource{hostres.Resource[keepalivedConfigModel, *keepalivedConfigModel]{Name: "keepalived_config"}}
}

type keepalivedConfigResource struct {
	hostres.Resource[keepalivedConfigModel, *keepalivedConfigModel]
}

// The lifecycle's optional hooks the model implements (internal/hostres/hooks.go).
var (
	_ hostres.HandingOver    = (*keepalivedConfigModel)(nil)
	_ hostres.HostReader     = (*keepalivedConfigModel)(nil)
	_ hostres.HostWatcher    = (*keepalivedConfigModel)(nil)
	_ hostres.AppliedWatcher = (*keepalivedConfigModel)(nil)
	_ hostres.PlanChecker    = (*keepalivedConfigModel)(nil)
	_ watchedService         = (*keepalivedConfigModel)(nil)
	_ vipClaimer             = (*keepalivedConfigModel)(nil)
)

type keepalivedConfigModel struct {
	hostres.Common
	DestroyCommand  types.String          `tfsdk:"destroy_command"`
	Node            types.String          `tfsdk:"node"`
	Nodes           []keepalivedNodeModel `tfsdk:"nodes"`
	VIP             types.String          `tfsdk:"vip"`
	VIPPrefix       types.Int64           `tfsdk:"vip_prefix"`
	Interface       types.String          `tfsdk:"interface"`
	VirtualRouterID types.Int64           `tfsdk:"virtual_router_id"`
	TrackCommand    types.String          `tfsdk:"track_command"`
	HealthcheckPort types.Int64           `tfsdk:"healthcheck_port"`
	NoPreempt       types.Bool            `tfsdk:"no_preempt"`
	AdvertInterval  types.String          `tfsdk:"advert_interval"`
	PreemptDelay    types.String          `tfsdk:"preempt_delay"`
	TrackScriptPath types.String          `tfsdk:"track_script_path"`
	ConfigPath      types.String          `tfsdk:"config_path"`
	ValidateCommand types.String          `tfsdk:"validate_command"`
	ReloadCommand   types.String          `tfsdk:"reload_command"`
	Rendered        types.String          `tfsdk:"rendered"`
	Handover        types.Bool            `tfsdk:"handover"`
	HandoverSHA256  types.String          `tfsdk:"handover_sha256"`
	vipWatch
	serviceWatch
	// previousVIPs are held beside vip (renderServing).
	previousVIPs []string
}

type keepalivedNodeModel struct {
	Name     types.String `tfsdk:"name"`
	IP       types.String `tfsdk:"ip"`
	Priority types.Int64  `tfsdk:"priority"`
}

func (m *keepalivedConfigModel) Fields() *hostres.Common { return &m.Common }

func (r *keepalivedConfigResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"node": schema.StringAttribute{Required: true, MarkdownDescription: "The node of `nodes` this configuration is for."},
		"nodes": schema.ListNestedAttribute{
			Required: true, Validators: []validator.List{listvalidator.SizeAtLeast(2)},
			MarkdownDescription: "Every load balancer node that may hold the VIP; they talk VRRP over unicast to each other.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{Required: true, MarkdownDescription: "Node name."},
				"ip":   schema.StringAttribute{Required: true, MarkdownDescription: "Unicast address, of the VIP's family."},
				"priority": schema.Int64Attribute{Required: true, Validators: []validator.Int64{int64validator.Between(1, 254)},
					MarkdownDescription: "1-254, one per node: the highest healthy node holds the VIP."},
			}},
		},
		"vip":        schema.StringAttribute{Required: true, MarkdownDescription: "The VIP, e.g. `kha_cluster_endpoints`' `external_lb.address`."},
		"vip_prefix": schema.Int64Attribute{Optional: true, MarkdownDescription: "Prefix length of the VIP on the interface. Default `32` (`128` for IPv6)."},
		"interface":  schema.StringAttribute{Required: true, MarkdownDescription: "Interface that carries the VIP and VRRP."},
		"virtual_router_id": schema.Int64Attribute{Required: true, Validators: []validator.Int64{int64validator.Between(1, 255)},
			MarkdownDescription: "VRRP router ID, unique among VRRP instances on the network segment."},
		"track_command": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Command (absolute path) that exits 0 while the node's load balancer is healthy, run every " +
				"second; one failure hands the VIP to a peer, two successes in a row end the fault. Default with " +
				"`healthcheck_port`: the track script at `track_script_path`."},
		"healthcheck_port": schema.Int64Attribute{Optional: true, Validators: portValidator,
			MarkdownDescription: "The load balancer's health port (`kha_haproxy_config`'s `healthcheck_port`): unless `track_command` " +
				"is set, a track script checks `http://127.0.0.1:<port>/healthz` every 200ms and fails at the first check " +
				"the load balancer refuses or answers unhealthy, so the VIP leaves within about 200ms of the load balancer " +
				"dying or, for HAProxy, losing every apiserver. A check unanswered within 500ms fails the run only when no " +
				"check of the run (four, over about 2.6s) is answered: a busy node's slow answer is not a dead load " +
				"balancer, and on a pair whose nodes were both busy, counting it as one dropped the VIP on both at once."},
		"track_script_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("/etc/keepalived/kha-track-lb.sh"),
			Validators: []validator.String{managedPathValidator()},
			MarkdownDescription: "Where the track script goes (mode 0755, delivered before the config) when `healthcheck_port` is " +
				"set and `track_command` is not. Its directories must not be writable by other users than root: keepalived's " +
				"`enable_script_security` refuses it otherwise. Default `/etc/keepalived/kha-track-lb.sh`."},
		"advert_interval": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("250ms"),
			Validators: []validator.String{durationValidator()},
			MarkdownDescription: "VRRPv3 advertisement interval: a peer takes the VIP over after about three missed " +
				"advertisements (plus a skew under one interval), so 250ms moves the VIP off a node that hangs or leaves " +
				"the network in under a second. Multiples of 10ms. Default `250ms`; every node of the pair must use the same."},
		"preempt_delay": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("2s"),
			Validators: []validator.String{durationValidator()},
			MarkdownDescription: "How long a recovered higher-priority node waits before it takes the VIP back, so a node " +
				"that comes and goes does not drag the VIP along (on top of the track script's two successes). Default `2s`."},
		"no_preempt": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Keep the VIP where it is when a higher-priority node recovers, sparing clients a second failover; " +
				"`preempt_delay` then does not apply."},
		"config_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("/etc/keepalived/keepalived.conf"),
			Validators: []validator.String{managedPathValidator()}, MarkdownDescription: "Default `/etc/keepalived/keepalived.conf`."},
		"validate_command": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("keepalived -t -f %s"),
			MarkdownDescription: "Checks the new keepalived.conf before it replaces the old one. " + validateCommandPaths +
				" Default `keepalived -t -f %s`."},
		"reload_command": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(defaultKeepalivedReload),
			MarkdownDescription: "Default `systemctl reload-or-restart keepalived`."},
		"rendered": schema.StringAttribute{Computed: true, MarkdownDescription: "keepalived.conf for `node`, known at plan time."},
		"handover": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Move the VIP to another address in one apply without a failed request: an apply that changes " +
				"`vip` (or `vip_prefix`) holds the previous address too, so that clients still pointed there keep working while " +
				"they move. A `kha_handover` of this resource, applied after the clients (`depends_on`), then drops the previous " +
				"address. Meanwhile the previous address stays the one the adverts carry (the new one is held as " +
				"`virtual_ipaddress_excluded`), and every configuration has `vrrp_skip_check_adv_addr`, so that the pair's " +
				"nodes, which reload one after the other, never take each other for gone and both hold the VIP. " +
				"Unlike kubespray, which moves the VIP in one step, kha holds both until every client has moved. " +
				"Default `false`: the previous address goes with the apply that moves it."},
		"destroy_command": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Run after the config is removed on destroy, e.g. `systemctl stop keepalived`. Default: none."},
		"handover_sha256": hostres.HandoverSHA256Attribute,
		"running_command": runningCommandAttribute("keepalived"),
		"service_running": serviceRunningAttribute("keepalived", "Asked of `running_command` when set, else of the "+
			"systemd unit that the default `reload_command` restarts. Null where nothing tells: a host without systemd, or a "+
			"`reload_command` of your own without `running_command`."),
		"check_vip": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Before an apply puts the configuration in place, ask the node what it sees of `vip`: the VIP " +
				"must be on-link for `interface` (`ip route get`), and nobody but the nodes of `nodes` may answer for it " +
				"(ARP through `arping` for IPv4, the kernel's neighbour discovery through `ping` for IPv6). A VIP that another " +
				"host already holds, or that lies behind a router, stops the apply before anything changes on the node, with " +
				"the answering MAC address in the error; a node without `arping` (Debian's `arping` or `iputils-arping`) gets " +
				"a warning instead. " + vipNeighbourDoc + " Unlike kubespray, which claims the VIP unchecked, kha looks first: a duplicate address " +
				"splits the clients between two hosts and shows only as intermittent failures. Set `false` where the VIP is " +
				"routed to the nodes rather than on their link. Default `true`."},
		"vip_holders": vipHoldersAttribute("Who held `vip` at the last refresh, as this node saw it on its link (`check_vip`): "+
			"the names of the nodes of `nodes` that hold it, and the MAC address of any other host that answers for it. Two "+
			"holders of the pair are a split brain: the nodes do not hear each other's VRRP adverts.",
			"runs `reload_command` on a node that still sees nobody hold the VIP, itself included, though its configuration "+
				"stays: the default `systemctl reload-or-restart keepalived` starts a keepalived that stopped. Two holders are "+
				"a warning only: what a node hears of the other is what a host on the link that answers with the other's MAC "+
				"address would show too, and must not make the holder reload at every apply"),
	}
	resp.Schema = schema.Schema{
		Version: 1,
		MarkdownDescription: "Holds the VIP of an external apiserver load balancer with keepalived: one VRRP instance over " +
			"unicast between the load balancer nodes, and a track script that follows the local load balancer's health, " +
			"so the VIP leaves a node whose load balancer fails and not only a node that fails. One resource per node " +
			"(`for_each` over `nodes`); without `ssh` it only renders.\n\n" +
			"VRRPv3 with 250ms advertisements and a track script that checks the load balancer every 200ms: measured with " +
			"the real keepalived and HAProxy, the VIP moves in well under a second when the load balancer dies, in under a " +
			"second when its node leaves the network, and in about a second when the node loses its routes to every " +
			"apiserver." + hostres.ImportDoc("the config file", "host:port:<config_path>"),
		Attributes: hostres.WithHostAttributes(ctx, attrs, "`host:port:path` of the config when delivered over SSH, else the rendered digest.",
			"Digest of the config, known at plan time."),
	}
}

func (m *keepalivedConfigModel) spec() keepalived.Spec {
	s := keepalived.Spec{Node: m.Node.ValueString(), VIP: m.VIP.ValueString(), VIPPrefix: int(m.VIPPrefix.ValueInt64()),
		Interface: m.Interface.ValueString(), VirtualRouterID: int(m.VirtualRouterID.ValueInt64()),
		TrackCommand: m.TrackCommand.ValueString(), NoPreempt: m.NoPreempt.ValueBool(), PreviousVIPs: m.previousVIPs}
	// The schema's validators admit only durations Go parses; unknown
	// (a new resource's plan) leaves the default.
	s.AdvertInterval = durationOf(m.AdvertInterval)
	s.PreemptDelay = durationOf(m.PreemptDelay)
	if m.trackScript() != "" {
		s.TrackCommand = m.TrackScriptPath.ValueString()
	}
	for _, n := range m.Nodes {
		s.Nodes = append(s.Nodes, keepalived.Node{Name: n.Name.ValueString(), IP: n.IP.ValueString(), Priority: int(n.Priority.ValueInt64())})
	}
	return s
}

func (r *keepalivedConfigResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	validateConfig(ctx, req, resp, func(m *keepalivedConfigModel) problem.Problems { return m.spec().Validate() })
}

// ImportState takes host:port:<config_path>.
func (r *keepalivedConfigResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	r.ImportRendered(ctx, req, resp, "10.0.0.31:22:/etc/keepalived/keepalived.conf", false, "", func(m *keepalivedConfigModel, p, _ string) {
		m.ConfigPath = types.StringValue(p)
		m.VIPHolders = types.ListNull(types.StringType) // until a refresh with the configuration looks
	})
}

func (m *keepalivedConfigModel) Render(config *keepalivedConfigModel) (hostres.Rendered, diag.Diagnostics) {
	var diags diag.Diagnostics
	if config == nil && m.Nodes == nil { // imported: the config found, until the first apply
		return hostres.ImportedFile(&m.Common, m.ConfigPath.ValueString(), "", 0o644), diags
	}
	s := m.spec()
	if ps := s.Validate(); ps.HasErrors() {
		appendProblems(&diags, ps, true)
		return hostres.Rendered{}, diags
	}
	text, err := keepalived.Render(s)
	if err != nil {
		diags.AddError("Rendering Failed", err.Error()+". This is always a bug in the provider.")
		return hostres.Rendered{}, diags
	}
	check := m.vipCheck()
	if appendProblems(&diags, m.vipWatch.problems(check, text), false); diags.HasError() {
		return hostres.Rendered{}, diags
	}
	m.Rendered = types.StringValue(text)
	var files []remote.Item
	if script := m.trackScript(); script != "" {
		files = append(files, remote.File{Path: m.TrackScriptPath.ValueString(), Content: []byte(script), Mode: 0o755, CreateParentDirs: true})
	}
	// A node that sees nobody hold the VIP, itself included, is reloaded
	// though its configuration stays: keepalived comes back. A split brain
	// it hears of is not its own word (vipcheck.Unheld).
	files = append(files, remote.File{Path: m.ConfigPath.ValueString(), Content: []byte(text), Mode: 0o644, CreateParentDirs: true,
		ValidateCommand: m.ValidateCommand.ValueString(), ReloadCommand: m.ReloadCommand.ValueString(),
		ReloadAgain: m.vipWatch.unheld(check) || m.stopped})
	return hostres.Rendered{Files: files, RemoveCommand: m.DestroyCommand.ValueString()}, diags
}

// vipCheck is the check of the VIP this node is about to claim.
// defaultKeepalivedReload is reload_command's default, which starts a
// keepalived that stopped.
const defaultKeepalivedReload = "systemctl reload-or-restart keepalived"

func (m *keepalivedConfigModel) vipCheck() vipcheck.Check {
	c := vipcheck.Check{VIP: m.VIP.ValueString(), Interface: m.Interface.ValueString(), Self: m.Node.ValueString(),
		Noun: "the nodes of `nodes`", VIPAttr: problem.Root("vip"), InterfaceAttr: problem.Root("interface"), NodesAttr: problem.Root("nodes"),
		SplitCause: "The holders do not hear each other: check that VRRP (IP protocol 112) passes between the nodes of " +
			"`nodes`, and that another host does not claim the address."}
	for _, n := range m.Nodes {
		c.Nodes = append(c.Nodes, vipcheck.Node{Name: n.Name.ValueString(), IP: n.IP.ValueString()})
	}
	return c
}

// checksVIP says whether the node is asked about the VIP: check_vip is not
// false, and the configuration names the nodes (an import's state does
// not until its first apply).
func (m *keepalivedConfigModel) checksVIP() bool { return m.Nodes != nil && m.checkOn() }

func (m *keepalivedConfigModel) claimPath() string { return m.ConfigPath.ValueString() }

func (m *keepalivedConfigModel) ReadHost(ctx context.Context, c hostres.Host, destroying bool) error {
	if err := readVIP(ctx, c, destroying, m); err != nil {
		return err
	}
	return readService(ctx, c, destroying, m)
}

func (m *keepalivedConfigModel) WatchHost(ctx context.Context, c hostres.Host, id string) diag.Diagnostics {
	return append(watchVIP(ctx, c, id, m), watchService(ctx, c, id, m)...)
}

func (m *keepalivedConfigModel) WatchApplied(ctx context.Context, c hostres.Host) diag.Diagnostics {
	return serviceApplied(ctx, c, m.ID.ValueString(), m)
}

// CheckPlan plans service_running null where nothing tells it.
func (m *keepalivedConfigModel) CheckPlan() diag.Diagnostics {
	planUnwatched(m)
	return nil
}

// service: keepalived writes no PID file kha names, so running_command,
// else the unit the default reload_command restarts.
func (m *keepalivedConfigModel) service() (remote.Service, bool) {
	return m.serviceWatch.serviceOf("keepalived.service", "keepalived", "", m.ReloadCommand.ValueString(), defaultKeepalivedReload)
}

func (m *keepalivedConfigModel) serviceText() (name, summary, reload string) {
	return "keepalived", "keepalived Not Running", m.ReloadCommand.ValueString()
}

func (m *keepalivedConfigModel) HandoverOn() bool                 { return m.Handover.ValueBool() }
func (m *keepalivedConfigModel) HandoverPath() string             { return m.ConfigPath.ValueString() }
func (m *keepalivedConfigModel) SetHandoverSHA256(v types.String) { m.HandoverSHA256 = v }

// Places is the VIP, "address/prefix".
func (m *keepalivedConfigModel) Places() []string {
	if s := m.spec(); s.VIP != "" {
		return []string{s.VIPWithPrefix()}
	}
	return nil
}

// RenderServing renders a copy of m that holds the extra VIPs too.
func (m *keepalivedConfigModel) RenderServing(extra []string) (hostres.Rendered, diag.Diagnostics) {
	c := *m
	c.previousVIPs = extra
	return c.Render(&c)
}

// trackScript is the track script kha delivers, or "" when the user
// tracks with a command of their own or nothing.
func (m *keepalivedConfigModel) trackScript() string {
	if m.TrackCommand.ValueString() != "" || m.HealthcheckPort.IsNull() {
		return ""
	}
	return keepalived.TrackScript(fmt.Sprintf("http://127.0.0.1:%d/healthz", m.HealthcheckPort.ValueInt64()))
}

func (m *keepalivedConfigModel) ConflictName() string {
	return fmt.Sprintf("kha_keepalived_config with vip = %q, virtual_router_id = %d", m.VIP.ValueString(), m.VirtualRouterID.ValueInt64())
}

// PathSettings: the attributes that set its files' paths.
func (m *keepalivedConfigModel) PathSettings() []hostres.PathSetting {
	return []hostres.PathSetting{{Attribute: path.Root("config_path"), Value: m.ConfigPath}, {Attribute: path.Root("track_script_path"), Value: m.TrackScriptPath}}
}
