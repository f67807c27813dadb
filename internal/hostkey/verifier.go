package hostkey

import (
	"net"

	"golang.org/x/crypto/ssh"
)

// Verifier checks the keys a host presents against everything a
// connection's settings say of it, and knows which key algorithms to ask
// the host for.
type Verifier struct {
	// Algorithms are the host key algorithms to offer, in order: the
	// server presents the first one it has, so it presents a key that can
	// be verified rather than its own first choice.
	Algorithms []string
	// KnowsHost says whether a key or CA is known for the host.
	KnowsHost bool
	check     ssh.HostKeyCallback // nil: trust on first use, nothing recorded yet
}

// NewVerifier is the verifier of host:port from its settings, each of
// which may be nil: known_hosts (parsed), a pinned key (the host's own
// key or its CA's), and a key recorded at the first connection (trust on
// first use). With none of them, it accepts any key: the first
// connection of trust on first use records it.
func NewVerifier(host string, port int, known *KnownHosts, pinned, trusted ssh.PublicKey) *Verifier {
	h := NewHost(host, port)
	if known != nil {
		h = known.Host(host, port)
	}
	if pinned != nil {
		h.Pin(pinned)
	}
	if trusted != nil {
		h.Trust(trusted)
	}
	v := &Verifier{Algorithms: h.Algorithms(), KnowsHost: h.Known()}
	if known != nil || h.Known() {
		v.check = h.HostKeyCallback()
	}
	return v
}

// Check verifies the key the host at remote presented for hostname, as
// ssh.HostKeyCallback does.
func (v *Verifier) Check(hostname string, remote net.Addr, key ssh.PublicKey) error {
	if v.check == nil {
		return nil
	}
	return v.check(hostname, remote, key)
}
