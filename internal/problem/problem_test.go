package problem

import "testing"

func TestPath(t *testing.T) {
	p := Root("worker_nodes").Index(3).At("ip")
	q := p.At("x")
	if p.String() != "worker_nodes[3].ip" || q.String() != "worker_nodes[3].ip.x" {
		t.Fatalf("%s %s", p, q)
	}
}

func TestRebaseKeepsTheOriginal(t *testing.T) {
	var ps Problems
	ps.Errorf(Root("listen").Index(1), "x", "y")
	moved := ps.Rebase(func(Path) Path { return Root("listen").At("ipv6_address") })
	if moved[0].Path.String() != "listen.ipv6_address" || ps[0].Path.String() != "listen[1]" {
		t.Fatalf("rebased %v, original %v", moved, ps)
	}
}
