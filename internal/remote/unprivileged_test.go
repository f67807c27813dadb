package remote

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// sharedDir is a root-owned directory (mode 0755) that every local user
// can enter and read, as /etc.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kha-etc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// userDir is a directory (mode 0755) that testhost.UnprivilegedUser owns.
func userDir(t *testing.T) string {
	t.Helper()
	dir := sharedDir(t)
	if out, err := exec.Command("chown", testhost.UnprivilegedUser, dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v: %s", err, out)
	}
	return dir
}

// unprivilegedClient connects to a new host as testhost.UnprivilegedUser,
// and returns the configuration that connects to it as root.
func unprivilegedClient(t *testing.T) (*Client, Config) {
	t.Helper()
	testhost.RequireUnprivilegedUser(t)
	s := testhost.Start(t, testhost.Options{})
	cfg := configFor(s)
	cfg.User = testhost.UnprivilegedUser
	c, _ := client(t, cfg)
	return c, configFor(s)
}

// asUnprivileged runs a command as testhost.UnprivilegedUser on this
// machine, as a local user of the host would.
func asUnprivileged(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("runuser", append([]string{"-u", testhost.UnprivilegedUser, "--", name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// holdLock has the unprivileged user hold a shared flock on path until the
// test ends, and returns once it holds it.
func holdLock(t *testing.T, path string) {
	t.Helper()
	cmd := asUnprivileged("flock", "-s", path, "sh", "-c", "echo locked; exec sleep 60")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("%s could not lock %s (%q)", testhost.UnprivilegedUser, path, line)
	}
}

// A local user who can read the target's directory (as anyone can /etc)
// cannot hold block changes up: kha's lock is not the directory itself
// but a directory that only the connection's user can open.
func TestBlockLockIsOutOfLocalUsersReach(t *testing.T) {
	testhost.RequireUnprivilegedUser(t)
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	dir := sharedDir(t)
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	holdLock(t, dir)
	holdLock(t, hosts)

	lb := Block{Path: hosts, Marker: "lb", Content: []byte("10.0.0.100 api")}
	for _, op := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"apply", func(ctx context.Context) error { _, err := c.Put(ctx, lb); return err }},
		{"re-apply", func(ctx context.Context) error { _, err := c.Put(ctx, lb); return err }},
		{"remove", func(ctx context.Context) error { return c.Remove(ctx, lb, "") }},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		start := time.Now()
		err := op.run(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s while %s holds a lock on %s: %v", op.name, testhost.UnprivilegedUser, dir, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("%s took %s: it waited for the local user's lock", op.name, took)
		}
	}
	if got := string(mustRead(t, hosts)); got != "127.0.0.1 localhost\n" {
		t.Fatalf("after apply and remove:\n%s", got)
	}
	// Whatever kha keeps next to the target for locking, the local user
	// can neither open nor lock it.
	for _, name := range entries(t, dir) {
		if name == "hosts" {
			continue
		}
		p := filepath.Join(dir, name)
		if out, err := asUnprivileged("flock", "-n", "-s", p, "true").CombinedOutput(); err == nil {
			t.Errorf("%s can lock %s (%s)", testhost.UnprivilegedUser, p, out)
		}
	}
}

// A lock directory kha did not make (owned by another user, or a symlink
// planted in its place) is refused with what to do, and the file is
// untouched.
func TestForeignBlockLockIsRefused(t *testing.T) {
	testhost.RequireUnprivilegedUser(t)
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	elsewhere := t.TempDir() // root's, mode 0700
	for name, plant := range map[string]func(lock string) error{
		"another user's directory": func(lock string) error {
			if err := os.Mkdir(lock, 0o700); err != nil {
				return err
			}
			return exec.Command("chown", testhost.UnprivilegedUser, lock).Run()
		},
		"a symlink": func(lock string) error { return os.Symlink(elsewhere, lock) },
		"a file":    func(lock string) error { return os.WriteFile(lock, nil, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := sharedDir(t)
			hosts := filepath.Join(dir, "hosts")
			if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			lock := filepath.Join(dir, ".kha-lock")
			if err := plant(lock); err != nil {
				t.Fatal(err)
			}
			_, err := c.Put(context.Background(), Block{Path: hosts, Marker: "lb", Content: []byte("10.0.0.100 api")})
			if err == nil || !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "remove it") {
				t.Fatalf("want a refusal naming %s and the fix, got %v", lock, err)
			}
			if got := string(mustRead(t, hosts)); got != "127.0.0.1 localhost\n" {
				t.Fatalf("the file changed:\n%s", got)
			}
		})
	}
}

// The commands kha runs for a user (validate, reload, the throwaway
// instance, the command after a removal) create files with the host's
// umask, as the same commands run over plain SSH do, not with the 077 the
// scripts keep for their own temporary files.
func TestUserCommandsRunWithTheHostsUmask(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	out, _, err := c.Run(ctx, "umask", nil)
	if err != nil {
		t.Fatal(err)
	}
	umask, err := strconv.ParseUint(strings.TrimSpace(string(out)), 8, 32)
	if err != nil {
		t.Fatalf("umask printed %q: %v", out, err)
	}
	want := os.FileMode(0o666 &^ umask)
	if want == 0o600 {
		t.Fatalf("the host's umask is %04o, which the scripts' own 077 cannot be told from: start the test with umask 022", umask)
	}
	dir := sharedDir(t)
	made := func(name string) string { return ShellQuote(filepath.Join(dir, name)) }
	target := filepath.Join(dir, "lb.cfg")
	started := filepath.Join(dir, "preflight")
	preflight := &Preflight{Command: "touch " + made("preflight") + " && exec sleep 3133", Timeout: 5 * time.Second,
		Candidate: func(string) ([]byte, Verifier, error) {
			return []byte("v1\n"), verifyFunc(func(ctx context.Context, c *Client) error {
				for ctx.Err() == nil {
					if _, err := os.Stat(started); err == nil {
						return nil
					}
					time.Sleep(20 * time.Millisecond)
				}
				return ctx.Err()
			}), nil
		}}
	// Mode 0600: the script's umask for the file (177) differs from the host's.
	f := File{Path: target, Content: []byte("v1\n"), Mode: 0o600, ValidateCommand: "touch " + made("validate"),
		ReloadCommand: "touch " + made("reload"), Preflight: preflight}
	if _, err := c.Put(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(ctx, f, "touch "+made("remove")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"validate", "preflight", "reload", "remove"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("the %s command made no file: %v", name, err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("the %s command made a file of mode %04o, want %04o (umask %04o)", name, st.Mode().Perm(), want, umask)
		}
	}
}

// Every step that the host refuses to a user other than root for lack of
// permission says to set ssh.sudo; other failures do not.
func TestPermissionErrorsNameSSHSudo(t *testing.T) {
	c, rootCfg := unprivilegedClient(t)
	ctx := context.Background()
	etc := sharedDir(t) // root's, as /etc
	hosts, secret := filepath.Join(etc, "hosts"), filepath.Join(etc, "shadow")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"+BlockLines("lb", "10.0.0.1 api")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("x\n"+BlockLines("lb", "10.0.0.1 api")), 0o600); err != nil {
		t.Fatal(err)
	}
	own := userDir(t)
	const hint = "set ssh.sudo = true (the user needs passwordless sudo), or connect as a user who has it. If sudo is set, check its spelling"
	for name, op := range map[string]func() error{
		"put a file": func() error {
			_, err := c.Put(ctx, File{Path: filepath.Join(etc, "haproxy.cfg"), Content: []byte("x\n")})
			return err
		},
		"put a file root owns": func() error {
			_, err := c.Put(ctx, File{Path: filepath.Join(own, "lb.cfg"), Content: []byte("x\n"), Owner: "root"})
			return err
		},
		"put a block": func() error {
			_, err := c.Put(ctx, Block{Path: hosts, Marker: "lb", Content: []byte("10.0.0.2 api")})
			return err
		},
		"remove a block":       func() error { return c.Remove(ctx, Block{Path: hosts, Marker: "lb"}, "") },
		"remove a file":        func() error { return c.Remove(ctx, File{Path: hosts}, "") },
		"read a file":          func() error { _, err := c.ReadFile(ctx, secret); return err },
		"read a file's digest": func() error { _, err := c.Observe(ctx, []Item{File{Path: secret}}); return err },
		"read a block":         func() error { _, err := c.Observe(ctx, []Item{Block{Path: secret, Marker: "lb"}}); return err },
	} {
		t.Run(name, func(t *testing.T) {
			if err := op(); err == nil || !strings.Contains(err.Error(), hint) {
				t.Fatalf("want an error that says to %s, got %v", hint, err)
			}
		})
	}
	// A failure that is not the host's refusal gets no such hint.
	_, err := c.Put(ctx, File{Path: filepath.Join(own, "lb.cfg"), Content: []byte("x\n"), ValidateCommand: "echo bad config >&2; false"})
	if err == nil || !strings.Contains(err.Error(), "bad config") || strings.Contains(err.Error(), "ssh.sudo") {
		t.Fatalf("want the validate command's failure without the sudo hint, got %v", err)
	}
	if got := string(mustRead(t, hosts)); got != "127.0.0.1 localhost\n"+BlockLines("lb", "10.0.0.1 api") {
		t.Fatalf("the refused steps changed %s:\n%s", hosts, got)
	}
	// Beside the lock directory of a root apply (ssh.sudo on earlier), too.
	root, _ := client(t, rootCfg)
	if _, err := root.Put(ctx, Block{Path: hosts, Marker: "other", Content: []byte("10.0.0.3 db")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, Block{Path: hosts, Marker: "lb", Content: []byte("10.0.0.2 api")}); err == nil || !strings.Contains(err.Error(), "ssh.sudo = true") {
		t.Fatalf("want an error that names ssh.sudo, got %v", err)
	}
}

// Each failing step of a script is reported as what it is, by its own
// exit code: not creating the private directory, the lock directory or
// the copy of a file as an "upload".
func TestFailuresNameTheirStep(t *testing.T) {
	c, rootCfg := unprivilegedClient(t)
	root, _ := client(t, rootCfg)
	ctx := context.Background()
	etc := sharedDir(t) // root's: the user can make nothing in it
	hosts := filepath.Join(etc, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(userDir(t), "hosts") // only root can read it
	if err := os.WriteFile(secret, []byte("127.0.0.1 localhost\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		step Step
		says string
		err  func() error
	}{
		{"private directory", "create the private temporary directory", "the previous file is untouched",
			func() error {
				_, err := c.Put(ctx, File{Path: filepath.Join(etc, "haproxy.cfg"), Content: []byte("x\n")})
				return err
			}},
		{"lock directory", "write block", exitMakeLockDir.Error(),
			func() error {
				_, err := c.Put(ctx, Block{Path: hosts, Marker: "lb", Content: []byte("10.0.0.2 api")})
				return err
			}},
		{"copy of the file", "write block", exitCopy.Error(),
			func() error {
				_, err := c.Put(ctx, Block{Path: secret, Marker: "lb", Content: []byte("10.0.0.2 api")})
				return err
			}},
		{"not a regular file", "read", exitNotRegular.Error(),
			func() error { _, err := root.ReadFile(ctx, etc); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			var stepErr *StepError
			if !errors.As(err, &stepErr) || stepErr.Step != tc.step || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("want step %q failing with %q, got %v", tc.step, tc.says, err)
			}
		})
	}
	if got := string(mustRead(t, hosts)); got != "127.0.0.1 localhost\n" {
		t.Fatalf("the failed steps changed %s:\n%s", hosts, got)
	}
}
