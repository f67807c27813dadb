package endpoints

import (
	"strings"
	"testing"
)

// TestKubeletLocalMode: a control-plane node's kubelet uses its own
// apiserver as kubeadm of kubernetes_version does (on since 1.33, always
// since 1.36, today's when unset), control_plane_kubelet_local_mode
// overrides it, and the ClusterConfiguration carries the feature gate
// where kubeadm would otherwise disagree.
func TestKubeletLocalMode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		version  string
		local    *bool
		wantCP   string // cp2's endpoint, behind an external load balancer
		wantGate string // the featureGates line, "" for none
		wantErr  string
	}{
		{version: "", wantCP: "https://10.0.0.12:6443"},
		{version: "v1.36.3", wantCP: "https://10.0.0.12:6443"},
		{version: "v2.0.0", wantCP: "https://10.0.0.12:6443"},
		{version: "v1.33.0", wantCP: "https://10.0.0.12:6443"},
		{version: "v1.32.9", wantCP: "https://10.0.0.100:8443"},
		{version: "v1.28.15", wantCP: "https://10.0.0.100:8443"},
		{version: "v1.34.2", local: ptr(false), wantCP: "https://10.0.0.100:8443", wantGate: "ControlPlaneKubeletLocalMode: false"},
		{version: "v1.34.2", local: ptr(true), wantCP: "https://10.0.0.12:6443"},
		{version: "v1.31.0", local: ptr(true), wantCP: "https://10.0.0.12:6443", wantGate: "ControlPlaneKubeletLocalMode: true"},
		{version: "v1.32.9", local: ptr(false), wantCP: "https://10.0.0.100:8443"},
		// kubeadm before 1.31 has no gate: kha points the kubelets, kubeadm
		// is told nothing.
		{version: "v1.30.14", local: ptr(true), wantCP: "https://10.0.0.12:6443"},
		{version: "v1.36.3", local: ptr(true), wantCP: "https://10.0.0.12:6443"},
		{version: "v1.36.3", local: ptr(false), wantErr: "kubernetes_version is v1.36.3: kubeadm 1.36 removed"},
		{version: "", local: ptr(false), wantErr: "kubernetes_version is unset, today's kubeadm"},
	}
	for _, tc := range cases {
		name := orDefault(tc.version, "unset")
		if tc.local != nil {
			name += map[bool]string{true: ", local", false: ", through the load balancer"}[*tc.local]
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, ps := Compute(Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers,
				ExternalLB: &ExternalLB{Address: "10.0.0.100", Port: 8443, Nodes: []string{}},
				Kubeadm:    KubeadmInput{KubernetesVersion: tc.version, ControlPlaneKubeletLocalMode: tc.local}})
			if tc.wantErr != "" {
				if !ps.HasErrors() || len(ps) != 1 || ps[0].Path.String() != "kubeadm.control_plane_kubelet_local_mode" ||
					!strings.Contains(ps[0].Detail, tc.wantErr) {
					t.Fatalf("want one error at kubeadm.control_plane_kubelet_local_mode saying %q, got %v", tc.wantErr, ps)
				}
				return
			}
			if ps.HasErrors() {
				t.Fatal(ps)
			}
			if got := r.NodeEndpoints[1].URL; got != tc.wantCP {
				t.Errorf("cp2's endpoint %q, want %q", got, tc.wantCP)
			}
			if got := r.NodeEndpoints[3].URL; got != "https://10.0.0.100:8443" {
				t.Errorf("w1's endpoint %q, want the load balancer", got)
			}
			if r.KubeadmControlPlaneEndpoint != "10.0.0.100:8443" {
				t.Errorf("controlPlaneEndpoint %q, want the load balancer: admin.conf and joins keep it", r.KubeadmControlPlaneEndpoint)
			}
			gate := ""
			if _, after, found := strings.Cut(r.KubeadmClusterConfiguration, "featureGates:\n"); found {
				gate = strings.TrimSpace(strings.SplitN(after, "\n", 2)[0])
			}
			if gate != tc.wantGate {
				t.Errorf("featureGates %q, want %q:\n%s", gate, tc.wantGate, r.KubeadmClusterConfiguration)
			}
		})
	}
}
