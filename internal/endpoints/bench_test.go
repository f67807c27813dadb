package endpoints

import (
	"fmt"
	"testing"
)

// benchInput is a cluster of cps control-plane nodes and 5,000 nodes in
// all, dual-stack, behind an external LB that also gets SANs.
func benchInput(cps int, mode Mode) Input {
	in := Input{IPFamily: DualStack, SupplementaryAddresses: []string{"k8s.example.com"}}
	for i := 0; i < 5000; i++ {
		n := Node{Name: fmt.Sprintf("node-%d", i), IP: fmt.Sprintf("10.%d.%d.%d", i/62500, i/250%250, i%250+1),
			IP6: fmt.Sprintf("fd00::%x", i+1)}
		if i < cps {
			in.ControlPlaneNodes = append(in.ControlPlaneNodes, n)
		} else {
			in.WorkerNodes = append(in.WorkerNodes, n)
		}
	}
	switch mode {
	case ModeExternalLB:
		in.ExternalLB = &ExternalLB{Address: "192.0.2.100", DomainName: "api.example.com", Port: 8443}
	case ModeLocalLBWithUnmanagedLB:
		in.ExternalLB = &ExternalLB{Address: "192.0.2.100", DomainName: "api.example.com", Port: 8443}
		in.LocalLB.Enabled = ptr(true)
	}
	return in
}

func BenchmarkCompute5000Nodes(b *testing.B) {
	for _, bc := range []struct {
		cps  int
		mode Mode
	}{{3, ModeLocalLB}, {3, ModeExternalLB}, {5, ModeLocalLBWithUnmanagedLB}, {5000, ModeLocalLB}} {
		in := benchInput(bc.cps, bc.mode)
		b.Run(fmt.Sprintf("cps=%d/%s", bc.cps, bc.mode), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ps := Compute(in); ps.HasErrors() {
					b.Fatal(ps)
				}
			}
		})
	}
}
