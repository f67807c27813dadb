package hostres

import (
	"slices"
	"testing"
)

func TestLineDiff(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		want, got, diff []string
	}{
		{want: []string{"a", "b", "c"}, got: []string{"a", "b", "c"}},
		{want: []string{"a", "b", "c"}, got: []string{"a", "x", "c"}, diff: []string{"- b", "+ x"}},
		{want: []string{"a", "b"}, got: []string{"a", "b", "c"}, diff: []string{"+ c"}},
		{want: []string{"a", "b", "c"}, got: []string{"c"}, diff: []string{"- a", "- b"}},
		{want: []string{"a", "b", "c", "d"}, got: []string{"x", "b", "d", "y"}, diff: []string{"- a", "+ x", "- c", "+ y"}},
		{want: nil, got: []string{"a"}, diff: []string{"+ a"}},
	} {
		if diff := lineDiff(c.want, c.got); !slices.Equal(diff, c.diff) {
			t.Errorf("lineDiff(%q, %q) = %q, want %q", c.want, c.got, diff, c.diff)
		}
	}
}
