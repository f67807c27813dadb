package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
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
	ID                     types.String      `tfsdk:"id"`
	ControlPlaneNodes      []nodeModel       `tfsdk:"control_plane_nodes"`
	WorkerNodes            []nodeModel       `tfsdk:"worker_nodes"`
	APIServerPort          types.Int64       `tfsdk:"apiserver_port"`
	APIServerBindAddress   types.String      `tfsdk:"apiserver_bind_address"`
	LocalLB                *localLBModel     `tfsdk:"local_lb"`
	ExternalLB             *externalLBModel  `tfsdk:"external_lb"`
	SupplementaryAddresses []types.String    `tfsdk:"supplementary_addresses"`
	DNSDomain              types.String      `tfsdk:"dns_domain"`
	ServiceCIDR            types.String      `tfsdk:"service_cidr"`
	ServiceCIDRIPv6        types.String      `tfsdk:"service_cidr_ipv6"`
	IPFamily               types.String      `tfsdk:"ip_family"`
	ExistingCertSANs       *existingSANModel `tfsdk:"existing_cert_sans"`

	Mode                        types.String `tfsdk:"mode"`
	LBDomainName                types.String `tfsdk:"lb_domain_name"`
	Endpoints                   types.Object `tfsdk:"endpoints"`
	NodeEndpoints               types.Map    `tfsdk:"node_endpoints"`
	KubeadmControlPlaneEndpoint types.String `tfsdk:"kubeadm_control_plane_endpoint"`
	KubeconfigServer            types.String `tfsdk:"kubeconfig_server"`
	APIServerServiceIP          types.String `tfsdk:"apiserver_service_ip"`
	APIServerCertSANs           types.Object `tfsdk:"apiserver_cert_sans"`
	HostsEntries                types.List   `tfsdk:"hosts_entries"`
	LocalLBType                 types.String `tfsdk:"local_lb_type"`
	LocalLBListen               types.Object `tfsdk:"local_lb_listen"`
	LocalLBBackends             types.List   `tfsdk:"local_lb_backends"`
	LocalLBNodes                types.List   `tfsdk:"local_lb_nodes"`
}

type nodeModel struct {
	Name        types.String `tfsdk:"name"`
	IP          types.String `tfsdk:"ip"`
	AccessIP    types.String `tfsdk:"access_ip"`
	IP6         types.String `tfsdk:"ip6"`
	AccessIP6   types.String `tfsdk:"access_ip6"`
	BindAddress types.String `tfsdk:"bind_address"`
}

type localLBModel struct {
	Enabled         types.Bool   `tfsdk:"enabled"`
	Type            types.String `tfsdk:"type"`
	Port            types.Int64  `tfsdk:"port"`
	HealthcheckPort types.Int64  `tfsdk:"healthcheck_port"`
}

type externalLBModel struct {
	Address            types.String `tfsdk:"address"`
	Port               types.Int64  `tfsdk:"port"`
	DomainName         types.String `tfsdk:"domain_name"`
	RunsOnControlPlane types.Bool   `tfsdk:"runs_on_control_plane"`
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

func nodeAttributes(role string) map[string]schema.Attribute {
	attrs := map[string]schema.Attribute{
		"name": schema.StringAttribute{
			Required: true,
			MarkdownDescription: "Kubernetes node name (kubespray's `inventory_hostname` / `kube_override_hostname`). " +
				"Lowercase letters, digits, `-` and `.`. Unique across `control_plane_nodes` and `worker_nodes`.",
		},
		"ip": schema.StringAttribute{
			Required: true,
			MarkdownDescription: "Address the node binds and advertises (kubespray's `ip`): IPv4 when `ip_family` is `ipv4` " +
				"or `dual`, IPv6 when it is `ipv6`.",
		},
		"access_ip": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Address other nodes and load balancers use to reach this node (kubespray's `access_ip`), " +
				"e.g. a NAT or public address. Defaults to `ip`.",
		},
		"ip6": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "IPv6 address of a dual-stack node (kubespray's `ip6`). Only with `ip_family = \"dual\"`.",
		},
		"access_ip6": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "IPv6 access address of a dual-stack node (kubespray's `access_ip6`). Defaults to `ip6`.",
		},
		"bind_address": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "kube-apiserver bind address of this control-plane node, overriding `apiserver_bind_address` " +
				"(kubespray's per-host `kube_apiserver_bind_address`). Must be the node's `ip`/`ip6` or a wildcard. " +
				"Not allowed on worker nodes.",
		},
	}
	if role == "worker" {
		attrs["bind_address"] = schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Not allowed on worker nodes (they run no kube-apiserver); present so both lists share one shape.",
		}
	}
	return attrs
}

func (r *clusterEndpointsResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	portValidators := []validator.Int64{int64validator.Between(1, 65535)}
	resp.Schema = schema.Schema{
		Version: 1,
		MarkdownDescription: "Computes, at plan time, how every part of a Kubernetes cluster reaches kube-apiserver: the endpoint of " +
			"each node role in each load-balancer mode, the apiserver certificate SANs that make all of them verify, " +
			"the kubeadm `controlPlaneEndpoint`, `/etc/hosts` lines, and the node-local load balancer's listen address " +
			"and backends. The arithmetic is kubespray's (`kube_apiserver_endpoint`, `apiserver_sans`, …) with its " +
			"known defects corrected; each attribute says where it differs.\n\n" +
			"Every computed attribute is known during `plan` once the inputs are, so it can feed DNS records, cloud " +
			"load balancers and certificate resources in the same run.\n\n" +
			"The plan fails when an endpoint would not verify against the apiserver certificate " +
			"(see `existing_cert_sans`), when two services on one node would bind the same socket, or when nodes " +
			"repeat names or addresses.\n\n" +
			"-> This resource is a pure computation: it touches no host, and `terraform import` is not supported " +
			"(there is nothing to import; declare it and apply).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Digest of the computed matrix; it changes whenever any computed value changes.",
			},

			// Inputs.
			"control_plane_nodes": schema.ListNestedAttribute{
				Required: true,
				MarkdownDescription: "Nodes running kube-apiserver (kubespray's `kube_control_plane` group), in order: the " +
					"first is `m0`, used for `kubeadm init` and, without a load balancer, by everyone.",
				NestedObject: schema.NestedAttributeObject{Attributes: nodeAttributes("control_plane")},
				Validators:   []validator.List{listvalidator.SizeAtLeast(1)},
			},
			"worker_nodes": schema.ListNestedAttribute{
				Optional: true,
				MarkdownDescription: "Nodes without kube-apiserver (kubespray's `kube_node` hosts that are not in " +
					"`kube_control_plane`). A control-plane node that also runs workloads belongs only in `control_plane_nodes`.",
				NestedObject: schema.NestedAttributeObject{Attributes: nodeAttributes("worker")},
			},
			"apiserver_port": schema.Int64Attribute{
				Optional: true, Computed: true,
				Default:             int64default.StaticInt64(endpoints.DefaultAPIServerPort),
				Validators:          portValidators,
				MarkdownDescription: fmt.Sprintf("kube-apiserver secure port (kubespray's `kube_apiserver_port`). Default `%d`.", endpoints.DefaultAPIServerPort),
			},
			"apiserver_bind_address": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(endpoints.DefaultBindAddress),
				MarkdownDescription: "kube-apiserver bind address on every control-plane node (kubespray's " +
					"`kube_apiserver_bind_address`). Default `::` (every address). `0.0.0.0` is treated like `::`: " +
					"control-plane nodes reach their own apiserver on `127.0.0.1` (kubespray turns `0.0.0.0` into the " +
					"endpoint `https://0.0.0.0:6443` and mangles IPv6 addresses such as `::1` into `127.0.0.11`). " +
					"A specific address must be the node's own; use per-node `bind_address` when nodes differ.",
			},
			"local_lb": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Node-local apiserver load balancer on every node without kube-apiserver " +
					"(kubespray's `loadbalancer_apiserver_localhost`). Enabled by default unless `external_lb` is set.",
				Attributes: map[string]schema.Attribute{
					"enabled": schema.BoolAttribute{
						Optional: true,
						MarkdownDescription: "Run the node-local load balancer. Default: `true` without `external_lb`. " +
							"`false` without `external_lb` gives mode `direct`. `true` together with `external_lb` gives mode " +
							"`local_lb_with_unmanaged_lb`: nodes use their local load balancer and only external clients use " +
							"the external one (kubespray would instead send every node to the external LB and leave the local " +
							"one unused).",
					},
					"type": schema.StringAttribute{
						Optional:   true,
						Validators: []validator.String{stringvalidator.OneOf(lbTypeValues...)},
						MarkdownDescription: fmt.Sprintf("Load balancer implementation (kubespray's `loadbalancer_apiserver_type`): `%s` or `%s`. Default `%s`.",
							endpoints.LBTypeNginx, endpoints.LBTypeHAProxy, endpoints.DefaultLocalLBType),
					},
					"port": schema.Int64Attribute{
						Optional:   true,
						Validators: portValidators,
						MarkdownDescription: "Port it listens on, on `127.0.0.1` (and `::1` with IPv6) " +
							"(kubespray's `loadbalancer_apiserver_port`). Default: `apiserver_port`.",
					},
					"healthcheck_port": schema.Int64Attribute{
						Optional:   true,
						Validators: portValidators,
						MarkdownDescription: "Port of the load balancer's own health endpoint, on all addresses " +
							"(kubespray's `loadbalancer_apiserver_healthcheck_port`). Unset: no health endpoint.",
					},
				},
			},
			"external_lb": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "A load balancer in front of every apiserver: a VIP (keepalived, kube-vip) or a cloud " +
					"load balancer (kubespray's `loadbalancer_apiserver` and `apiserver_loadbalancer_domain_name`). " +
					"Selects mode `external_lb`, or `local_lb_with_unmanaged_lb` with `local_lb.enabled = true`.",
				Attributes: map[string]schema.Attribute{
					"address": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "VIP or address of the load balancer (IP or DNS name) (kubespray's `loadbalancer_apiserver.address`).",
					},
					"port": schema.Int64Attribute{
						Optional:            true,
						Validators:          portValidators,
						MarkdownDescription: "Port of the load balancer (kubespray's `loadbalancer_apiserver.port`). Default: `apiserver_port`.",
					},
					"domain_name": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Name clients use for the load balancer (kubespray's `apiserver_loadbalancer_domain_name`). " +
							"Default: `address`. When it is a DNS name and `address` an IP, `hosts_entries` carries the line that resolves it.",
					},
					"runs_on_control_plane": schema.BoolAttribute{
						Optional: true,
						MarkdownDescription: "Set when the load balancer process binds `address:port` on the control-plane nodes " +
							"themselves (HAProxy plus keepalived there). The plan then fails if that socket collides with " +
							"kube-apiserver bound to every address on the same port. Default `false`.",
					},
				},
			},
			"supplementary_addresses": schema.ListAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Extra DNS names and IPs clients use to reach the apiservers, added to the certificate SANs " +
					"(kubespray's `supplementary_addresses_in_ssl_keys`). Put the VIP and name of a load balancer you " +
					"manage elsewhere here. A leading `*.` wildcard label is allowed.",
			},
			"dns_domain": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString(endpoints.DefaultDNSDomain),
				MarkdownDescription: fmt.Sprintf("Cluster DNS domain (kubespray's `dns_domain`). Default `%s`.", endpoints.DefaultDNSDomain),
			},
			"service_cidr": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(endpoints.DefaultServiceCIDR),
				MarkdownDescription: fmt.Sprintf("IPv4 service range (kubespray's `kube_service_addresses`). Default `%s`. "+
					"Its first address is the `kubernetes` service IP.", endpoints.DefaultServiceCIDR),
			},
			"service_cidr_ipv6": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(endpoints.DefaultServiceCIDRIPv6),
				MarkdownDescription: fmt.Sprintf("IPv6 service range (kubespray's `kube_service_addresses_ipv6`). Default `%s`. "+
					"Used for the service IP when `ip_family` is `ipv6`.", endpoints.DefaultServiceCIDRIPv6),
			},
			"ip_family": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:    stringdefault.StaticString(string(endpoints.IPv4)),
				Validators: []validator.String{stringvalidator.OneOf(ipFamilies...)},
				MarkdownDescription: "Address families: `ipv4` (default), `ipv6`, or `dual` (kubespray's `ipv4_stack` / " +
					"`ipv6_stack`). In `dual`, IPv4 is primary, as in kubespray, and the nodes' `ip6`/`access_ip6` are added " +
					"to the certificate (kubespray adds only the IPv6 address of the default route).",
			},
			"existing_cert_sans": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "SANs of an apiserver certificate that already exists. When set, the plan fails if any " +
					"endpoint of the matrix, backend address or supplementary address would not verify against it — the " +
					"`x509: certificate is valid for …, not …` failure after adding a load balancer, caught before apply.",
				Attributes: map[string]schema.Attribute{
					"dns_names":    schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "DNS SANs of the certificate."},
					"ip_addresses": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "IP SANs of the certificate."},
				},
			},

			// Computed at plan time.
			"mode": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Access mode: `local_lb` (node-local load balancers), `local_lb_with_unmanaged_lb` " +
					"(node-local load balancers, plus an external one for clients outside the cluster), `external_lb` " +
					"(everyone through the external load balancer) or `direct` (everyone to the first control-plane node).",
			},
			"lb_domain_name": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "kubespray's `apiserver_loadbalancer_domain_name`: `localhost` with node-local load balancers, " +
					"the external load balancer's name in `external_lb` mode, null in `direct` mode.",
			},
			"endpoints": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "apiserver URL per role.",
				Attributes: map[string]schema.Attribute{
					"control_plane": schema.StringAttribute{Computed: true, MarkdownDescription: "What the first control-plane node uses " +
						"(kubespray's `kube_apiserver_endpoint` there): its own apiserver, or the external load balancer in `external_lb` mode."},
					"worker": schema.StringAttribute{Computed: true, MarkdownDescription: "What nodes without apiserver use: " +
						"`https://localhost:<local_lb port>`, the external load balancer, or the first control-plane node."},
					"global": schema.StringAttribute{Computed: true, MarkdownDescription: "The one endpoint for cluster-wide " +
						"consumers such as CNI configs (kubespray's `kube_apiserver_global_endpoint`)."},
					"external": schema.StringAttribute{Computed: true, MarkdownDescription: "What clients outside the cluster use: " +
						"the external load balancer by its domain name when there is one, else the first control-plane node's access address."},
				},
			},
			"node_endpoints": schema.MapAttribute{
				Computed: true, ElementType: types.StringType,
				MarkdownDescription: "apiserver URL per node name (kubespray's per-host `kube_apiserver_endpoint`).",
			},
			"kubeadm_control_plane_endpoint": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "kubeadm `ClusterConfiguration.controlPlaneEndpoint` (`host:port`): the external load balancer " +
					"in `external_lb` mode, else the first control-plane node's `ip`. IPv6 literals are bracketed " +
					"(kubespray leaves them bare, which kubeadm cannot parse).",
			},
			"kubeconfig_server": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "`server:` of an admin kubeconfig used outside the cluster (kubespray's `kubeconfig_localhost`): " +
					"the external load balancer's address, else the first control-plane node's access address. It uses the " +
					"address, not the domain name, so it works without DNS.",
			},
			"apiserver_service_ip": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The `kubernetes` service IP: the first address of the primary family's service range (kubespray's `kube_apiserver_ip`).",
			},
			"apiserver_cert_sans": schema.SingleNestedAttribute{
				Computed: true,
				MarkdownDescription: "SANs the apiserver certificate needs (kubeadm `apiServer.certSANs`), in kubespray's " +
					"`apiserver_sans` order, without repeats: IP literals are compared in canonical form (kubespray " +
					"compares strings and lists `fd00::0001` and `fd00::1` twice), and every control-plane node name is " +
					"included on every node.",
				Attributes: map[string]schema.Attribute{
					"dns_names":    schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "DNS SANs, lowercase."},
					"ip_addresses": schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "IP SANs, canonical form."},
				},
			},
			"hosts_entries": schema.ListAttribute{
				Computed: true, ElementType: types.StringType,
				MarkdownDescription: "`/etc/hosts` lines the nodes need: `<address> <domain_name>` when every node uses an " +
					"external load balancer by a DNS name in front of an IP. Empty otherwise (current kubespray writes none).",
			},
			"local_lb_type": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Type of the node-local load balancer; null when no node runs one.",
			},
			"local_lb_listen": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Where the node-local load balancer listens; null when no node runs one.",
				Attributes: map[string]schema.Attribute{
					"address":      schema.StringAttribute{Computed: true, MarkdownDescription: "`127.0.0.1`."},
					"ipv6_address": schema.StringAttribute{Computed: true, MarkdownDescription: "`::1` when the cluster has IPv6, else null."},
					"port":         schema.Int64Attribute{Computed: true, MarkdownDescription: "`local_lb.port`, default `apiserver_port`."},
				},
			},
			"local_lb_backends": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "The apiservers a load balancer in front of the control plane forwards to, in " +
					"`control_plane_nodes` order: each node's access address (primary family) and `apiserver_port`. " +
					"Computed in every mode, so an external load balancer can use it too.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":    schema.StringAttribute{Computed: true, MarkdownDescription: "Node name."},
					"address": schema.StringAttribute{Computed: true, MarkdownDescription: "Access address, unbracketed."},
					"port":    schema.Int64Attribute{Computed: true, MarkdownDescription: "apiserver port."},
				}},
			},
			"local_lb_nodes": schema.ListAttribute{
				Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Names of the nodes that run the node-local load balancer: every worker, and control-plane " +
					"nodes whose apiserver is bound to a specific address. kubespray also installs it on control-plane nodes " +
					"bound to `0.0.0.0`, where the apiserver already answers on loopback.",
			},
		},
	}
}

func (r *clusterEndpointsResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	if !req.Config.Raw.IsFullyKnown() {
		return
	}
	var m clusterEndpointsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	_, problems := endpoints.Compute(m.input())
	appendProblems(&resp.Diagnostics, problems, true)
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
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &m)...)
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
	diags.Append(m.compute(true)...)
	if diags.HasError() {
		return
	}
	diags.Append(state.Set(ctx, &m)...)
}

func (r *clusterEndpointsResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return unversionedStateUpgrader
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
	}
	for _, n := range m.ControlPlaneNodes {
		in.ControlPlaneNodes = append(in.ControlPlaneNodes, n.node())
	}
	for _, n := range m.WorkerNodes {
		in.WorkerNodes = append(in.WorkerNodes, n.node())
	}
	if lb := m.LocalLB; lb != nil {
		in.LocalLB = endpoints.LocalLB{
			Type:            lb.Type.ValueString(),
			Port:            int(lb.Port.ValueInt64()),
			HealthcheckPort: int(lb.HealthcheckPort.ValueInt64()),
		}
		if !lb.Enabled.IsNull() {
			in.LocalLB.Enabled = lb.Enabled.ValueBoolPointer()
		}
	}
	if lb := m.ExternalLB; lb != nil {
		in.ExternalLB = &endpoints.ExternalLB{
			Address:            lb.Address.ValueString(),
			Port:               int(lb.Port.ValueInt64()),
			DomainName:         lb.DomainName.ValueString(),
			RunsOnControlPlane: lb.RunsOnControlPlane.ValueBool(),
		}
	}
	if s := m.ExistingCertSANs; s != nil {
		in.ExistingCertSANs = &endpoints.SANs{DNSNames: stringValues(s.DNSNames), IPAddresses: stringValues(s.IPAddresses)}
	}
	return in
}

func (n nodeModel) node() endpoints.Node {
	return endpoints.Node{
		Name: n.Name.ValueString(), IP: n.IP.ValueString(), AccessIP: n.AccessIP.ValueString(),
		IP6: n.IP6.ValueString(), AccessIP6: n.AccessIP6.ValueString(), BindAddress: n.BindAddress.ValueString(),
	}
}

// compute fills the computed attributes from the inputs. Warnings were
// already shown with the plan, so apply reports errors only.
func (m *clusterEndpointsModel) compute(atApply bool) diag.Diagnostics {
	var diags diag.Diagnostics
	res, problems := endpoints.Compute(m.input())
	appendProblems(&diags, problems, atApply)
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
		})
		diags.Append(d...)
		backends = append(backends, v)
	}
	m.LocalLBBackends, d = types.ListValue(types.ObjectType{AttrTypes: backendType}, backends)
	diags.Append(d...)
	return diags
}
