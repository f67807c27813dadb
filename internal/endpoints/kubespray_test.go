package endpoints

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// The kubespray parity tables: for each inventory, the value kubespray
// computes (written down from its formulas: kubespray_defaults,
// network_facts, the kubeadm and node roles, etcd's openssl.conf and
// etcd.env, as of v2.31) next to the value kha computes. Where kha
// deliberately differs, the row says why; every other row must agree.

// value is one compared value: kubespray's and kha's, and why they differ.
type value struct {
	kubespray, kha string
	why            string // empty: kha computes kubespray's value
}

func same(v string) value { return value{kubespray: v, kha: v} }

func check(t *testing.T, name string, got string, v value) {
	t.Helper()
	want := v.kha
	if v.why == "" && v.kubespray != v.kha {
		t.Errorf("%s: the table says kha agrees with kubespray, but lists %q and %q", name, v.kubespray, v.kha)
	}
	if got != want {
		t.Errorf("%s = %q, want %q (kubespray: %q)", name, got, want, v.kubespray)
	}
}

// kubesprayAPIServerSANs is kubespray's apiserver_sans: one list,
// `flatten | select | unique` (exact string compare), split by kind as
// kubeadm sorts it.
func kubesprayAPIServerSANs(entries ...string) (dns, ips string) {
	seen := map[string]bool{}
	var d, i []string
	for _, e := range entries {
		if e == "" || seen[e] {
			continue
		}
		seen[e] = true
		if _, ok := parseIP(e); ok {
			i = append(i, e)
		} else {
			d = append(d, e)
		}
	}
	return strings.Join(d, ","), strings.Join(i, ",")
}

var (
	m0 = Node{Name: "m0", IP: "10.10.0.11", Hostname: "m0", FQDN: "m0.dc.example"}
	m1 = Node{Name: "m1", IP: "10.10.0.12", Hostname: "m1", FQDN: "m1.dc.example"}
	m2 = Node{Name: "m2", IP: "10.10.0.13", Hostname: "m2", FQDN: "m2.dc.example"}
	n1 = Node{Name: "n1", IP: "10.10.0.21"}
	n2 = Node{Name: "n2", IP: "10.10.0.22"}
)

func TestKubesprayParityAPIServer(t *testing.T) {
	t.Parallel()
	baseSANs := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "10.233.0.1",
		"localhost", "127.0.0.1", "::1"}
	threeFacts := []string{"m0", "m1", "m2", "m0.dc.example", "m1.dc.example", "m2.dc.example"}
	cases := []struct {
		name   string
		in     Input
		values map[string]value
		// sans lists kubespray's apiserver_sans after the base entries.
		sans                    []string
		sansWhy                 string // why kha's SANs differ, when they do
		khaExtraDNS, khaExtraIP []string
	}{
		{
			name: "defaults: node-local nginx on workers",
			in:   Input{ControlPlaneNodes: []Node{m0, m1, m2}, WorkerNodes: []Node{n1, n2}},
			values: map[string]value{
				"mode":                  same("local_lb"),
				"node_endpoints.m1":     same("https://127.0.0.1:6443"),
				"node_endpoints.n1":     same("https://localhost:6443"),
				"global":                same("https://localhost:6443"),
				"kubeadm_control_plane": same("10.10.0.11:6443"),
				"kubeconfig_server":     same("https://10.10.0.11:6443"),
				"kubeadm_discovery":     same("10.10.0.11:6443"),
				"kube_proxy_server":     same("https://127.0.0.1:6443"),
				"local_lb_nodes":        same("n1,n2"),
				"local_lb_backends":     same("10.10.0.11:6443,10.10.0.12:6443,10.10.0.13:6443"),
				"local_lb_listen":       same("127.0.0.1:6443"),
				"lb_domain_name":        same("localhost"),
				"apiserver_service_ip":  same("10.233.0.1"),
				"hosts_entries":         same(""),
			},
			sans: append([]string{"localhost", "10.10.0.11", "10.10.0.12", "10.10.0.13", "10.10.0.11", "10.10.0.12", "10.10.0.13"}, append(threeFacts, "m1")...),
			sansWhy: "kubespray lists only the evaluating node's own name (m1 here), so the three control-plane nodes' lists differ; " +
				"kha lists every control-plane node's name on every node",
			khaExtraDNS: []string{"m0", "m2"},
		},
		{
			name: "access_ip: other nodes and load balancers use it",
			in:   Input{ControlPlaneNodes: []Node{m0, {Name: "m1", IP: "10.10.0.12", AccessIP: "192.0.2.12", Hostname: "m1", FQDN: "m1.dc.example"}, m2}, WorkerNodes: []Node{n1}},
			values: map[string]value{
				"local_lb_backends": same("10.10.0.11:6443,192.0.2.12:6443,10.10.0.13:6443"),
				"kubeconfig_server": same("https://10.10.0.11:6443"),
			},
			sans:        append([]string{"localhost", "10.10.0.11", "192.0.2.12", "10.10.0.13", "10.10.0.11", "10.10.0.12", "10.10.0.13"}, append(threeFacts, "m1")...),
			sansWhy:     "every control-plane node's name, as above",
			khaExtraDNS: []string{"m0", "m2"},
		},
		{
			name: "loadbalancer_apiserver_port 8443, kube_apiserver_port 7443 (case c13)",
			in:   Input{ControlPlaneNodes: []Node{m0}, WorkerNodes: []Node{n1}, APIServerPort: 7443, LocalLB: LocalLB{Port: 8443}},
			values: map[string]value{
				"node_endpoints.m0":     same("https://127.0.0.1:7443"),
				"node_endpoints.n1":     same("https://localhost:8443"),
				"kubeadm_control_plane": same("10.10.0.11:7443"),
				"local_lb_listen":       same("127.0.0.1:8443"),
				"kube_proxy_server": {kubespray: "https://127.0.0.1:7443", kha: "https://127.0.0.1:8443",
					why: "kubespray writes the apiserver port, where nothing listens on workers; kha writes the load balancer's and warns that control-plane nodes need it too"},
			},
		},
		{
			name: "kube_apiserver_bind_address = each node's ip (case c14)",
			in: Input{ControlPlaneNodes: []Node{{Name: "m0", IP: "10.10.0.11", BindAddress: "10.10.0.11"}, {Name: "m1", IP: "10.10.0.12", BindAddress: "10.10.0.12"}},
				WorkerNodes: []Node{n1}},
			values: map[string]value{
				"node_endpoints.m1": same("https://10.10.0.12:6443"),
				"local_lb_nodes":    same("m0,m1,n1"),
				"kubeadm_discovery": {kubespray: "10.10.0.12:6443 (on m1: its own, not yet running, apiserver)", kha: "10.10.0.11:6443",
					why: "a joining control-plane node is pointed at the first one, which runs"},
				"kube_proxy_server": {kubespray: "https://10.10.0.11:6443 (kubeadm's value, left alone)", kha: "https://127.0.0.1:6443",
					why: "every node, control plane included, runs the load balancer here, so kube-proxy uses it"},
			},
		},
		{
			name: "kube_apiserver_bind_address 0.0.0.0 (case c15)",
			in:   Input{ControlPlaneNodes: []Node{m0, m1}, WorkerNodes: []Node{n1}, APIServerBindAddress: "0.0.0.0"},
			values: map[string]value{
				"node_endpoints.m0": {kubespray: "https://0.0.0.0:6443", kha: "https://127.0.0.1:6443",
					why: "0.0.0.0 is a wildcard like ::, not an address to dial"},
				"local_lb_nodes": {kubespray: "m0,m1,n1", kha: "n1",
					why: "kubespray installs the load balancer on control-plane nodes for any bind but ::, next to an apiserver already on loopback"},
			},
		},
		{
			name: "IPv6 bind address (case c18)",
			in: Input{IPFamily: IPv6, ControlPlaneNodes: []Node{{Name: "m0", IP6: "fd00:10::11", BindAddress: "fd00:10::11"}},
				WorkerNodes: []Node{{Name: "n1", IP6: "fd00:10::21"}}},
			values: map[string]value{
				"node_endpoints.m0": {kubespray: "https://[fd00:10127.0.0.111]:6443", kha: "https://[fd00:10::11]:6443",
					why: "kubespray substitutes 127.0.0.1 for every \"::\" inside the address"},
				"kubeadm_control_plane": same("[fd00:10::11]:6443"),
				"local_lb_listen":       same("127.0.0.1:6443,[::1]:6443"),
				"local_lb_backends":     same("[fd00:10::11]:6443"),
			},
		},
		{
			name: "loadbalancer_apiserver with apiserver_loadbalancer_domain_name",
			in: Input{ControlPlaneNodes: []Node{m0, m1, m2}, WorkerNodes: []Node{n1},
				ExternalLB: &ExternalLB{Address: "10.10.0.100", Port: 8383, DomainName: "lb.example.com", Nodes: []string{}}},
			values: map[string]value{
				"mode":                  same("external_lb"),
				"node_endpoints.m1":     same("https://lb.example.com:8383"),
				"node_endpoints.n1":     same("https://lb.example.com:8383"),
				"global":                same("https://lb.example.com:8383"),
				"kubeadm_control_plane": same("lb.example.com:8383"),
				"kubeconfig_server":     same("https://10.10.0.100:8383"),
				"kubeadm_discovery":     same("lb.example.com:8383"),
				"kube_proxy_server":     same("https://lb.example.com:8383"),
				"local_lb_nodes":        same(""),
				"lb_domain_name":        same("lb.example.com"),
				"hosts_entries": {kubespray: "(none since v2.29; v2.28: 10.10.0.100 lb.example.com)", kha: "10.10.0.100 lb.example.com",
					why: "kha offers kubespray v2.28's line for kha_hosts_entries; nothing writes it unless asked"},
			},
			sans:        append([]string{"lb.example.com", "10.10.0.100", "10.10.0.11", "10.10.0.12", "10.10.0.13", "10.10.0.11", "10.10.0.12", "10.10.0.13"}, append(threeFacts, "m1")...),
			sansWhy:     "every control-plane node's name",
			khaExtraDNS: []string{"m0", "m2"},
		},
		{
			name: "loadbalancer_apiserver, address only: the name is the address",
			in:   Input{ControlPlaneNodes: []Node{m0}, ExternalLB: &ExternalLB{Address: "10.10.0.100", Port: 8383, Nodes: []string{}}},
			values: map[string]value{
				"node_endpoints.m0":     same("https://10.10.0.100:8383"),
				"kubeadm_control_plane": same("10.10.0.100:8383"),
				"lb_domain_name":        same("10.10.0.100"),
				"hosts_entries":         same(""),
			},
		},
		{
			name: "IPv6 loadbalancer_apiserver (case c21)",
			in: Input{IPFamily: IPv6, ControlPlaneNodes: []Node{{Name: "m0", IP6: "fd00:10::11"}},
				ExternalLB: &ExternalLB{Address: "fd00:20::100", Port: 8443, Nodes: []string{}}},
			values: map[string]value{
				"node_endpoints.m0": same("https://[fd00:20::100]:8443"),
				"kubeadm_control_plane": {kubespray: "fd00:20::100:8443", kha: "[fd00:20::100]:8443",
					why: "kubeadm cannot parse an unbracketed IPv6 host:port"},
				"kubeadm_discovery": {kubespray: "fd00:20::100:8443 (secondary control-plane nodes)", kha: "[fd00:20::100]:8443",
					why: "bracketed, as above"},
				"apiserver_service_ip": same("fd85:ee78:d8a6:8607::1001"),
			},
		},
		{
			name: "loadbalancer_apiserver plus loadbalancer_apiserver_localhost: true (case c10)",
			in: Input{ControlPlaneNodes: []Node{m0}, WorkerNodes: []Node{n1}, LocalLB: LocalLB{Enabled: ptr(true)},
				ExternalLB: &ExternalLB{Address: "10.10.0.100", Port: 8383, DomainName: "lb.example.com"}},
			values: map[string]value{
				"node_endpoints.n1": {kubespray: "https://lb.example.com:8383", kha: "https://localhost:6443",
					why: "kha's mode local_lb_with_unmanaged_lb: nodes use the node-local load balancer kubespray installs and leaves unused"},
				"local_lb_nodes":    same("n1"),
				"kubeconfig_server": same("https://10.10.0.100:8383"),
			},
		},
		{
			name: "no load balancer at all",
			in:   Input{ControlPlaneNodes: []Node{m0, m1}, WorkerNodes: []Node{n1}, LocalLB: LocalLB{Enabled: ptr(false)}},
			values: map[string]value{
				"mode":              same("direct"),
				"node_endpoints.m1": same("https://127.0.0.1:6443"),
				"node_endpoints.n1": same("https://10.10.0.11:6443"),
				"kubeadm_discovery": same("10.10.0.11:6443"),
				"kube_proxy_server": same("https://10.10.0.11:6443"),
				"lb_domain_name":    same(""),
				"local_lb_nodes":    same(""),
			},
		},
		{
			name: "dual-stack (case c16)",
			in: Input{IPFamily: DualStack, ControlPlaneNodes: []Node{{Name: "m0", IP: "10.10.0.11", IP6: "fd00:10::11"}},
				WorkerNodes: []Node{{Name: "n1", IP: "10.10.0.21", IP6: "fd00:10::21"}}},
			values: map[string]value{
				"node_endpoints.m0": same("https://127.0.0.1:6443"),
				"local_lb_listen":   same("127.0.0.1:6443,[::1]:6443"),
				"local_lb_backends": same("10.10.0.11:6443"),
			},
			sans:       []string{"localhost", "10.10.0.11", "10.10.0.11", "m0"},
			sansWhy:    "kubespray adds only the default-route IPv6 address Ansible gathered, never ip6; kha adds ip6 and access_ip6",
			khaExtraIP: []string{"fd00:10::11"},
		},
		{
			name: "IPv6-only inventory with ip6",
			in: Input{IPFamily: IPv6, ControlPlaneNodes: []Node{{Name: "m0", IP6: "fd00:10::11"}, {Name: "m1", IP6: "fd00:10::12", AccessIP6: "2001:db8::12"}},
				WorkerNodes: []Node{{Name: "n1", IP6: "fd00:10::21"}}},
			values: map[string]value{
				"node_endpoints.m0":     same("https://127.0.0.1:6443"),
				"kubeadm_control_plane": same("[fd00:10::11]:6443"),
				"kubeconfig_server":     same("https://[fd00:10::11]:6443"),
				"local_lb_backends":     same("[fd00:10::11]:6443,[2001:db8::12]:6443"),
				"kubeadm_discovery":     same("[fd00:10::11]:6443"),
			},
		},
		{
			name: "all-in-one: a node in kube_control_plane and kube_node",
			in:   Input{ControlPlaneNodes: []Node{m0}, WorkerNodes: []Node{{Name: "m0", IP: "10.10.0.11"}, n1}},
			values: map[string]value{
				"node_endpoints.m0": same("https://127.0.0.1:6443"),
				"local_lb_nodes":    same("n1"),
			},
		},
		{
			name: "kube-vip: loadbalancer_apiserver.address is kube_vip_address",
			in:   Input{ControlPlaneNodes: []Node{m0, m1}, ExternalLB: &ExternalLB{Address: "10.10.0.200", Port: 6443, Nodes: []string{}}},
			values: map[string]value{
				"node_endpoints.m1":     same("https://10.10.0.200:6443"),
				"kubeadm_control_plane": same("10.10.0.200:6443"),
			},
		},
	}
	// The rows are kubespray's formulas with a kubeadm before 1.33, whose
	// kubelet.conf kubespray rewrote to kube_apiserver_endpoint. Since
	// 1.33 kubespray leaves a control-plane node's kubelet.conf to kubeadm,
	// which names the node's own apiserver: each row runs again with
	// today's kubeadm, where those values are kubeadm's and the rest stay.
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r Result // the last, today's kubeadm (tc.in as it is), feeds the SAN check below
			for _, version := range []string{"v1.32.9", ""} {
				in := tc.in
				in.Kubeadm.KubernetesVersion = version
				var ps problem.Problems
				r, ps = Compute(in)
				if ps.HasErrors() {
					t.Fatal(ps)
				}
				got := khaValues(r)
				for name, v := range tc.values {
					g, ok := got[name]
					if !ok {
						t.Fatalf("no value %q", name)
					}
					if i := controlPlaneIndex(in, name); version == "" && i >= 0 {
						v = same(wantControlPlaneEndpoint(t, r, in, i))
					}
					check(t, "kubeadm "+orDefault(version, "today")+": "+name, g, v)
				}
			}
			if tc.sans == nil {
				return
			}
			kDNS, kIP := kubesprayAPIServerSANs(append(append([]string{}, baseSANs...), tc.sans...)...)
			wantDNS, wantIP := kDNS, kIP
			if tc.sansWhy != "" {
				wantDNS = strings.Join(append(strings.Split(kDNS, ","), tc.khaExtraDNS...), ",")
				if len(tc.khaExtraIP) > 0 {
					wantIP = strings.Join(append(strings.Split(kIP, ","), tc.khaExtraIP...), ",")
				}
			}
			if !sameSet(strings.Join(r.CertSANs.DNSNames, ","), wantDNS) || !sameSet(strings.Join(r.CertSANs.IPAddresses, ","), wantIP) {
				t.Errorf("SANs: kha %q %q\nkubespray      %q %q (differs: %s)", r.CertSANs.DNSNames, r.CertSANs.IPAddresses, kDNS, kIP, tc.sansWhy)
			}
		})
	}
}

// controlPlaneIndex is the index in in.ControlPlaneNodes of the node whose
// node_endpoints value name is; -1 for another value or node.
func controlPlaneIndex(in Input, name string) int {
	node, ok := strings.CutPrefix(name, "node_endpoints.")
	if !ok {
		return -1
	}
	return slices.IndexFunc(in.ControlPlaneNodes, func(n Node) bool { return n.Name == node })
}

// sameSet compares comma-joined lists as sets: kha orders the SANs it adds
// by kind (all names of a kind together), kubespray by node.
func sameSet(a, b string) bool {
	as, bs := map[string]bool{}, map[string]bool{}
	for _, s := range strings.Split(a, ",") {
		as[s] = true
	}
	for _, s := range strings.Split(b, ",") {
		bs[s] = true
	}
	return reflect.DeepEqual(as, bs)
}

// khaValues flattens a result into the names the parity table uses.
func khaValues(r Result) map[string]string {
	v := map[string]string{
		"mode":                  string(r.Mode),
		"global":                r.Endpoints.Global,
		"kubeadm_control_plane": r.KubeadmControlPlaneEndpoint,
		"kubeconfig_server":     r.KubeconfigServer,
		"kubeadm_discovery":     r.KubeadmDiscoveryAddress,
		"kube_proxy_server":     r.KubeProxyServer,
		"local_lb_nodes":        strings.Join(r.LocalLBNodes, ","),
		"lb_domain_name":        r.LBDomainName,
		"apiserver_service_ip":  r.APIServerServiceIP,
		"hosts_entries":         strings.Join(r.HostsEntries, ","),
	}
	for _, ne := range r.NodeEndpoints {
		v["node_endpoints."+ne.Name] = ne.URL
	}
	var backends []string
	for _, b := range r.LocalLBBackends {
		backends = append(backends, HostPort(b.Address, b.Port))
	}
	v["local_lb_backends"] = strings.Join(backends, ",")
	if l := r.LocalLBListen; l != nil {
		v["local_lb_listen"] = HostPort(l.Address, l.Port)
		if l.IPv6Address != "" {
			v["local_lb_listen"] += "," + HostPort(l.IPv6Address, l.Port)
		}
	}
	return v
}

func TestKubesprayParityEtcd(t *testing.T) {
	t.Parallel()
	altNames := "etcd.kube-system.svc.cluster.local,etcd.kube-system.svc,etcd.kube-system,etcd"
	three := []EtcdMember{{Name: "m0", IP: "10.10.0.11"}, {Name: "m1", IP: "10.10.0.12"}, {Name: "m2", IP: "10.10.0.13"}}
	cases := []struct {
		name   string
		in     EtcdInput
		values map[string]value
	}{
		{
			name: "no etcd group: the control-plane nodes, member names etcd<N>",
			in:   EtcdInput{Members: three},
			values: map[string]value{
				"access_addresses":  same("https://10.10.0.11:2379,https://10.10.0.12:2379,https://10.10.0.13:2379"),
				"metrics_addresses": same("https://10.10.0.11:2381,https://10.10.0.12:2381,https://10.10.0.13:2381"),
				"initial_cluster":   same("etcd1=https://10.10.0.11:2380,etcd2=https://10.10.0.12:2380,etcd3=https://10.10.0.13:2380"),
				"member_name.m1":    same("etcd2"),
				"client_url.m1":     same("https://10.10.0.12:2379"),
				"peer_url.m1":       same("https://10.10.0.12:2380"),
				"listen_client.m1":  same("https://10.10.0.12:2379,https://127.0.0.1:2379"),
				"listen_peer.m1":    same("https://10.10.0.12:2380"),
				"listen_metrics.m1": same(""),
				"cert_dns":          same("localhost,m0,m1,m2," + altNames),
				"cert_ips": {kubespray: "10.10.0.11,10.10.0.11,10.10.0.12,10.10.0.12,10.10.0.13,10.10.0.13,127.0.0.1,::1",
					kha: "10.10.0.11,10.10.0.12,10.10.0.13,127.0.0.1,::1", why: "an IP is listed once"},
			},
		},
		{
			name: "dedicated etcd hosts with access_ip and their own member names",
			in: EtcdInput{Members: []EtcdMember{{Name: "e1", IP: "10.10.1.1", AccessIP: "192.0.2.1", MemberName: "etcd-a"},
				{Name: "e2", IP: "10.10.1.2"}}},
			values: map[string]value{
				"access_addresses": same("https://192.0.2.1:2379,https://10.10.1.2:2379"),
				"initial_cluster":  same("etcd-a=https://192.0.2.1:2380,etcd2=https://10.10.1.2:2380"),
				"listen_client.e1": same("https://10.10.1.1:2379,https://127.0.0.1:2379"),
				"cert_dns":         same("localhost,e1,e2," + altNames),
				"cert_ips": {kubespray: "192.0.2.1,10.10.1.1,10.10.1.2,10.10.1.2,127.0.0.1,::1", kha: "192.0.2.1,10.10.1.1,10.10.1.2,127.0.0.1,::1",
					why: "an IP is listed once"},
			},
		},
		{
			name: "etcd_access_address is a host name (case c22)",
			in:   EtcdInput{Members: []EtcdMember{{Name: "m0", IP: "10.10.0.11", AccessAddress: "etcd-0.example.com"}, {Name: "m1", IP: "10.10.0.12"}}},
			values: map[string]value{
				"client_url.m0":    same("https://etcd-0.example.com:2379"),
				"peer_url.m0":      same("https://etcd-0.example.com:2380"),
				"access_addresses": same("https://10.10.0.11:2379,https://10.10.0.12:2379"),
				"initial_cluster":  same("etcd1=https://10.10.0.11:2380,etcd2=https://10.10.0.12:2380"),
				"cert_dns":         same("localhost,etcd-0.example.com,m0,m1," + altNames),
			},
		},
		{
			name: "etcd_metrics_port set",
			in:   EtcdInput{Members: three[:1], MetricsPort: 2382},
			values: map[string]value{
				"metrics_addresses": same("https://10.10.0.11:2382"),
				"listen_metrics.m0": same("http://10.10.0.11:2382,http://127.0.0.1:2382"),
			},
		},
		{
			name: "dual-stack members: every family in the certificate",
			in:   EtcdInput{IPFamily: DualStack, Members: []EtcdMember{{Name: "m0", IP: "10.10.0.11", IP6: "fd00:10::11", AccessIP6: "2001:db8::11"}}},
			values: map[string]value{
				"access_addresses": same("https://10.10.0.11:2379"),
				"cert_ips": {kubespray: "10.10.0.11,2001:db8::11,10.10.0.11,fd00:10::11,127.0.0.1,::1", kha: "10.10.0.11,2001:db8::11,fd00:10::11,127.0.0.1,::1",
					why: "an IP is listed once"},
			},
		},
		{
			name: "IPv6-only members (cases c19, c20)",
			in:   EtcdInput{IPFamily: IPv6, Members: []EtcdMember{{Name: "m0", IP6: "fd00:10::11"}}},
			values: map[string]value{
				"access_addresses": same("https://[fd00:10::11]:2379"),
				"initial_cluster":  same("etcd1=https://[fd00:10::11]:2380"),
				"listen_client.m0": same("https://[fd00:10::11]:2379,https://127.0.0.1:2379"),
				"cert_ips":         {kubespray: "fd00:10::11,fd00:10::11,127.0.0.1,::1", kha: "fd00:10::11,127.0.0.1,::1", why: "an IP is listed once"},
			},
		},
		{
			name: "etcd_deployment_type kubeadm: kubeadm issues the certificates",
			in:   EtcdInput{Members: three, Deployment: EtcdByKubeadm, CertAltNames: []string{"etcd.example.com"}, CertAltIPs: []string{"10.10.0.100"}},
			values: map[string]value{
				"kubeadm_cert_sans": same(altNames + ",etcd.example.com,10.10.0.100"),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ps := ComputeEtcd(tc.in)
			if ps.HasErrors() {
				t.Fatal(ps)
			}
			got := map[string]string{
				"access_addresses":  strings.Join(r.AccessAddresses, ","),
				"metrics_addresses": strings.Join(r.MetricsAddresses, ","),
				"initial_cluster":   r.InitialCluster,
				"cert_dns":          strings.Join(r.CertSANs.DNSNames, ","),
				"cert_ips":          strings.Join(r.CertSANs.IPAddresses, ","),
				"kubeadm_cert_sans": strings.Join(r.KubeadmCertSANs, ","),
			}
			for name, member := range r.MemberNames {
				got["member_name."+name] = member
			}
			for prefix, list := range map[string][]NodeEndpoint{"client_url.": r.ClientURLs, "peer_url.": r.PeerURLs,
				"listen_client.": r.ListenClientURLs, "listen_peer.": r.ListenPeerURLs, "listen_metrics.": r.ListenMetricsURLs} {
				for _, e := range list {
					got[prefix+e.Name] = e.URL
				}
			}
			for _, m := range tc.in.Members {
				if _, ok := got["listen_metrics."+m.Name]; !ok {
					got["listen_metrics."+m.Name] = ""
				}
			}
			for name, v := range tc.values {
				g, ok := got[name]
				if !ok {
					t.Fatalf("no value %q", name)
				}
				check(t, name, g, v)
			}
		})
	}
}
