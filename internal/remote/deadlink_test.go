package remote

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// deadLinkGrace is how long past its timeout an operation on a host whose
// link went dead may take (issue 48: the timeout plus 5 s).
const deadLinkGrace = 5 * time.Second

// relayed is a client of s through a relay with rtt, which the test can
// black-hole, and its pool.
func relayed(t *testing.T, s *testhost.Server, rtt time.Duration) (*Client, *Pool, *testhost.Relay) {
	t.Helper()
	relay := testhost.Delay(t, s.Address(), rtt)
	cfg := configFor(s)
	cfg.Host, cfg.Port = relay.Host, relay.Port
	c, pool := client(t, cfg)
	return c, pool, relay
}

// endsBy waits for an operation's error until its timeout plus
// deadLinkGrace from start.
func endsBy(t *testing.T, done <-chan error, start time.Time, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		t.Logf("ended %s after it began, with a timeout of %s", time.Since(start).Round(time.Millisecond), timeout)
		return err
	case <-time.After(time.Until(start.Add(timeout + deadLinkGrace))):
		t.Fatalf("still running %s after its %s timeout ended, on a dead link", deadLinkGrace, timeout)
		return nil
	}
}

// TestDeadLinkMidUploadEndsAtTheTimeout: a link that goes dead while
// new files are on their way (nothing arrives, nothing closes: writes
// into the connection fill its buffers and then wait for the kernel, as
// several uploads to one host do) ends every put at its timeout, with the
// error that says the host is unchanged, which it is; the pool drops the
// connection, so the next operation dials anew.
func TestDeadLinkMidUploadEndsAtTheTimeout(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _, relay := relayed(t, s, 0)
	if err := relay.SmallSendBuffers(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const uploads, timeout = 4, 8 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	done := make(chan error, uploads)
	targets := make([]string, uploads)
	for i := range targets {
		targets[i] = filepath.Join(dir, "lb.cfg")
		if i > 0 {
			sub := filepath.Join(dir, strconv.Itoa(i))
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			targets[i] = filepath.Join(sub, "lb.cfg")
		}
		if err := os.WriteFile(targets[i], []byte("v1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		go func() {
			_, err := c.Put(ctx, File{Path: targets[i], Content: bytes.Repeat([]byte("x"), 16<<20)})
			done <- err
		}()
	}
	waitForUpload(t, dir)
	relay.BlackHole()
	for range uploads {
		err := endsBy(t, done, start, timeout)
		if !errors.Is(err, ErrNotCommitted) || !strings.Contains(err.Error(), "the host is unchanged") {
			t.Errorf("want the error that says the host is unchanged, got %v", err)
		}
	}
	for _, target := range targets {
		if got := string(mustRead(t, target)); got != "v1\n" {
			t.Errorf("the previous file changed: %q", got[:min(len(got), 20)])
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		t.Fatal("the dead connection is still the pool's: the next operation would use it")
	}
}
