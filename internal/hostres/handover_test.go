package hostres

import (
	"slices"
	"testing"
)

func TestPreviousPlaces(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                string
		pending             *pendingHandover
		prior, planned, out []string
	}{
		{name: "unchanged", prior: []string{"127.0.0.1:6443"}, planned: []string{"127.0.0.1:6443"}},
		{name: "moved", prior: []string{"127.0.0.1:6443"}, planned: []string{"127.0.0.1:7445"}, out: []string{"127.0.0.1:6443"}},
		{name: "moved again before the handover ended", pending: &pendingHandover{Previous: []string{"127.0.0.1:6443"}},
			prior: []string{"127.0.0.1:7445"}, planned: []string{"127.0.0.1:7446"}, out: []string{"127.0.0.1:6443", "127.0.0.1:7445"}},
		{name: "moved back", pending: &pendingHandover{Previous: []string{"127.0.0.1:6443"}},
			prior: []string{"127.0.0.1:7445"}, planned: []string{"127.0.0.1:6443"}, out: []string{"127.0.0.1:7445"}},
		{name: "pending, nothing moved", pending: &pendingHandover{Previous: []string{"10.0.0.100/24"}},
			prior: []string{"10.0.0.101/24"}, planned: []string{"10.0.0.101/24"}, out: []string{"10.0.0.100/24"}},
		{name: "an IPv6 address added", prior: []string{"127.0.0.1:6443"}, planned: []string{"127.0.0.1:6443", "[::1]:6443"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := previousPlaces(c.pending, c.prior, c.planned); !slices.Equal(got, c.out) {
				t.Errorf("previousPlaces = %q, want %q", got, c.out)
			}
		})
	}
}
