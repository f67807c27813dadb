package remote

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// maxSessions starts a server whose sshd allows n sessions per connection
// (a Match block: sshd keeps the first MaxSessions outside one).
func maxSessions(t *testing.T, n string) *testhost.Server {
	return testhost.Start(t, testhost.Options{ExtraConfig: []string{"Match all", "MaxSessions " + n}})
}

// TestMaxSessionsLowersTheSessionsPerHost: a host whose sshd allows
// fewer sessions than kha opens at once refuses the others; kha opens
// fewer on it from then on, and every operation runs, with a warning
// that names MaxSessions and -parallelism.
func TestMaxSessionsLowersTheSessionsPerHost(t *testing.T) {
	s := maxSessions(t, "2")
	log := &levelLog{}
	pool := NewPool(log)
	t.Cleanup(pool.Close)
	c, err := pool.Get(context.Background(), configFor(s))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3*SessionsPerHost)
	for range cap(errs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := c.Run(context.Background(), "sleep 0.2", nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("an operation failed on a host that allows 2 sessions: %v", err)
		}
	}
	if c.sessions.limit != 2 {
		t.Errorf("kha opens %d sessions at once on a host that allows 2", c.sessions.limit)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	warnings := strings.Join(log.msgs[LevelWarn], "\n")
	if !strings.Contains(warnings, "MaxSessions") || !strings.Contains(warnings, "-parallelism") {
		t.Errorf("no warning names MaxSessions and -parallelism:\n%s", warnings)
	}
}

// TestMaxSessionsZeroSaysSo: a host that allows no session fails the
// operation with an error that names MaxSessions and -parallelism.
func TestMaxSessionsZeroSaysSo(t *testing.T) {
	c, _ := client(t, configFor(maxSessions(t, "0")))
	_, _, err := c.Run(context.Background(), "true", nil)
	if err == nil || !strings.Contains(err.Error(), "MaxSessions 0") || !strings.Contains(err.Error(), "-parallelism") {
		t.Fatalf("want an error naming MaxSessions and -parallelism, got %v", err)
	}
}

// A refused session lowers the bound to the sessions open, never raises
// it, and gives its slot back; with none open the bound stays. A session
// the host had opened before the refusal was counted raises the bound
// again.
func TestSessionSlotsRefused(t *testing.T) {
	for _, c := range []struct {
		name                string
		limit, taken, open  int
		wantOpen, wantLimit int
		wantLowered         bool
	}{
		{"two open of eight", 8, 5, 2, 2, 2, true},
		{"as many open as the bound", 2, 3, 2, 2, 2, false},
		{"none open", 8, 1, 0, 0, 8, false},
	} {
		s := &sessionSlots{limit: c.limit, taken: c.taken, open: c.open, freed: make(chan struct{})}
		open, lowered := s.refused()
		if open != c.wantOpen || lowered != c.wantLowered || s.limit != c.wantLimit || s.taken != c.taken-1 {
			t.Errorf("%s: open %d, lowered %v, limit %d, taken %d; want %d, %v, %d, %d", c.name, open, lowered, s.limit,
				s.taken, c.wantOpen, c.wantLowered, c.wantLimit, c.taken-1)
		}
	}
	s := &sessionSlots{limit: 8, taken: 3, open: 1, freed: make(chan struct{})}
	s.refused()
	s.opened()
	if s.limit != 2 {
		t.Errorf("two sessions open after a refusal counted with one: bound %d, want 2", s.limit)
	}
}
