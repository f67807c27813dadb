package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/problem"
)

var (
	_ resource.Resource                   = (*clusterEndpointsResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*clusterEndpointsResource)(nil)
	_ resource.ResourceWithValidateConfig = (*clusterEndpointsResource)(nil)
	_ resource.ResourceWithUpgradeState   = (*clusterEndpointsResource)(nil)
)

// NewClusterEndpointsResource is the constructor of kha_cluster_endpoints.
func NewClusterEndpointsResource() resource.Resource {
	return &clusterEndpointsResource{}
}

type clusterEndpointsResource struct{}

type clusterEndpointsModel struct {
	ID                     types.String            `tfsdk:"id"`
	ControlPlaneNodes      []nodeModel             `tfsdk:"control_plane_nodes"`
	WorkerNodes            []nodeModel             `tfsdk:"worker_nodes"`
	WorkerAddresses        map[string]types.String `tfsdk:"worker_addresses"`
	APIServerPort          types.Int64             `tfsdk:"apiserver_port"`
	APIServerBindAddress   types.String            `tfsdk:"apiserver_bind_address"`
	APIServerAnonymousAuth types.Bool              `tfsdk:"apiserver_anonymous_auth"`
	LocalLB                *localLBModel           `tfsdk:"local_lb"`
	ExternalLB             *externalLBModel        `tfsdk:"external_lb"`
	SupplementaryAddresses []types.String          `tfsdk:"supplementary_addresses"`
	DNSDomain              types.String            `tfsdk:"dns_domain"`
	ServiceCIDR            types.String            `tfsdk:"service_cidr"`
	ServiceCIDRIPv6        types.String            `tfsdk:"service_cidr_ipv6"`
	IPFamily               types.String            `tfsdk:"ip_family"`
	ExistingCertSANs       *existingSANModel       `tfsdk:"existing_cert_sans"`
	Kubeadm                *kubeadmModel           `tfsdk:"kubeadm"`
	ShutdownDelay          types.String            `tfsdk:"apiserver_shutdown_delay_duration"`
	MinRequestTimeout      types.Int64             `tfsdk:"apiserver_min_request_timeout"`
	GoawayChance           types.Float64           `tfsdk:"apiserver_goaway_chance"`
	LBHealthCheck          *lbHealthCheckModel     `tfsdk:"lb_health_check"`
	LBIdleTimeout          types.String            `tfsdk:"lb_idle_timeout"`
	PodEndpointOverride    types.String            `tfsdk:"pod_network_endpoint_override"`
	AllowQuorumRisk        types.Bool              `tfsdk:"allow_quorum_risk"`

	Mode                        types.String `tfsdk:"mode"`
	LBDomainName                types.String `tfsdk:"lb_domain_name"`
	Endpoints                   types.Object `tfsdk:"endpoints"`
	NodeEndpoints               types.Map    `tfsdk:"node_endpoints"`
	KubeadmControlPlaneEndpoint types.String `tfsdk:"kubeadm_control_plane_endpoint"`
	KubeadmDiscoveryAddress     types.String `tfsdk:"kubeadm_discovery_address"`
	KubeProxyServer             types.String `tfsdk:"kube_proxy_server"`
	KubeadmClusterConfiguration types.String `tfsdk:"kubeadm_cluster_configuration"`
	MetalLBManifests            types.String `tfsdk:"metallb_manifests"`
	KubeconfigServer            types.String `tfsdk:"kubeconfig_server"`
	APIServerServiceIP          types.String `tfsdk:"apiserver_service_ip"`
	APIServerCertSANs           types.Object `tfsdk:"apiserver_cert_sans"`
	HostsEntries                types.List   `tfsdk:"hosts_entries"`
	LocalLBType                 types.String `tfsdk:"local_lb_type"`
	LocalLBListen               types.Object `tfsdk:"local_lb_listen"`
	APIServerBackends           types.List   `tfsdk:"apiserver_backends"`
	LocalLBBackends             types.List   `tfsdk:"local_lb_backends"` // deprecated: APIServerBackends
	LocalLBNodes                types.List   `tfsdk:"local_lb_nodes"`
	LocalLBNodeIPs              types.Map    `tfsdk:"local_lb_node_ips"`
	LocalLBFallback             types.Object `tfsdk:"local_lb_fallback"`
	PodNetworkEndpoint          types.String `tfsdk:"pod_network_endpoint"`
	CiliumValues                types.Map    `tfsdk:"cilium_values"`
	CalicoServicesEndpoint      types.Map    `tfsdk:"calico_kubernetes_services_endpoint"`
	HealthCheckSpec             types.Object `tfsdk:"health_check_spec"`
}

// lbHealthCheckModel is the timing of health_check_spec.
type lbHealthCheckModel struct {
	Interval           types.String `tfsdk:"interval"`
	Timeout            types.String `tfsdk:"timeout"`
	HealthyThreshold   types.Int64  `tfsdk:"healthy_threshold"`
	UnhealthyThreshold types.Int64  `tfsdk:"unhealthy_threshold"`
}

type nodeModel struct {
	Name        types.String `tfsdk:"name"`
	IP          types.String `tfsdk:"ip"`
	AccessIP    types.String `tfsdk:"access_ip"`
	IP6         types.String `tfsdk:"ip6"`
	AccessIP6   types.String `tfsdk:"access_ip6"`
	BindAddress types.String `tfsdk:"bind_address"`
	Hostname    types.String `tfsdk:"hostname"`
	FQDN        types.String `tfsdk:"fqdn"`
	Draining    types.Bool   `tfsdk:"draining"`
}

type localLBModel struct {
	Enabled         types.Bool   `tfsdk:"enabled"`
	EveryNode       types.Bool   `tfsdk:"every_node"`
	Type            types.String `tfsdk:"type"`
	Port            types.Int64  `tfsdk:"port"`
	HealthcheckPort types.Int64  `tfsdk:"healthcheck_port"`
}

type externalLBModel struct {
	Address              types.String   `tfsdk:"address"`
	Port                 types.Int64    `tfsdk:"port"`
	DomainName           types.String   `tfsdk:"domain_name"`
	RunsOnControlPlane   types.Bool     `tfsdk:"runs_on_control_plane"`
	ControlPlaneEndpoint types.Bool     `tfsdk:"control_plane_endpoint"`
	Nodes                []types.String `tfsdk:"nodes"`
	MetalLB              *metalLBModel  `tfsdk:"metallb"`
}

type metalLBModel struct {
	AddressPool      types.String `tfsdk:"address_pool"`
	SelectStaticPods types.Bool   `tfsdk:"select_static_pods"`
}

type kubeadmModel struct {
	EtcdEndpoints []types.String `tfsdk:"etcd_endpoints"`
	EtcdCAFile    types.String   `tfsdk:"etcd_ca_file"`
	EtcdCertFile  types.String   `tfsdk:"etcd_cert_file"`
	EtcdKeyFile   types.String   `tfsdk:"etcd_key_file"`
	// KubernetesVersion is kubeadm's kubernetesVersion.
	KubernetesVersion            types.String `tfsdk:"kubernetes_version"`
	ControlPlaneKubeletLocalMode types.Bool   `tfsdk:"control_plane_kubelet_local_mode"`
}

type existingSANModel struct {
	DNSNames    []types.String `tfsdk:"dns_names"`
	IPAddresses []types.String `tfsdk:"ip_addresses"`
}

var (
	endpointsType = map[string]attr.Type{
		"control_plane": types.StringType, "worker": types.StringType, "global": types.StringType, "external": types.StringType,
	}
	lbTypeValues = []string{endpoints.LBTypeNginx, endpoints.LBTypeHAProxy}
	ipFamilies   = []string{string(endpoints.IPv4), string(endpoints.IPv6), string(endpoints.DualStack)}
)

func (r *clusterEndpointsResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_cluster_endpoints"
}

func (r *clusterEndpointsResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = clusterEndpointsSchema()
}

func (r *clusterEndpointsResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	validateConfig(ctx, req, resp, func(m *clusterEndpointsModel) problem.Problems {
		_, problems := endpoints.Compute(m.input())
		return problems
	})
}

func (r *clusterEndpointsResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || !req.Config.Raw.IsFullyKnown() {
		// Destroy, or inputs still unknown: computed values stay unknown.
		return
	}
	var m clusterEndpointsModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(m.compute(false)...)
	if m.Kubeadm == nil || len(m.Kubeadm.EtcdEndpoints) == 0 { // stacked etcd
		var prior []nodeModel // nil on create; a state has at least one node
		if !req.State.Raw.IsNull() {
			resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("control_plane_nodes"), &prior)...)
		}
		appendProblems(&resp.Diagnostics, quorumProblems("control_plane_nodes", "control-plane node", controlPlaneMembers(prior),
			controlPlaneMembers(m.ControlPlaneNodes), m.AllowQuorumRisk.ValueBool()), false)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	raw, d := m.withComputed(ctx, req.Plan.Raw)
	resp.Diagnostics.Append(d...)
	if !d.HasError() {
		resp.Plan.Raw = raw
	}
}

func (r *clusterEndpointsResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.apply(ctx, req.Plan, &resp.State, &resp.Diagnostics)
}

func (r *clusterEndpointsResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.apply(ctx, req.Plan, &resp.State, &resp.Diagnostics)
}

// apply recomputes from the final plan with the same pure function
// ModifyPlan used, so state equals what the plan showed.
func (r *clusterEndpointsResource) apply(ctx context.Context, plan tfsdk.Plan, state *tfsdk.State, diags *diag.Diagnostics) {
	var m clusterEndpointsModel
	diags.Append(plan.Get(ctx, &m)...)
	if diags.HasError() {
		return
	}
	diags.Append(m.compute(true)...) // the plan showed the warnings
	if diags.HasError() {
		return
	}
	raw, d := m.withComputed(ctx, plan.Raw)
	diags.Append(d...)
	if !d.HasError() {
		state.Raw = raw
	}
}

// withComputed returns inputs (a plan of this resource) with the computed
// attributes replaced by m's. Unlike Plan.Set, it leaves the node lists as
// they are instead of converting every node back, value by value: at
// thousands of nodes that conversion was a large share of a plan.
func (m *clusterEndpointsModel) withComputed(ctx context.Context, inputs tftypes.Value) (tftypes.Value, diag.Diagnostics) {
	var diags diag.Diagnostics
	fail := func(err error) diag.Diagnostics {
		diags.AddError("Internal Error", "writing the computed values failed: "+err.Error()+". This is always a bug in the provider.")
		return diags
	}
	var attrs map[string]tftypes.Value
	if err := inputs.As(&attrs); err != nil {
		return tftypes.Value{}, fail(err)
	}
	for name, v := range problem.Sorted(m.computedValues()) {
		tv, err := v.ToTerraformValue(ctx)
		if err != nil {
			return tftypes.Value{}, fail(fmt.Errorf("%s: %w", name, err))
		}
		if old, ok := attrs[name]; !ok || !old.Type().Equal(tv.Type()) {
			return tftypes.Value{}, fail(fmt.Errorf("%s: the schema has no attribute of type %s by that name", name, tv.Type()))
		}
		attrs[name] = tv
	}
	return tftypes.NewValue(inputs.Type(), attrs), diags
}

// computedValues maps each computed attribute to its value in m.
func (m *clusterEndpointsModel) computedValues() map[string]attr.Value {
	return map[string]attr.Value{
		"id": m.ID, "mode": m.Mode, "lb_domain_name": m.LBDomainName, "endpoints": m.Endpoints,
		"node_endpoints": m.NodeEndpoints, "kubeadm_control_plane_endpoint": m.KubeadmControlPlaneEndpoint,
		"kubeadm_discovery_address": m.KubeadmDiscoveryAddress, "kube_proxy_server": m.KubeProxyServer,
		"kubeadm_cluster_configuration": m.KubeadmClusterConfiguration, "metallb_manifests": m.MetalLBManifests,
		"kubeconfig_server": m.KubeconfigServer, "apiserver_service_ip": m.APIServerServiceIP,
		"apiserver_cert_sans": m.APIServerCertSANs, "hosts_entries": m.HostsEntries, "local_lb_type": m.LocalLBType,
		"local_lb_listen": m.LocalLBListen, "apiserver_backends": m.APIServerBackends, "local_lb_backends": m.LocalLBBackends, "local_lb_nodes": m.LocalLBNodes,
		"local_lb_node_ips": m.LocalLBNodeIPs, "local_lb_fallback": m.LocalLBFallback,
		"pod_network_endpoint": m.PodNetworkEndpoint, "cilium_values": m.CiliumValues,
		"calico_kubernetes_services_endpoint": m.CalicoServicesEndpoint, "health_check_spec": m.HealthCheckSpec,
	}
}

func (r *clusterEndpointsResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	upgrade := resource.StateUpgrader{StateUpgrader: upgradeClusterEndpointsState}
	return map[int64]resource.StateUpgrader{0: upgrade, 1: upgrade, 2: upgrade, 3: upgrade}
}

// upgradeClusterEndpointsState carries a state over attribute by
// attribute, as every resource's, then computes the computed attributes
// again from the inputs, as the plan will: those added since the state was
// written (apiserver_backends in version 2, local_lb_node_ips in version
// 3) are filled, and the first plan after the upgrade shows no change.
// Inputs this version refuses keep the values carried over (with
// apiserver_backends from local_lb_backends, which has the same value);
// the plan then says what to change.
func upgradeClusterEndpointsState(ctx context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	hostres.UpgradeUnversionedState(ctx, req, resp)
	if resp.Diagnostics.HasError() {
		return
	}
	var m clusterEndpointsModel
	if d := resp.State.Get(ctx, &m); !d.HasError() && !m.compute(true).HasError() {
		if raw, d := m.withComputed(ctx, resp.State.Raw); !d.HasError() {
			resp.State.Raw = raw
			return
		}
	}
	var backends types.List
	resp.Diagnostics.Append(resp.State.GetAttribute(ctx, path.Root("local_lb_backends"), &backends)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("apiserver_backends"), backends)...)
}

// Read keeps the state: the values depend on the configuration only.
func (r *clusterEndpointsResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {
}

func (r *clusterEndpointsResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {
}

func (m *clusterEndpointsModel) input() endpoints.Input {
	in := endpoints.Input{
		APIServerPort:          int(m.APIServerPort.ValueInt64()),
		APIServerBindAddress:   m.APIServerBindAddress.ValueString(),
		SupplementaryAddresses: stringValues(m.SupplementaryAddresses),
		DNSDomain:              m.DNSDomain.ValueString(),
		ServiceCIDR:            m.ServiceCIDR.ValueString(),
		ServiceCIDRIPv6:        m.ServiceCIDRIPv6.ValueString(),
		IPFamily:               endpoints.IPFamily(m.IPFamily.ValueString()),
		AnonymousAuthOff:       m.APIServerAnonymousAuth.Equal(types.BoolValue(false)),
		PodEndpointOverride:    m.PodEndpointOverride.ValueString(),
		APIServer:              m.apiserverFlags(),
	}
	in.LBIdleTimeout = durationOf(m.LBIdleTimeout)
	if hc := m.LBHealthCheck; hc != nil {
		// The schema's validators admit only durations Go parses.
		in.LBHealthCheck.Interval = durationOf(hc.Interval)
		in.LBHealthCheck.Timeout = durationOf(hc.Timeout)
		in.LBHealthCheck.HealthyThreshold = int(hc.HealthyThreshold.ValueInt64())
		in.LBHealthCheck.UnhealthyThreshold = int(hc.UnhealthyThreshold.ValueInt64())
	}
	for _, n := range m.ControlPlaneNodes {
		in.ControlPlaneNodes = append(in.ControlPlaneNodes, n.node())
	}
	for _, n := range m.WorkerNodes {
		in.WorkerNodes = append(in.WorkerNodes, n.node())
	}
	if m.WorkerAddresses != nil {
		in.WorkerAddresses = make(map[string]string, len(m.WorkerAddresses))
		for name, ip := range m.WorkerAddresses {
			in.WorkerAddresses[name] = ip.ValueString()
		}
	}
	if m.LocalLB != nil {
		in.LocalLB = m.LocalLB.input()
	}
	if m.ExternalLB != nil {
		in.ExternalLB = m.ExternalLB.input()
	}
	if k := m.Kubeadm; k != nil {
		in.Kubeadm = endpoints.KubeadmInput{EtcdEndpoints: stringValues(k.EtcdEndpoints), EtcdCAFile: k.EtcdCAFile.ValueString(),
			EtcdCertFile: k.EtcdCertFile.ValueString(), EtcdKeyFile: k.EtcdKeyFile.ValueString(), KubernetesVersion: k.KubernetesVersion.ValueString(),
			ControlPlaneKubeletLocalMode: k.ControlPlaneKubeletLocalMode.ValueBoolPointer()}
	}
	// Both lists null is no certificate yet (kha_apiserver_certificate
	// with allow_missing at bootstrap); an empty list is a certificate
	// without SANs of that kind.
	if s := m.ExistingCertSANs; s != nil && (s.DNSNames != nil || s.IPAddresses != nil) {
		in.ExistingCertSANs = &endpoints.SANs{DNSNames: stringValues(s.DNSNames), IPAddresses: stringValues(s.IPAddresses)}
	}
	return in
}

// apiserverFlags are the apiserver flags set in m.
func (m *clusterEndpointsModel) apiserverFlags() endpoints.APIServerFlags {
	var f endpoints.APIServerFlags
	if d := durationOf(m.ShutdownDelay); known(m.ShutdownDelay) {
		f.ShutdownDelay = &d
	}
	if known(m.MinRequestTimeout) {
		d := time.Duration(m.MinRequestTimeout.ValueInt64()) * time.Second
		f.MinRequestTimeout = &d
	}
	if known(m.GoawayChance) {
		f.GoawayChance = m.GoawayChance.ValueFloat64Pointer()
	}
	return f
}

func (lb *localLBModel) input() endpoints.LocalLB {
	in := endpoints.LocalLB{
		Type:            lb.Type.ValueString(),
		Port:            int(lb.Port.ValueInt64()),
		HealthcheckPort: int(lb.HealthcheckPort.ValueInt64()),
		EveryNode:       lb.EveryNode.ValueBool(),
	}
	if !lb.Enabled.IsNull() {
		in.Enabled = lb.Enabled.ValueBoolPointer()
	}
	return in
}

func (lb *externalLBModel) input() *endpoints.ExternalLB {
	in := &endpoints.ExternalLB{
		Address:              lb.Address.ValueString(),
		Port:                 int(lb.Port.ValueInt64()),
		DomainName:           lb.DomainName.ValueString(),
		RunsOnControlPlane:   lb.RunsOnControlPlane.ValueBool(),
		ControlPlaneEndpoint: lb.ControlPlaneEndpoint.ValueBool(),
	}
	if lb.Nodes != nil {
		in.Nodes = stringValues(lb.Nodes)
	}
	if m := lb.MetalLB; m != nil {
		in.MetalLB = &endpoints.MetalLB{AddressPool: m.AddressPool.ValueString(), SelectStaticPods: m.SelectStaticPods.ValueBool()}
	}
	return in
}

func (n nodeModel) node() endpoints.Node {
	return endpoints.Node{
		Name: n.Name.ValueString(), IP: n.IP.ValueString(), AccessIP: n.AccessIP.ValueString(),
		IP6: n.IP6.ValueString(), AccessIP6: n.AccessIP6.ValueString(), BindAddress: n.BindAddress.ValueString(),
		Hostname: n.Hostname.ValueString(), FQDN: n.FQDN.ValueString(), Draining: n.Draining.ValueBool(),
	}
}

// compute fills the computed attributes from the inputs. With
// warningsShown (the plan showed them already) it reports errors only.
func (m *clusterEndpointsModel) compute(warningsShown bool) diag.Diagnostics {
	var diags diag.Diagnostics
	res, problems := endpoints.Compute(m.input())
	appendProblems(&diags, problems, warningsShown)
	if diags.HasError() {
		return diags
	}
	digest, err := json.Marshal(res)
	if err != nil {
		diags.AddError("Internal Error", "encoding the computed matrix failed: "+err.Error()+". This is always a bug in the provider.")
		return diags
	}
	sum := sha256.Sum256(digest)
	m.ID = types.StringValue(hex.EncodeToString(sum[:16]))
	m.Mode = types.StringValue(string(res.Mode))
	m.LBDomainName = optionalString(res.LBDomainName)
	m.KubeadmControlPlaneEndpoint = types.StringValue(res.KubeadmControlPlaneEndpoint)
	m.KubeadmDiscoveryAddress = types.StringValue(res.KubeadmDiscoveryAddress)
	m.KubeProxyServer = types.StringValue(res.KubeProxyServer)
	m.KubeadmClusterConfiguration = types.StringValue(res.KubeadmClusterConfiguration)
	m.MetalLBManifests = optionalString(res.MetalLBManifests)
	m.KubeconfigServer = types.StringValue(res.KubeconfigServer)
	m.APIServerServiceIP = types.StringValue(res.APIServerServiceIP)
	m.LocalLBType = optionalString(res.LocalLBType)

	var d diag.Diagnostics
	m.Endpoints, d = types.ObjectValue(endpointsType, map[string]attr.Value{
		"control_plane": types.StringValue(res.Endpoints.ControlPlane),
		"worker":        types.StringValue(res.Endpoints.Worker),
		"global":        types.StringValue(res.Endpoints.Global),
		"external":      types.StringValue(res.Endpoints.External),
	})
	diags.Append(d...)
	m.NodeEndpoints = nodeURLMap(res.NodeEndpoints)
	m.APIServerCertSANs = sansObject(res.CertSANs)
	m.HostsEntries = stringList(res.HostsEntries)
	m.LocalLBNodes = stringList(res.LocalLBNodes)
	m.LocalLBNodeIPs = stringMap(res.LocalLBNodeIPs)
	diags.Append(m.setPodEndpoint(res)...)

	diags.Append(m.setLoadBalancerInputs(res)...)
	return diags
}

// setLoadBalancerInputs fills what the load balancer resources take:
// the node-local listen address, the backends and the fallback.
func (m *clusterEndpointsModel) setLoadBalancerInputs(res endpoints.Result) diag.Diagnostics {
	var diags, d diag.Diagnostics
	m.LocalLBListen = types.ObjectNull(listenType)
	if l := res.LocalLBListen; l != nil {
		m.LocalLBListen, d = types.ObjectValue(listenType, map[string]attr.Value{
			"address": types.StringValue(l.Address), "ipv6_address": optionalString(l.IPv6Address), "port": types.Int64Value(int64(l.Port)),
		})
		diags.Append(d...)
	}
	backends := make([]attr.Value, 0, len(res.LocalLBBackends))
	for _, b := range res.LocalLBBackends {
		v, d := types.ObjectValue(backendType, map[string]attr.Value{
			"name": types.StringValue(b.Name), "address": types.StringValue(b.Address), "port": types.Int64Value(int64(b.Port)),
			"anonymous_auth":          types.BoolValue(!m.APIServerAnonymousAuth.Equal(types.BoolValue(false))),
			"shutdown_delay_duration": m.ShutdownDelay,
			"min_request_timeout":     m.MinRequestTimeout,
		})
		diags.Append(d...)
		backends = append(backends, v)
	}
	m.APIServerBackends, d = types.ListValue(types.ObjectType{AttrTypes: backendType}, backends)
	diags.Append(d...)
	m.LocalLBBackends = m.APIServerBackends
	m.LocalLBFallback = types.ObjectNull(fallbackType)
	if fb := res.LocalLBFallback; fb != nil {
		m.LocalLBFallback, d = types.ObjectValue(fallbackType, map[string]attr.Value{
			"address": types.StringValue(fb.Address), "port": types.Int64Value(int64(fb.Port))})
		diags.Append(d...)
	}
	return diags
}

// setPodEndpoint fills what pods outside the host network and the load
// balancers' health checks take.
func (m *clusterEndpointsModel) setPodEndpoint(res endpoints.Result) diag.Diagnostics {
	pe, port := res.PodEndpoint, strconv.Itoa(res.PodEndpoint.Port)
	m.PodNetworkEndpoint = types.StringValue(pe.URL)
	m.CiliumValues = stringMap(map[string]string{"k8sServiceHost": pe.Host, "k8sServicePort": port})
	m.CalicoServicesEndpoint = stringMap(map[string]string{"KUBERNETES_SERVICE_HOST": pe.Host, "KUBERNETES_SERVICE_PORT": port})
	h := res.HealthCheck
	var d diag.Diagnostics
	m.HealthCheckSpec, d = types.ObjectValue(healthCheckSpecType, map[string]attr.Value{
		"protocol": types.StringValue(h.Protocol), "path": optionalString(h.Path), "port": types.Int64Value(int64(h.Port)),
		"interval_seconds": types.Int64Value(int64(h.Interval / time.Second)), "timeout_seconds": types.Int64Value(int64(h.Timeout / time.Second)),
		"healthy_threshold": types.Int64Value(int64(h.HealthyThreshold)), "unhealthy_threshold": types.Int64Value(int64(h.UnhealthyThreshold)),
	})
	return d
}
