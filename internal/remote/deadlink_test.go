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

// relayed is a client of s through a relay, which the test can
// black-hole.
func relayed(t *testing.T, s *testhost.Server) (*Client, *testhost.Relay) {
	t.Helper()
	relay := testhost.Delay(t, s.Address(), 0)
	cfg := configFor(s)
	cfg.Host, cfg.Port = relay.Host, relay.Port
	c, _ := client(t, cfg)
	return c, relay
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
	c, relay := relayed(t, s)
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

// TestDeadLinkDuringReloadEndsAtTheTimeout: a link that goes dead while
// the reload runs, with a verification waiting for it, ends the put at
// its timeout, with the error that says the host goes on alone and puts
// the previous file back (no verdict can reach it); which it does once
// its sshd learns the connection is gone.
func TestDeadLinkDuringReloadEndsAtTheTimeout(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, relay := relayed(t, s)
	dir := t.TempDir()
	target, reloading := filepath.Join(dir, "lb.cfg"), filepath.Join(dir, "reloading")
	if err := os.WriteFile(target, []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const timeout = 10 * time.Second // the host bounds the reload by 5 s
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := c.Put(ctx, File{Path: target, Content: []byte("v2\n"), ReloadCommand: "touch " + ShellQuote(reloading) + "; sleep 1",
			Verify: verifyFunc(func(context.Context, *Client) error { return nil })})
		done <- err
	}()
	waitFor(t, 20*time.Second, "the reload to start", func() bool { _, err := os.Stat(reloading); return err == nil })
	relay.BlackHole()
	err := endsBy(t, done, start, timeout)
	if err == nil || !ReloadedAfterSwap(err) || !strings.Contains(err.Error(), "the host goes on alone") ||
		!strings.Contains(err.Error(), "puts the previous file back") {
		t.Fatalf("want the error that says the host goes on alone and puts the previous file back, got %v", err)
	}
	relay.Heal() // sshd sees the connection reset, and the script its client gone
	waitFor(t, 20*time.Second, "the previous file back", func() bool {
		b, _ := os.ReadFile(target)
		return string(b) == "v1\n"
	})
}
