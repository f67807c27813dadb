// Package hostkey verifies SSH host keys as OpenSSH does, from keys held
// in memory: known_hosts content, a pinned key, a key recorded by trust on
// first use.
//
// known_hosts is parsed here, line by line with ssh.ParseKnownHosts, and
// matched by this package. golang.org/x/crypto/ssh/knownhosts reads only
// files, so content given as text would go through a temporary file; it
// tells which keys it holds for a host only through its callback's errors
// (a made-up key's mismatch lists them, a certificate's error text says
// whether a CA applies); and it reads a pattern without a port as port 22
// alone, where OpenSSH matches patterns against "[host]:port".
// github.com/skeema/knownhosts (v1.3.3) wraps it, so it keeps the files
// and the probing, re-reads the files for @cert-authority lines, and
// corrects the port rule for patterns with "*" only, not "?" or "!".
//
// Matching follows OpenSSH's match_hostname and hostfile.c: plain and
// "[host]:port" names, "|1|salt|hash" names, "*" and "?" wildcards, "!"
// negation, case ignored, @cert-authority and @revoked lines. The host's
// name is matched as given, never the address it resolves to (OpenSSH's
// default, CheckHostIP no). One choice is stricter than OpenSSH, as kha
// has always been: a key on an @revoked line is refused for every host,
// whatever the line's host field.
package hostkey

import (
	"bytes"
	"net"
	"slices"

	"golang.org/x/crypto/ssh"
)

// Host is what verifies the keys one host presents: its own keys, the CAs
// that may sign its host certificate, and keys revoked for every host.
type Host struct {
	host string // the host's name or address, a host certificate's principal
	name string // the host's address as known_hosts writes it
	// Keys are the host's own keys; Authorities the CA keys whose host
	// certificates it may present.
	Keys        []ssh.PublicKey
	Authorities []ssh.PublicKey
	revoked     map[string]bool // plainKey -> true; nil when none
}

// NewHost is a host at host:port of which nothing is known yet.
func NewHost(host string, port int) *Host {
	return &Host{host: host, name: Name(host, port)}
}

// Trust adds a key given for the host, such as one recorded at the first
// connection. It comes first among Keys: the server is asked for its type
// first.
func (h *Host) Trust(key ssh.PublicKey) { h.Keys = slices.Insert(h.Keys, 0, key) }

// Pin adds a key given for the host that may be its own key or the key of
// the CA that signs its host certificate.
func (h *Host) Pin(key ssh.PublicKey) {
	h.Trust(key)
	h.Authorities = append(h.Authorities, key)
}

// Known says whether any key or CA verifies the host.
func (h *Host) Known() bool { return len(h.Keys) > 0 || len(h.Authorities) > 0 }

// Check verifies a key the host presents. A host certificate verifies when
// a CA of the host's signed it for the host's name and it is valid now,
// or, as OpenSSH accepts, when the key it certifies is one of the host's
// own. Errors are *RevokedError, *CertificateError, *MismatchError and
// *UnknownHostError.
func (h *Host) Check(key ssh.PublicKey) error {
	if err := h.checkRevoked(key); err != nil {
		return err
	}
	cert, isCert := key.(*ssh.Certificate)
	if !isCert {
		return h.checkPlain(key)
	}
	certErr := h.checkCertificate(cert)
	if certErr == nil || h.checkPlain(cert.Key) == nil {
		return nil
	}
	return certErr
}

// HostKeyCallback checks keys with Check. It ignores the address the SSH
// client passes: the Host knows which host it verifies.
func (h *Host) HostKeyCallback() ssh.HostKeyCallback {
	return func(_ string, _ net.Addr, key ssh.PublicKey) error { return h.Check(key) }
}

func (h *Host) checkRevoked(key ssh.PublicKey) error {
	keys := []ssh.PublicKey{key}
	if cert, ok := key.(*ssh.Certificate); ok {
		keys = append(keys, cert.SignatureKey)
	}
	for _, k := range keys {
		if h.revoked[plainKey(k)] {
			return &RevokedError{Key: k}
		}
	}
	return nil
}

func (h *Host) checkPlain(key ssh.PublicKey) error {
	switch {
	case slices.ContainsFunc(h.Keys, equalTo(key)):
		return nil
	case h.Known():
		return &MismatchError{Name: h.name, Expected: h.Keys, Authorities: h.Authorities}
	}
	return &UnknownHostError{Name: h.name}
}

func (h *Host) checkCertificate(cert *ssh.Certificate) error {
	if cert.CertType != ssh.HostCert {
		return &CertificateError{Name: h.name, Err: errNotHostCertificate}
	}
	if !slices.ContainsFunc(h.Authorities, equalTo(cert.SignatureKey)) {
		return &CertificateError{Name: h.name, Err: errNoAuthority}
	}
	var checker ssh.CertChecker // validity, principal, critical options, signature
	if err := checker.CheckCert(h.host, cert); err != nil {
		return &CertificateError{Name: h.name, Err: err}
	}
	return nil
}

func equalTo(key ssh.PublicKey) func(ssh.PublicKey) bool {
	wire := key.Marshal()
	return func(k ssh.PublicKey) bool { return bytes.Equal(k.Marshal(), wire) }
}
