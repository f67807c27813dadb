package hostkey

import (
	"crypto/rand"
	"errors"
	"slices"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	hostKey, otherKey, ca, otherCA := testhost.NewKey(t), testhost.NewKey(t), testhost.NewKey(t), testhost.NewKey(t)
	cert := func(signer testhost.Key, edit func(*ssh.Certificate)) ssh.PublicKey {
		c := &ssh.Certificate{Key: hostKey.Signer.PublicKey(), CertType: ssh.HostCert, ValidPrincipals: []string{"10.0.0.1"},
			ValidAfter: uint64(time.Now().Add(-time.Hour).Unix()), ValidBefore: uint64(time.Now().Add(time.Hour).Unix())}
		if edit != nil {
			edit(c)
		}
		if err := c.SignCert(rand.Reader, signer.Signer); err != nil {
			t.Fatal(err)
		}
		return c
	}
	withCA := func(h *Host) { h.Authorities = append(h.Authorities, ca.Signer.PublicKey()) }
	withKey := func(h *Host) { h.Trust(hostKey.Signer.PublicKey()) }
	revokedByCA := func(h *Host) { h.revoked = map[string]bool{plainKey(ca.Signer.PublicKey()): true} }
	certificate, mismatch, unknown, revoked := new(CertificateError), new(MismatchError), new(UnknownHostError), new(RevokedError)
	for _, tc := range []struct {
		name    string
		host    []func(*Host)
		key     ssh.PublicKey
		wantErr any // nil, or a pointer to the error type
	}{
		{"its key", []func(*Host){withKey}, hostKey.Signer.PublicKey(), nil},
		{"another key", []func(*Host){withKey}, otherKey.Signer.PublicKey(), &mismatch},
		{"a plain key where only a CA is known", []func(*Host){withCA}, hostKey.Signer.PublicKey(), &mismatch},
		{"a CA's key presented as the host's", []func(*Host){withCA}, ca.Signer.PublicKey(), &mismatch},
		{"nothing known", nil, hostKey.Signer.PublicKey(), &unknown},
		{"a certificate from its CA", []func(*Host){withCA}, cert(ca, nil), nil},
		{"a certificate from another CA", []func(*Host){withCA}, cert(otherCA, nil), &certificate},
		{"a certificate for another name", []func(*Host){withCA}, cert(ca, func(c *ssh.Certificate) { c.ValidPrincipals = []string{"10.0.0.2"} }), &certificate},
		{"an expired certificate", []func(*Host){withCA}, cert(ca, func(c *ssh.Certificate) { c.ValidBefore = uint64(time.Now().Add(-time.Minute).Unix()) }), &certificate},
		{"a user certificate", []func(*Host){withCA}, cert(ca, func(c *ssh.Certificate) { c.CertType = ssh.UserCert }), &certificate},
		{"a certificate for its key from another CA", []func(*Host){withKey}, cert(otherCA, nil), nil},
		{"an expired certificate for its key", []func(*Host){withKey, withCA}, cert(ca, func(c *ssh.Certificate) { c.ValidBefore = 1 }), nil},
		{"a certificate from a revoked CA", []func(*Host){withKey, withCA, revokedByCA}, cert(ca, nil), &revoked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHost("10.0.0.1", 22)
			for _, build := range tc.host {
				build(h)
			}
			err := h.Check(tc.key)
			switch target := tc.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			default:
				if !errors.As(err, target) {
					t.Fatalf("got %v, want a %T", err, target)
				}
			}
		})
	}
}

// A pinned key verifies the host that presents it, and the certificates
// it signs.
func TestPin(t *testing.T) {
	t.Parallel()
	key := testhost.NewKey(t)
	h := NewHost("node1", 2222)
	h.Pin(key.Signer.PublicKey())
	if err := h.Check(key.Signer.PublicKey()); err != nil {
		t.Errorf("the pinned key is refused: %v", err)
	}
	cert := &ssh.Certificate{Key: testhost.NewKey(t).Signer.PublicKey(), CertType: ssh.HostCert, ValidPrincipals: []string{"node1"},
		ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, key.Signer); err != nil {
		t.Fatal(err)
	}
	if err := h.HostKeyCallback()("ignored:22", nil, cert); err != nil {
		t.Errorf("a certificate the pinned key signed is refused: %v", err)
	}
}

func TestAlgorithms(t *testing.T) {
	t.Parallel()
	ed25519, rsa, ca := testhost.NewKey(t).Signer.PublicKey(), testhost.RSAKey(t).Signer.PublicKey(), testhost.NewKey(t).Signer.PublicKey()
	ecdsa := testhost.NewECDSAKey(t).Signer.PublicKey()
	for _, tc := range []struct {
		name              string
		keys, authorities []ssh.PublicKey
		want              []string
	}{
		{"nothing known", nil, nil, firstUseAlgorithms},
		{"keys as ssh-keyscan lists them: their types in OpenSSH's order, then their certificates",
			[]ssh.PublicKey{rsa, ecdsa, ed25519}, nil, []string{
				ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256,
				ssh.CertAlgoED25519v01, ssh.CertAlgoECDSA256v01, ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01}},
		{"RSA alone", []ssh.PublicKey{rsa}, nil, []string{
			ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01}},
		{"a CA: certificates first", []ssh.PublicKey{ed25519}, []ssh.PublicKey{ca}, append(slices.Clone(certAlgorithms), ssh.KeyAlgoED25519)},
		{"a CA alone", nil, []ssh.PublicKey{ca}, certAlgorithms},
	} {
		h := &Host{Keys: tc.keys, Authorities: tc.authorities}
		if got := h.Algorithms(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
