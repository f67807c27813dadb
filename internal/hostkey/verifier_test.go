package hostkey

import (
	"crypto/rand"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestNewVerifier: each setting alone, and known_hosts that names other
// hosts only, verify as a connection's configuration means them.
func TestNewVerifier(t *testing.T) {
	t.Parallel()
	hostKey, otherKey, ca := testhost.NewKey(t), testhost.NewKey(t), testhost.NewKey(t)
	c := &ssh.Certificate{Key: hostKey.Signer.PublicKey(), CertType: ssh.HostCert, ValidPrincipals: []string{"10.0.0.1"},
		ValidAfter: uint64(time.Now().Add(-time.Hour).Unix()), ValidBefore: uint64(time.Now().Add(time.Hour).Unix())}
	if err := c.SignCert(rand.Reader, ca.Signer); err != nil {
		t.Fatal(err)
	}
	line := func(names string, k testhost.Key) string {
		return names + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k.Signer.PublicKey())))
	}
	known := func(content string) *KnownHosts {
		kh, err := ParseKnownHosts(content)
		if err != nil {
			t.Fatal(err)
		}
		return kh
	}
	remote := &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 22}
	var mismatch *MismatchError
	var unknown *UnknownHostError
	for _, tc := range []struct {
		name            string
		known           *KnownHosts
		pinned, trusted ssh.PublicKey
		accepts, refuse ssh.PublicKey
		knowsHost       bool
		refusal         any
	}{
		{"nothing: trust on first use", nil, nil, nil, otherKey.Signer.PublicKey(), nil, false, nil},
		{"a pinned key", nil, hostKey.Signer.PublicKey(), nil, hostKey.Signer.PublicKey(), otherKey.Signer.PublicKey(), true, &mismatch},
		{"a pinned CA", nil, ca.Signer.PublicKey(), nil, c, otherKey.Signer.PublicKey(), true, &mismatch},
		{"a recorded key", nil, nil, hostKey.Signer.PublicKey(), hostKey.Signer.PublicKey(), otherKey.Signer.PublicKey(), true, &mismatch},
		{"known_hosts", known(line("10.0.0.1", hostKey)), nil, nil, hostKey.Signer.PublicKey(), otherKey.Signer.PublicKey(), true, &mismatch},
		{"known_hosts of other hosts", known(line("10.0.0.2", hostKey)), nil, nil, nil, hostKey.Signer.PublicKey(), false, &unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewVerifier("10.0.0.1", 22, tc.known, tc.pinned, tc.trusted)
			if v.KnowsHost != tc.knowsHost || len(v.Algorithms) == 0 {
				t.Errorf("KnowsHost %v, want %v; algorithms %v", v.KnowsHost, tc.knowsHost, v.Algorithms)
			}
			if tc.accepts != nil {
				if err := v.Check("10.0.0.1:22", remote, tc.accepts); err != nil {
					t.Errorf("refused the key it should accept: %v", err)
				}
			}
			if tc.refuse != nil {
				if err := v.Check("10.0.0.1:22", remote, tc.refuse); !errors.As(err, tc.refusal) {
					t.Errorf("another key: %v, want %T", err, tc.refusal)
				}
			}
		})
	}
}
