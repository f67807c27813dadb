package remote

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// levelLog keeps the messages logged at each level.
type levelLog struct {
	mu   sync.Mutex
	msgs map[Level][]string
}

func (l *levelLog) Log(_ context.Context, level Level, msg string, fields map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.msgs == nil {
		l.msgs = map[Level][]string{}
	}
	l.msgs[level] = append(l.msgs[level], msg+" why="+strings.TrimSpace(toString(fields["why"]))+" left="+toString(fields["left"]))
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}

// forwardAfter listens on address after delay and forwards every
// connection to target: a host whose sshd comes up late.
func forwardAfter(t *testing.T, address, target string, delay time.Duration) {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		select {
		case <-time.After(delay):
		case <-stop:
			return
		}
		l, err := net.Listen("tcp", address)
		if err != nil {
			t.Errorf("listening on %s: %v", address, err)
			return
		}
		go func() { <-stop; l.Close() }()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

// TestReadBudgetGivesUpOnItsOwn: a read (refresh) gives up on a host that
// refuses connections after its own short budget, logging each retry at
// info, and an apply that shares the dial keeps the default 5m budget: it
// connects when the host comes up after the read gave up.
func TestReadBudgetGivesUpOnItsOwn(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	cfg := configFor(s)
	cfg.Port = testhost.FreePort(t, "127.0.0.1")
	cfg.Timeout, cfg.RefreshTimeout = 0, time.Second
	forwardAfter(t, cfg.Address(), s.Address(), 3*time.Second)
	log := &levelLog{}
	pool := NewPool(log)
	t.Cleanup(pool.Close)
	ctx := context.Background()

	readErr := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := pool.GetForRead(ctx, cfg) // starts the shared dial
		readErr <- err
	}()
	waitFor(t, 10*time.Second, "the read's dial to retry once", func() bool { // the apply joins a dial under way
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.msgs[LevelInfo]) > 0
	})
	applied := make(chan error, 1)
	go func() {
		_, err := pool.Get(ctx, cfg) // joins it
		applied <- err
	}()

	// The port refuses until the host comes up; a read that had waited
	// for that would have connected, so a refusal is the read's own
	// budget, on a loaded machine too.
	err := <-readErr
	if !Unreachable(err) || !strings.Contains(err.Error(), "ssh.refresh_timeout 1s") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("want the read given up on a refused port, naming ssh.refresh_timeout, got %v", err)
	}
	t.Logf("the read gave up after %s", time.Since(start).Round(time.Millisecond))
	select {
	case err := <-applied:
		t.Fatalf("the apply ended with the read's budget: %v", err)
	default:
	}
	if err := <-applied; err != nil {
		t.Fatalf("the apply, with the default budget of %s, did not connect when the host came up: %v", DefaultTimeout, err)
	}
	if (Config{}).applyBudget().d != 5*time.Minute || (Config{}).readBudget().d != DefaultRefreshTimeout {
		t.Fatalf("default budgets: apply %s, read %s", Config{}.applyBudget().d, Config{}.readBudget().d)
	}

	log.mu.Lock()
	defer log.mu.Unlock()
	retries := strings.Join(log.msgs[LevelInfo], "\n")
	if !strings.Contains(retries, "connecting failed; retrying why=connection refused left=") {
		t.Fatalf("retries are not logged at info with why and how long is left: info log:\n%s", retries)
	}
}

// TestReadBudgetIsTheTimeoutWhenShorter: an ssh.timeout shorter than the
// default refresh budget bounds reads too; a wrong login is never
// unreachable.
func TestReadBudgetIsTheTimeoutWhenShorter(t *testing.T) {
	if b := (Config{Timeout: 2 * time.Second}).readBudget(); b.d != 2*time.Second || b.setting != "ssh.timeout" {
		t.Fatalf("read budget with ssh.timeout 2s: %+v", b)
	}
	s := testhost.Start(t, testhost.Options{})
	cfg := configFor(s)
	cfg.PrivateKey = testhost.NewKey(t).PEM
	_, err := NewPool(nil).GetForRead(context.Background(), cfg)
	if err == nil || Unreachable(err) {
		t.Fatalf("a refused login is an error of its own, not an unreachable host: %v", err)
	}
}

// TestReadBudgetThroughBastion: behind a bastion, a target that does not
// answer is unreachable after the read's own budget, as it is without one,
// whether the bastion's connection to it hangs (a target off the network)
// or the SSH handshake over that connection does (a target that accepts
// and says nothing): a channel through a bastion has no deadlines of its
// own, and the budget ending during an attempt is a timeout, not an error
// that fails the plan.
func TestReadBudgetThroughBastion(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	host, port, _ := net.SplitHostPort(silent.Addr().String())
	for _, target := range []struct{ name, host, port string }{
		{"a target that says nothing", host, port},
		// TEST-NET-1 (RFC 5737): no host answers there.
		{"a target off the network", "192.0.2.1", "22"},
	} {
		t.Run(target.name, func(t *testing.T) {
			bastion := testhost.Start(t, testhost.Options{})
			bastionCfg := configFor(bastion)
			cfg := bastionCfg
			cfg.Host = target.host
			cfg.Port, _ = strconv.Atoi(target.port)
			cfg.Timeout, cfg.RefreshTimeout = 0, time.Second
			cfg.Bastion = &bastionCfg
			pool := NewPool(nil)
			t.Cleanup(pool.Close)
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := pool.GetForRead(context.Background(), cfg)
				done <- err
			}()
			select {
			case err := <-done:
				if !Unreachable(err) || !strings.Contains(err.Error(), "ssh.refresh_timeout 1s") {
					t.Fatalf("want the read given up on as unreachable, naming ssh.refresh_timeout, got %v", err)
				}
				if took := time.Since(start); took > 3*time.Second {
					t.Fatalf("the read gave up after %s, not its own 1s budget", took)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the read through the bastion was still waiting after 20s with a 1s budget")
			}
		})
	}
}

// TestReadGaveUpIsNotRetriedByReads: once a read gave up on a host, the
// next read of the same run fails at once with the same unreachable
// error, as a plan reads one resource of a dead host after another; a
// change (the apply's budget) still dials, and once it connects, reads
// use the connection.
func TestReadGaveUpIsNotRetriedByReads(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	cfg := configFor(s)
	cfg.Port = testhost.FreePort(t, "127.0.0.1")
	cfg.Timeout, cfg.RefreshTimeout = 0, time.Second
	pool := NewPool(nil)
	t.Cleanup(pool.Close)
	ctx := context.Background()

	if _, err := pool.GetForRead(ctx, cfg); !Unreachable(err) {
		t.Fatalf("the first read: want unreachable, got %v", err)
	}
	start := time.Now()
	_, err := pool.GetForRead(ctx, cfg)
	if !Unreachable(err) || !strings.Contains(err.Error(), "not tried again") {
		t.Fatalf("the second read: want the first one's unreachable error, not tried again, got %v", err)
	}
	if took := time.Since(start); took > cfg.RefreshTimeout/2 {
		t.Fatalf("the second read took %s: it tried again, for up to its %s", took, cfg.RefreshTimeout)
	}

	forwardAfter(t, cfg.Address(), s.Address(), 0)
	if _, err := pool.Get(ctx, cfg); err != nil {
		t.Fatalf("a change dials whatever the reads found: %v", err)
	}
	if _, err := pool.GetForRead(ctx, cfg); err != nil {
		t.Fatalf("a read after the change connected: %v", err)
	}
}

// TestGaveUpErrorMisspeltPort: a refused port 22 that nobody set says that
// Terraform drops a misspelt key inside ssh = { … }; a port that was set,
// or a host that did not answer, does not.
func TestGaveUpErrorMisspeltPort(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, c := range []struct {
		name        string
		defaultPort bool
		reasons     []string
		hint        bool
	}{
		{"refused, port unset", true, []string{refusedReason}, true},
		{"refused, port set", false, []string{refusedReason}, false},
		{"timeouts, port unset", true, []string{"connection timeouts"}, false},
	} {
		err := &GaveUpError{Attempts: 3, Budget: budget{setting: "ssh.timeout", d: time.Second}, Reasons: c.reasons, Err: refused, DefaultPort: c.defaultPort}
		if got := strings.Contains(err.Error(), "check its spelling: Terraform drops a key it does not know inside ssh = { … }"); got != c.hint {
			t.Errorf("%s: hint %v, want %v: %s", c.name, got, c.hint, err)
		}
	}
}
