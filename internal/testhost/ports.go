package testhost

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
)

// portSpan is how many ports below the kernel's ephemeral range FreePort
// hands out.
const portSpan = 12000

// ports is the process's next port to hand out; it starts at a random
// place in the span so that test binaries running side by side (go test
// runs packages in parallel) seldom try the same ports.
var ports struct {
	sync.Mutex
	next int
}

// FreePort hands out a port on host that is free now, for a server the
// test starts later. The port lies below the kernel's ephemeral range:
// a port the kernel chose for a listener on :0 (as this once did) is
// also the kind it gives every outgoing connection, so between the check
// and the server's bind any client's connection, of this test or of a
// test running beside it, could take it (haproxy: "cannot bind socket
// (Address already in use)"). No port is handed out twice in a process
// until the span wraps.
func FreePort(t testing.TB, host string) int {
	t.Helper()
	low, err := ephemeralStart()
	if err != nil {
		t.Fatal(err)
	}
	first := max(1024, low-portSpan)
	ports.Lock()
	defer ports.Unlock()
	if ports.next < first || ports.next >= low {
		ports.next = first + rand.IntN(low-first)
	}
	for range low - first {
		port := ports.next
		if ports.next++; ports.next >= low {
			ports.next = first
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			continue // in use
		}
		l.Close()
		return port
	}
	t.Fatalf("no free port on %s between %d and %d", host, first, low-1)
	return 0
}

// ephemeralStart is ephemeralLow, read once per process.
var ephemeralStart = sync.OnceValues(ephemeralLow)

// ephemeralLow is the first port of the range the kernel picks
// ephemeral ports from.
func ephemeralLow() (int, error) {
	text, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, err
	}
	var low, high int
	if _, err := fmt.Sscan(string(text), &low, &high); err != nil {
		return 0, fmt.Errorf("ip_local_port_range %q: %w", text, err)
	}
	return low, nil
}
