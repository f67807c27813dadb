package testhost

import "testing"

// FreePort's ports are below the kernel's ephemeral range, where no
// outgoing connection's port can take one before the server binds it,
// and a process never gets the same port twice.
func TestFreePortAvoidsEphemeralPorts(t *testing.T) {
	low, err := ephemeralLow()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for range 200 {
		port := FreePort(t, "127.0.0.1")
		if port >= low || port < 1024 {
			t.Fatalf("FreePort gave %d, outside 1024..%d (the ephemeral range starts at %d)", port, low-1, low)
		}
		if seen[port] {
			t.Fatalf("FreePort gave %d twice", port)
		}
		seen[port] = true
	}
}
