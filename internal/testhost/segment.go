package testhost

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Segment is a layer-2 network of namespaces, as the nodes of a
// keepalived pair share one: a bridge in a namespace of its own, and on
// it each member's interface SegmentInterface, at 10.80.<n>.<i>/24 and
// fd80:<n>::<i>/64. A VIP is claimed on it by adding the address (Hold),
// and answered for by ARP (NDP) as on a real LAN.
type Segment struct {
	n       int
	bridge  string // the bridge's namespace
	members int
}

// SegmentInterface is every member's interface on a Segment.
const SegmentInterface = "seg0"

// NewSegment makes the segment's bridge and removes it, and every
// namespace it made, when the test ends. Needs root.
func NewSegment(t testing.TB) *Segment {
	t.Helper()
	Real(t, "a network namespace")
	Require(t, os.Geteuid() == 0, "network namespaces need root")
	s := &Segment{}
	s.n, s.bridge = newNamespace(t, "kha-seg%d")
	ipCommands(t, [][]string{
		{"-n", s.bridge, "link", "add", "br0", "type", "bridge"},
		{"-n", s.bridge, "link", "set", "br0", "up"},
	})
	return s
}

// Prefix is the segment's IPv4 subnet, e.g. "10.80.7." for addresses in it.
func (s *Segment) Prefix() string { return fmt.Sprintf("10.80.%d.", s.n) }

// Prefix6 is the segment's IPv6 subnet, e.g. "fd80:7::".
func (s *Segment) Prefix6() string { return fmt.Sprintf("fd80:%d::", s.n) }

// Join puts the namespace ns (made by the caller, or by NewMember) on the
// segment and returns its IPv4 address there; its IPv6 address ends in
// the same number.
func (s *Segment) Join(t testing.TB, ns string) string {
	t.Helper()
	s.members++
	addr := fmt.Sprintf("%s%d", s.Prefix(), s.members)
	here, there := fmt.Sprintf("ks%dm%d", s.n, s.members), fmt.Sprintf("ks%db%d", s.n, s.members)
	ipCommands(t, [][]string{
		{"link", "add", here, "type", "veth", "peer", "name", there},
		{"link", "set", there, "netns", s.bridge},
		{"-n", s.bridge, "link", "set", there, "master", "br0"},
		{"-n", s.bridge, "link", "set", there, "up"},
		{"link", "set", here, "netns", ns},
		{"-n", ns, "link", "set", here, "name", SegmentInterface},
		{"-n", ns, "addr", "add", addr + "/24", "dev", SegmentInterface},
		{"-n", ns, "addr", "add", fmt.Sprintf("%s%d/64", s.Prefix6(), s.members), "dev", SegmentInterface, "nodad"},
		{"-n", ns, "link", "set", SegmentInterface, "up"},
	})
	return addr
}

// NewMember makes a namespace, puts it on the segment and returns it and
// its address there.
func (s *Segment) NewMember(t testing.TB) (ns, addr string) {
	t.Helper()
	_, ns = newNamespace(t, fmt.Sprintf("kha-seg%dm%%d", s.n))
	ipCommands(t, [][]string{{"-n", ns, "link", "set", "lo", "up"}})
	return ns, s.Join(t, ns)
}

// Hold gives the namespace ns the address vip on the segment, as a VIP's
// holder has it.
func (s *Segment) Hold(t testing.TB, ns, vip string) {
	t.Helper()
	ipCommands(t, [][]string{{"-n", ns, "addr", "add", hostPrefix(vip), "dev", SegmentInterface, "nodad"}})
}

// Release takes vip off the namespace ns.
func (s *Segment) Release(t testing.TB, ns, vip string) {
	t.Helper()
	ipCommands(t, [][]string{{"-n", ns, "addr", "del", hostPrefix(vip), "dev", SegmentInterface}})
}

// MAC is the namespace ns's link-layer address on the segment.
func (s *Segment) MAC(t testing.TB, ns string) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "-br", "link", "show", SegmentInterface).Output()
	if f := strings.Fields(string(out)); err == nil && len(f) >= 3 {
		return f[2]
	}
	t.Fatalf("%s's MAC address in %s: %v %q", SegmentInterface, ns, err, out)
	return ""
}

// SetMAC gives the namespace ns the link-layer address mac on the
// segment: another member's, for a host that answers with it.
func (s *Segment) SetMAC(t testing.TB, ns, mac string) {
	t.Helper()
	ipCommands(t, [][]string{{"-n", ns, "link", "set", SegmentInterface, "address", mac}})
}

// hostPrefix is an address as a prefix of its own: /32, or /128 for IPv6.
func hostPrefix(a string) string {
	if strings.Contains(a, ":") {
		return a + "/128"
	}
	return a + "/32"
}

// ipCommands runs ip with each list of arguments, failing the test at the
// first that fails.
func ipCommands(t testing.TB, commands [][]string) {
	t.Helper()
	for _, args := range commands {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
}
