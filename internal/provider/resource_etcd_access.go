package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"

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

	"github.com/kha/terraform-provider-kha/internal/endpoints"
	"github.com/kha/terraform-provider-kha/internal/hostres"
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
	_ resource.ResourceWithImportState      = (*etcdAccessResource)(nil)

	_ hostres.ChangeChecker[etcdAccessModel] = (*etcdAccessModel)(nil)
)

// NewEtcdAccessResource is the constructor of kha_etcd_access.
func NewEtcdAccessResource() resource.Resource {
	return &etcdAccessResource{hostres.Resource[etcdAccessModel, *etcdAccessModel]{Name: "etcd_access"}}
}

type etcdAccessResource struct {
	hostres.Resource[etcdAccessModel, *etcdAccessModel]
}

type etcdAccessModel struct {
	hostres.Common
	DestroyCommand   types.String      `tfsdk:"destroy_command"`
	Members          []etcdMemberModel `tfsdk:"members"`
	AllowQuorumRisk  types.Bool        `tfsdk:"allow_quorum_risk"`
	Mode             types.String      `tfsdk:"mode"`
	IPFamily         types.String      `tfsdk:"ip_family"`
	Deployment       types.String      `tfsdk:"deployment"`
	MetricsPort      types.Int64       `tfsdk:"metrics_port"`
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

	AccessAddresses   types.List   `tfsdk:"access_addresses"`
	MetricsAddresses  types.List   `tfsdk:"metrics_addresses"`
	MemberNames       types.Map    `tfsdk:"member_names"`
	ListenPeerURLs    types.Map    `tfsdk:"listen_peer_urls"`
	ListenMetricsURLs types.Map    `tfsdk:"listen_metrics_urls"`
	KubeadmCertSANs   types.List   `tfsdk:"kubeadm_cert_sans"`
	Servers           types.List   `tfsdk:"servers"`
	EtcdServers       types.String `tfsdk:"etcd_servers"`
	SingleEndpoint    types.String `tfsdk:"single_endpoint"`
	ClientURLs        types.Map    `tfsdk:"client_urls"`
	PeerURLs          types.Map    `tfsdk:"peer_urls"`
	ListenClientURLs  types.Map    `tfsdk:"listen_client_urls"`
	InitialCluster    types.String `tfsdk:"initial_cluster"`
	CertSANs          types.Object `tfsdk:"cert_sans"`
	ProxyConfig       types.String `tfsdk:"proxy_config"`
	Env               types.String `tfsdk:"env"`
}

type etcdMemberModel struct {
	Name              types.String `tfsdk:"name"`
	MemberName        types.String `tfsdk:"member_name"`
	IP                types.String `tfsdk:"ip"`
	AccessIP          types.String `tfsdk:"access_ip"`
	IP6               types.String `tfsdk:"ip6"`
	AccessIP6         types.String `tfsdk:"access_ip6"`
	EtcdAddress       types.String `tfsdk:"etcd_address"`
	EtcdAccessAddress types.String `tfsdk:"etcd_access_address"`
	ClientPort        types.Int64  `tfsdk:"client_port"`
	PeerPort          types.Int64  `tfsdk:"peer_port"`
}

type etcdLBModel struct {
	Address    types.String `tfsdk:"address"`
	DomainName types.String `tfsdk:"domain_name"`
	Port       types.Int64  `tfsdk:"port"`
}

func (m *etcdAccessModel) Fields() *hostres.Common { return &m.Common }

func (r *etcdAccessResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"members": schema.ListNestedAttribute{
			Required:   true,
			Validators: []validator.List{listvalidator.SizeAtLeast(1)},
			MarkdownDescription: "The etcd members (kubespray's `etcd` group; without one, the control-plane nodes), in order, with " +
				"kubespray's per-host variables. The plan guards etcd's quorum: " + quorumGuardDoc,
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{Required: true,
					MarkdownDescription: "The host's inventory name: an etcd certificate SAN, as kubespray puts it there."},
				"member_name": schema.StringAttribute{Optional: true,
					MarkdownDescription: "etcd's member name (`ETCD_NAME`, kubespray's `etcd_member_name`). Default: kubespray's " +
						"`etcd<N>`, N the member's position from 1."},
				"ip": schema.StringAttribute{Optional: true,
					MarkdownDescription: "The host's address (kubespray's `ip`): IPv4 unless `ip_family` is `ipv6`. Required unless " +
						"the cluster is IPv6-only and `ip6` is set."},
				"access_ip": schema.StringAttribute{Optional: true,
					MarkdownDescription: "The host's access address (kubespray's `access_ip`). Default: `ip`."},
				"ip6":        schema.StringAttribute{Optional: true, MarkdownDescription: "IPv6 address (kubespray's `ip6`): dual-stack, or the address of an IPv6-only member."},
				"access_ip6": schema.StringAttribute{Optional: true, MarkdownDescription: "IPv6 access address (kubespray's `access_ip6`). Default: `ip6`."},
				"etcd_address": schema.StringAttribute{Optional: true,
					MarkdownDescription: "Address etcd binds (kubespray's `etcd_address`). Default: the primary `ip`."},
				"etcd_access_address": schema.StringAttribute{Optional: true,
					MarkdownDescription: "Address clients of this member dial, an IP or a DNS name (kubespray's `etcd_access_address`); it " +
						"goes into this member's advertised URLs and, as a name, into the certificate. Default: the primary access ip. " +
						"As in kubespray, `access_addresses` and `initial_cluster` keep the access ip."},
				"client_port": schema.Int64Attribute{Optional: true, Validators: portValidator, MarkdownDescription: "Client port. Default `2379`."},
				"peer_port":   schema.Int64Attribute{Optional: true, Validators: portValidator, MarkdownDescription: "Peer port. Default `2380`."},
			}},
		},
		"allow_quorum_risk": allowQuorumRiskAttribute("member", "members"),
		"ip_family": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(string(endpoints.IPv4)),
			Validators: []validator.String{stringvalidator.OneOf(ipFamilies...)},
			MarkdownDescription: "`ipv4` (default), `ipv6` or `dual`, as `kha_cluster_endpoints`' `ip_family`: which address is " +
				"primary (IPv4 in `dual`, as in kubespray). Dual-stack members get both families in the certificate.",
		},
		"deployment": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(string(endpoints.EtcdOnHosts)),
			Validators: []validator.String{stringvalidator.OneOf(string(endpoints.EtcdOnHosts), string(endpoints.EtcdByKubeadm))},
			MarkdownDescription: "Who runs etcd (kubespray's `etcd_deployment_type`): `host` (default; certificates issued with " +
				"`cert_sans`) or `kubeadm` (stacked etcd on the control-plane nodes; kubeadm issues the certificates with " +
				"`kubeadm_cert_sans`).",
		},
		"metrics_port": schema.Int64Attribute{Optional: true, Validators: portValidator,
			MarkdownDescription: "Port members serve metrics on over HTTP (kubespray's `etcd_metrics_port`): fills " +
				"`listen_metrics_urls`. `metrics_addresses` uses it, or 2381 as kubespray does."},
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
		"proxy_config_path": schema.StringAttribute{Optional: true, Computed: true, Validators: []validator.String{managedPathValidator()}, Default: stringdefault.StaticString("/etc/kha/etcd-proxy.cfg"),
			MarkdownDescription: "Where the local proxy's HAProxy config goes. Default `/etc/kha/etcd-proxy.cfg`."},
		"env_path": schema.StringAttribute{Optional: true, Computed: true, Validators: []validator.String{managedPathValidator()}, Default: stringdefault.StaticString("/etc/kha/etcd-access.env"),
			MarkdownDescription: "Where `env` goes. Default `/etc/kha/etcd-access.env`."},
		"validate_command": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("haproxy -c -q -f %s"),
			MarkdownDescription: "Checks a new proxy config before it replaces the old one. " + validateCommandPaths +
				" Default `haproxy -c -q -f %s`."},
		"reload_command": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Run after the proxy config is in place, e.g. `systemctl enable haproxy@etcd && systemctl reload-or-restart " +
				"haproxy@etcd`. Debian and Ubuntu ship no `haproxy@.service`: the example delivers one with `kha_file`."},

		"access_addresses": schema.ListAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "Every member's client URL on its access ip (kubespray's `etcd_access_addresses`, as a list)."},
		"metrics_addresses": schema.ListAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "The same on the metrics port (kubespray's `etcd_metrics_addresses`)."},
		"member_names": schema.MapAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "etcd member name (`ETCD_NAME`) per host name."},
		"listen_peer_urls": schema.MapAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "`ETCD_LISTEN_PEER_URLS` per host name."},
		"listen_metrics_urls": schema.MapAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "`ETCD_LISTEN_METRICS_URLS` per host name, with `metrics_port`; empty without. Unlike kubespray, " +
				"IPv6 addresses are bracketed."},
		"kubeadm_cert_sans": schema.ListAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "With `deployment = \"kubeadm\"`, kubeadm's `etcd.local.serverCertSANs` and `peerCertSANs` " +
				"(kubespray's `etcd_cert_alt_names` and `etcd_cert_alt_ips`; kubeadm adds the node's own names and addresses). Empty otherwise."},
		"servers": schema.ListAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "The endpoints clients get in this mode: kubeadm `etcd.external.endpoints`, `ETCDCTL_ENDPOINTS`."},
		"etcd_servers": schema.StringAttribute{Computed: true, MarkdownDescription: "`servers` joined with commas, for kube-apiserver's `--etcd-servers`."},
		"single_endpoint": schema.StringAttribute{Computed: true,
			MarkdownDescription: "One endpoint for clients that take only one (flannel's `--etcd-endpoints`): the proxy or the load balancer, else the first member."},
		"client_urls": schema.MapAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "Client URL per host name, on its `etcd_access_address` (kubespray's `etcd_client_url`, `ETCD_ADVERTISE_CLIENT_URLS`)."},
		"peer_urls": schema.MapAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "Peer URL per host name (kubespray's `etcd_peer_url`, `ETCD_INITIAL_ADVERTISE_PEER_URLS`)."},
		"listen_client_urls": schema.MapAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "`ETCD_LISTEN_CLIENT_URLS` per host name: its `etcd_address` and `127.0.0.1`, as kubespray (in IPv6-only clusters too)."},
		"initial_cluster": schema.StringAttribute{Computed: true, MarkdownDescription: "`ETCD_INITIAL_CLUSTER`."},
		"cert_sans": schema.SingleNestedAttribute{Computed: true,
			MarkdownDescription: "SANs the etcd certificates need (`deployment = \"host\"`), in the order of kubespray's `openssl.conf`: " +
				"`localhost`, per member its `etcd_access_address` when that is a name and its host name, the alt names, every " +
				"member's access ips and ips of every family, `cert_alt_ips`, loopback. Unlike kubespray, which lists an IP twice " +
				"when `ip` equals `access_ip`, repeats are dropped, and the `lb` name and VIP, and access or bind addresses given " +
				"as other IPs, are included: clients dial them.",
			Attributes: map[string]schema.Attribute{
				"dns_names":    schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "DNS SANs."},
				"ip_addresses": schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "IP SANs."},
			}},
		"proxy_config": schema.StringAttribute{Computed: true, MarkdownDescription: "The local proxy's HAProxy config (mode `local_proxy`), known at plan time. " +
			"It names no `user` or `group`: the proxy's HAProxy runs as the user its service starts it as, root under a " +
			"systemd unit such as `haproxy@etcd`, unlike `kha_haproxy_config`'s, which drops root (`run_as`)."},
		"env": schema.StringAttribute{Computed: true, MarkdownDescription: "`ETCD_SERVERS` and `ETCDCTL_ENDPOINTS` as an environment file, known at plan time."},
		"destroy_command": schema.StringAttribute{Optional: true, Computed: true,
			MarkdownDescription: "Run after the files are removed on destroy. Default in mode `local_proxy`, when `reload_command` " +
				"ends in `systemctl reload-or-restart UNIT` (or `restart`, `reload`, `try-restart`): `systemctl disable --now " +
				"UNIT`, so the proxy stops listening; otherwise none."},
	}
	resp.Schema = schema.Schema{
		Version: 1,
		MarkdownDescription: "Computes, at plan time, how etcd clients reach the etcd members — kube-apiserver's " +
			"`--etcd-servers`, kubeadm's external etcd endpoints, etcdctl, CNIs — and the SANs the etcd certificates need, " +
			"with kubespray's arithmetic (`etcd_access_addresses`, `etcd_client_url`, `etcd_peer_addresses`, `etcd.env`, " +
			"`openssl.conf`'s `alt_names`), so a cluster kubespray built keeps its values. In mode " +
			"`local_proxy` it renders a node-local TCP proxy. With `ssh` it keeps the proxy config and an environment " +
			"file on a host, through the same engine as `kha_file`." + hostres.ImportDoc("the environment file", "host:port:<env_path>"),
		Attributes: hostres.WithHostAttributes(ctx, attrs, "`host:port:path` of the first file when delivered over SSH, else the rendered digest.",
			"Digest of the files to deliver, known at plan time."),
	}
}

// CheckChange guards etcd's quorum against the plan's change of members.
func (m *etcdAccessModel) CheckChange(prior *etcdAccessModel) diag.Diagnostics {
	var before []endpoints.QuorumMember
	if prior != nil { // an imported state lists no members until its first apply: nil, as on create
		before = etcdMembers(prior.Members)
	}
	return problemDiagnostics(quorumProblems("members", "etcd member", before, etcdMembers(m.Members), m.AllowQuorumRisk.ValueBool()))
}

func (m *etcdAccessModel) input() endpoints.EtcdInput {
	in := endpoints.EtcdInput{
		Mode:           endpoints.EtcdMode(m.Mode.ValueString()),
		IPFamily:       endpoints.IPFamily(m.IPFamily.ValueString()),
		Deployment:     endpoints.EtcdDeployment(m.Deployment.ValueString()),
		MetricsPort:    int(m.MetricsPort.ValueInt64()),
		LocalProxyPort: int(m.LocalProxyPort.ValueInt64()),
		DNSDomain:      m.DNSDomain.ValueString(),
		CertAltNames:   stringValues(m.CertAltNames),
		CertAltIPs:     stringValues(m.CertAltIPs),
	}
	for _, mb := range m.Members {
		in.Members = append(in.Members, endpoints.EtcdMember{Name: mb.Name.ValueString(), MemberName: mb.MemberName.ValueString(),
			IP: mb.IP.ValueString(), AccessIP: mb.AccessIP.ValueString(), IP6: mb.IP6.ValueString(), AccessIP6: mb.AccessIP6.ValueString(),
			Address: mb.EtcdAddress.ValueString(), AccessAddress: mb.EtcdAccessAddress.ValueString(),
			ClientPort: int(mb.ClientPort.ValueInt64()), PeerPort: int(mb.PeerPort.ValueInt64())})
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
	validateConfig(ctx, req, resp, func(m *etcdAccessModel) problem.Problems {
		_, problems := endpoints.ComputeEtcd(m.input())
		return problems
	})
}

// ImportState takes host:port:<env_path>.
func (r *etcdAccessResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	r.ImportRendered(ctx, req, resp, "10.0.0.11:22:/etc/kha/etcd-access.env", false, "", func(m *etcdAccessModel, p, _ string) {
		m.EnvPath = types.StringValue(p)
		// What rendering computes is not known until the next plan.
		list, urls := types.ListNull(types.StringType), types.MapNull(types.StringType)
		m.AccessAddresses, m.MetricsAddresses, m.KubeadmCertSANs, m.Servers = list, list, list, list
		m.MemberNames, m.ListenPeerURLs, m.ListenMetricsURLs, m.ClientURLs, m.PeerURLs, m.ListenClientURLs = urls, urls, urls, urls, urls, urls
		m.CertSANs = types.ObjectNull(sansType)
	})
}

// Render computes the access values and returns the files to deliver:
// the proxy config (mode local_proxy), then the environment file.
func (m *etcdAccessModel) Render(config *etcdAccessModel) (hostres.Rendered, diag.Diagnostics) {
	var diags diag.Diagnostics
	if config == nil && m.Members == nil { // imported: the environment file found, until the first apply
		return hostres.ImportedFile(&m.Common, m.EnvPath.ValueString(), "", 0o644), diags
	}
	res, problems := endpoints.ComputeEtcd(m.input())
	appendProblems(&diags, problems, true)
	if diags.HasError() {
		return hostres.Rendered{}, diags
	}
	m.AccessAddresses = stringList(res.AccessAddresses)
	m.MetricsAddresses = stringList(res.MetricsAddresses)
	m.MemberNames = stringMap(res.MemberNames)
	m.ListenPeerURLs, m.ListenMetricsURLs = nodeURLMap(res.ListenPeerURLs), nodeURLMap(res.ListenMetricsURLs)
	m.KubeadmCertSANs = stringList(res.KubeadmCertSANs)
	m.Servers = stringList(res.Servers)
	m.EtcdServers = types.StringValue(strings.Join(res.Servers, ","))
	m.SingleEndpoint = types.StringValue(res.SingleEndpoint)
	m.ClientURLs, m.PeerURLs, m.ListenClientURLs = nodeURLMap(res.ClientURLs), nodeURLMap(res.PeerURLs), nodeURLMap(res.ListenClientURLs)
	m.InitialCluster = types.StringValue(res.InitialCluster)
	m.CertSANs = sansObject(res.CertSANs)
	env := fmt.Sprintf("# Rendered by kha: how this node reaches etcd.\nETCD_SERVERS=%s\nETCDCTL_ENDPOINTS=%s\n", m.EtcdServers.ValueString(), m.EtcdServers.ValueString())
	m.Env = types.StringValue(env)
	m.ProxyConfig = types.StringNull()
	if !known(m.DestroyCommand) && !m.ReloadCommand.IsUnknown() {
		m.DestroyCommand = types.StringNull()
		if res.ProxyListen != nil {
			if unit := restartedUnit(m.ReloadCommand.ValueString()); unit != "" {
				m.DestroyCommand = types.StringValue("systemctl disable --now " + unit)
			}
		}
	}

	var files []remote.Item
	if res.ProxyListen != nil {
		check := lbconfig.HealthCheck{Type: lbconfig.CheckTCP}
		if cert := m.ProxyClientCert.ValueString(); cert != "" {
			check = lbconfig.HealthCheck{Type: lbconfig.CheckHTTPSClientCert, Path: "/health", ClientCert: cert,
				CAFile: m.ProxyCAFile.ValueString(), InsecureSkipVerify: m.ProxyCAFile.ValueString() == ""}
		}
		spec := lbconfig.Spec{Name: "etcd", Listen: []lbconfig.ListenAddr{{Address: res.ProxyListen.Address, Port: res.ProxyListen.Port}},
			Backends: res.ProxyBackends, HealthCheck: check}
		appendProblems(&diags, spec.Validate().Rebase(etcdProxyRenames.Apply), true)
		if diags.HasError() {
			return hostres.Rendered{}, diags
		}
		text, err := lbconfig.RenderHAProxy(spec)
		if err != nil {
			diags.AddError("Rendering Failed", err.Error()+". This is always a bug in the provider.")
			return hostres.Rendered{}, diags
		}
		m.ProxyConfig = types.StringValue(text)
		files = append(files, remote.File{Path: m.ProxyConfigPath.ValueString(), Content: []byte(text), Mode: 0o644, CreateParentDirs: true,
			ValidateCommand: m.ValidateCommand.ValueString(), ReloadCommand: m.ReloadCommand.ValueString()})
	}
	files = append(files, remote.File{Path: m.EnvPath.ValueString(), Content: []byte(env), Mode: 0o644, CreateParentDirs: true})
	return hostres.Rendered{Files: files, RemoveCommand: m.DestroyCommand.ValueString()}, diags
}

// restartedUnit is the systemd unit that a reload command ending in
// `systemctl reload-or-restart UNIT` (or restart, reload, try-restart,
// try-reload-or-restart) starts, or "".
func restartedUnit(command string) string {
	m := restartCommand.FindStringSubmatch(command)
	if m == nil {
		return ""
	}
	return m[1]
}

var restartCommand = regexp.MustCompile(`(?:^|[;&|]\s*)systemctl\s+(?:reload-or-restart|restart|reload|try-restart|try-reload-or-restart)\s+([\w@.:-]+)\s*$`)

// etcdProxyRenames address the local proxy's findings to this schema:
// its health check's credentials are the proxy_* attributes. The rest of
// the proxy's spec is computed from attributes checked before it.
var etcdProxyRenames = problem.Renames{
	{From: problem.Root("health_check").At("client_cert"), To: problem.Root("proxy_client_cert")},
	{From: problem.Root("health_check").At("ca_file"), To: problem.Root("proxy_ca_file")},
}

func (m *etcdAccessModel) ConflictName() string {
	return fmt.Sprintf("kha_etcd_access with mode = %q", m.Mode.ValueString())
}

// PathSettings: the attributes that set its files' paths.
func (m *etcdAccessModel) PathSettings() []hostres.PathSetting {
	return []hostres.PathSetting{{Attribute: path.Root("proxy_config_path"), Value: m.ProxyConfigPath}, {Attribute: path.Root("env_path"), Value: m.EnvPath}}
}
