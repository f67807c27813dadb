package provider

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework-validators/boolvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/kubevip"
	"github.com/kha/terraform-provider-kha/internal/problem"
	"github.com/kha/terraform-provider-kha/internal/remote"
	"github.com/kha/terraform-provider-kha/internal/vipcheck"
)

var (
	_ resource.ResourceWithConfigure        = (*kubeVIPResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*kubeVIPResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*kubeVIPResource)(nil)
	_ resource.ResourceWithConfigValidators = (*kubeVIPResource)(nil)
	_ resource.ResourceWithImportState      = (*kubeVIPResource)(nil)
)

// NewKubeVIPResource is the constructor of kha_kube_vip.
func NewKubeVIPResource() resource.Resource {
	return &kubeVIPResource{hostres.Resource[kubeVIPModel, *kubeVIPModel]{Name: "kube_vip"}}
}

type kubeVIPResource struct {
	hostres.Resource[kubeVIPModel, *kubeVIPModel]
}

// The lifecycle's optional hooks the model implements (internal/hostres/hooks.go).
var (
	_ hostres.HostReader  = (*kubeVIPModel)(nil)
	_ hostres.HostWatcher = (*kubeVIPModel)(nil)
	_ vipClaimer          = (*kubeVIPModel)(nil)
)

// superAdminConf is kubeadm's (1.29+) kubeconfig with system:masters
// rights, the only one that works before `kubeadm init` has bound
// admin.conf's group.
const superAdminConf = "/etc/kubernetes/super-admin.conf"

type kubeVIPModel struct {
	hostres.Common
	NodeName        types.String         `tfsdk:"node_name"`
	Address         types.String         `tfsdk:"address"`
	Port            types.Int64          `tfsdk:"port"`
	Interface       types.String         `tfsdk:"interface"`
	Subnet          types.Int64          `tfsdk:"subnet"`
	Mode            types.String         `tfsdk:"mode"`
	LeaderElection  *leaderElectionModel `tfsdk:"leader_election"`
	BGP             *kubeVIPBGPModel     `tfsdk:"bgp"`
	ServicesEnabled types.Bool           `tfsdk:"services_enabled"`
	LoadBalancer    *kubeVIPLBModel      `tfsdk:"load_balancer"`
	DNSMode         types.String         `tfsdk:"dns_mode"`
	DDNS            types.Bool           `tfsdk:"ddns"`
	Image           types.String         `tfsdk:"image"`
	Bootstrap       types.Bool           `tfsdk:"bootstrap"`
	KubeconfigPath  types.String         `tfsdk:"kubeconfig_path"`
	LocalAPIServer  types.String         `tfsdk:"local_apiserver_address"`
	ManifestPath    types.String         `tfsdk:"manifest_path"`
	Rendered        types.String         `tfsdk:"rendered"`
	Nodes           []kubeVIPNodeModel   `tfsdk:"nodes"`
	vipWatch
}

type kubeVIPNodeModel struct {
	Name types.String `tfsdk:"name"`
	IP   types.String `tfsdk:"ip"`
}

type leaderElectionModel struct {
	LeaseName     types.String `tfsdk:"lease_name"`
	LeaseDuration types.Int64  `tfsdk:"lease_duration"`
	RenewDeadline types.Int64  `tfsdk:"renew_deadline"`
	RetryPeriod   types.Int64  `tfsdk:"retry_period"`
}

type kubeVIPBGPModel struct {
	RouterID types.String       `tfsdk:"router_id"`
	AS       types.Int64        `tfsdk:"as"`
	Peers    []kubeVIPPeerModel `tfsdk:"peers"`
}

type kubeVIPPeerModel struct {
	Address  types.String `tfsdk:"address"`
	AS       types.Int64  `tfsdk:"as"`
	Multihop types.Bool   `tfsdk:"multihop"`
}

type kubeVIPLBModel struct {
	ForwardingMethod types.String `tfsdk:"forwarding_method"`
}

func (m *kubeVIPModel) Fields() *hostres.Common { return &m.Common }

var asValidator = []validator.Int64{int64validator.Between(1, 4294967295)}

func (r *kubeVIPResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	seconds := func(what string, dflt, kubespray int) schema.Int64Attribute {
		return schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 3600)},
			MarkdownDescription: fmt.Sprintf("%s in seconds. Default `%d` (kubespray's: `%d`).", what, dflt, kubespray)}
	}
	attrs := map[string]schema.Attribute{
		"node_name": schema.StringAttribute{Required: true,
			MarkdownDescription: "The node's Kubernetes name (kube-vip's `vip_nodename`; kubespray's `inventory_hostname`)."},
		"address": schema.StringAttribute{Required: true,
			MarkdownDescription: "The VIP (kubespray's `kube_vip_address`): `kha_cluster_endpoints`' `external_lb.address`, which " +
				"puts it into the apiserver SANs. An IP, or a DNS name kube-vip resolves (`dns_mode`)."},
		"port": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(6443), Validators: portValidator,
			MarkdownDescription: "kube-apiserver's port, which the VIP serves: kube-vip only moves the address, the apiserver " +
				"answers on it. Default `6443`."},
		"interface": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Interface that carries the VIP (kubespray's `kube_vip_interface`). Unset: kube-vip takes the " +
				"default route's."},
		"subnet": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 128)},
			MarkdownDescription: "Prefix length of the VIP (kubespray's `kube_vip_cidr`). Default `32` (`128` for IPv6)."},
		"mode": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(string(kubevip.ARP)),
			Validators: []validator.String{stringvalidator.OneOf(string(kubevip.ARP), string(kubevip.BGP))},
			MarkdownDescription: "`arp`: one control-plane node holds the VIP, elected through a Lease, and announces it by ARP " +
				"(NDP for IPv6); the nodes must share a layer-2 segment. `bgp`: every node advertises the VIP to `bgp.peers`, " +
				"no layer-2 adjacency needed. Default `arp`."},
		"leader_election": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "The Lease of `arp` mode. kube-vip renews it through this node's own apiserver " +
				"(`local_apiserver_address`), so the VIP follows that apiserver's health: when it stops answering (dead, " +
				"hung, cut off from etcd, so it cannot write the Lease), kube-vip drops the VIP within `retry_period` + " +
				"2 × `renew_deadline` of its last renewal (it tries to release the Lease first), and another node takes it once the Lease has expired, `lease_duration` " +
				"after the last renewal it saw, polling every `retry_period` with client-go's jitter (up to 2.2 times it): " +
				"within `lease_duration` + 4.4 × `retry_period` (23.8 s at the defaults; the end-to-end test measures it " +
				"with the holder's apiserver stopped: 21.6 s). When the holder's node drops off the network, the others read the Lease " +
				"through their own apiservers. Where each apiserver uses its own etcd member (kubeadm's stacked etcd) that is " +
				"the same bound, plus etcd's election where the lost node also led etcd (measured 16.2–17.4 s at the defaults); " +
				"where each apiserver lists every member, a read that lands on the lost member waits out kube-vip's 10 s client " +
				"timeout first (guide \"Choosing a highly available design\"). An apiserver that still writes the Lease but fails `/readyz` for " +
				"another reason keeps the VIP: kube-vip's own health check works in BGP mode only (kube-vip#1787).\n\n" +
				"Unlike kubespray (5, 3 and 1 s), kha's defaults are client-go's 15, 10 and 2 s, kube-vip's own since 1.1 " +
				"(kube-vip#1429) and those of the control plane's own leader elections: kube-vip gives the VIP up whenever one " +
				"renewal takes `renew_deadline`, and with etcd's leader stalling 2 s at a time (Lease writes up to 4.4 s) " +
				"the end-to-end test saw kubespray's timings let the VIP go while the defaults held it. The price is a slower " +
				"move when the holder dies (7–9 s at kubespray's timings, 16–22 s at the defaults); a `renew_deadline` under " +
				"the default warns at plan. client-go refuses a `renew_deadline` that is not above 1.2 × `retry_period` (its jitter), " +
				"and so does kha.",
			Attributes: map[string]schema.Attribute{
				"lease_name": schema.StringAttribute{Optional: true,
					MarkdownDescription: "Default `" + kubevip.DefaultLeaseName + "`, as kubespray."},
				"lease_duration": seconds("How long a Lease lasts", kubevip.DefaultLeaseDuration, 5),
				"renew_deadline": seconds("How long the holder keeps trying to renew", kubevip.DefaultRenewDeadline, 3),
				"retry_period":   seconds("The time between tries", kubevip.DefaultRetryPeriod, 1),
			}},
		"bgp": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "BGP settings of `bgp` mode. Unlike kubespray, peers take no password: it would land in the " +
				"manifest, which `rendered` keeps in state; use peers without TCP MD5, or deliver the manifest with " +
				"`kha_file`'s write-only `content_wo`.",
			Attributes: map[string]schema.Attribute{
				"router_id": schema.StringAttribute{Required: true,
					MarkdownDescription: "This node's BGP router ID, an IPv4 address (usually the node's)."},
				"as": schema.Int64Attribute{Optional: true, Validators: asValidator,
					MarkdownDescription: "This node's AS. Default `65000`, as kubespray."},
				"peers": schema.ListNestedAttribute{Required: true, Validators: []validator.List{listvalidator.SizeAtLeast(1)},
					MarkdownDescription: "The routers that learn the VIP.",
					NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
						"address":  schema.StringAttribute{Required: true, MarkdownDescription: "Peer IP (IPv4 or IPv6)."},
						"as":       schema.Int64Attribute{Required: true, Validators: asValidator, MarkdownDescription: "Peer AS."},
						"multihop": schema.BoolAttribute{Optional: true, MarkdownDescription: "eBGP multihop. Default `false`."},
					}},
				},
			}},
		"services_enabled": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Let kube-vip also serve Services of type LoadBalancer (`svc_enable`). Default `false`."},
		"load_balancer": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "Balance connections to the VIP over every apiserver with IPVS (kubespray's `kube_vip_lb_enable`) " +
				"instead of sending them all to the VIP's holder.",
			Attributes: map[string]schema.Attribute{
				"forwarding_method": schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf(kubevip.ForwardingMethods...)},
					MarkdownDescription: "IPVS forwarding (`lb_fwdmethod`). `masquerade` takes kube-vip's iptables image and a " +
						"privileged container, as kubespray. Default `local`."},
			}},
		"dns_mode": schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf(kubevip.DNSModes...)},
			MarkdownDescription: "How a DNS name in `address` is resolved. Default `first`, as kubespray."},
		"ddns": schema.BoolAttribute{Optional: true, MarkdownDescription: "Get the VIP by DHCP (`vip_ddns`). Default `false`."},
		"image": schema.StringAttribute{Optional: true, Validators: []validator.String{imageValidator()},
			MarkdownDescription: "Default `" + kubevip.DefaultImage + "` (kubespray's). kha's end-to-end test runs kube-vip " +
				"v1.0.0, built from its source, with this manifest's environment. Refused, by the tag of an image named " +
				"`kube-vip` or `kube-vip-iptables` (a digest alone is not checked): v1.1.0 to v1.2.0, whose node that wins " +
				"the Lease hangs when adding the VIP fails, keeping the Lease without serving the VIP (kube-vip#1590, fixed " +
				"in v1.2.1); and v1.2.2 with a DNS name as `address`, which loses the VIP a minute after its election and " +
				"keeps the Lease (kube-vip#1655, fixed in v1.2.3). kube-vip v1.2.2 also reads its kubeconfig's server as " +
				"it is where nothing says otherwise (fixed in v1.2.3); kha's manifest says `kubernetes_addr`, so that one " +
				"does not reach kha's pods."},
		"bootstrap": schema.BoolAttribute{Optional: true,
			Validators: []validator.Bool{boolvalidator.ConflictsWith(path.MatchRoot("kubeconfig_path"))},
			MarkdownDescription: "Set on the first control-plane node for the apply before `kubeadm init`, and unset after: kube-vip " +
				"then reads `" + superAdminConf + "`, because kubeadm (1.29+) grants `admin.conf` its rights only at the end of " +
				"the init that needs the VIP. Unlike kubespray, which detects a first install itself, kha asks: Terraform " +
				"cannot see whether kubeadm has run.\n\n" +
				"~> `" + superAdminConf + "` is in the group `system:masters`, whose rights no RBAC change takes away, and it " +
				"stays mounted in the kube-vip pod while `bootstrap` is on. Switch it off as soon as `kubeadm init` has " +
				"finished: set `bootstrap = false` (or remove it) and apply; the manifest then mounts `admin.conf` and the " +
				"kubelet restarts kube-vip. Every plan after the apply that turned `bootstrap` on warns while it stays on."},
		"kubeconfig_path": schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()},
			MarkdownDescription: "Kubeconfig on the host that kube-vip uses for its Lease (mounted at `" + kubevip.KubeconfigInPod +
				"`). Default `" + kubevip.KubeconfigInPod + "`, or `" + superAdminConf + "` with `bootstrap`."},
		"local_apiserver_address": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Where kube-vip reaches this node's own apiserver, through which it renews its Lease: the " +
				"manifest maps the name `kubernetes`, which kube-vip dials on `port` whatever server its kubeconfig names " +
				"(kubeadm's `admin.conf` names the VIP), to this address. Unlike kubespray, kha names that address in " +
				"kube-vip's `kubernetes_addr` too (`kubernetes:<port>`, kube-vip 1.0's default), so a kube-vip release with " +
				"another default still renews the Lease through this node's apiserver. Default `" + kubevip.DefaultLocalAPIServer + "`; set the " +
				"node's address when its apiserver binds that address alone (`kha_cluster_endpoints`' `bind_address`). The VIP " +
				"itself is refused: the Lease would then not follow this node's apiserver."},
		"manifest_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("/etc/kubernetes/manifests/kube-vip.yml"),
			Validators:          []validator.String{managedPathValidator()},
			MarkdownDescription: "Static pod manifest path (kubespray's). Default `/etc/kubernetes/manifests/kube-vip.yml`."},
		"rendered": schema.StringAttribute{Computed: true, MarkdownDescription: "The static pod manifest, known at plan time."},
		"nodes": schema.ListNestedAttribute{Optional: true, Validators: []validator.List{listvalidator.SizeAtLeast(1)},
			MarkdownDescription: "Every control-plane node that runs kube-vip for this VIP, this one included: `check_vip` tells " +
				"their answers for the VIP from another host's. E.g. `[for n in kha_cluster_endpoints.cluster.control_plane_nodes " +
				": { name = n.name, ip = n.ip }]`. Unset: the VIP is not checked.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{Required: true, MarkdownDescription: "The node's `node_name`."},
				"ip": schema.StringAttribute{Required: true,
					MarkdownDescription: "The node's address on the VIP's link, of the VIP's family."},
			}},
		},
		"check_vip": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Before an apply puts the manifest in place, ask the node what it sees of `address`: the VIP must " +
				"be on-link for `interface` (`ip route get`; with `interface` unset, for the default route's interface, which " +
				"kube-vip takes), and nobody but the nodes of `nodes` may answer for it (ARP through `arping` for IPv4, the " +
				"kernel's neighbour discovery through `ping` for IPv6). A VIP that another host already holds, or that lies " +
				"behind a router or on another interface, stops the apply before anything changes on the node, with the " +
				"answering MAC address in the error: kube-vip would otherwise start on a fresh `kubeadm init` and never bring the " +
				"VIP up, or share it with the other host. A node without `arping` gets a warning instead. " + vipNeighbourDoc + " Unlike kubespray, which " +
				"starts kube-vip unchecked, kha looks first. Checked in `arp` mode with an IP `address` and `nodes` set; " +
				"`true` elsewhere is an error. Default `true` where it can check."},
		"vip_holders": vipHoldersAttribute("Who held `address` at the last refresh, as this node saw it on its link "+
			"(`check_vip`): the names of the nodes of `nodes` that hold it, and the MAC address of any other host that "+
			"answers for it. kube-vip gives it to its Lease's holder alone, so two holders mean a kube-vip that kept the "+
			"address after it lost the Lease (kube-vip#1418).",
			"changes nothing more: restart kube-vip where the warning says (over SSH, kha cannot tell which node "+
				"holds the Lease)"),
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Holds the control-plane VIP with [kube-vip](https://kube-vip.io) as a kubelet static pod on a " +
			"control-plane node, as kubespray's `kube_vip_enabled`: ARP with leader election, or BGP. One resource per " +
			"control-plane node (`for_each`); without `ssh` it only renders.\n\n" +
			"Pair it with `kha_cluster_endpoints`' `external_lb = { address = <VIP>, nodes = [] }`: the VIP then is in every " +
			"endpoint and SAN, and `nodes = []` says that no process binds `VIP:port` (kube-vip binds no socket; the " +
			"apiserver answers on the VIP itself), so there is no port trap.\n\n" +
			"The manifest is kubespray's (`kube-vip.manifest.j2`, with its labels `k8s-app: kube-vip` and " +
			"`addonmanager.kubernetes.io/mode: Reconcile`), with two differences. Unlike kubespray, which sets only the numeric " +
			"`priority`, kha also sets `priorityClassName: system-node-critical`, as kubeadm does for its own static pods, so " +
			"that the pod's priority has its name wherever it is read. And unlike kubespray, kha mounts the kubeconfig " +
			"read-only with `hostPath.type: File`: kube-vip never writes it, and a kubeconfig that is missing keeps the pod " +
			"from starting, where an untyped hostPath would start kube-vip on an empty directory made in its place.\n\n" +
			"The manifest is written atomically (mode 0600, as kubeadm writes its own); the kubelet starts or restarts kube-vip when it changes, and " +
			"destroy removes it, which stops kube-vip. kha does not wait for the VIP: with leader election one node of " +
			"many holds it. kube-vip renews its Lease through the node's own apiserver (`local_apiserver_address`), so the VIP " +
			"leaves a node whose apiserver stops answering (see `leader_election` for the bound).\n\n" +
			"A control-plane node on its way out (`kha_cluster_endpoints`' `draining`) gets no `kha_kube_vip`: filter it out of " +
			"`for_each` (`if !coalesce(n.draining, false)`), and the destroy of its manifest stops kube-vip there." + hostres.ImportDoc("the manifest", "host:port:<manifest_path>"),
		Attributes: hostres.WithHostAttributes(ctx, attrs, "`host:port:path` of the manifest when delivered over SSH, else the rendered digest.",
			"Digest of the manifest, known at plan time."),
	}
}

func (m *kubeVIPModel) spec() kubevip.Spec {
	s := kubevip.Spec{NodeName: m.NodeName.ValueString(), Address: m.Address.ValueString(), Port: int(m.Port.ValueInt64()),
		Interface: m.Interface.ValueString(), Subnet: int(m.Subnet.ValueInt64()), Mode: kubevip.Mode(m.Mode.ValueString()),
		ServicesEnabled: m.ServicesEnabled.ValueBool(), DNSMode: m.DNSMode.ValueString(), DDNS: m.DDNS.ValueBool(),
		Image: m.Image.ValueString(), Kubeconfig: m.KubeconfigPath.ValueString(), LocalAPIServer: m.LocalAPIServer.ValueString()}
	if m.Bootstrap.ValueBool() {
		s.Kubeconfig = superAdminConf
	}
	if le := m.LeaderElection; le != nil {
		s.LeaseName, s.LeaseDuration = le.LeaseName.ValueString(), int(le.LeaseDuration.ValueInt64())
		s.RenewDeadline, s.RetryPeriod = int(le.RenewDeadline.ValueInt64()), int(le.RetryPeriod.ValueInt64())
	}
	if b := m.BGP; b != nil {
		s.BGPRouterID, s.BGPAS = b.RouterID.ValueString(), b.AS.ValueInt64()
		for _, p := range b.Peers {
			s.BGPPeers = append(s.BGPPeers, kubevip.Peer{Address: p.Address.ValueString(), AS: p.AS.ValueInt64(), Multihop: p.Multihop.ValueBool()})
		}
	}
	if lb := m.LoadBalancer; lb != nil {
		s.LoadBalancer, s.ForwardingMethod = true, lb.ForwardingMethod.ValueString()
	}
	return s
}

// ModifyPlan plans as every host resource does, and warns while bootstrap
// stays on after the apply that turned it on.
func (r *kubeVIPResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	r.Resource.ModifyPlan(ctx, req, resp)
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() {
		return // create or destroy
	}
	var before, after types.Bool
	var node types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("bootstrap"), &before)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("bootstrap"), &after)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("node_name"), &node)...)
	if before.ValueBool() && after.ValueBool() {
		resp.Diagnostics.AddAttributeWarning(path.Root("bootstrap"), "kube-vip Still Uses the Super-Admin Kubeconfig",
			fmt.Sprintf("bootstrap is still on for %s after an earlier apply turned it on: kube-vip reads %s, kubeadm's kubeconfig in the "+
				"group system:masters, whose rights no RBAC change can take away, and it stays mounted in the kube-vip pod for "+
				"as long as bootstrap is on. bootstrap is for the apply before `kubeadm init` only: once `kubeadm init` has "+
				"finished on this node, set bootstrap = false (or remove it) and apply, and kube-vip restarts with %s. "+
				"If `kubeadm init` has not run yet, run it first.", nodeName(node), superAdminConf, kubevip.KubeconfigInPod))
	}
}

// nodeName is a node name for a message: quoted, or "this node" while unknown.
func nodeName(v types.String) string {
	if !known(v) {
		return "this node"
	}
	return strconv.Quote(v.ValueString())
}

func (r *kubeVIPResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	validateConfig(ctx, req, resp, func(m *kubeVIPModel) problem.Problems { return m.problems() })
}

// problems are the manifest's and the VIP check's.
func (m *kubeVIPModel) problems() problem.Problems {
	s := m.spec()
	ps := s.Validate()
	why := s.LinkUnchecked()
	switch {
	case !m.CheckVIP.ValueBool():
	case why != "":
		ps.Errorf(problem.Root("check_vip"), "VIP Cannot Be Checked", "check_vip is true, but %s. Remove check_vip.", why)
	case m.Nodes == nil:
		ps.Errorf(problem.Root("check_vip"), "VIP Cannot Be Checked",
			"check_vip is true, but nodes is unset: the check tells the nodes' answers for the VIP from another host's. Set "+
				"nodes to every control-plane node that runs kube-vip for this VIP.")
	}
	if m.Nodes != nil {
		ps = append(ps, m.vipCheck().Validate()...)
	}
	return ps
}

// vipCheck is the check of the VIP this node's kube-vip is about to claim.
func (m *kubeVIPModel) vipCheck() vipcheck.Check {
	s := m.spec()
	c := vipcheck.Check{VIP: s.Address, Interface: s.Interface, Self: s.NodeName, Noun: "the nodes of `nodes`",
		SplitCause: s.SplitCause(), VIPAttr: problem.Root("address"), InterfaceAttr: problem.Root("interface"),
		NodesAttr: problem.Root("nodes")}
	for _, n := range m.Nodes {
		c.Nodes = append(c.Nodes, vipcheck.Node{Name: n.Name.ValueString(), IP: n.IP.ValueString()})
	}
	return c
}

// checksVIP says whether the node is asked about the VIP: nodes is set,
// check_vip is not false, and the VIP is an address kube-vip announces on
// the link (arp mode).
func (m *kubeVIPModel) checksVIP() bool {
	return m.Nodes != nil && m.checkOn() && m.spec().LinkUnchecked() == ""
}

func (m *kubeVIPModel) claimPath() string { return m.ManifestPath.ValueString() }

func (m *kubeVIPModel) ReadHost(ctx context.Context, c hostres.Host, destroying bool) error {
	return readVIP(ctx, c, destroying, m)
}

func (m *kubeVIPModel) WatchHost(ctx context.Context, c hostres.Host, id string) diag.Diagnostics {
	return watchVIP(ctx, c, id, m)
}

// ImportState takes host:port:<manifest_path>.
func (r *kubeVIPResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	r.ImportRendered(ctx, req, resp, "10.0.0.11:22:/etc/kubernetes/manifests/kube-vip.yml", false, "", func(m *kubeVIPModel, p, _ string) {
		m.ManifestPath = types.StringValue(p)
		m.VIPHolders = types.ListNull(types.StringType) // until a refresh with the configuration looks
	})
}

func (m *kubeVIPModel) Render(config *kubeVIPModel) (hostres.Rendered, diag.Diagnostics) {
	var diags diag.Diagnostics
	if config == nil && m.NodeName.IsNull() { // imported: the manifest found, until the first apply
		return hostres.ImportedFile(&m.Common, m.ManifestPath.ValueString(), "", staticPodManifestMode), diags
	}
	if ps := m.problems(); ps.HasErrors() {
		appendProblems(&diags, ps, true)
		return hostres.Rendered{}, diags
	}
	text, err := kubevip.Render(m.spec())
	if err != nil {
		diags.AddError("Rendering Failed", err.Error()+". This is always a bug in the provider.")
		return hostres.Rendered{}, diags
	}
	if appendProblems(&diags, m.vipWatch.problems(m.vipCheck(), text), false); diags.HasError() {
		return hostres.Rendered{}, diags
	}
	m.Rendered = types.StringValue(text)
	return hostres.Rendered{Files: []remote.Item{remote.File{Path: m.ManifestPath.ValueString(), Content: []byte(text), Mode: staticPodManifestMode, CreateParentDirs: true}}}, diags
}

func (m *kubeVIPModel) ConflictName() string {
	return fmt.Sprintf("kha_kube_vip with address = %q", m.Address.ValueString())
}

// PathSettings: the attributes that set its files' paths.
func (m *kubeVIPModel) PathSettings() []hostres.PathSetting {
	return []hostres.PathSetting{{Attribute: path.Root("manifest_path"), Value: m.ManifestPath}}
}
