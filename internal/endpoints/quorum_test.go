package endpoints

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// members parses "a b c-" into members, a trailing "-" marking one leaving.
func members(s string) []QuorumMember {
	var ms []QuorumMember
	for _, f := range strings.Fields(s) {
		name, leaving := strings.CutSuffix(f, "-")
		ms = append(ms, QuorumMember{Name: name, Leaving: leaving})
	}
	return ms
}

// TestQuorumChange: each case's problems as "E summary" or "W summary",
// in order.
func TestQuorumChange(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		prior, planned string
		create         bool
		allowed        bool
		want           []string
		// detail: a phrase the last problem's detail must hold
		detail string
	}{
		{name: "create with three", create: true, planned: "a b c"},
		{name: "create with two", create: true, planned: "a b", want: []string{"W Even Number of etcd Members"},
			detail: "with two, losing either one stops etcd"},
		{name: "create with four", create: true, planned: "a b c d", want: []string{"W Even Number of etcd Members"},
			detail: "4 etcd members serve etcd after this plan. They tolerate the failure of 1, as 3 would"},
		{name: "unchanged three", prior: "a b c", planned: "a b c"},
		{name: "a replacement added", prior: "a b c", planned: "a b c d", want: []string{"W Even Number of etcd Members"}},
		{name: "four, one draining", prior: "a b c d", planned: "a b c d-"},
		{name: "the draining one removed", prior: "a b c d-", planned: "a b c"},
		{name: "three to two by draining", prior: "a b c", planned: "a b c-",
			want: []string{"W Even Number of etcd Members", "E Fewer Than Three etcd Members"}, detail: "where 3 did, and 2 tolerate no failure"},
		{name: "three to two by removal", prior: "a b c", planned: "a b",
			want: []string{"W Even Number of etcd Members", "E Fewer Than Three etcd Members"}},
		{name: "three to two, allowed", prior: "a b c", planned: "a b", allowed: true,
			want: []string{"W Even Number of etcd Members", "W Fewer Than Three etcd Members"}},
		{name: "the second apply of an allowed drain asks nothing more", prior: "a b c-", planned: "a b",
			want: []string{"W Even Number of etcd Members"}},
		{name: "three to one", prior: "a b c", planned: "a",
			want: []string{"E etcd Would Lose Its Quorum"}, detail: `takes away "b", "c": of the 3 members etcd has now, 1 remain`},
		{name: "two to one", prior: "a b", planned: "a", want: []string{"E etcd Would Lose Its Quorum"}},
		{name: "five to three", prior: "a b c d e", planned: "a b c"},
		{name: "five to two", prior: "a b c d e", planned: "a b", want: []string{"W Even Number of etcd Members", "E etcd Would Lose Its Quorum"}},
		{name: "two replaced by new ones in one plan", prior: "a b c", planned: "a d e",
			want: []string{"E etcd Would Lose Its Quorum"}, detail: "new in this plan do not count"},
		{name: "three to one, allowed", prior: "a b c", planned: "a", allowed: true, want: []string{"W etcd Would Lose Its Quorum"},
			detail: "set allow_quorum_risk = true"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q := QuorumChange{At: problem.Root("members"), AllowAt: problem.Root("allow_quorum_risk"), Noun: "etcd member",
				Planned: members(c.planned), Allowed: c.allowed}
			if !c.create {
				q.Prior = members(c.prior)
			}
			var got []string
			for _, p := range q.Problems() {
				sev := "E"
				if p.Severity == problem.Warning {
					sev = "W"
				}
				got = append(got, sev+" "+p.Summary)
				if p.Path.String() != "members" {
					t.Errorf("%s is at %s, want members", p.Summary, p.Path)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("problems %q, want %q", got, c.want)
			}
			if c.detail != "" {
				if ps := q.Problems(); !strings.Contains(ps[len(ps)-1].Detail, c.detail) {
					t.Errorf("detail %q\ndoes not say %q", ps[len(ps)-1].Detail, c.detail)
				}
			}
		})
	}
}
