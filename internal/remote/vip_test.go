package remote

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/problem"
	"github.com/kha/terraform-provider-kha/internal/testhost"
	"github.com/kha/terraform-provider-kha/internal/vipcheck"
)

// TestSeeVIP asks a real host on a layer-2 segment (network namespaces
// and a bridge) who answers for a VIP, through the real arping and ip:
// nobody, the other node, a stranger beside it, the host itself, and an
// address off the segment; then an IPv6 VIP, asked by NDP.
func TestSeeVIP(t *testing.T) {
	host := testhost.NewNetHost(t)
	srv := testhost.Start(t, testhost.Options{NetNS: host.NS, ListenAddress: host.Addr})
	seg := testhost.NewSegment(t)
	seg.Join(t, host.NS)
	peerNS, peer4 := seg.NewMember(t)
	peer := peer4
	strangerNS, _ := seg.NewMember(t)
	vip := seg.Prefix() + "100"
	c, _ := client(t, configFor(srv))
	hostMAC := seg.MAC(t, host.NS)
	see := func(vip string) (route string, local bool, vipAnswers, peerAnswers []string) {
		t.Helper()
		s, err := c.SeeVIP(context.Background(), vip, testhost.SegmentInterface, []string{peer})
		if err != nil {
			t.Fatal(err)
		}
		if s.Unprobed != "" || s.Interface != testhost.SegmentInterface || s.Link != hostMAC {
			t.Fatalf("not probed on %s (%s): %s (interface %q, link %q)", testhost.SegmentInterface, hostMAC, s.Unprobed, s.Interface, s.Link)
		}
		return s.Route, s.Local, s.Answers[vip], s.Answers[peer]
	}

	route, local, vipAnswers, peerAnswers := see(vip)
	if !strings.Contains(route, "dev "+testhost.SegmentInterface) || strings.Contains(route, " via ") || local || len(vipAnswers) != 0 || len(peerAnswers) != 1 {
		t.Fatalf("a free VIP: route %q, local %v, the VIP answered by %v, the peer by %v", route, local, vipAnswers, peerAnswers)
	}
	peerMAC := peerAnswers[0]

	seg.Hold(t, peerNS, vip)
	if _, _, vipAnswers, _ = see(vip); !slices.Equal(vipAnswers, []string{peerMAC}) {
		t.Errorf("held by the peer (%s): answered by %v", peerMAC, vipAnswers)
	}

	seg.Hold(t, strangerNS, vip)
	if _, _, vipAnswers, _ = see(vip); len(vipAnswers) != 2 || !slices.Contains(vipAnswers, peerMAC) {
		t.Errorf("held by the peer (%s) and a stranger: answered by %v", peerMAC, vipAnswers)
	}
	seg.Release(t, peerNS, vip)
	seg.Release(t, strangerNS, vip)

	seg.Hold(t, host.NS, vip)
	if _, local, vipAnswers, _ = see(vip); !local || len(vipAnswers) != 0 {
		t.Errorf("held by the host itself: local %v, answered by %v", local, vipAnswers)
	}

	if route, local, _, _ = see("10.81.0.100"); strings.Contains(route, "dev "+testhost.SegmentInterface) || local {
		t.Errorf("an address off the segment: route %q, local %v", route, local)
	}

	// No interface given: the default route's, once there is one.
	if s, err := c.SeeVIP(context.Background(), vip, "", []string{peer}); err != nil || s.Interface != "" || s.Unprobed == "" {
		t.Errorf("no interface and no default route: interface %q, unprobed %q, %v", s.Interface, s.Unprobed, err)
	}
	if out, err := exec.Command("ip", "-n", host.NS, "route", "add", "default", "via", peer, "dev", testhost.SegmentInterface).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if s, err := c.SeeVIP(context.Background(), vip, "", []string{peer}); err != nil || s.Interface != testhost.SegmentInterface ||
		s.Unprobed != "" || len(s.Answers[peer]) != 1 {
		t.Errorf("no interface, the default route on %s: interface %q, unprobed %q, answers %v, %v", testhost.SegmentInterface,
			s.Interface, s.Unprobed, s.Answers, err)
	}

	vip6 := seg.Prefix6() + "100"
	peer = seg.Prefix6() + strings.TrimPrefix(peer4, seg.Prefix())
	route, local, vipAnswers, peerAnswers = see(vip6)
	if !strings.Contains(route, "dev "+testhost.SegmentInterface) || local || len(vipAnswers) != 0 || len(peerAnswers) != 1 {
		t.Fatalf("a free IPv6 VIP: route %q, local %v, the VIP answered by %v, the peer by %v", route, local, vipAnswers, peerAnswers)
	}
	seg.Hold(t, strangerNS, vip6)
	if _, _, vipAnswers, _ = see(vip6); len(vipAnswers) != 1 || vipAnswers[0] == peerAnswers[0] {
		t.Errorf("an IPv6 VIP held by a stranger: answered by %v (the peer is %v)", vipAnswers, peerAnswers)
	}
}

// TestSeeVIPNeighbours: what a real host on a layer-2 segment reports of
// a neighbour that answers for the VIP, and what the check decides from
// it. The host holds the VIP and the neighbour adds it to its interface:
// an error only for a claim not yet on the node. The host lets it go and
// the neighbour answers for the peer's address too: a warning at the
// peer's address. The neighbour answers with the peer's MAC address while
// the host holds the VIP: the peer is heard as a holder, and the host
// does not start its holder again.
func TestSeeVIPNeighbours(t *testing.T) {
	host := testhost.NewNetHost(t)
	srv := testhost.Start(t, testhost.Options{NetNS: host.NS, ListenAddress: host.Addr})
	seg := testhost.NewSegment(t)
	self := seg.Join(t, host.NS)
	peerNS, peer := seg.NewMember(t)
	neighbourNS, _ := seg.NewMember(t)
	neighbourMAC := seg.MAC(t, neighbourNS)
	check := vipcheck.Check{VIP: seg.Prefix() + "100", Interface: testhost.SegmentInterface, Self: "lb1", Noun: "the pair",
		Nodes: []vipcheck.Node{{Name: "lb1", IP: self}, {Name: "lb2", IP: peer}}, NodesAttr: problem.Root("nodes")}
	c, _ := client(t, configFor(srv))
	see := func() vipcheck.Sight {
		t.Helper()
		s, err := c.SeeVIP(context.Background(), check.VIP, check.Interface, []string{peer})
		if err != nil || s.Unprobed != "" {
			t.Fatalf("%v %q", err, s.Unprobed)
		}
		return s
	}
	summaries := func(ps problem.Problems) (out []string) {
		for _, p := range ps {
			out = append(out, map[problem.Severity]string{problem.Error: "E ", problem.Warning: "W "}[p.Severity]+p.Summary)
		}
		return out
	}

	seg.Hold(t, host.NS, check.VIP)
	seg.Hold(t, neighbourNS, check.VIP)
	s := see()
	if got := summaries(check.Problems(s, true)); !slices.Equal(got, []string{"W VIP Already in Use"}) {
		t.Errorf("a neighbour holds the VIP beside the host, whose claim stays: %q (answers %v)", got, s.Answers)
	}
	if got := summaries(check.Problems(s, false)); !slices.Equal(got, []string{"E VIP Already in Use"}) {
		t.Errorf("a neighbour holds the VIP beside the host, whose claim changes: %q (answers %v)", got, s.Answers)
	}

	seg.Release(t, host.NS, check.VIP)
	seg.Hold(t, neighbourNS, peer)
	s = see()
	if !slices.Contains(s.Answers[peer], neighbourMAC) || len(s.Answers[peer]) != 2 {
		t.Fatalf("the neighbour answers for the peer's address too: answers %v", s.Answers)
	}
	if got := summaries(check.Problems(s, false)); !slices.Equal(got, []string{"W Node Address Answered by More Than One Host"}) {
		t.Errorf("the neighbour answers for the VIP and the peer's address: %q (answers %v)", got, s.Answers)
	}

	seg.Release(t, neighbourNS, check.VIP)
	seg.Release(t, neighbourNS, peer)
	seg.SetMAC(t, neighbourNS, seg.MAC(t, peerNS))
	seg.Hold(t, neighbourNS, check.VIP)
	seg.Hold(t, host.NS, check.VIP)
	s = see()
	if got := check.Holders(s); !slices.Equal(got, []string{"lb1", "lb2"}) || check.Unheld(s) {
		t.Errorf("a neighbour answers with the peer's MAC address: holders %q, unheld %v (answers %v)", got, check.Unheld(s), s.Answers)
	}
}

func TestParseVIPSight(t *testing.T) {
	out := "route 10.0.0.100 dev eth0 src 10.0.0.1 uid 0\n" +
		"interface eth0\n" +
		"link 2: eth0@if4: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000\\    link/ether 6A:D8:0A:36:3F:35 brd ff:ff:ff:ff:ff:ff link-netns kha-sw\n" +
		"local 0\n" +
		"answer 10.0.0.100 AA:BB:CC:DD:EE:01\n" + // Habets' arping -r
		"answer 10.0.0.100 Unicast reply from 10.0.0.100 [aa:bb:cc:dd:ee:02]  0.613ms\n" + // iputils' arping
		"answer 10.0.0.100 aa:bb:cc:dd:ee:01\n" + // again
		"answer fd00:0::2 fd00::2 lladdr aa:bb:cc:dd:ee:03 REACHABLE\n" + // ip neigh, the address spelled long
		"answer fd00::3 fd00::3 FAILED\n" + // no answer
		"answer not-an-address aa:bb:cc:dd:ee:04\n" +
		"answer 10.0.0.2 Sent 2 probes (1 broadcast(s))\n" +
		"something else\n"
	s := parseVIPSight(out)
	if s.Route != "10.0.0.100 dev eth0 src 10.0.0.1 uid 0" || s.Interface != "eth0" || s.Link != "6a:d8:0a:36:3f:35" || s.Local || s.Unprobed != "" {
		t.Errorf("route %q, interface %q, link %q, local %v, unprobed %q", s.Route, s.Interface, s.Link, s.Local, s.Unprobed)
	}
	want := map[string][]string{"10.0.0.100": {"aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:02"}, "fd00::2": {"aa:bb:cc:dd:ee:03"}}
	if len(s.Answers) != len(want) {
		t.Errorf("answers %v, want %v", s.Answers, want)
	}
	for a, macs := range want {
		if !slices.Equal(s.Answers[a], macs) {
			t.Errorf("answers for %s: %v, want %v", a, s.Answers[a], macs)
		}
	}
	if s := parseVIPSight("route x\nlocal 1\nunprobed arping is not installed\n"); !s.Local || s.Unprobed != "arping is not installed" {
		t.Errorf("local %v, unprobed %q", s.Local, s.Unprobed)
	}
}

// FuzzParseVIPSight: whatever a host prints, only addresses and MAC
// addresses come out of its answers.
func FuzzParseVIPSight(f *testing.F) {
	f.Add("route 10.0.0.100 dev eth0\nlocal 0\nanswer 10.0.0.100 aa:bb:cc:dd:ee:01\n")
	f.Add("answer fd00::2 fd00::2 lladdr AA:BB:CC:DD:EE:03 REACHABLE\r\n")
	f.Fuzz(func(t *testing.T, out string) {
		for a, macs := range parseVIPSight(out).Answers {
			for _, mac := range macs {
				if len(mac) != 17 || strings.ToLower(mac) != mac || strings.ContainsAny(a, " \n") {
					t.Fatalf("answer %q for %q", mac, a)
				}
			}
		}
	})
}
