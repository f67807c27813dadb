package problem

import (
	"fmt"
	"strings"
	"testing"
)

func TestPath(t *testing.T) {
	t.Parallel()
	p := Root("worker_nodes").Index(3).At("ip")
	q := p.At("x")
	if p.String() != "worker_nodes[3].ip" || q.String() != "worker_nodes[3].ip.x" {
		t.Fatalf("%s %s", p, q)
	}
}

func TestRebaseKeepsTheOriginal(t *testing.T) {
	t.Parallel()
	var ps Problems
	ps.Errorf(Root("listen").Index(1), "x", "y")
	moved := ps.Rebase(func(Path) Path { return Root("listen").At("ipv6_address") })
	if moved[0].Path.String() != "listen.ipv6_address" || ps[0].Path.String() != "listen[1]" {
		t.Fatalf("rebased %v, original %v", moved, ps)
	}
}

func TestSortedYieldsKeysInOrder(t *testing.T) {
	t.Parallel()
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

func TestRenamesApply(t *testing.T) {
	t.Parallel()
	renames := Renames{
		{From: Root("listen").Index(0).At("port"), To: Root("listen").At("port")},
		{From: Root("listen").Index(0), To: Root("listen").At("address")},
		{From: Root("health_check").At("ca_file"), To: Root("proxy_ca_file")},
	}
	for _, tc := range []struct {
		name     string
		in, want Path
	}{
		{"the first match wins", Root("listen").Index(0).At("port"), Root("listen").At("port")},
		{"a prefix keeps the rest", Root("listen").Index(0).At("x"), Root("listen").At("address").At("x")},
		{"an exact prefix", Root("listen").Index(0), Root("listen").At("address")},
		{"another root", Root("health_check").At("ca_file"), Root("proxy_ca_file")},
		{"no match leaves the path", Root("listen").Index(1).At("port"), Root("listen").Index(1).At("port")},
		{"a longer name is no prefix", Root("health_check").At("ca_file_x"), Root("health_check").At("ca_file_x")},
	} {
		if got := renames.Apply(tc.in); got.String() != tc.want.String() {
			t.Errorf("%s: %s became %s, want %s", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestSchemaChecked: only SchemaErrorf marks a finding as one the schema
// reports too; each adds one finding of its severity.
func TestSchemaChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		add           func(*Problems)
		severity      Severity
		schemaChecked bool
	}{
		{"Errorf", func(ps *Problems) { ps.Errorf(Root("port"), "s", "d %d", 1) }, Error, false},
		{"SchemaErrorf", func(ps *Problems) { ps.SchemaErrorf(Root("port"), "s", "d %d", 1) }, Error, true},
		{"Warnf", func(ps *Problems) { ps.Warnf(Root("port"), "s", "d %d", 1) }, Warning, false},
	} {
		var ps Problems
		tc.add(&ps)
		if len(ps) != 1 || ps[0].Severity != tc.severity || ps[0].SchemaChecked != tc.schemaChecked || ps[0].Detail != "d 1" {
			t.Errorf("%s added %+v", tc.name, ps)
		}
		if ps.HasErrors() != (tc.severity == Error) {
			t.Errorf("%s: HasErrors is %v", tc.name, ps.HasErrors())
		}
	}
}
