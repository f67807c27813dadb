package endpoints

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// FuzzCompute feeds arbitrary inputs: Compute never panics, is
// deterministic, and whenever it reports no error every endpoint it emits
// is a valid URL covered by the SANs it computed.
func FuzzCompute(f *testing.F) {
	f.Add("cp1,cp2", "10.0.0.11,10.0.0.12", "", "w1", "10.0.0.21", "::", 6443, 0, 0, "", "", 0, "", uint8(0), false)
	f.Add("cp1", "fd00::11", "fd00::99", "w1", "fd00::21", "fd00::11", 6443, 16443, 8081, "fd00::100", "api.example.com", 8443, "k8s.example.com,10.9.9.9", uint8(1), true)
	f.Add("a,b,c", "10.0.0.1,10.0.0.2,10.0.0.3", "192.0.2.1", "", "", "0.0.0.0", 443, 443, 0, "lb.example.com", "", 0, "*.example.com", uint8(2), false)
	f.Add("cp1", "10.0.0.11", "", "w1,w2", "10.0.0.21,10.0.0.21", "10.0.0.11", 1, 65535, 65535, "10.0.0.100", "10.0.0.100", 1, "", uint8(3), true)
	f.Add("cp1,cp2", "fd00::11,fd00::12", "", "w1,w2,w3", "fd00:0::21,fd00::22,fd00::23", "fd00::11", 6443, 16443, 0, "", "", 0, "", uint8(8), false)
	f.Fuzz(func(t *testing.T, cpNames, cpIPs, accessIP, workerNames, workerIPs, bind string, port, lbPort, hcPort int,
		extAddr, extDomain string, extPort int, supplementary string, flags uint8, onCP bool) {
		in := Input{
			ControlPlaneNodes:    zipNodes(cpNames, cpIPs, accessIP),
			WorkerNodes:          zipNodes(workerNames, workerIPs, ""),
			APIServerPort:        port,
			APIServerBindAddress: bind,
			LocalLB:              LocalLB{Port: lbPort, HealthcheckPort: hcPort, Type: []string{"", LBTypeNginx, LBTypeHAProxy, "x"}[flags%4]},
			IPFamily:             []IPFamily{"", IPv4, IPv6, DualStack}[flags/4%4],
		}
		if n := len(in.WorkerNodes); n > 1 {
			// the last worker in its compact form
			in.WorkerAddresses = map[string]string{in.WorkerNodes[n-1].Name: in.WorkerNodes[n-1].IP}
			in.WorkerNodes = in.WorkerNodes[:n-1]
		}
		if supplementary != "" {
			in.SupplementaryAddresses = strings.Split(supplementary, ",")
		}
		switch flags / 16 % 3 {
		case 1:
			in.LocalLB.Enabled = ptr(flags&64 != 0)
		case 2:
			in.LocalLB.Enabled = ptr(true)
		}
		if extAddr != "" {
			in.ExternalLB = &ExternalLB{Address: extAddr, DomainName: extDomain, Port: extPort, RunsOnControlPlane: onCP}
		}
		if flags&128 != 0 {
			in.IPFamily = DualStack
			for i := range in.ControlPlaneNodes {
				in.ControlPlaneNodes[i].IP6 = fmt.Sprintf("fd00::%x", i+1)
			}
		}

		r, ps := Compute(in)
		r2, ps2 := Compute(in)
		if !reflect.DeepEqual(r, r2) || !reflect.DeepEqual(ps, ps2) {
			t.Fatalf("not deterministic:\n%+v\n%+v", r, r2)
		}
		for _, p := range ps {
			if len(p.Path) == 0 || p.Detail == "" {
				t.Fatalf("problem without path or detail: %+v", p)
			}
			if strings.Contains(p.Detail, "always a bug") {
				t.Fatalf("coverage invariant broken: %v", p)
			}
		}
		if ps.HasErrors() {
			return
		}
		if len(r.NodeEndpoints) != len(in.ControlPlaneNodes)+len(in.WorkerNodes) {
			t.Fatalf("%d node endpoints for %d nodes", len(r.NodeEndpoints), len(in.ControlPlaneNodes)+len(in.WorkerNodes))
		}
		urls := append(nodeURLs(r), r.Endpoints.ControlPlane, r.Endpoints.Worker, r.Endpoints.Global, r.Endpoints.External, r.KubeconfigServer,
			"https://"+r.KubeadmControlPlaneEndpoint, r.PodEndpoint.URL)
		if pe, err := ParsePodEndpoint(r.PodEndpoint.URL); err != nil || pe != (PodEndpoint{URL: r.PodEndpoint.URL, Host: r.PodEndpoint.Host, Port: r.PodEndpoint.Port}) {
			t.Fatalf("pod endpoint %+v reparses as %+v (%v)", r.PodEndpoint, pe, err)
		}
		if IsLoopbackHost(r.PodEndpoint.Host) {
			t.Fatalf("pod endpoint %+v is loopback", r.PodEndpoint)
		}
		for _, u := range urls {
			parsed, err := url.Parse(u)
			if err != nil || parsed.Scheme != "https" || parsed.Port() == "" || parsed.Hostname() == "" {
				t.Fatalf("endpoint %q is not an https URL with host and port (%v)", u, err)
			}
			if !r.CertSANs.Covers(parsed.Hostname()) {
				t.Fatalf("endpoint %q not covered by %+v", u, r.CertSANs)
			}
		}
		for _, b := range r.LocalLBBackends {
			if !r.CertSANs.Covers(b.Address) {
				t.Fatalf("backend %+v not covered", b)
			}
		}
		if r.Mode == ModeExternalLB && r.LocalLBListen != nil {
			t.Fatal("external LB mode has a local LB listener")
		}
		if len(r.LocalLBNodeIPs) != len(r.LocalLBNodes) {
			t.Fatalf("local_lb_node_ips %v for local_lb_nodes %v", r.LocalLBNodeIPs, r.LocalLBNodes)
		}
		for _, n := range r.LocalLBNodes {
			if _, ok := parseIP(r.LocalLBNodeIPs[n]); !ok {
				t.Fatalf("local_lb_node_ips[%q] = %q, not an IP address", n, r.LocalLBNodeIPs[n])
			}
		}
	})
}

func zipNodes(names, ips, accessIP string) []Node {
	if names == "" {
		return nil
	}
	ns := strings.Split(names, ",")
	is := strings.Split(ips, ",")
	nodes := make([]Node, len(ns))
	for i, n := range ns {
		nodes[i].Name = n
		if i < len(is) {
			nodes[i].IP = is[i]
		}
	}
	nodes[0].AccessIP = accessIP
	return nodes
}
