package vipcheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

func TestProblems(t *testing.T) {
	check := Check{VIP: "10.0.0.100", Interface: "eth0", Self: "lb1", Noun: "the pair's nodes",
		Nodes:   []Node{{Name: "lb1", IP: "10.0.0.1"}, {Name: "lb2", IP: "10.0.0.2"}},
		VIPAttr: problem.Root("vip"), InterfaceAttr: problem.Root("interface")}
	onLink := "10.0.0.100 dev eth0 src 10.0.0.1 uid 0"
	lb2 := map[string][]string{"10.0.0.2": {"02:00:00:00:00:02"}}
	with := func(vip ...string) map[string][]string {
		return map[string][]string{"10.0.0.2": {"02:00:00:00:00:02"}, "10.0.0.100": vip}
	}
	for _, tc := range []struct {
		name  string
		sight Sight
		want  []string // "E summary: part of the detail" or "W ..."
	}{
		{"free", Sight{Route: onLink, Answers: lb2}, nil},
		{"held by the other node", Sight{Route: onLink, Answers: with("02:00:00:00:00:02")}, nil},
		{"held here", Sight{Route: "local 10.0.0.100 dev lo table local src 10.0.0.100", Local: true, Answers: lb2}, nil},
		{"held by a stranger", Sight{Route: onLink, Answers: with("02:00:00:00:00:99")},
			[]string{"E VIP Already in Use: on lb1, 10.0.0.100 is answered by 02:00:00:00:00:99, which is none of the pair's nodes (lb2 is 02:00:00:00:00:02)"}},
		{"held by the other node and a stranger", Sight{Route: onLink, Answers: with("02:00:00:00:00:02", "02:00:00:00:00:99")},
			[]string{"E VIP Already in Use: answered by 02:00:00:00:00:99,"}},
		{"a stranger, the other node silent", Sight{Route: onLink, Answers: map[string][]string{"10.0.0.100": {"02:00:00:00:00:99"}}},
			[]string{"E VIP Already in Use: (lb2 (10.0.0.2) did not answer)"}},
		{"through a router", Sight{Route: "10.0.0.100 via 10.0.0.254 dev eth0 src 10.0.0.1", Answers: lb2},
			[]string{"E VIP Not On-Link: it goes through a router"}},
		{"on another interface", Sight{Route: "10.0.0.100 dev eth1 src 10.0.1.1", Answers: lb2},
			[]string{"E VIP Not On-Link: it is on-link for eth1, not eth0"}},
		{"no route", Sight{Route: "RTNETLINK answers: Network is unreachable"}, []string{"E VIP Not On-Link: no route"}},
		{"unprobed", Sight{Route: onLink, Unprobed: "arping is not installed"},
			[]string{"W VIP Not Checked for Other Holders: on lb1: arping is not installed"}},
		{"unprobed and off-link", Sight{Route: "10.0.0.100 via 10.0.0.254 dev eth0", Unprobed: "arping is not installed"},
			[]string{"E VIP Not On-Link", "W VIP Not Checked"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := check.Problems(tc.sight)
			var got []string
			for _, p := range ps {
				sev := map[problem.Severity]string{problem.Error: "E", problem.Warning: "W"}[p.Severity]
				got = append(got, sev+" "+p.Summary+": "+p.Detail)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for _, w := range tc.want {
				head, part, _ := strings.Cut(w, ": ")
				if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, head) && strings.Contains(g, part) }) {
					t.Errorf("no %q in %q", w, got)
				}
			}
			for _, p := range ps {
				want := problem.Root("vip")
				if p.Summary == "VIP Not On-Link" {
					want = problem.Root("interface")
				}
				if !slices.Equal(p.Path, want) {
					t.Errorf("%s at %v, want %v", p.Summary, p.Path, want)
				}
			}
		})
	}
}

func TestProbed(t *testing.T) {
	check := Check{VIP: "fd00:0::100", Self: "lb1",
		Nodes: []Node{{Name: "lb1", IP: "fd00::1"}, {Name: "lb2", IP: "fd00:0:0::2"}, {Name: "lb3", IP: "fd00::3"}}}
	if got, want := check.Probed(), []string{"fd00::100", "fd00::2", "fd00::3"}; !slices.Equal(got, want) {
		t.Errorf("probed %q, want %q", got, want)
	}
}

func TestHolders(t *testing.T) {
	check := Check{VIP: "10.0.0.100", Self: "lb1", Noun: "the nodes", VIPAttr: problem.Root("vip"),
		Nodes: []Node{{Name: "lb1", IP: "10.0.0.1"}, {Name: "lb2", IP: "10.0.0.2"}, {Name: "lb3", IP: "10.0.0.3"}}}
	peers := func(vip ...string) map[string][]string {
		return map[string][]string{"10.0.0.2": {"02:00:00:00:00:02"}, "10.0.0.3": {"02:00:00:00:00:03"}, "10.0.0.100": vip}
	}
	for _, tc := range []struct {
		name    string
		sight   Sight
		want    []string
		warning string
	}{
		{"this node", Sight{Local: true, Answers: peers()}, []string{"lb1"}, ""},
		{"another node", Sight{Answers: peers("02:00:00:00:00:03")}, []string{"lb3"}, ""},
		{"nobody", Sight{Answers: peers()}, nil, "VIP Held by No Node: on lb1, nobody answers for 10.0.0.100"},
		{"two nodes", Sight{Local: true, Answers: peers("02:00:00:00:00:02")}, []string{"lb1", "lb2"},
			"VIP Held by More Than One Host: on lb1, 10.0.0.100 is held by lb1 and lb2"},
		{"a node and a stranger", Sight{Answers: peers("02:00:00:00:00:99", "02:00:00:00:00:02")}, []string{"lb2", "02:00:00:00:00:99"},
			"VIP Held by More Than One Host: on lb1, 10.0.0.100 is held by lb2 and 02:00:00:00:00:99"},
		{"a stranger", Sight{Answers: peers("02:00:00:00:00:99")}, []string{"02:00:00:00:00:99"},
			"VIP Held by Another Host: on lb1, 10.0.0.100 is held by 02:00:00:00:00:99 alone"},
		{"unprobed", Sight{Unprobed: "arping is not installed"}, nil, "VIP Not Checked for Other Holders: on lb1: arping is not installed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check.Holders(tc.sight)
			if !slices.Equal(got, tc.want) {
				t.Errorf("holders %q, want %q", got, tc.want)
			}
			ps := check.HolderProblems(tc.sight)
			switch {
			case tc.warning == "" && len(ps) > 0:
				t.Errorf("unexpected %v", ps)
			case tc.warning != "" && (len(ps) != 1 || ps[0].Severity != problem.Warning || !strings.HasPrefix(ps[0].Summary+": "+ps[0].Detail, tc.warning)):
				t.Errorf("got %v, want %q", ps, tc.warning)
			}
		})
	}
}
