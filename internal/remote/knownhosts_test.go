package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/kha/terraform-provider-kha/internal/hostkey"
	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// Pinned keys and a known_hosts file check together as one file would.
func TestPinnedKeyBesideKnownHosts(t *testing.T) {
	pinned, listed, revoked := testhost.NewKey(t), testhost.NewKey(t), testhost.NewKey(t)
	content := fmt.Sprintf("[10.0.0.1]:2222 %s\n@revoked * %s\n", listed.Public(), revoked.Public())
	for _, pin := range []testhost.Key{pinned, revoked} {
		v, err := Config{Host: "10.0.0.1", Port: 2222, HostKey: pin.Public(), KnownHosts: content}.verifier()
		if err != nil {
			t.Fatal(err)
		}
		remote := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 2222}
		for _, k := range []testhost.Key{pin, listed} {
			err := v.Check("[10.0.0.1]:2222", remote, k.Signer.PublicKey())
			if wantOK := k != revoked; (err == nil) != wantOK {
				t.Errorf("key %s: got %v, want accepted %v", k.Public()[:30], err, wantOK)
			}
		}
		var revokedErr *hostkey.RevokedError
		if err := v.Check("[10.0.0.1]:2222", remote, revoked.Signer.PublicKey()); !errors.As(err, &revokedErr) {
			t.Errorf("a revoked key, even pinned: got %v", err)
		}
	}
}

// As with OpenSSH, which matches known_hosts patterns against
// "[host]:port" for a port other than 22, a "*" line and an
// "@cert-authority *" line apply to a host on any port, and a negated
// pattern that matches "[host]:port" still excludes it.
func TestKnownHostsPatternsOnAnotherPort(t *testing.T) {
	s := testhost.Start(t, testhost.Options{HostCertificate: true}) // on a free port, never 22
	other := testhost.NewKey(t)
	connect := func(knownHosts string) error {
		cfg := Config{Host: s.Host, Port: s.Port, PrivateKey: s.ClientKey.PEM, KnownHosts: knownHosts, Timeout: 10 * time.Second}
		pool := NewPool(nil)
		defer pool.Close()
		_, err := pool.Get(context.Background(), cfg)
		return err
	}
	for name, knownHosts := range map[string]string{
		"* and the host's key":             "* " + s.HostKey.Public(),
		"@cert-authority * and its CA":     "@cert-authority * " + s.HostCA.Public(),
		"a pattern that matches the port":  "*:" + strconv.Itoa(s.Port) + " " + s.HostKey.Public(),
		"a list with another host negated": "!10.9.9.9,* " + s.HostKey.Public(),
		"hashed":                           knownhosts.HashHostname(s.KnownHostsName()) + " " + s.HostKey.Public(),
	} {
		t.Run(name, func(t *testing.T) {
			if err := connect(knownHosts + "\n"); err != nil {
				t.Fatal(err)
			}
		})
	}
	var keyErr *HostKeyError
	if err := connect("* " + other.Public() + "\n"); !errors.As(err, &keyErr) {
		t.Errorf("* with another key: got %v, want a host key error", err)
	}
	if err := connect("@cert-authority * " + other.Public() + "\n"); !errors.As(err, &keyErr) {
		t.Errorf("@cert-authority * with another CA: got %v, want a host key error", err)
	}
	for _, knownHosts := range []string{
		"![" + s.Host + "]:*,* " + s.HostKey.Public(),
		"*.example.com " + s.HostKey.Public(),
		"@cert-authority " + s.Host + "* " + s.HostCA.Public(),
	} {
		if err := connect(knownHosts + "\n"); err == nil || !strings.Contains(err.Error(), "no key and no @cert-authority line") {
			t.Errorf("%q: got %v, want no key for %s", knownHosts, err, s.Address())
		}
	}
}
