package endpoints

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// drained returns threeCPs with the named nodes draining.
func drained(names ...string) []Node {
	nodes := append([]Node(nil), threeCPs...)
	for i := range nodes {
		for _, n := range names {
			if nodes[i].Name == n {
				nodes[i].Draining = true
			}
		}
	}
	return nodes
}

// TestDraining: a draining control-plane node leaves every backend list
// and every endpoint another node uses; its SANs and its own endpoint stay.
func TestDraining(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		in       Input
		backends []string
		// endpoints of cp1, cp3 and w1, kubeadm's controlPlaneEndpoint,
		// discovery address and kubeconfig server
		cp1, cp3, w1, kubeadm, discovery, kubeconfig string
		// refs: what the warning must say still points at the draining node
		refs []string
	}{
		{
			name:     "local_lb, third node",
			in:       Input{ControlPlaneNodes: drained("cp3"), WorkerNodes: twoWorkers},
			backends: []string{"cp1", "cp2"},
			cp1:      "https://10.0.0.11:6443", cp3: "https://10.0.0.13:6443", w1: "https://localhost:6443",
			kubeadm: "10.0.0.11:6443", discovery: "10.0.0.11:6443", kubeconfig: "https://10.0.0.11:6443",
			refs: []string{`node_endpoints["cp3"] https://10.0.0.13:6443: its own kubelet`, "apiserver_cert_sans"},
		},
		{
			name:     "direct, first node: the workers move to the second",
			in:       Input{ControlPlaneNodes: drained("cp1"), WorkerNodes: twoWorkers, LocalLB: LocalLB{Enabled: ptr(false)}},
			backends: []string{"cp2", "cp3"},
			cp1:      "https://10.0.0.11:6443", cp3: "https://10.0.0.13:6443", w1: "https://192.0.2.12:6443",
			kubeadm: "10.0.0.12:6443", discovery: "192.0.2.12:6443", kubeconfig: "https://192.0.2.12:6443",
			refs: []string{`node_endpoints["cp1"]`},
		},
		{
			name: "every_node, first node with its etcd member and the VIP",
			in: Input{ControlPlaneNodes: drained("cp1"), WorkerNodes: twoWorkers, LocalLB: LocalLB{EveryNode: true, Port: 7445},
				ExternalLB: &ExternalLB{Address: "10.0.0.100", Port: 8443, Nodes: []string{"cp1"}},
				Kubeadm:    KubeadmInput{EtcdEndpoints: []string{"https://10.0.0.11:2379", "https://10.0.0.12:2379"}}},
			backends: []string{"cp2", "cp3"},
			cp1:      "https://10.0.0.11:6443", cp3: "https://10.0.0.13:6443", w1: "https://localhost:7445",
			kubeadm: "localhost:7445", discovery: "192.0.2.12:6443", kubeconfig: "https://10.0.0.100:8443",
			refs: []string{"kubeadm.etcd_endpoints https://10.0.0.11:2379", "external_lb.nodes"},
		},
		{
			name:     "external_lb, second node",
			in:       Input{ControlPlaneNodes: drained("cp2"), WorkerNodes: twoWorkers, ExternalLB: &ExternalLB{Address: "10.0.0.100", Port: 8443, Nodes: []string{}}},
			backends: []string{"cp1", "cp3"},
			cp1:      "https://10.0.0.11:6443", cp3: "https://10.0.0.13:6443", w1: "https://10.0.0.100:8443",
			kubeadm: "10.0.0.100:8443", discovery: "10.0.0.100:8443", kubeconfig: "https://10.0.0.100:8443",
			refs: []string{`node_endpoints["cp2"] https://10.0.0.12:6443: its own kubelet`, "apiserver_cert_sans"},
		},
		{
			name: "external_lb, second node, kubeadm before 1.33: every kubelet through the load balancer",
			in: Input{ControlPlaneNodes: drained("cp2"), WorkerNodes: twoWorkers, ExternalLB: &ExternalLB{Address: "10.0.0.100", Port: 8443, Nodes: []string{}},
				Kubeadm: KubeadmInput{KubernetesVersion: "v1.32.9"}},
			backends: []string{"cp1", "cp3"},
			cp1:      "https://10.0.0.100:8443", cp3: "https://10.0.0.100:8443", w1: "https://10.0.0.100:8443",
			kubeadm: "10.0.0.100:8443", discovery: "10.0.0.100:8443", kubeconfig: "https://10.0.0.100:8443",
			refs: []string{"apiserver_cert_sans"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ps := Compute(tc.in)
			if ps.HasErrors() {
				t.Fatal(ps)
			}
			var backends []string
			for _, b := range r.LocalLBBackends {
				backends = append(backends, b.Name)
			}
			if !reflect.DeepEqual(backends, tc.backends) {
				t.Errorf("backends %v, want %v", backends, tc.backends)
			}
			ne := map[string]string{}
			for _, e := range r.NodeEndpoints {
				ne[e.Name] = e.URL
			}
			got := []string{ne["cp1"], ne["cp3"], ne["w1"], r.KubeadmControlPlaneEndpoint, r.KubeadmDiscoveryAddress, r.KubeconfigServer}
			want := []string{tc.cp1, tc.cp3, tc.w1, tc.kubeadm, tc.discovery, tc.kubeconfig}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("cp1, cp3, w1, kubeadm, discovery, kubeconfig:\n got %q\nwant %q", got, want)
			}
			// The SANs keep every node: clients verify until it is gone.
			for _, ip := range []string{"10.0.0.11", "192.0.2.12", "10.0.0.13"} {
				if !newSANSet(r.CertSANs).covers(ip) {
					t.Errorf("SANs lost %s: %v", ip, r.CertSANs)
				}
			}
			var warning *problem.Problem
			for i := range ps {
				if ps[i].Summary == "Control-plane node draining" {
					if warning != nil {
						t.Fatalf("two draining warnings: %v", ps)
					}
					warning = &ps[i]
				}
			}
			if warning == nil || warning.Severity != problem.Warning || !strings.HasSuffix(warning.Path.String(), ".draining") {
				t.Fatalf("want one warning at the draining node, got %v", ps)
			}
			for _, ref := range tc.refs {
				if !strings.Contains(warning.Detail, "\n- "+ref) {
					t.Errorf("the warning does not list %q:\n%s", ref, warning.Detail)
				}
			}
		})
	}
}

func TestDrainingRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path, substr string
		in                 Input
	}{
		{"every control-plane node", "control_plane_nodes", "Drain one node at a time", Input{ControlPlaneNodes: drained("cp1", "cp2", "cp3")}},
		{"a worker", "worker_nodes[0].draining", "worker nodes are in none",
			Input{ControlPlaneNodes: threeCPs, WorkerNodes: []Node{{Name: "w1", IP: "10.0.0.21", Draining: true}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ps := Compute(tc.in)
			for _, p := range ps {
				if p.Severity == problem.Error && p.Path.String() == tc.path && strings.Contains(p.Detail, tc.substr) {
					return
				}
			}
			t.Errorf("want an error at %s mentioning %q, got %v", tc.path, tc.substr, ps)
		})
	}
}

// TestDrainingLeavesTheMetalLBSlice: the EndpointSlice lists the nodes
// that serve.
func TestDrainingLeavesTheMetalLBSlice(t *testing.T) {
	t.Parallel()
	r, ps := Compute(Input{ControlPlaneNodes: drained("cp3"), LocalLB: LocalLB{Enabled: ptr(true)},
		ExternalLB: &ExternalLB{Address: "10.0.0.100", MetalLB: &MetalLB{}}})
	if ps.HasErrors() {
		t.Fatal(ps)
	}
	if strings.Contains(r.MetalLBManifests, "10.0.0.13") || !strings.Contains(r.MetalLBManifests, "10.0.0.11") {
		t.Errorf("the EndpointSlice should list cp1 and cp2 only:\n%s", r.MetalLBManifests)
	}
}
