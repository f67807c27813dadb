package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
	"github.com/kha/terraform-provider-kha/internal/lbconfig"
	"github.com/kha/terraform-provider-kha/internal/problem"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

var (
	_ resource.ResourceWithConfigure        = (*etcdAccessResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*etcdAccessResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*etcdAccessResource)(nil)
	_ resource.ResourceWithConfigValidators = (*etcdAccessResource)(nil)
	_ resource.ResourceWithUpgradeState     = (*etcdAccessResource)(nil)
)

// NewEtcdAccessResource is the constructor of kha_etcd_access.
func NewEtcdAccessResource() resource.Resource { return &etcdAccessResource{} }

type etcdAccessResource struct {
	hostResource[etcdAccessModel, *etcdAccessModel]
}

type etcdAccessModel struct {
	hostFields
	DestroyCommand   types.String      `tfsdk:"destroy_command"`
	Members          []etcdMemberModel `tfsdk:"members"`
	Mode             types.String      `tfsdk:"mode"`
	LocalProxyPort   types.Int64       `tfsdk:"local_proxy_port"`
	LB               *etcdLBModel      `tfsdk:"lb"`
	DNSDomain        types.String      `tfsdk:"dns_domain"`
	CertAltNames     []types.String    `tfsdk:"cert_alt_names"`
	CertAltIPs       []types.String    `tfsdk:"cert_alt_ips"`
	ExistingCertSANs *existingSANModel `tfsdk:"existing_cert_sans"`
	ProxyClientCert  types.String      `tfsdk:"proxy_client_cert"`
	ProxyCAFile      types.String      `tfsdk:"proxy_ca_file"`
	ProxyConfigPath  types.String      `tfsdk:"proxy_config_path"`
	EnvPath          types.String      `tfsdk:"env_path"`
	ValidateCommand  types.String      `tfsdk:"validate_command"`
	ReloadCommand    types.String      `tfsdk:"reload_command"`

	AccessAddresses  types.List   `tfsdk:"access_addresses"`
	Servers          types.List   `tfsdk:"servers"`
	EtcdServers      types.String `tfsdk:"etcd_servers"`
	SingleEndpoint   types.String `tfsdk:"single_endpoint"`
	ClientURLs       types.Map    `tfsdk:"client_urls"`
	PeerURLs         types.Map    `tfsdk:"peer_urls"`
	ListenClientURLs types.Map    `tfsdk:"listen_client_urls"`
	InitialCluster   types.String `tfsdk:"initial_cluster"`
	CertSANs         types.Object `tfsdk:"cert_sans"`
	ProxyConfig      types.String `tfsdk:"proxy_config"`
	Env              types.String `tfsdk:"env"`
}

type etcdMemberModel struct {
	Name       types.String `tfsdk:"name"`
	IP         types.String `tfsdk:"ip"`
	AccessIP   types.String `tfsdk:"access_ip"`
	ClientPort types.Int64  `tfsdk:"client_port"`
	PeerPort   types.Int64  `tfsdk:"peer_port"`
}

type etcdLBModel struct {
	Address    types.String `tfsdk:"address"`
	DomainName types.String `tfsdk:"domain_name"`
	Port       types.Int64  `tfsdk:"port"`
}

func (r *etcdAccessResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_etcd_access"
}

func (m *etcdAccessModel) fields() *hostFields { return &m.hostFields }

func (r *etcdAccessResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"members": schema.ListNestedAttribute{
			Required:            true,
			Validators:          []validator.List{listvalidator.SizeAtLeast(1)},
			MarkdownDescription: "The etcd members (kubespray's `etcd` group; without one, the control-plane nodes), in order.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name":        schema.StringAttribute{Required: true, MarkdownDescription: "Member name (kubespray's `etcd_member_name`)."},
				"ip":          schema.StringAttribute{Required: true, MarkdownDescription: "Address etcd binds (kubespray's `etcd_address`)."},
				"access_ip":   schema.StringAttribute{Optional: true, MarkdownDescription: "Address clients dial (kubespray's `etcd_access_address`). Default: `ip`."},
				"client_port": schema.Int64Attribute{Optional: true, Validators: portValidator, MarkdownDescription: "Client port. Default `2379`."},
				"peer_port":   schema.Int64Attribute{Optional: true, Validators: portValidator, MarkdownDescription: "Peer port. Default `2380`."},
			}},
		},
		"mode": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(string(endpoints.EtcdDirect)),
			Validators: []validator.String{stringvalidator.OneOf(string(endpoints.EtcdDirect), string(endpoints.EtcdLocalProxy), string(endpoints.EtcdLB))},
			MarkdownDescription: "`direct` (default, kubespray's): clients get every member and balance themselves. " +
				"`local_proxy`: a TCP proxy on each client node's `127.0.0.1:<local_proxy_port>` forwards to every member, " +
				"for clients that take a single endpoint. `lb`: a VIP or FQDN in front of etcd (`lb`); its name and address " +
				"are added to `cert_sans`.",
		},
		"local_proxy_port": schema.Int64Attribute{
			Optional: true, Computed: true, Default: int64default.StaticInt64(endpoints.DefaultEtcdClientPort), Validators: portValidator,
			MarkdownDescription: "Port of the local proxy on `127.0.0.1`. Default `2379`, which collides with etcd's own " +
				"loopback listener on member nodes: run the proxy on other nodes or choose another port.",
		},
		"lb": schema.SingleNestedAttribute{
			Optional:            true,
			MarkdownDescription: "The load balancer of mode `lb`.",
			Attributes: map[string]schema.Attribute{
				"address":     schema.StringAttribute{Required: true, MarkdownDescription: "VIP or host name."},
				"domain_name": schema.StringAttribute{Optional: true, MarkdownDescription: "Name clients use. Default: `address`."},
				"port":        schema.Int64Attribute{Optional: true, Validators: portValidator, MarkdownDescription: "Port. Default `2379`."},
			},
		},
		"dns_domain": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(endpoints.DefaultDNSDomain),
			MarkdownDescription: "Cluster DNS domain, for the default alternative names. Default `cluster.local`."},
		"cert_alt_names": schema.ListAttribute{Optional: true, ElementType: types.StringType,
			MarkdownDescription: "DNS names added to kubespray's default `etcd_cert_alt_names` (`etcd.kube-system.svc.<dns_domain>`, `etcd.kube-system.svc`, `etcd.kube-system`, `etcd`)."},
		"cert_alt_ips": schema.ListAttribute{Optional: true, ElementType: types.StringType,
			MarkdownDescription: "IP addresses added to the certificates (kubespray's `etcd_cert_alt_ips`)."},
		"existing_cert_sans": schema.SingleNestedAttribute{
			Optional: true,
			MarkdownDescription: "SANs of the etcd server certificates that exist. When set, the plan fails if any endpoint " +
				"clients would use (a member, the local proxy, the `lb` name or VIP) would not verify against them.",
			Attributes: map[string]schema.Attribute{
				"dns_names":    schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "DNS SANs."},
				"ip_addresses": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "IP SANs."},
			},
		},
		"proxy_client_cert": schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()},
			MarkdownDescription: "Client certificate and key in one PEM file on the proxy's host: the proxy then checks each member's `/health` over TLS. Without it the checks are TCP connects."},
		"proxy_ca_file": schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()},
			MarkdownDescription: "etcd CA file on the proxy's host, to verify members in `/health` checks."},
		"proxy_config_path": schema.StringAttribute{Optional: true, Computed: true, Validators: []validator.String{filePathValidator()}, Default: stringdefault.StaticString("/etc/kha/etcd-proxy.cfg"),
			MarkdownDescription: "Where the local proxy's HAProxy config goes. Default `/etc/kha/etcd-proxy.cfg`."},
		"env_path": schema.StringAttribute{Optional: true, Computed: true, Validators: []validator.String{filePathValidator()}, Default: stringdefault.StaticString("/etc/kha/etcd-access.env"),
			MarkdownDescription: "Where `env` goes. Default `/etc/kha/etcd-access.env`."},
		"validate_command": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("haproxy -c -q -f %s"),
			MarkdownDescription: "Checks a new proxy config before it replaces the old one. Default `haproxy -c -q -f %s`."},
		"reload_command": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Run after the proxy config is in place, e.g. `systemctl reload-or-restart haproxy@etcd`."},

		"access_addresses": schema.ListAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "Every member's client URL (kubespray's `etcd_access_addresses`, as a list)."},
		"servers": schema.ListAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "The endpoints clients get in this mode: kubeadm `etcd.external.endpoints`, `ETCDCTL_ENDPOINTS`."},
		"etcd_servers": schema.StringAttribute{Computed: true, MarkdownDescription: "`servers` joined with commas, for kube-apiserver's `--etcd-servers`."},
		"single_endpoint": schema.StringAttribute{Computed: true,
			MarkdownDescription: "One endpoint for clients that take only one (flannel's `--etcd-endpoints`): the proxy or the load balancer, else the first member."},
		"client_urls": schema.MapAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "Client URL per member (kubespray's `etcd_client_url`, `ETCD_ADVERTISE_CLIENT_URLS`)."},
		"peer_urls": schema.MapAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "Peer URL per member (`ETCD_INITIAL_ADVERTISE_PEER_URLS`)."},
		"listen_client_urls": schema.MapAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "`ETCD_LISTEN_CLIENT_URLS` per member: its own address and loopback (`::1` for IPv6 members; kubespray always uses `127.0.0.1`)."},
		"initial_cluster": schema.StringAttribute{Computed: true, MarkdownDescription: "`ETCD_INITIAL_CLUSTER`."},
		"cert_sans": schema.SingleNestedAttribute{Computed: true,
			MarkdownDescription: "SANs the etcd server certificates need, in the order of kubespray's `openssl.conf`, without its repeats.",
			Attributes: map[string]schema.Attribute{
				"dns_names":    schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "DNS SANs."},
				"ip_addresses": schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "IP SANs."},
			}},
		"proxy_config":    schema.StringAttribute{Computed: true, MarkdownDescription: "The local proxy's HAProxy config (mode `local_proxy`), known at plan time."},
		"env":             schema.StringAttribute{Computed: true, MarkdownDescription: "`ETCD_SERVERS` and `ETCDCTL_ENDPOINTS` as an environment file, known at plan time."},
		"destroy_command": schema.StringAttribute{Optional: true, MarkdownDescription: "Run after the files are removed on destroy. Default: none."},
	}
	resp.Schema = schema.Schema{
		Version: 1,
		MarkdownDescription: "Computes, at plan time, how etcd clients reach the etcd members — kube-apiserver's " +
			"`--etcd-servers`, kubeadm's external etcd endpoints, etcdctl, CNIs — and the SANs the etcd certificates need, " +
			"with kubespray's arithmetic (`etcd_access_addresses`, `etcd_client_url`, `etcd_cert_alt_names`). In mode " +
			"`local_proxy` it renders a node-local TCP proxy. With `ssh` it keeps the proxy config and an environment " +
			"file on a host, through the same engine as `kha_file`.\n\n-> Import is not supported.",
		Attributes: withHostAttributes(ctx, attrs, "`host:port:path` of the first file when delivered over SSH, else the rendered digest.",
			"Digest of the files to deliver, known at plan time."),
	}
}

func (m *etcdAccessModel) input() endpoints.EtcdInput {
	in := endpoints.EtcdInput{
		Mode:           endpoints.EtcdMode(m.Mode.ValueString()),
		LocalProxyPort: int(m.LocalProxyPort.ValueInt64()),
		DNSDomain:      m.DNSDomain.ValueString(),
		CertAltNames:   stringValues(m.CertAltNames),
		CertAltIPs:     stringValues(m.CertAltIPs),
	}
	for _, mb := range m.Members {
		in.Members = append(in.Members, endpoints.EtcdMember{Name: mb.Name.ValueString(), IP: mb.IP.ValueString(),
			AccessIP: mb.AccessIP.ValueString(), ClientPort: int(mb.ClientPort.ValueInt64()), PeerPort: int(mb.PeerPort.ValueInt64())})
	}
	if m.LB != nil {
		in.LB = &endpoints.EtcdLBSpec{Address: m.LB.Address.ValueString(), DomainName: m.LB.DomainName.ValueString(), Port: int(m.LB.Port.ValueInt64())}
	}
	if s := m.ExistingCertSANs; s != nil {
		in.ExistingCertSANs = &endpoints.SANs{DNSNames: stringValues(s.DNSNames), IPAddresses: stringValues(s.IPAddresses)}
	}
	return in
}

func (r *etcdAccessResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	if !req.Config.Raw.IsFullyKnown() {
		return
	}
	var m etcdAccessModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	_, problems := endpoints.ComputeEtcd(m.input())
	appendProblems(&resp.Diagnostics, problems, true)
}

// files computes the access values and returns the files to deliver: the
// proxy config (mode local_proxy), then the environment file.
func (m *etcdAccessModel) render(*etcdAccessModel) (rendered, diag.Diagnostics) {
	var diags diag.Diagnostics
	res, problems := endpoints.ComputeEtcd(m.input())
	appendProblems(&diags, problems, true)
	if diags.HasError() {
		return rendered{}, diags
	}
	m.AccessAddresses = stringList(res.AccessAddresses)
	m.Servers = stringList(res.Servers)
	m.EtcdServers = types.StringValue(strings.Join(res.Servers, ","))
	m.SingleEndpoint = types.StringValue(res.SingleEndpoint)
	m.ClientURLs, m.PeerURLs, m.ListenClientURLs = nodeURLMap(res.ClientURLs), nodeURLMap(res.PeerURLs), nodeURLMap(res.ListenClientURLs)
	m.InitialCluster = types.StringValue(res.InitialCluster)
	m.CertSANs = sansObject(res.CertSANs)
	env := fmt.Sprintf("# Rendered by kha: how this node reaches etcd.\nETCD_SERVERS=%s\nETCDCTL_ENDPOINTS=%s\n", m.EtcdServers.ValueString(), m.EtcdServers.ValueString())
	m.Env = types.StringValue(env)
	m.ProxyConfig = types.StringNull()

	var files []remote.File
	if res.ProxyListen != nil {
		spec := lbconfig.Spec{Name: "etcd", Listen: []lbconfig.ListenAddr{{Address: res.ProxyListen.Address, Port: res.ProxyListen.Port}},
			Backends: res.ProxyBackends, HealthCheck: lbconfig.HealthCheck{Path: "/health", TCP: m.ProxyClientCert.ValueString() == "",
				ClientCert: m.ProxyClientCert.ValueString(), CAFile: m.ProxyCAFile.ValueString(), InsecureSkipVerify: m.ProxyCAFile.ValueString() == ""}}
		appendProblems(&diags, spec.Validate().Rebase(etcdProxyPath), true)
		if diags.HasError() {
			return rendered{}, diags
		}
		text, err := lbconfig.RenderHAProxy(spec)
		if err != nil {
			diags.AddError("Rendering Failed", err.Error()+". This is always a bug in the provider.")
			return rendered{}, diags
		}
		m.ProxyConfig = types.StringValue(text)
		files = append(files, remote.File{Path: m.ProxyConfigPath.ValueString(), Content: []byte(text), Mode: 0o644, CreateParentDirs: true,
			ValidateCommand: m.ValidateCommand.ValueString(), ReloadCommand: m.ReloadCommand.ValueString()})
	}
	files = append(files, remote.File{Path: m.EnvPath.ValueString(), Content: []byte(env), Mode: 0o644, CreateParentDirs: true})
	return rendered{files: files, removeCommand: m.DestroyCommand.ValueString()}, diags
}

// etcdProxyPath maps the renderer's health-check paths onto this schema.
func etcdProxyPath(p problem.Path) problem.Path {
	if len(p) == 2 && p[0] == "health_check" {
		switch p[1] {
		case "client_cert":
			return problem.Root("proxy_client_cert")
		case "ca_file":
			return problem.Root("proxy_ca_file")
		}
	}
	return p
}
