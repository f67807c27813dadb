package testhost

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
)

// NetHost is a network namespace this machine reaches over a veth pair,
// at an address in 10.79.0.0/16 that exists only inside it: a host on a
// network of its own, which Drop turns into one that silently drops every
// packet sent to it, as a powered-off VM behind a router or a security
// group does (no refusal, no ICMP: a dial waits until its timeout).
type NetHost struct {
	NS   string // the namespace, for Options.NetNS
	Addr string // the host's address, inside NS
	dev  string // this machine's end of the pair
}

// newNamespace makes a namespace named by format with a number that no
// other namespace of this machine has, and removes it when the test ends:
// the names and addresses derived from the number are the test's alone,
// whichever test processes run at once (`ip netns add` of a name that
// exists fails, and another number is tried).
func newNamespace(t testing.TB, format string) (n int, name string) {
	t.Helper()
	for range 50 {
		n = rand.IntN(250)
		name = fmt.Sprintf(format, n)
		if exec.Command("ip", "netns", "add", name).Run() == nil {
			t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
			return n, name
		}
	}
	t.Fatalf("no free namespace name of the form %q after 50 tries", format)
	return 0, ""
}

// NewNetHost makes a namespace with an address and removes it when the
// test ends. Needs root.
func NewNetHost(t testing.TB) *NetHost {
	t.Helper()
	Real(t, "a network namespace")
	Require(t, os.Geteuid() == 0, "network namespaces need root")
	_, err := exec.LookPath("ip")
	Require(t, err == nil, "ip (iproute2) is not installed")
	n, ns := newNamespace(t, "kha-net%d")
	h := &NetHost{NS: ns, Addr: fmt.Sprintf("10.79.%d.2", n), dev: fmt.Sprintf("khan%dh", n)}
	peer := fmt.Sprintf("khan%dn", n)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", h.dev).Run() })
	ipCommands(t, [][]string{
		{"link", "add", h.dev, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", h.NS},
		{"addr", "add", fmt.Sprintf("10.79.%d.1/30", n), "dev", h.dev},
		{"link", "set", h.dev, "up"},
		{"-n", h.NS, "addr", "add", h.Addr + "/30", "dev", peer},
		{"-n", h.NS, "link", "set", peer, "up"},
		{"-n", h.NS, "link", "set", "lo", "up"},
	})
	return h
}

// Drop makes every packet this machine sends to the host go to a MAC
// address nobody has: it is dropped on the wire, unanswered.
func (h *NetHost) Drop(t testing.TB) {
	t.Helper()
	args := []string{"neigh", "replace", h.Addr, "lladdr", "02:00:00:00:00:99", "dev", h.dev, "nud", "permanent"}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
}

// Answer undoes Drop: the host answers again.
func (h *NetHost) Answer(t testing.TB) {
	t.Helper()
	if out, err := exec.Command("ip", "neigh", "del", h.Addr, "dev", h.dev).CombinedOutput(); err != nil {
		t.Fatalf("ip neigh del %s: %v: %s", h.Addr, err, out)
	}
}
