package problem

import (
	"fmt"
	"strings"
	"testing"
)

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

func TestSortedYieldsKeysInOrder(t *testing.T) {
	var keys []string
	for k, v := range Sorted(map[string]int{"rise": 2, "fall": 1, "interval": 3}) {
		keys = append(keys, fmt.Sprintf("%s=%d", k, v))
	}
	if got := strings.Join(keys, " "); got != "fall=1 interval=3 rise=2" {
		t.Errorf("got %s", got)
	}
	for range Sorted(map[string]int{"a": 1, "b": 2}) {
		break // Sorted must stop here: the runtime panics when it yields after a break
	}
}
