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
		VIPAttr: problem.Root("vip"), InterfaceAttr: problem.Root("interface"), NodesAttr: problem.Root("nodes")}
	onLink := "10.0.0.100 dev eth0 src 10.0.0.1 uid 0"
	lb2 := map[string][]string{"10.0.0.2": {"02:00:00:00:00:02"}}
	with := func(vip ...string) map[string][]string {
		return map[string][]string{"10.0.0.2": {"02:00:00:00:00:02"}, "10.0.0.100": vip}
	}
	for _, tc := range []struct {
		name    string
		sight   Sight
		claimed bool     // the node has the configuration that claims the VIP already
		want    []string // "E summary: part of the detail" or "W ..."
	}{
		{"free", Sight{Interface: "eth0", Route: onLink, Answers: lb2}, false, nil},
		{"held by the other node", Sight{Interface: "eth0", Route: onLink, Answers: with("02:00:00:00:00:02")}, false, nil},
		{"held here", Sight{Interface: "eth0", Route: "local 10.0.0.100 dev lo table local src 10.0.0.100", Local: true, Answers: lb2}, false, nil},
		{"held by a stranger", Sight{Interface: "eth0", Route: onLink, Answers: with("02:00:00:00:00:99")}, false,
			[]string{"E VIP Already in Use: on lb1, 10.0.0.100 is answered by \"02:00:00:00:00:99\", which is none of the pair's nodes (lb2 is \"02:00:00:00:00:02\")"}},
		// A neighbour cannot stop the applies of a node that claims the VIP
		// already: only a claim that changes is refused.
		{"held by a stranger, claimed here already", Sight{Interface: "eth0", Route: onLink, Local: true, Answers: with("02:00:00:00:00:99")}, true,
			[]string{"W VIP Already in Use: on lb1, 10.0.0.100 is answered by \"02:00:00:00:00:99\""}},
		{"held by a stranger, not claimed here yet", Sight{Interface: "eth0", Route: onLink, Local: true, Answers: with("02:00:00:00:00:99")}, false,
			[]string{"E VIP Already in Use: check_vip = false"}},
		// A host that answers with this node's MAC address, which does not
		// have the VIP, is another host.
		{"answered with this node's MAC address", Sight{Interface: "eth0", Route: onLink, Link: "02:00:00:00:00:01", Answers: with("02:00:00:00:00:01")}, false,
			[]string{"E VIP Already in Use: answered by \"02:00:00:00:00:01\" (this node's own MAC address)"}},
		// A host that answers for the other node's address too would hide
		// among the nodes.
		{"the other node's address answered twice", Sight{Interface: "eth0", Route: onLink,
			Answers: map[string][]string{"10.0.0.2": {"02:00:00:00:00:02", "02:00:00:00:00:99"}, "10.0.0.100": {"02:00:00:00:00:99"}}}, false,
			[]string{"W Node Address Answered by More Than One Host: on lb1, lb2's address 10.0.0.2 is answered by \"02:00:00:00:00:02\" and \"02:00:00:00:00:99\""}},
		{"held by the other node and a stranger", Sight{Interface: "eth0", Route: onLink, Answers: with("02:00:00:00:00:02", "02:00:00:00:00:99")}, false,
			[]string{"E VIP Already in Use: answered by \"02:00:00:00:00:99\","}},
		{"a stranger, the other node silent", Sight{Interface: "eth0", Route: onLink, Answers: map[string][]string{"10.0.0.100": {"02:00:00:00:00:99"}}}, false,
			[]string{"E VIP Already in Use: (lb2 (10.0.0.2) did not answer)"}},
		{"through a router", Sight{Interface: "eth0", Route: "10.0.0.100 via 10.0.0.254 dev eth0 src 10.0.0.1", Answers: lb2}, false,
			[]string{"E VIP Not On-Link: it goes through a router"}},
		{"on another interface", Sight{Interface: "eth0", Route: "10.0.0.100 dev eth1 src 10.0.1.1", Answers: lb2}, false,
			[]string{"E VIP Not On-Link: it is on-link for \"eth1\", not \"eth0\""}},
		{"no route", Sight{Interface: "eth0", Route: "RTNETLINK answers: Network is unreachable"}, false, []string{"E VIP Not On-Link: no route"}},
		{"unprobed", Sight{Interface: "eth0", Route: onLink, Unprobed: "arping is not installed"}, false,
			[]string{"W VIP Not Checked for Other Holders: on lb1: \"arping is not installed\""}},
		{"unprobed and off-link", Sight{Interface: "eth0", Route: "10.0.0.100 via 10.0.0.254 dev eth0", Unprobed: "arping is not installed"}, false,
			[]string{"E VIP Not On-Link", "W VIP Not Checked"}},
		{"no default route, interface unset", Sight{Route: onLink, Answers: lb2}, false, []string{"E No Interface for the VIP: lb1 has no default route"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := check
			if strings.HasSuffix(tc.name, "interface unset") {
				check.Interface = ""
			}
			ps := check.Problems(tc.sight, tc.claimed)
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
				switch p.Summary {
				case "VIP Not On-Link", "No Interface for the VIP":
					want = problem.Root("interface")
				case "Node Address Answered by More Than One Host":
					want = problem.Root("nodes").Index(1).At("ip")
				}
				if !slices.Equal(p.Path, want) {
					t.Errorf("%s at %v, want %v", p.Summary, p.Path, want)
				}
			}
		})
	}
}

// With interface unset, the VIP goes on the default route's interface,
// which the node names in its Sight.
func TestProblemsOnTheDefaultRoutesInterface(t *testing.T) {
	check := Check{VIP: "10.0.1.100", Self: "cp1", Noun: "the nodes", Nodes: []Node{{Name: "cp1", IP: "10.0.1.1"}},
		VIPAttr: problem.Root("address"), InterfaceAttr: problem.Root("interface")}
	if ps := check.Problems(Sight{Route: "10.0.1.100 dev eth1 src 10.0.1.1", Interface: "eth1"}, false); len(ps) != 0 {
		t.Errorf("on-link for the default route's interface: %v", ps)
	}
	ps := check.Problems(Sight{Route: "10.0.1.100 dev eth1 src 10.0.1.1", Interface: "eth0"}, false)
	if len(ps) != 1 || ps[0].Summary != "VIP Not On-Link" ||
		!strings.Contains(ps[0].Detail, `on-link for "eth1", not "eth0"`) ||
		!strings.Contains(ps[0].Detail, `on "eth0" (the default route's, taken while interface is unset)`) ||
		!strings.Contains(ps[0].Detail, "set interface to the one that has that subnet") {
		t.Errorf("on-link for another interface than the default route's: %v", ps)
	}
}

func TestValidate(t *testing.T) {
	at := problem.Root("nodes")
	for _, tc := range []struct {
		name  string
		vip   string
		nodes []Node
		want  []string // "summary at path"
	}{
		{"fine", "10.0.0.100", []Node{{"cp1", "10.0.0.1"}, {"cp2", "10.0.0.2"}}, nil},
		{"fine, IPv6", "fd00::100", []Node{{"cp1", "fd00::1"}, {"cp2", "fd00::2"}}, nil},
		{"a VIP by name: any family", "vip.example.com", []Node{{"cp1", "fd00::1"}, {"cp2", "10.0.0.2"}}, nil},
		{"self missing", "10.0.0.100", []Node{{"cp2", "10.0.0.2"}}, []string{"Node Not Listed at nodes"}},
		{"twice", "10.0.0.100", []Node{{"cp1", "10.0.0.1"}, {"cp1", "10.0.0.2"}}, []string{"Node Listed Twice at nodes[1].name"}},
		{"not an address", "10.0.0.100", []Node{{"cp1", "10.0.0.1"}, {"cp2", "cp2.example.com"}}, []string{"Invalid Node Address at nodes[1].ip"}},
		{"another family", "10.0.0.100", []Node{{"cp1", "fd00::1"}, {"cp2", "10.0.0.2"}}, []string{"Node Address of Another Family at nodes[0].ip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range (Check{VIP: tc.vip, Self: "cp1", Nodes: tc.nodes, NodesAttr: at}).Validate() {
				if p.Severity != problem.Error {
					t.Errorf("%s is not an error", p.Summary)
				}
				got = append(got, p.Summary+" at "+p.Path.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
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
	check := Check{VIP: "10.0.0.100", Self: "lb1", Noun: "the nodes", SplitCause: "Look at the nodes.", VIPAttr: problem.Root("vip"),
		NodesAttr: problem.Root("nodes"), Nodes: []Node{{Name: "lb1", IP: "10.0.0.1"}, {Name: "lb2", IP: "10.0.0.2"}, {Name: "lb3", IP: "10.0.0.3"}}}
	peers := func(vip ...string) map[string][]string {
		return map[string][]string{"10.0.0.2": {"02:00:00:00:00:02"}, "10.0.0.3": {"02:00:00:00:00:03"}, "10.0.0.100": vip}
	}
	for _, tc := range []struct {
		name     string
		sight    Sight
		want     []string
		warnings []string // the start of each
	}{
		{"this node", Sight{Local: true, Answers: peers()}, []string{"lb1"}, nil},
		// A holder's probe hears its own announcements (kube-vip's
		// gratuitous ARP replies name the announcer as their target).
		{"this node, heard announcing it", Sight{Local: true, Link: "02:00:00:00:00:01", Answers: peers("02:00:00:00:00:01")}, []string{"lb1"}, nil},
		// A node holds the VIP on its own word: its MAC address heard
		// answering for a VIP it does not have is another host's doing.
		{"this node's MAC address heard, the VIP not here", Sight{Link: "02:00:00:00:00:01", Answers: peers("02:00:00:00:00:01")},
			[]string{"02:00:00:00:00:01"}, []string{`VIP Held by Another Host: on lb1, 10.0.0.100 is held by "02:00:00:00:00:01" (this node's own MAC address) alone`}},
		{"another node", Sight{Answers: peers("02:00:00:00:00:03")}, []string{"lb3"}, nil},
		{"nobody", Sight{Answers: peers()}, nil, []string{"VIP Held by No Node: on lb1, nobody answers for 10.0.0.100"}},
		{"two nodes", Sight{Local: true, Answers: peers("02:00:00:00:00:02")}, []string{"lb1", "lb2"},
			[]string{"VIP Held by More Than One Host: on lb1, 10.0.0.100 is held by lb1 and lb2: its clients reach any of them (split brain). Look at the nodes."}},
		{"a node and a stranger", Sight{Answers: peers("02:00:00:00:00:99", "02:00:00:00:00:02")}, []string{"lb2", "02:00:00:00:00:99"},
			[]string{`VIP Held by More Than One Host: on lb1, 10.0.0.100 is held by lb2 and "02:00:00:00:00:99"`}},
		{"a stranger", Sight{Answers: peers("02:00:00:00:00:99")}, []string{"02:00:00:00:00:99"},
			[]string{`VIP Held by Another Host: on lb1, 10.0.0.100 is held by "02:00:00:00:00:99" alone`}},
		// A host that answers for a node's address beside the node is
		// named, whatever else it answers for.
		{"a node's address answered twice", Sight{Local: true, Answers: map[string][]string{"10.0.0.2": {"02:00:00:00:00:02", "02:00:00:00:00:99"},
			"10.0.0.3": {"02:00:00:00:00:03"}, "10.0.0.100": {"02:00:00:00:00:99"}}}, []string{"lb1", "lb2"},
			[]string{"VIP Held by More Than One Host: on lb1, 10.0.0.100 is held by lb1 and lb2",
				`Node Address Answered by More Than One Host: on lb1, lb2's address 10.0.0.2 is answered by "02:00:00:00:00:02" and "02:00:00:00:00:99"`}},
		{"unprobed", Sight{Unprobed: "arping is not installed"}, nil, []string{`VIP Not Checked for Other Holders: on lb1: "arping is not installed"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check.Holders(tc.sight)
			if !slices.Equal(got, tc.want) {
				t.Errorf("holders %q, want %q", got, tc.want)
			}
			ps := check.HolderProblems(tc.sight)
			if len(ps) != len(tc.warnings) {
				t.Fatalf("got %v, want %q", ps, tc.warnings)
			}
			for i, p := range ps {
				if p.Severity != problem.Warning || !strings.HasPrefix(p.Summary+": "+p.Detail, tc.warnings[i]) {
					t.Errorf("got %s: %s, want %q", p.Summary, p.Detail, tc.warnings[i])
				}
			}
		})
	}
}

// TestUnheld: only what the node says of itself, and nobody answering,
// make it start the VIP's holder again; what its probe hears of another
// node may be a neighbour's ARP replies with that node's MAC address.
func TestUnheld(t *testing.T) {
	check := Check{VIP: "10.0.0.100", Self: "lb1", Nodes: []Node{{Name: "lb1", IP: "10.0.0.1"}, {Name: "lb2", IP: "10.0.0.2"}}}
	answers := func(vip ...string) map[string][]string {
		return map[string][]string{"10.0.0.2": {"02:00:00:00:00:02"}, "10.0.0.100": vip}
	}
	for _, tc := range []struct {
		name  string
		sight Sight
		want  bool
	}{
		{"held here", Sight{Local: true, Answers: answers()}, false},
		{"held by the other node", Sight{Answers: answers("02:00:00:00:00:02")}, false},
		{"held by a stranger", Sight{Answers: answers("02:00:00:00:00:99")}, false},
		{"held here, and the other node's MAC address heard", Sight{Local: true, Answers: answers("02:00:00:00:00:02")}, false},
		{"held here and by a stranger", Sight{Local: true, Answers: answers("02:00:00:00:00:99")}, false},
		{"held by nobody", Sight{Answers: answers()}, true},
		{"unprobed", Sight{Unprobed: "arping is not installed"}, false},
	} {
		if got := check.Unheld(tc.sight); got != tc.want {
			t.Errorf("%s: unheld %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestHostTextQuoted: what the host says reaches a diagnostic quoted, so
// that no control character in it starts a line of its own or moves the
// terminal's cursor.
func TestHostTextQuoted(t *testing.T) {
	check := Check{VIP: "10.0.0.100", Self: "lb1", Noun: "the nodes", Nodes: []Node{{Name: "lb1", IP: "10.0.0.1"}, {Name: "lb2", IP: "10.0.0.2"}}}
	for _, s := range []Sight{
		{Interface: "eth0\rError: forged", Route: "10.0.0.100 dev eth1\x1b[2J src 10.0.0.1"},
		{Interface: "eth0\x1b[2J", Route: "10.0.0.100 via 10.0.0.254\rError: forged dev eth0"},
		{Interface: "eth0", Route: "10.0.0.100 dev eth0", Unprobed: "arping\ris\x1b[2J not installed"},
	} {
		ps := append(check.Problems(s, false), check.HolderProblems(s)...)
		if len(ps) == 0 {
			t.Fatalf("no problems with %+v", s)
		}
		for _, p := range ps {
			if strings.ContainsAny(p.Detail, "\r\n\x1b") {
				t.Errorf("%s: %q", p.Summary, p.Detail)
			}
		}
	}
}
