package hostres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/remote"
	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestTrustedKeyOfALostConnection: the connection that read the files is
// lost, and a reconnect fails, before trust on first use records the key.
// Recording then reports an error; it used to dereference the missing key.
func TestTrustedKeyOfALostConnection(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	cfg := remote.Config{Host: s.Host, Port: s.Port, PrivateKey: s.ClientKey.PEM, InsecureTrustOnFirstUse: true, Timeout: time.Second}
	pool := remote.NewPool(nil)
	defer pool.Close()
	client, err := pool.Get(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if key, d := TrustedKeyOf(client); d.HasError() || key.ValueString() != s.HostKey.Public() {
		t.Fatalf("a live connection records %q (%v), want the host's Ed25519 key", key.ValueString(), d)
	}
	s.Stop()
	// Another resource reads the host: the pool learns that the
	// connection is gone (at once, or when its session is refused), and
	// connecting again fails.
	other, err := pool.Get(context.Background(), cfg)
	if err == nil {
		_, err = other.Observe(context.Background(), []remote.Item{remote.File{Path: "/etc/hostname"}})
	}
	if err == nil {
		t.Fatal("read a stopped host")
	}
	key, d := TrustedKeyOf(client)
	if !d.HasError() || !strings.Contains(d.Errors()[0].Detail(), "lost before its host key could be recorded") || !key.IsUnknown() {
		t.Fatalf("want an error and no key, got %q, %v", key, d)
	}
}
