package remote

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestRoundTrips counts what each step of a host resource's lifecycle
// costs its host, behind a relay that delays like a network: sessions
// (sshd's log) and round trips (the relay's connections and turns):
//   - connecting: TCP's handshake, then x/crypto/ssh's turns: the
//     versions and key exchange, the userauth service, "none" auth for
//     the list of methods, the public key's query, then its signature.
//     How the key exchange's first flights fall (sshd sends its KEXINIT
//     unasked) makes it one turn more or less: at most 8 in all;
//   - using the connection again: nothing, not even a keepalive;
//   - a command: opening its session, then its exec request, which sshd
//     answers with the window for the command's input (it opens a
//     session's window only once the command runs);
//   - a read: that command, whose output needs no input. x/crypto/ssh
//     sends the end of the (empty) input once the exec is answered, a
//     flight that awaits nothing but counts as a turn of its own when
//     the command outlasts a round trip, its output then answering it: 3;
//   - a put: that command, then its content, answered by the word that
//     the host has the file already, or that the new file is validated
//     and waits for the commit, which the script's end answers;
//   - an edit: a read (the one before it, when the client remembers it)
//     and a put.
func TestRoundTrips(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	relay := testhost.Delay(t, s.Address(), 20*time.Millisecond)
	cfg := configFor(s)
	cfg.Host, cfg.Port = relay.Host, relay.Port
	pool := NewPool(nil)
	t.Cleanup(pool.Close)
	ctx := context.Background()
	file := File{Path: filepath.Join(t.TempDir(), "lb.cfg"), Content: []byte("one\n"), ValidateCommand: "test -s %s"}
	changed := file
	changed.Content = []byte("two\n")
	kubeconfig := filepath.Join(filepath.Dir(file.Path), "kubelet.conf")
	if err := os.WriteFile(kubeconfig, []byte("server=https://10.0.0.11:6443\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	edit := EditedFile{Path: kubeconfig, Edit: serverEdit{want: "https://localhost:6443"}}

	var c *Client
	get := func() error {
		var err error
		c, err = pool.Get(ctx, cfg)
		return err
	}
	read := func() error {
		o, err := c.Observe(ctx, []Item{changed})
		if err == nil && changed.Drift(o[0]) != "" {
			t.Errorf("read: %s", changed.Drift(o[0]))
		}
		return err
	}
	readToEdit := func() error {
		c.RememberReads()
		_, err := c.ReadFile(ctx, kubeconfig)
		return err
	}
	put := func(it Item, unchanged bool) func() error {
		return func() error {
			o, err := c.Put(ctx, it)
			if err == nil && o.Unchanged != unchanged {
				t.Errorf("%v: unchanged = %v, want %v", it, o.Unchanged, unchanged)
			}
			return err
		}
	}
	for _, step := range []struct {
		name                         string
		run                          func() error
		conns, sessions              int
		minRoundTrips, maxRoundTrips int
	}{
		{"connect", get, 1, 0, 7, 8},
		{"connect again", get, 0, 0, 0, 0},
		{"put a new file", put(file, false), 0, 1, 4, 4},
		{"put a changed file", put(changed, false), 0, 1, 4, 4},
		{"put an unchanged file", put(changed, true), 0, 1, 3, 3},
		{"read an unchanged file", read, 0, 1, 2, 3},
		{"read a file to edit", readToEdit, 0, 1, 2, 3},
		{"edit the file read", put(edit, false), 0, 1, 4, 4},
		{"edit a file not read", put(EditedFile{Path: kubeconfig, Edit: serverEdit{want: "https://10.0.0.12:6443"}}, false), 0, 2, 6, 7},
	} {
		before, sessionsBefore := relay.Stats(), strings.Count(s.Log(), "Starting session:")
		if err := step.run(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		// A request the host answers joins the step's last flight (the
		// close of its session, which awaits nothing) or is a turn of its
		// own: either way one turn, after which the next step's first
		// flight is a turn again.
		if _, _, err := c.conn.SendRequest("keepalive@openssh.com", true, nil); err != nil {
			t.Fatal(err)
		}
		cost := relay.Stats().Sub(before)
		cost.Turns--
		sessions := strings.Count(s.Log(), "Starting session:") - sessionsBefore
		t.Logf("%s: %d connections, %d sessions, %d round trips", step.name, cost.Conns, sessions, cost.RoundTrips())
		if cost.Conns != step.conns || sessions != step.sessions ||
			cost.RoundTrips() < step.minRoundTrips || cost.RoundTrips() > step.maxRoundTrips {
			t.Errorf("%s: %d connections, %d sessions, %d round trips; want %d, %d, %d to %d", step.name, cost.Conns,
				sessions, cost.RoundTrips(), step.conns, step.sessions, step.minRoundTrips, step.maxRoundTrips)
		}
	}
}
