package endpoints

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

func ptr[T any](v T) *T { return &v }

var (
	threeCPs = []Node{
		{Name: "cp1", IP: "10.0.0.11"},
		{Name: "cp2", IP: "10.0.0.12", AccessIP: "192.0.2.12"},
		{Name: "cp3", IP: "10.0.0.13"},
	}
	twoWorkers = []Node{{Name: "w1", IP: "10.0.0.21"}, {Name: "w2", IP: "10.0.0.22"}}
	// kubeadmCert are the SANs of the apiserver certificate kubeadm made
	// on cp1 of threeCPs with its defaults: the Service address 10.96.0.1,
	// the domain cluster.local, and what every node reaches cp1 by.
	kubeadmCert = SANs{DNSNames: []string{"cp1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []string{"10.96.0.1", "10.0.0.11", "10.0.0.12", "192.0.2.12", "10.0.0.13"}}
)

// TestMatrix covers every row (mode) and column (role) of the access
// matrix, with the values kubespray computes where it computes them right.
func TestMatrix(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name               string
		in                 Input
		mode               Mode
		cp, worker, global string
		external           string
		kubeconfig         string
		kubeadm            string
		lbDomain           string
		lbNodes            []string
		hosts              []string
	}{
		{
			name: "local LB (default)",
			in:   Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers},
			mode: ModeLocalLB, cp: "https://127.0.0.1:6443", worker: "https://localhost:6443", global: "https://localhost:6443",
			external: "https://10.0.0.11:6443", kubeconfig: "https://10.0.0.11:6443", kubeadm: "10.0.0.11:6443",
			lbDomain: "localhost", lbNodes: []string{"w1", "w2"},
		},
		{
			name: "local LB on its own port",
			in:   Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{Type: LBTypeHAProxy, Port: 16443}},
			mode: ModeLocalLB, cp: "https://127.0.0.1:6443", worker: "https://localhost:16443", global: "https://localhost:16443",
			external: "https://10.0.0.11:6443", kubeconfig: "https://10.0.0.11:6443", kubeadm: "10.0.0.11:6443",
			lbDomain: "localhost", lbNodes: []string{"w1", "w2"},
		},
		{
			name: "local LB, first CP has a distinct access IP",
			in:   Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", AccessIP: "203.0.113.11"}}, WorkerNodes: twoWorkers},
			mode: ModeLocalLB, cp: "https://127.0.0.1:6443", worker: "https://localhost:6443", global: "https://localhost:6443",
			external: "https://203.0.113.11:6443", kubeconfig: "https://203.0.113.11:6443", kubeadm: "10.0.0.11:6443",
			lbDomain: "localhost", lbNodes: []string{"w1", "w2"},
		},
		{
			name: "local LB with custom bind address per node",
			in: Input{ControlPlaneNodes: []Node{
				{Name: "cp1", IP: "10.0.0.11", BindAddress: "10.0.0.11"},
				{Name: "cp2", IP: "10.0.0.12", BindAddress: "10.0.0.12"},
			}, WorkerNodes: twoWorkers},
			mode: ModeLocalLB, cp: "https://10.0.0.11:6443", worker: "https://localhost:6443", global: "https://localhost:6443",
			external: "https://10.0.0.11:6443", kubeconfig: "https://10.0.0.11:6443", kubeadm: "10.0.0.11:6443",
			lbDomain: "localhost", lbNodes: []string{"cp1", "cp2", "w1", "w2"},
		},
		{
			name: "bind 0.0.0.0 is a wildcard like ::",
			in:   Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, APIServerBindAddress: "0.0.0.0"},
			mode: ModeLocalLB, cp: "https://127.0.0.1:6443", worker: "https://localhost:6443", global: "https://localhost:6443",
			external: "https://10.0.0.11:6443", kubeconfig: "https://10.0.0.11:6443", kubeadm: "10.0.0.11:6443",
			lbDomain: "localhost", lbNodes: []string{"w1", "w2"},
		},
		{
			name: "local LB plus unmanaged external LB",
			in: Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{Enabled: ptr(true)},
				ExternalLB: &ExternalLB{Address: "198.51.100.10", Port: 443, DomainName: "k8s.example.com"}},
			mode: ModeLocalLBWithUnmanagedLB, cp: "https://127.0.0.1:6443", worker: "https://localhost:6443", global: "https://localhost:6443",
			external: "https://k8s.example.com:443", kubeconfig: "https://198.51.100.10:443", kubeadm: "10.0.0.11:6443",
			lbDomain: "localhost", lbNodes: []string{"w1", "w2"}, hosts: []string{"198.51.100.10 k8s.example.com"},
		},
		{
			name: "local LB on every node (Epiphany, KubePrism), external LB for outside clients",
			in: Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{EveryNode: true, Port: 3446, Type: LBTypeHAProxy},
				ExternalLB: &ExternalLB{Address: "10.0.0.100", Port: 443, DomainName: "k8s.example.com"}},
			mode: ModeLocalLBEveryNode, cp: "https://localhost:3446", worker: "https://localhost:3446", global: "https://localhost:3446",
			external: "https://k8s.example.com:443", kubeconfig: "https://10.0.0.100:443", kubeadm: "localhost:3446",
			lbDomain: "localhost", lbNodes: []string{"cp1", "cp2", "cp3", "w1", "w2"}, hosts: []string{"10.0.0.100 k8s.example.com"},
		},
		{
			name: "local LB on every node, no external LB: outside clients get the first node",
			in:   Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{EveryNode: true, Port: 3446}},
			mode: ModeLocalLBEveryNode, cp: "https://localhost:3446", worker: "https://localhost:3446", global: "https://localhost:3446",
			external: "https://10.0.0.11:6443", kubeconfig: "https://10.0.0.11:6443", kubeadm: "localhost:3446",
			lbDomain: "localhost", lbNodes: []string{"cp1", "cp2", "cp3", "w1", "w2"},
		},
		{
			name: "MetalLB VIP for outside clients: nodes keep their local LB",
			in: Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers,
				ExternalLB: &ExternalLB{Address: "192.168.56.42", Port: 443, MetalLB: &MetalLB{}}},
			mode: ModeLocalLBWithUnmanagedLB, cp: "https://127.0.0.1:6443", worker: "https://localhost:6443", global: "https://localhost:6443",
			external: "https://192.168.56.42:443", kubeconfig: "https://192.168.56.42:443", kubeadm: "10.0.0.11:6443",
			lbDomain: "localhost", lbNodes: []string{"w1", "w2"},
		},
		{
			name: "external LB with domain name",
			in: Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers,
				ExternalLB: &ExternalLB{Address: "10.0.0.100", Port: 8383, DomainName: "Lb-Apiserver.Kubernetes.Local."}},
			mode: ModeExternalLB, cp: "https://lb-apiserver.kubernetes.local:8383", worker: "https://lb-apiserver.kubernetes.local:8383",
			global: "https://lb-apiserver.kubernetes.local:8383", external: "https://lb-apiserver.kubernetes.local:8383",
			kubeconfig: "https://10.0.0.100:8383", kubeadm: "lb-apiserver.kubernetes.local:8383",
			lbDomain: "lb-apiserver.kubernetes.local", hosts: []string{"10.0.0.100 lb-apiserver.kubernetes.local"},
		},
		{
			name: "external LB, address only, port defaults to the apiserver's",
			in:   Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100"}, APIServerPort: 7443},
			mode: ModeExternalLB, cp: "https://10.0.0.100:7443", worker: "https://10.0.0.100:7443", global: "https://10.0.0.100:7443",
			external: "https://10.0.0.100:7443", kubeconfig: "https://10.0.0.100:7443", kubeadm: "10.0.0.100:7443",
			lbDomain: "10.0.0.100",
		},
		{
			name: "external LB given by host name: no hosts entry",
			in:   Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "lb.example.com", Port: 443}},
			mode: ModeExternalLB, cp: "https://lb.example.com:443", worker: "https://lb.example.com:443", global: "https://lb.example.com:443",
			external: "https://lb.example.com:443", kubeconfig: "https://lb.example.com:443", kubeadm: "lb.example.com:443",
			lbDomain: "lb.example.com",
		},
		{
			name: "no LB at all",
			in:   Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{Enabled: ptr(false)}},
			mode: ModeDirect, cp: "https://127.0.0.1:6443", worker: "https://10.0.0.11:6443", global: "https://10.0.0.11:6443",
			external: "https://10.0.0.11:6443", kubeconfig: "https://10.0.0.11:6443", kubeadm: "10.0.0.11:6443",
		},
		{
			name: "IPv6-only, external IPv6 LB: every endpoint bracketed",
			in: Input{IPFamily: IPv6, ControlPlaneNodes: []Node{{Name: "cp1", IP: "fd00:10::11"}, {Name: "cp2", IP: "fd00:10::12"}},
				ExternalLB: &ExternalLB{Address: "fd00:20::100", Port: 8443}},
			mode: ModeExternalLB, cp: "https://[fd00:20::100]:8443", worker: "https://[fd00:20::100]:8443", global: "https://[fd00:20::100]:8443",
			external: "https://[fd00:20::100]:8443", kubeconfig: "https://[fd00:20::100]:8443", kubeadm: "[fd00:20::100]:8443",
			lbDomain: "fd00:20::100",
		},
		{
			name: "IPv6-only, local LB, ::1 bind kept as ::1",
			in: Input{IPFamily: IPv6, ControlPlaneNodes: []Node{{Name: "cp1", IP: "fd00:10::11", BindAddress: "fd00:10::11"}},
				WorkerNodes: []Node{{Name: "w1", IP: "fd00:10::21"}}},
			mode: ModeLocalLB, cp: "https://[fd00:10::11]:6443", worker: "https://localhost:6443", global: "https://localhost:6443",
			external: "https://[fd00:10::11]:6443", kubeconfig: "https://[fd00:10::11]:6443", kubeadm: "[fd00:10::11]:6443",
			lbDomain: "localhost", lbNodes: []string{"cp1", "w1"},
		},
		{
			name: "dual-stack: IPv4 is primary",
			in: Input{IPFamily: DualStack, ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", IP6: "fd00::11"}},
				WorkerNodes: []Node{{Name: "w1", IP: "10.0.0.21", IP6: "fd00::21"}}},
			mode: ModeLocalLB, cp: "https://127.0.0.1:6443", worker: "https://localhost:6443", global: "https://localhost:6443",
			external: "https://10.0.0.11:6443", kubeconfig: "https://10.0.0.11:6443", kubeadm: "10.0.0.11:6443",
			lbDomain: "localhost", lbNodes: []string{"w1"},
		},
	}
	// The table gives a control-plane node's endpoint as kubeadm before
	// 1.33 has it (kubespray's kube_apiserver_endpoint); each case also
	// runs as kubeadm has it today, every control-plane node's kubelet on
	// its own apiserver.
	for _, tc := range cases {
		for _, kubeadm := range []struct{ name, version string }{{"before 1.33", "v1.32.9"}, {"today", ""}} {
			t.Run(tc.name+", kubeadm "+kubeadm.name, func(t *testing.T) {
				in := tc.in
				in.Kubeadm.KubernetesVersion = kubeadm.version
				r, ps := Compute(in)
				if ps.HasErrors() {
					t.Fatalf("unexpected problems: %v", ps)
				}
				cp := tc.cp
				if kubeadm.version == "" {
					cp = wantControlPlaneEndpoint(t, r, in, 0)
				}
				got := []string{string(r.Mode), r.Endpoints.ControlPlane, r.Endpoints.Worker, r.Endpoints.Global, r.Endpoints.External, r.KubeconfigServer, r.KubeadmControlPlaneEndpoint, r.LBDomainName}
				want := []string{string(tc.mode), cp, tc.worker, tc.global, tc.external, tc.kubeconfig, tc.kubeadm, tc.lbDomain}
				names := []string{"mode", "control_plane", "worker", "global", "external", "kubeconfig_server", "kubeadm_control_plane_endpoint", "lb_domain_name"}
				for i := range got {
					if got[i] != want[i] {
						t.Errorf("%s = %q, want %q", names[i], got[i], want[i])
					}
				}
				if !reflect.DeepEqual(r.LocalLBNodes, tc.lbNodes) {
					t.Errorf("local_lb_nodes = %q, want %q", r.LocalLBNodes, tc.lbNodes)
				}
				if !reflect.DeepEqual(r.HostsEntries, tc.hosts) {
					t.Errorf("hosts_entries = %q, want %q", r.HostsEntries, tc.hosts)
				}
				cps := len(in.ControlPlaneNodes)
				for i, ne := range r.NodeEndpoints {
					want := r.Endpoints.Worker
					if i < cps {
						want = wantControlPlaneEndpoint(t, r, in, i)
					}
					if ne.URL != want {
						t.Errorf("node_endpoints[%s] = %q, want %q", ne.Name, ne.URL, want)
					}
				}
				assertCovered(t, r)
			})
		}
	}
}

// wantControlPlaneEndpoint states the per-node rule independently of
// the implementation. Since kubeadm 1.33 (kubernetes_version unset or
// later): the node's own apiserver at its ip, or at its bind address when
// it binds one. Before: the LB where every node uses it, else the node's
// own apiserver on loopback (wildcard bind) or on its bind address.
func wantControlPlaneEndpoint(t *testing.T, r Result, in Input, i int) string {
	t.Helper()
	bind := orDefault(in.ControlPlaneNodes[i].BindAddress, orDefault(in.APIServerBindAddress, "::"))
	port := orDefault(in.APIServerPort, 6443)
	wildcard := bind == "::" || bind == "0.0.0.0"
	if in.Kubeadm.KubernetesVersion == "" {
		if wildcard {
			ip := in.ControlPlaneNodes[i].IP
			if in.IPFamily == IPv6 && in.ControlPlaneNodes[i].IP6 != "" {
				ip = in.ControlPlaneNodes[i].IP6
			}
			return URL(ip, port)
		}
		return URL(bind, port)
	}
	if r.Mode == ModeExternalLB || r.Mode == ModeLocalLBEveryNode {
		return r.Endpoints.Global
	}
	if wildcard {
		return URL("127.0.0.1", port)
	}
	return URL(bind, port)
}

func assertCovered(t *testing.T, r Result) {
	t.Helper()
	for _, u := range append([]string{r.Endpoints.Global, r.Endpoints.External, r.KubeconfigServer, "https://" + r.KubeadmControlPlaneEndpoint}, nodeURLs(r)...) {
		if !r.CertSANs.Covers(hostOfURL(u)) {
			t.Errorf("%s is not covered by SANs %v", u, r.CertSANs)
		}
	}
}

func nodeURLs(r Result) []string {
	var out []string
	for _, ne := range r.NodeEndpoints {
		out = append(out, ne.URL)
	}
	return out
}

func TestCertSANs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		in       Input
		dns, ips []string
	}{
		{
			name: "kubespray order, repeats dropped",
			in:   Input{ControlPlaneNodes: threeCPs, SupplementaryAddresses: []string{"k8s.example.com", "10.0.0.11", "203.0.113.5"}},
			dns:  []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost", "k8s.example.com", "cp1", "cp2", "cp3"},
			ips:  []string{"10.233.0.1", "127.0.0.1", "::1", "10.0.0.11", "203.0.113.5", "192.0.2.12", "10.0.0.13", "10.0.0.12"},
		},
		{
			name: "external LB name and address, custom DNS domain and service CIDR",
			in: Input{ControlPlaneNodes: threeCPs[:1], DNSDomain: "corp.internal", ServiceCIDR: "10.96.0.0/12",
				ExternalLB: &ExternalLB{Address: "10.0.0.100", DomainName: "api.corp.internal"}},
			dns: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.corp.internal", "localhost", "api.corp.internal", "cp1"},
			ips: []string{"10.96.0.1", "127.0.0.1", "::1", "10.0.0.100", "10.0.0.11"},
		},
		{
			name: "IPv6 normalised and deduplicated; dual-stack IPv6 node addresses included",
			in: Input{IPFamily: DualStack, ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", IP6: "FD00:0:0::0011", AccessIP6: "fd00::11"}},
				SupplementaryAddresses: []string{"fd00:0::11", "0:0:0:0:0:0:0:1", "::ffff:10.0.0.11"}},
			dns: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost", "cp1"},
			ips: []string{"10.233.0.1", "127.0.0.1", "::1", "fd00::11", "10.0.0.11"},
		},
		{
			name: "host names and FQDNs of control-plane nodes, before the node names (kubespray's ansible_hostname, ansible_fqdn)",
			in: Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", Hostname: "m0", FQDN: "m0.dc1.example.com"},
				{Name: "cp2", IP: "10.0.0.12", Hostname: "m1", FQDN: "m1.dc1.example.com"}}},
			dns: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost",
				"m0", "m1", "m0.dc1.example.com", "m1.dc1.example.com", "cp1", "cp2"},
			ips: []string{"10.233.0.1", "127.0.0.1", "::1", "10.0.0.11", "10.0.0.12"},
		},
		{
			name: "IPv6-only: service IP from the IPv6 range",
			in:   Input{IPFamily: IPv6, ControlPlaneNodes: []Node{{Name: "cp1", IP: "fd00:10::11", AccessIP: "2001:db8::11"}}},
			dns:  []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost", "cp1"},
			ips:  []string{"fd85:ee78:d8a6:8607::1001", "127.0.0.1", "::1", "2001:db8::11", "fd00:10::11"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ps := Compute(tc.in)
			if ps.HasErrors() {
				t.Fatalf("unexpected problems: %v", ps)
			}
			if !reflect.DeepEqual(r.CertSANs.DNSNames, tc.dns) {
				t.Errorf("dns_names = %q\nwant        %q", r.CertSANs.DNSNames, tc.dns)
			}
			if !reflect.DeepEqual(r.CertSANs.IPAddresses, tc.ips) {
				t.Errorf("ip_addresses = %q\nwant           %q", r.CertSANs.IPAddresses, tc.ips)
			}
		})
	}
}

func TestLocalLBListenAndBackends(t *testing.T) {
	t.Parallel()
	r, ps := Compute(Input{IPFamily: DualStack, ControlPlaneNodes: []Node{
		{Name: "cp1", IP: "10.0.0.11", IP6: "fd00::11"},
		{Name: "cp2", IP: "10.0.0.12", AccessIP: "192.0.2.12"},
	}, LocalLB: LocalLB{Port: 16443, HealthcheckPort: 8081, EveryNode: true}, APIServerPort: 6443})
	// Without an external load balancer, pods depend on cp1 (pods_test.go).
	if len(ps) != 1 || ps[0].Path.String() != "pod_network_endpoint" {
		t.Fatal(ps)
	}
	if want := (&Listen{Address: "127.0.0.1", IPv6Address: "::1", Port: 16443}); !reflect.DeepEqual(r.LocalLBListen, want) {
		t.Errorf("listen = %+v, want %+v", r.LocalLBListen, want)
	}
	wantBackends := []Backend{{"cp1", "10.0.0.11", 6443}, {"cp2", "192.0.2.12", 6443}}
	if !reflect.DeepEqual(r.LocalLBBackends, wantBackends) {
		t.Errorf("backends = %+v, want %+v", r.LocalLBBackends, wantBackends)
	}
	if r.LocalLBType != LBTypeNginx {
		t.Errorf("type = %q", r.LocalLBType)
	}
	r, _ = Compute(Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100"}})
	if r.LocalLBListen != nil || r.LocalLBType != "" || len(r.LocalLBNodes) != 0 {
		t.Errorf("external LB mode must not run a local LB: %+v %q %q", r.LocalLBListen, r.LocalLBType, r.LocalLBNodes)
	}
	// local_lb mode, but no node runs it (every node is a control-plane node
	// answering on loopback): listen and type are null, as documented.
	r, _ = Compute(Input{ControlPlaneNodes: threeCPs})
	if r.Mode != ModeLocalLB || r.LocalLBListen != nil || r.LocalLBType != "" || len(r.LocalLBNodes) != 0 {
		t.Errorf("no node runs the local LB: %q %+v %q %q", r.Mode, r.LocalLBListen, r.LocalLBType, r.LocalLBNodes)
	}
	if len(r.LocalLBBackends) != 3 {
		t.Errorf("backends are computed in every mode: %+v", r.LocalLBBackends)
	}
}

// TestLocalLBFallback: the external load balancer is the node-local load
// balancers' last resort wherever both exist, named as clients name it.
func TestLocalLBFallback(t *testing.T) {
	t.Parallel()
	workers := []Node{{Name: "w1", IP: "10.0.0.21"}}
	lb := &ExternalLB{Address: "10.0.0.100", Port: 8443, DomainName: "api.example.com"}
	for name, tc := range map[string]struct {
		in   Input
		want *Backend
	}{
		"local LB beside an unmanaged LB": {Input{ControlPlaneNodes: threeCPs, WorkerNodes: workers, LocalLB: LocalLB{Enabled: ptr(true)}, ExternalLB: lb},
			&Backend{Name: "external_lb", Address: "api.example.com", Port: 8443}},
		"every node with an external LB": {Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{EveryNode: true, Port: 7445}, ExternalLB: &ExternalLB{Address: "10.0.0.100", Nodes: []string{}}},
			&Backend{Name: "external_lb", Address: "10.0.0.100", Port: 6443}},
		"local LB alone":       {Input{ControlPlaneNodes: threeCPs, WorkerNodes: workers}, nil},
		"external LB alone":    {Input{ControlPlaneNodes: threeCPs, WorkerNodes: workers, ExternalLB: lb}, nil},
		"no node runs a local": {Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{Enabled: ptr(true)}, ExternalLB: lb}, nil},
	} {
		r, ps := Compute(tc.in)
		if ps.HasErrors() {
			t.Fatalf("%s: %v", name, ps)
		}
		if !reflect.DeepEqual(r.LocalLBFallback, tc.want) {
			t.Errorf("%s: fallback = %+v, want %+v", name, r.LocalLBFallback, tc.want)
		}
		if tc.want != nil && !newSANSet(r.CertSANs).covers(tc.want.Address) {
			t.Errorf("%s: the SANs %v miss the fallback %s", name, r.CertSANs, tc.want.Address)
		}
	}
}

// TestProblems pins each lint to the attribute path it names.
func TestProblems(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		in     Input
		path   string
		substr string
		warn   bool
	}{
		{"no control plane", Input{}, "control_plane_nodes", "at least one", false},
		{"bad node name", Input{ControlPlaneNodes: []Node{{Name: "CP_1", IP: "10.0.0.1"}}}, "control_plane_nodes[0].name", "node name", false},
		{"node in both lists with other addresses", Input{ControlPlaneNodes: threeCPs, WorkerNodes: []Node{{Name: "cp2", IP: "10.0.0.50"}}}, "worker_nodes[0]", "list the node in control_plane_nodes only", false},
		{"duplicate worker name", Input{ControlPlaneNodes: threeCPs, WorkerNodes: []Node{{Name: "w1", IP: "10.0.0.50"}, {Name: "w1", IP: "10.0.0.51"}}}, "worker_nodes[1].name", "worker_nodes[0].name", false},
		{"host name as access_ip", Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", AccessIP: "cp1.example.com"}}}, "control_plane_nodes[0].access_ip", "takes an IP address only", false},
		{"IPv4 ip beside ip6 in an IPv6-only cluster", Input{IPFamily: IPv6, ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", IP6: "fd00::11"}}}, "control_plane_nodes[0].ip", "without ipv4_stack", true},
		{"different ip and ip6 in an IPv6-only cluster", Input{IPFamily: IPv6, ControlPlaneNodes: []Node{{Name: "cp1", IP: "fd00::12", IP6: "fd00::11"}}}, "control_plane_nodes[0].ip", "give the address once", false},
		{"bad fqdn", Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", FQDN: "m0..example"}}}, "control_plane_nodes[0].fqdn", "not a DNS name", false},
		{"localhost as external LB", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "localhost", Port: 3446}}, "external_lb.address", "every_node = true", false},
		{"every node on the apiserver port with wildcard bind", Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{EveryNode: true}}, "local_lb.port", "same socket", false},
		{"every node but disabled", Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{EveryNode: true, Enabled: ptr(false), Port: 3446}}, "local_lb.every_node", "remove one", false},
		{"MetalLB without local LB", Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{Enabled: ptr(false)}, ExternalLB: &ExternalLB{Address: "10.0.0.100", MetalLB: &MetalLB{}}}, "external_lb.metallb", "before the cluster runs", false},
		{"MetalLB VIP as the control-plane endpoint", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100", ControlPlaneEndpoint: true, MetalLB: &MetalLB{}}}, "external_lb.control_plane_endpoint", "before the cluster runs MetalLB", false},
		{"MetalLB VIP by name", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "api.example.com", MetalLB: &MetalLB{}}}, "external_lb.address", "VIP MetalLB announces", false},
		{"VIP on a named control-plane node collides", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100", Nodes: []string{"cp2"}}}, "external_lb.port", "on node \"cp2\"", false},
		{"VIP port trap, kha cannot tell", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100"}}, "external_lb.port", "kubespray's VIP port trap", true},
		{"external LB on an unknown node", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100", Port: 8443, Nodes: []string{"lb9"}}}, "external_lb.nodes[0]", "not in control_plane_nodes", false},
		{"kube-proxy has no server for every node", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{Port: 16443}}, "local_lb.port", "kube_proxy_server", true},
		{"duplicate address", Input{ControlPlaneNodes: threeCPs, WorkerNodes: []Node{{Name: "w1", IP: "10.0.0.12"}}}, "worker_nodes[0].ip", "already used", false},
		{"compact worker with a bad name", Input{ControlPlaneNodes: threeCPs, WorkerAddresses: map[string]string{"W_1": "10.0.0.31"}}, `worker_addresses["W_1"]`, "node name", false},
		{"compact worker with a bad address", Input{ControlPlaneNodes: threeCPs, WorkerAddresses: map[string]string{"w1": "10.0.0.300"}}, `worker_addresses["w1"]`, "not an IP", false},
		{"compact worker on a node's address", Input{ControlPlaneNodes: threeCPs, WorkerAddresses: map[string]string{"w1": "10.0.0.12"}}, `worker_addresses["w1"]`, "already used", false},
		{"compact worker named like a worker_nodes entry", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, WorkerAddresses: map[string]string{twoWorkers[0].Name: "10.0.0.99"}}, fmt.Sprintf("worker_addresses[%q]", twoWorkers[0].Name), "worker_nodes[0].name", false},
		{"compact worker repeating a control-plane node elsewhere", Input{ControlPlaneNodes: threeCPs, WorkerAddresses: map[string]string{"cp2": "10.0.0.50"}}, `worker_addresses["cp2"]`, "control_plane_nodes only", false},
		{"duplicate access address", Input{ControlPlaneNodes: threeCPs, WorkerNodes: []Node{{Name: "w1", IP: "10.0.0.31", AccessIP: "192.0.2.12"}}}, "worker_nodes[0].access_ip", "already used", false},
		{"invalid ip", Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.300"}}}, "control_plane_nodes[0].ip", "not an IP", false},
		{"loopback ip", Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "127.0.0.1"}}}, "control_plane_nodes[0].ip", "127.0.0.1 is a loopback address", false},
		{"loopback access_ip", Input{ControlPlaneNodes: threeCPs, WorkerNodes: []Node{{Name: "w1", IP: "10.0.0.31", AccessIP: "127.0.1.1"}}}, "worker_nodes[0].access_ip", "loopback", false},
		{"loopback ip6", Input{IPFamily: IPv6, ControlPlaneNodes: []Node{{Name: "cp1", IP6: "::1"}}}, "control_plane_nodes[0].ip6", "loopback", false},
		{"IPv4-mapped loopback ip", Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "::ffff:127.0.0.1"}}}, "control_plane_nodes[0].ip", "loopback", false},
		{"compact worker on loopback", Input{ControlPlaneNodes: threeCPs, WorkerAddresses: map[string]string{"w1": "127.0.0.2"}}, `worker_addresses["w1"]`, "loopback", false},
		{"unspecified ip", Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "0.0.0.0"}}}, "control_plane_nodes[0].ip", "unspecified", false},
		{"unspecified ip6", Input{IPFamily: DualStack, ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", IP6: "::"}}}, "control_plane_nodes[0].ip6", "unspecified", false},
		{"broadcast ip", Input{ControlPlaneNodes: threeCPs, WorkerNodes: []Node{{Name: "w1", IP: "255.255.255.255"}}}, "worker_nodes[0].ip", "broadcast", false},
		{"multicast ip", Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "224.0.0.18"}}}, "control_plane_nodes[0].ip", "multicast", false},
		{"missing ip", Input{ControlPlaneNodes: []Node{{Name: "cp1"}}}, "control_plane_nodes[0].ip", "must be set", false},
		{"IPv6 in an IPv4 cluster", Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "fd00::1"}}}, "control_plane_nodes[0].ip", "ip_family = \"dual\"", false},
		{"ip6 without dual-stack is ignored", Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.1", IP6: "fd00::1"}}}, "control_plane_nodes[0].ip6", "dual", true},
		{"IPv4 ip6", Input{IPFamily: DualStack, ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.1", IP6: "10.0.0.2"}}}, "control_plane_nodes[0].ip6", "IPv6", false},
		{"bad family", Input{IPFamily: "ipx", ControlPlaneNodes: threeCPs}, "ip_family", "dual", false},
		{"port out of range", Input{ControlPlaneNodes: threeCPs, APIServerPort: 70000}, "apiserver_port", "65535", false},
		{"LB port out of range", Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{Port: -1}}, "local_lb.port", "65535", false},
		{"LB type", Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{Type: "envoy"}}, "local_lb.type", "haproxy", false},
		{"bind address not the node's", Input{ControlPlaneNodes: threeCPs, APIServerBindAddress: "10.0.0.11"}, "apiserver_bind_address", "cp2", false},
		{"loopback bind", Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", BindAddress: "127.0.0.1"}}}, "control_plane_nodes[0].bind_address", "loopback", false},
		{"bind address on a worker", Input{ControlPlaneNodes: threeCPs, WorkerNodes: []Node{{Name: "w1", IP: "10.0.0.21", BindAddress: "10.0.0.21"}}}, "worker_nodes[0].bind_address", "worker", false},
		{"VIP port collides with wildcard apiserver", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100", RunsOnControlPlane: true}}, "external_lb.port", "same socket", false},
		{"healthcheck port collides with LB port", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{Port: 16443, HealthcheckPort: 16443}}, "local_lb.healthcheck_port", "same socket", false},
		{"healthcheck port collides with apiserver on a CP running the LB", Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", BindAddress: "10.0.0.11"}}, LocalLB: LocalLB{HealthcheckPort: 6443}}, "local_lb.healthcheck_port", "kube-apiserver", false},
		{"invalid supplementary address", Input{ControlPlaneNodes: threeCPs, SupplementaryAddresses: []string{"ok.example.com", "not a name"}}, "supplementary_addresses[1]", "neither", false},
		{"invalid external address", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "-lb-"}}, "external_lb.address", "neither", false},
		{"loopback external address", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "127.0.0.1"}}, "external_lb.address", "loopback", false},
		{"external LB family differs", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "fd00::100"}}, "external_lb.address", "translate", true},
		{"bad service CIDR", Input{ControlPlaneNodes: threeCPs, ServiceCIDR: "10.0.0.0/33"}, "service_cidr", "IPv4 CIDR", false},
		{"service CIDR too small", Input{ControlPlaneNodes: threeCPs, ServiceCIDR: "10.0.0.7/32"}, "service_cidr", "no room", false},
		{"bad DNS domain", Input{ControlPlaneNodes: threeCPs, DNSDomain: "bad_domain"}, "dns_domain", "not a DNS name", false},
		{"a kubeadm cluster's service range", Input{ControlPlaneNodes: threeCPs, ExistingCertSANs: &kubeadmCert}, "service_cidr", `service_cidr = "10.96.0.0/12"`, false},
		{"another cluster's service range", Input{ControlPlaneNodes: threeCPs, ExistingCertSANs: &SANs{DNSNames: kubeadmCert.DNSNames,
			IPAddresses: []string{"10.0.0.11", "10.0.0.12", "192.0.2.12", "10.0.0.13", "172.20.0.1"}}}, "service_cidr", "has 172.20.0.1", false},
		{"a kubeadm cluster's DNS domain", Input{ControlPlaneNodes: threeCPs, ServiceCIDR: "10.96.0.0/12", ExistingCertSANs: &SANs{
			DNSNames:    []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.corp.example"},
			IPAddresses: kubeadmCert.IPAddresses}}, "dns_domain", `dns_domain = "corp.example"`, false},
		{"existing cert lacks the LB name", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100", DomainName: "lb.example.com"},
			ExistingCertSANs: &SANs{DNSNames: []string{"kubernetes", "localhost"}, IPAddresses: []string{"10.0.0.100", "10.0.0.11", "192.0.2.12", "10.0.0.13", "127.0.0.1"}}},
			"existing_cert_sans", "not lb.example.com", false},
		{"existing cert lacks a backend IP", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers,
			ExistingCertSANs: &SANs{DNSNames: []string{"localhost"}, IPAddresses: []string{"127.0.0.1", "10.0.0.11", "10.0.0.12", "10.0.0.13"}}},
			"existing_cert_sans", "192.0.2.12", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ps := Compute(tc.in)
			for _, p := range ps {
				if p.Path.String() == tc.path && strings.Contains(p.Detail, tc.substr) {
					if (p.Severity == problem.Warning) != tc.warn {
						t.Errorf("severity of %v: warning=%v, want %v", p, p.Severity == problem.Warning, tc.warn)
					}
					return
				}
			}
			t.Errorf("want a problem at %s mentioning %q, got %v", tc.path, tc.substr, ps)
		})
	}
}

func TestExistingSANsWildcardCovers(t *testing.T) {
	t.Parallel()
	_, ps := Compute(Input{ControlPlaneNodes: threeCPs[:1], ExternalLB: &ExternalLB{Address: "10.0.0.100", DomainName: "api.prod.example.com", Nodes: []string{}},
		SupplementaryAddresses: []string{"ops.example.com"},
		ExistingCertSANs:       &SANs{DNSNames: []string{"*.prod.example.com", "*.example.com"}, IPAddresses: []string{"10.0.0.100", "10.0.0.11"}}})
	if len(ps) != 0 {
		t.Fatalf("wildcard SANs cover one label: %v", ps)
	}
	if (SANs{DNSNames: []string{"*.example.com"}}).Covers("a.b.example.com") {
		t.Error("a wildcard must not cover two labels")
	}
	if (SANs{DNSNames: []string{"*.example.com"}}).Covers("example.com") {
		t.Error("a wildcard must not cover the bare domain")
	}
}

func TestHelpers(t *testing.T) {
	t.Parallel()
	for in, want := range map[[2]any]string{
		{"10.0.0.1", 6443}:      "https://10.0.0.1:6443",
		{"FD00::0001", 443}:     "https://[fd00::1]:443",
		{"Api.Example.COM", 80}: "https://api.example.com:80",
	} {
		if got := URL(in[0].(string), in[1].(int)); got != want {
			t.Errorf("URL(%v) = %q, want %q", in, got, want)
		}
	}
	sans, ps := CertSANs([]string{"b.example.com", "10.0.0.1", "*.example.com", "B.example.com", "::FFFF:10.0.0.1", "bad name"})
	if want := (SANs{DNSNames: []string{"b.example.com", "*.example.com"}, IPAddresses: []string{"10.0.0.1"}}); !reflect.DeepEqual(sans, want) {
		t.Errorf("CertSANs = %+v, want %+v", sans, want)
	}
	if len(ps) != 1 || ps[0].Path.String() != "[5]" {
		t.Errorf("problems = %v", ps)
	}
}

func TestCheckHostsEntry(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"10.0.0.100 api.example.com", "fd00::1  a b.c", "10.0.0.1\tlb"} {
		if err := CheckHostsEntry(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "10.0.0.1", "api.example.com 10.0.0.1", "10.0.0.1 bad_name", "10.0.0.1 a # comment"} {
		if CheckHostsEntry(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestCompactWorkersAreWorkerNodes: worker_addresses is worker_nodes with
// only name and ip, taken in name order after worker_nodes.
func TestCompactWorkersAreWorkerNodes(t *testing.T) {
	t.Parallel()
	for _, family := range []IPFamily{IPv4, IPv6} {
		cps, addr := threeCPs, func(i int) string { return fmt.Sprintf("10.0.1.%d", i) }
		if family == IPv6 {
			cps = []Node{{Name: "cp1", IP: "fd00::11"}, {Name: "cp2", IP: "fd00::12"}, {Name: "cp3", IP: "fd00::13"}}
			addr = func(i int) string { return fmt.Sprintf("fd00::1:%d", i) }
		}
		long := Input{IPFamily: family, ControlPlaneNodes: cps, WorkerNodes: []Node{{Name: "w9", IP: addr(9)}}}
		compact := long
		compact.WorkerAddresses = map[string]string{}
		for _, i := range []int{3, 1, 2} {
			name := fmt.Sprintf("w%d", i)
			long.WorkerNodes = append(long.WorkerNodes, Node{})
			compact.WorkerAddresses[name] = addr(i)
		}
		for i := 1; i <= 3; i++ {
			long.WorkerNodes[i] = Node{Name: fmt.Sprintf("w%d", i), IP: addr(i)}
		}
		want, problems := Compute(long)
		if problems.HasErrors() {
			t.Fatalf("%s: %v", family, problems)
		}
		got, problems := Compute(compact)
		if problems.HasErrors() {
			t.Fatalf("%s: %v", family, problems)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: compact workers computed\n%+v\nwant\n%+v", family, got, want)
		}
	}
}

// TestKubeProxyServer: kube-proxy's one server for every node, in the
// cluster's primary family (an IPv6-only cluster's kube-proxy gets ::1).
func TestKubeProxyServer(t *testing.T) {
	t.Parallel()
	v6CPs := []Node{{Name: "cp1", IP: "fd00:10::11"}, {Name: "cp2", IP: "fd00:10::12"}}
	v6Workers := []Node{{Name: "w1", IP: "fd00:10::21"}}
	dualCPs := []Node{{Name: "cp1", IP: "10.0.0.11", IP6: "fd00::11"}}
	for _, tc := range []struct {
		name string
		in   Input
		want string
	}{
		{"ipv4 local_lb", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers}, "https://127.0.0.1:6443"},
		{"ipv4 local_lb port", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{Port: 8443, EveryNode: true}},
			"https://127.0.0.1:8443"},
		{"dual-stack local_lb", Input{IPFamily: DualStack, ControlPlaneNodes: dualCPs, WorkerNodes: []Node{{Name: "w1", IP: "10.0.0.21", IP6: "fd00::21"}}},
			"https://127.0.0.1:6443"},
		{"ipv6-only local_lb", Input{IPFamily: IPv6, ControlPlaneNodes: v6CPs, WorkerNodes: v6Workers}, "https://[::1]:6443"},
		{"ipv6-only every_node", Input{IPFamily: IPv6, ControlPlaneNodes: v6CPs, WorkerNodes: v6Workers, LocalLB: LocalLB{Port: 8443, EveryNode: true}},
			"https://[::1]:8443"},
		{"ipv6-only direct", Input{IPFamily: IPv6, ControlPlaneNodes: v6CPs, WorkerNodes: v6Workers, LocalLB: LocalLB{Enabled: ptr(false)}},
			"https://[fd00:10::11]:6443"},
		{"ipv6-only external_lb", Input{IPFamily: IPv6, ControlPlaneNodes: v6CPs, ExternalLB: &ExternalLB{Address: "fd00:20::100", Port: 8443}},
			"https://[fd00:20::100]:8443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := Compute(tc.in)
			if r.KubeProxyServer != tc.want {
				t.Errorf("kube_proxy_server = %q, want %q", r.KubeProxyServer, tc.want)
			}
		})
	}
}

// TestIgnoredLocalLBSettings: local_lb settings that no node uses, because
// the node-local load balancer is off, are a warning at local_lb.enabled
// that names the fix; settings in use, or none, are not.
func TestIgnoredLocalLBSettings(t *testing.T) {
	t.Parallel()
	ext := &ExternalLB{Address: "10.0.0.100", Nodes: []string{}}
	cases := []struct {
		name   string
		lb     LocalLB
		ext    *ExternalLB
		substr []string // empty: no warning at local_lb.enabled
	}{
		{"external_lb turns it off by default", LocalLB{Type: LBTypeHAProxy, Port: 16443}, ext,
			[]string{"local_lb.port, local_lb.type is set", "local_lb.enabled is not set", "set local_lb.enabled = true", "local_lb_with_unmanaged_lb"}},
		{"health check port alone", LocalLB{HealthcheckPort: 8081}, ext, []string{"local_lb.healthcheck_port is set", "set local_lb.enabled = true"}},
		{"explicitly off with external_lb", LocalLB{Enabled: ptr(false), Type: LBTypeNginx}, ext, []string{"local_lb.enabled is false", "remove local_lb.type"}},
		{"explicitly off without external_lb (direct)", LocalLB{Enabled: ptr(false), Port: 16443}, nil, []string{"local_lb.enabled is false", "remove local_lb.port"}},
		{"enabled beside external_lb", LocalLB{Enabled: ptr(true), Type: LBTypeHAProxy, Port: 16443}, ext, nil},
		{"default without external_lb", LocalLB{Type: LBTypeHAProxy}, nil, nil},
		{"off, nothing else set", LocalLB{Enabled: ptr(false)}, ext, nil},
		{"external_lb, local_lb unset", LocalLB{}, ext, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ps := Compute(Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: tc.lb, ExternalLB: tc.ext})
			var found []problem.Problem
			for _, p := range ps {
				if p.Path.String() == "local_lb.enabled" {
					found = append(found, p)
				}
			}
			if len(tc.substr) == 0 {
				if len(found) != 0 {
					t.Fatalf("want no finding at local_lb.enabled, got %v", found)
				}
				return
			}
			if len(found) != 1 || found[0].Severity != problem.Warning {
				t.Fatalf("want one warning at local_lb.enabled, got %v (all: %v)", found, ps)
			}
			for _, s := range tc.substr {
				if !strings.Contains(found[0].Detail, s) {
					t.Errorf("the warning does not say %q: %s", s, found[0].Detail)
				}
			}
		})
	}
}

// TestExistingSANsRefusalListsTheWholeSet: the refusal names every endpoint
// that would fail and the whole SAN set the certificate must have, with
// the missing ones marked, so one re-issue is enough.
func TestExistingSANsRefusalListsTheWholeSet(t *testing.T) {
	t.Parallel()
	in := Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers,
		ExternalLB: &ExternalLB{Address: "10.0.0.100", DomainName: "lb.example.com", Nodes: []string{}}, LocalLB: LocalLB{Enabled: ptr(true)},
		ExistingCertSANs: &SANs{DNSNames: []string{"kubernetes", "localhost"}, IPAddresses: []string{"10.0.0.11", "10.0.0.12", "10.0.0.13", "127.0.0.1"}}}
	res, ps := Compute(in)
	var refusals []problem.Problem
	for _, p := range ps {
		if p.Path.String() == "existing_cert_sans" {
			refusals = append(refusals, p)
		}
	}
	if len(refusals) != 1 {
		t.Fatalf("want one refusal at existing_cert_sans, got %v", ps)
	}
	d := refusals[0].Detail
	for _, want := range []string{
		"host lb.example.com is not in existing_cert_sans.dns_names",
		"host 192.0.2.12 is not in existing_cert_sans.ip_addresses",
		"the certificate must have DNS: kubernetes, kubernetes.default (missing), kubernetes.default.svc (missing), kubernetes.default.svc.cluster.local (missing), localhost, lb.example.com (missing), cp1 (missing), cp2 (missing), cp3 (missing); " +
			"IP: 10.233.0.1 (missing), 127.0.0.1, ::1 (missing), 10.0.0.100 (missing), 10.0.0.11, 192.0.2.12 (missing), 10.0.0.13, 10.0.0.12.",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, d)
		}
	}
	// Issued with exactly that set, the certificate passes.
	in.ExistingCertSANs = &res.CertSANs
	if _, ps := Compute(in); len(ps) != 0 {
		t.Errorf("a certificate with every SAN listed is still refused: %v", ps)
	}
}

// TestLocalLBNodeIPs: local_lb_node_ips maps every node that runs a
// node-local load balancer, and only those, to its address of the
// cluster's primary family.
func TestLocalLBNodeIPs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   Input
		want map[string]string
	}{
		{"workers only", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers},
			map[string]string{"w1": "10.0.0.21", "w2": "10.0.0.22"}},
		{"compact workers and a control-plane node bound to its own address", Input{
			ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", BindAddress: "10.0.0.11"}, {Name: "cp2", IP: "10.0.0.12"}},
			WorkerAddresses:   map[string]string{"w9": "10.0.0.29"}},
			map[string]string{"cp1": "10.0.0.11", "w9": "10.0.0.29"}},
		{"the node's ip, not its access_ip", Input{ControlPlaneNodes: threeCPs, WorkerNodes: []Node{{Name: "w1", IP: "10.0.0.21", AccessIP: "192.0.2.21"}}},
			map[string]string{"w1": "10.0.0.21"}},
		{"every node", Input{ControlPlaneNodes: threeCPs[:1], WorkerNodes: twoWorkers[:1], LocalLB: LocalLB{EveryNode: true, Port: 7445}},
			map[string]string{"cp1": "10.0.0.11", "w1": "10.0.0.21"}},
		{"IPv6-only, address in ip6, canonical form", Input{IPFamily: IPv6, ControlPlaneNodes: []Node{{Name: "cp1", IP6: "fd00::11"}},
			WorkerNodes: []Node{{Name: "w1", IP6: "fd00:0::0021"}}},
			map[string]string{"w1": "fd00::21"}},
		{"dual-stack: the IPv4 address", Input{IPFamily: DualStack, ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", IP6: "fd00::11"}},
			WorkerNodes: []Node{{Name: "w1", IP: "10.0.0.21", IP6: "fd00::21"}}},
			map[string]string{"w1": "10.0.0.21"}},
		{"external_lb: no node runs one", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, ExternalLB: &ExternalLB{Address: "10.0.0.100", Nodes: []string{}}},
			map[string]string{}},
		{"direct", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{Enabled: ptr(false)}},
			map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ps := Compute(tc.in)
			if ps.HasErrors() {
				t.Fatalf("unexpected problems: %v", ps)
			}
			if !reflect.DeepEqual(r.LocalLBNodeIPs, tc.want) {
				t.Errorf("local_lb_node_ips = %v, want %v", r.LocalLBNodeIPs, tc.want)
			}
			if len(r.LocalLBNodeIPs) != len(r.LocalLBNodes) {
				t.Errorf("local_lb_node_ips %v does not name the nodes of local_lb_nodes %v", r.LocalLBNodeIPs, r.LocalLBNodes)
			}
			for _, n := range r.LocalLBNodes {
				if _, ok := r.LocalLBNodeIPs[n]; !ok {
					t.Errorf("local_lb_node_ips lacks %q of local_lb_nodes", n)
				}
			}
		})
	}
}

// TestLoadBalancerAsControlPlaneEndpoint: external_lb.control_plane_endpoint
// makes the load balancer kubeadm's endpoint and join address in every
// mode with one, by name, whichever control-plane node drains; without it
// the first serving control-plane node's address, as kubespray's.
func TestLoadBalancerAsControlPlaneEndpoint(t *testing.T) {
	t.Parallel()
	lb := func(asEndpoint bool) *ExternalLB {
		return &ExternalLB{Address: "10.0.0.100", Port: 8443, DomainName: "api.example.com", Nodes: []string{}, ControlPlaneEndpoint: asEndpoint}
	}
	for _, tc := range []struct {
		name            string
		in              Input
		mode            Mode
		want, discovery string // discovery: as want where empty
	}{
		{"unmanaged LB", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{Enabled: ptr(true)}, ExternalLB: lb(true)},
			ModeLocalLBWithUnmanagedLB, "api.example.com:8443", ""},
		{"unmanaged LB, cp1 draining", Input{ControlPlaneNodes: drained("cp1"), WorkerNodes: twoWorkers, LocalLB: LocalLB{Enabled: ptr(true)}, ExternalLB: lb(true)},
			ModeLocalLBWithUnmanagedLB, "api.example.com:8443", ""},
		{"unmanaged LB by default", Input{ControlPlaneNodes: drained("cp1"), WorkerNodes: twoWorkers, LocalLB: LocalLB{Enabled: ptr(true)}, ExternalLB: lb(false)},
			ModeLocalLBWithUnmanagedLB, "10.0.0.12:6443", "192.0.2.12:6443"},
		{"every node", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{EveryNode: true, Port: 3446}, ExternalLB: lb(true)},
			ModeLocalLBEveryNode, "api.example.com:8443", ""},
		{"every node by default", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{EveryNode: true, Port: 3446}, ExternalLB: lb(false)},
			ModeLocalLBEveryNode, "localhost:3446", "10.0.0.11:6443"},
		{"external LB, as always", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{Enabled: ptr(false)}, ExternalLB: lb(false)},
			ModeExternalLB, "api.example.com:8443", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ps := Compute(tc.in)
			if ps.HasErrors() {
				t.Fatal(ps)
			}
			discovery := cmp.Or(tc.discovery, tc.want)
			if r.Mode != tc.mode || r.KubeadmControlPlaneEndpoint != tc.want || r.KubeadmDiscoveryAddress != discovery {
				t.Fatalf("mode %s, controlPlaneEndpoint %s, discovery %s; want %s, %s and %s", r.Mode, r.KubeadmControlPlaneEndpoint,
					r.KubeadmDiscoveryAddress, tc.mode, tc.want, discovery)
			}
		})
	}
}

// TestKubeadmClusterRanges: a kubeadm cluster's certificate and the
// service range and domain it was made with agree: no problem, and the
// plan's SANs and kubeadm configuration carry that range.
func TestKubeadmClusterRanges(t *testing.T) {
	t.Parallel()
	cert := kubeadmCert
	cert.DNSNames = append(slices.Clone(cert.DNSNames), "localhost", "cp2", "cp3")
	cert.IPAddresses = append(slices.Clone(cert.IPAddresses), "127.0.0.1", "::1")
	r, ps := Compute(Input{ControlPlaneNodes: threeCPs, ServiceCIDR: "10.96.0.0/12", ExistingCertSANs: &cert})
	for _, p := range ps {
		if p.Path.String() != "pod_network_endpoint" { // no external load balancer here: pods depend on cp1
			t.Fatalf("problem: %v", p)
		}
	}
	if r.APIServerServiceIP != "10.96.0.1" || !slices.Contains(r.CertSANs.IPAddresses, "10.96.0.1") || slices.Contains(r.CertSANs.IPAddresses, "10.233.0.1") {
		t.Fatalf("service IP %s, SANs %v", r.APIServerServiceIP, r.CertSANs.IPAddresses)
	}
}
