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

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// A host's verifier holds only the known_hosts lines that can apply to it,
// and checks keys as the whole file would: lines naming the host, hashed
// names, patterns, its CA and revocations (which apply to every host).
func TestKnownHostsLinesForOneHost(t *testing.T) {
	k := map[string]testhost.Key{}
	for _, name := range []string{"plain", "other-port", "hashed", "pattern", "revoked", "ca", "listed", "elsewhere"} {
		k[name] = testhost.NewKey(t)
	}
	content := strings.Join([]string{
		"10.0.0.1 " + k["plain"].Public(),
		"[10.0.0.1]:2222 " + k["other-port"].Public(),
		knownhosts.HashHostname("10.0.0.1") + " " + k["hashed"].Public(),
		"10.0.0.* " + k["pattern"].Public(),
		"@revoked * " + k["revoked"].Public(),
		"@cert-authority 10.0.0.1 " + k["ca"].Public(),
		"# a comment",
		"10.0.0.3,10.0.0.1 " + k["listed"].Public(),
		"10.0.0.9 " + k["elsewhere"].Public(),
		"10.0.0.1 " + k["revoked"].Public(),
	}, "\n") + "\n"

	lines := linesFor(content, "10.0.0.1", "10.0.0.1:22")
	for name, want := range map[string]bool{"plain": true, "other-port": false, "hashed": true, "pattern": true, "revoked": true,
		"ca": true, "listed": true, "elsewhere": false} {
		if got := strings.Contains(lines, k[name].Public()); got != want {
			t.Errorf("the %s key's line kept: %v, want %v", name, got, want)
		}
	}
	if got := linesFor(content, "node1.example.com", "node1.example.com:22"); got != content {
		t.Errorf("a host name keeps every line (the checker also matches its resolved address), got\n%s", got)
	}

	v, err := Config{Host: "10.0.0.1", KnownHosts: content}.verifier()
	if err != nil {
		t.Fatal(err)
	}
	remote := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 22}
	for _, name := range []string{"plain", "hashed", "pattern", "listed"} {
		if err := v.check("10.0.0.1:22", remote, k[name].Signer.PublicKey()); err != nil {
			t.Errorf("the %s key is refused: %v", name, err)
		}
	}
	var revoked *knownhosts.RevokedError
	if err := v.check("10.0.0.1:22", remote, k["revoked"].Signer.PublicKey()); !errors.As(err, &revoked) {
		t.Errorf("a revoked key listed for the host: got %v, want a revocation", err)
	}
	whole, err := knownHostsChecker(content)
	if err != nil {
		t.Fatal(err)
	}
	var mismatch, wholeMismatch *knownhosts.KeyError
	err = v.check("10.0.0.1:22", remote, k["elsewhere"].Signer.PublicKey())
	if !errors.As(whole("10.0.0.1:22", remote, k["elsewhere"].Signer.PublicKey()), &wholeMismatch) {
		t.Fatal("the whole file does not refuse another host's key")
	}
	if !errors.As(err, &mismatch) || len(mismatch.Want) != len(wholeMismatch.Want) {
		t.Errorf("another host's key: got %v, want a mismatch listing the %d keys the whole file lists", err, len(wholeMismatch.Want))
	}
}

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
			err := v.check("[10.0.0.1]:2222", remote, k.Signer.PublicKey())
			if wantOK := k != revoked; (err == nil) != wantOK {
				t.Errorf("key %s: got %v, want accepted %v", k.Public()[:30], err, wantOK)
			}
		}
		var revokedErr *knownhosts.RevokedError
		if err := v.check("[10.0.0.1]:2222", remote, revoked.Signer.PublicKey()); !errors.As(err, &revokedErr) {
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
