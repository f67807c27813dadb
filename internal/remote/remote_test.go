package remote

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

func configFor(s *testhost.Server) Config {
	return Config{Host: s.Host, Port: s.Port, User: "root", PrivateKey: s.ClientKey.PEM, HostKey: s.HostKey.Public(), Timeout: 10 * time.Second}
}

func client(t *testing.T, cfg Config) (*Client, *Pool) {
	t.Helper()
	pool := NewPool(nil)
	t.Cleanup(pool.Close)
	c, err := pool.Get(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, pool
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func observe(t *testing.T, c *Client, it Item) Observed {
	t.Helper()
	o, err := c.Observe(context.Background(), []Item{it})
	if err != nil {
		t.Fatal(err)
	}
	return o[0]
}

// entries lists a directory, to find what an operation left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestPutObserveRemove(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "sub dir", "haproxy 'node'.cfg")
	f := File{Path: target, Content: []byte("global\n"), Mode: 0o640, CreateParentDirs: true}

	if _, err := c.Put(ctx, f); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, target); string(got) != "global\n" {
		t.Fatalf("content %q", got)
	}
	if o := observe(t, c, f); !o.Exists || o.Mode != 0o640 || o.Owner != "root" || o.UID != "0" || o.SHA256 != SHA256([]byte("global\n")) || f.Drift(o) != "" {
		t.Fatalf("observed %+v, drift %q", o, f.Drift(o))
	}
	// A mode that a new file cannot be created with (set-gid, execute)
	// goes through chmod.
	exe := File{Path: filepath.Join(filepath.Dir(target), "tool"), Content: []byte("#!/bin/sh\n"), Mode: 0o2750}
	if _, err := c.Put(ctx, exe); err != nil {
		t.Fatal(err)
	}
	if o := observe(t, c, exe); o.Mode != 0o2750 {
		t.Fatalf("mode %o", o.Mode)
	}

	// Out-of-band changes show as drift: content, then mode and owner.
	if err := os.WriteFile(target, []byte("edited\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if o := observe(t, c, f); !strings.Contains(f.Drift(o), "content changed") {
		t.Fatalf("content drift not seen: %q", f.Drift(o))
	}
	if _, err := c.Put(ctx, f); err != nil {
		t.Fatal(err)
	}
	os.Chmod(target, 0o666)
	owned := f
	owned.Owner, owned.Group = "nobody", "0"
	if d := owned.Drift(observe(t, c, owned)); !strings.Contains(d, "mode is 0666, want 0640") || !strings.Contains(d, "owner is root, want nobody") ||
		strings.Contains(d, "group") {
		t.Fatalf("metadata drift: %q", d)
	}

	// Several files in one read, one of them missing.
	both, err := c.Observe(ctx, []Item{f, File{Path: target + ".missing"}, exe})
	if err != nil || !both[0].Exists || both[1].Exists || !both[2].Exists || both[2].Mode != 0o2750 {
		t.Fatalf("%+v %v", both, err)
	}

	if err := c.Remove(ctx, f, ""); err != nil {
		t.Fatal(err)
	}
	if o := observe(t, c, f); o.Exists || !strings.Contains(f.Drift(o), "missing") {
		t.Fatalf("after remove: %+v", o)
	}
	if err := c.Remove(ctx, f, "false"); err != nil {
		t.Fatalf("removing a missing file must succeed without running the command: %v", err)
	}
}

func TestNoHalfWrittenFiles(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	dir := t.TempDir()
	target := filepath.Join(dir, "lb.cfg")
	v1 := []byte("MUST be here, version 1\n")
	if _, err := c.Put(ctx, File{Path: target, Content: v1}); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		step Step
		file File
	}{
		{"validate rejects", "validate", File{Path: target, Content: []byte("version 2\n"), ValidateCommand: "grep -q MUST %s"}},
		{"reload fails with the new file", "reload", File{Path: target, Content: []byte("MUST version 2\n"),
			ReloadCommand: "grep -q 'version 1' " + ShellQuote(target)}},
		{"unknown owner", "set owner and mode", File{Path: target, Content: []byte("MUST 3\n"), Owner: "no-such-user-kha"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Put(ctx, tc.file)
			var stepErr *StepError
			if !errors.As(err, &stepErr) || stepErr.Step != tc.step || stepErr.Host != s.Address() {
				t.Fatalf("want a %q step error from %s, got %v", tc.step, s.Address(), err)
			}
			if got := mustRead(t, target); !bytes.Equal(got, v1) {
				t.Fatalf("previous file changed: %q", got)
			}
			if names := entries(t, dir); len(names) != 1 {
				t.Fatalf("leftover files: %v", names)
			}
		})
	}

	// A validate command sees the new content at the path it is given.
	if _, err := c.Put(ctx, File{Path: target, Content: []byte("MUST v4\n"), ValidateCommand: "grep -q v4 %s && test -f %s"}); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, target); string(got) != "MUST v4\n" {
		t.Fatalf("content %q", got)
	}
}

// A reload command that hangs is stopped at the operation's deadline, the
// previous file is restored, and the error says so.
func TestHangingReloadIsRolledBackAtTheDeadline(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	target := filepath.Join(t.TempDir(), "lb.cfg")
	if _, err := c.Put(context.Background(), File{Path: target, Content: []byte("v1\n")}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Put(ctx, File{Path: target, Content: []byte("v2\n"), ReloadCommand: "grep -q v1 " + ShellQuote(target) + " || sleep 600"})
	if err == nil || !strings.Contains(err.Error(), "did not finish within the operation's timeout") ||
		!strings.Contains(err.Error(), "previous file was restored") {
		t.Fatalf("want a reload timeout, got %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the hanging reload held the operation for %s", took)
	}
	if got := mustRead(t, target); string(got) != "v1\n" {
		t.Fatalf("after the timeout the host has %q, want the previous file", got)
	}
}

// A client that goes away before it commits (Ctrl-C, a dropped
// connection) leaves the host as it was: no rename, no reload, no
// temporary file.
func TestNoCommitNoChange(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, pool := client(t, configFor(s))
	dir := t.TempDir()
	target, reloaded := filepath.Join(dir, "lb.cfg"), filepath.Join(dir, "reloaded")
	if _, err := c.Put(context.Background(), File{Path: target, Content: []byte("v1\n")}); err != nil {
		t.Fatal(err)
	}
	reload := "touch " + ShellQuote(reloaded)

	t.Run("cancelled during validate", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(500*time.Millisecond, cancel)
		_, err := c.Put(ctx, File{Path: target, Content: []byte("v2\n"), ValidateCommand: "sleep 2", ReloadCommand: reload})
		if !errors.Is(err, ErrNotCommitted) {
			t.Fatalf("want ErrNotCommitted, got %v", err)
		}
		// The script ends on the host once the validate command has, and
		// takes its private directory with it.
		for deadline := time.Now().Add(30 * time.Second); len(entries(t, dir)) != 1; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("left behind after 30 s: %v", entries(t, dir))
			}
		}
		if got := mustRead(t, target); string(got) != "v1\n" {
			t.Fatalf("the host renamed after the client was gone: %q", got)
		}
	})
	t.Run("connection dropped during upload", func(t *testing.T) {
		big := bytes.Repeat([]byte("x"), 64<<20)
		done := make(chan error, 1)
		go func() {
			_, err := c.Put(context.Background(), File{Path: target, Content: big, ReloadCommand: reload})
			done <- err
		}()
		waitFor(t, 10*time.Second, "the upload to start", func() bool { return len(entries(t, dir)) == 2 })
		c.mu.Lock()
		c.conn.Close()
		c.mu.Unlock()
		if err := <-done; err == nil {
			t.Fatal("the dropped upload succeeded")
		}
		waitFor(t, 10*time.Second, "the host to clean up", func() bool { return len(entries(t, dir)) == 1 })
		if got := mustRead(t, target); string(got) != "v1\n" {
			t.Fatalf("partial upload reached the target: %d bytes", len(got))
		}
		if _, err := os.Stat(reloaded); !os.IsNotExist(err) {
			t.Fatal("the reload command ran")
		}
		c, _ = pool.Get(context.Background(), configFor(s))
	})
	t.Run("stale temporaries are swept by the next apply", func(t *testing.T) {
		stale, fresh := filepath.Join(dir, ".lb.cfg.kha-0ld0ld0ld0ld"), filepath.Join(dir, ".lb.cfg.kha-fre5hfre5h00")
		for _, d := range []string{stale, fresh} {
			if err := os.MkdirAll(filepath.Join(d, "inner"), 0o700); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(d, "new"), []byte("partial"), 0o600)
		}
		old := time.Now().Add(-20 * time.Minute)
		os.Chtimes(stale, old, old)
		if _, err := c.Put(context.Background(), File{Path: target, Content: []byte("v3\n")}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(stale); !os.IsNotExist(err) {
			t.Fatal("the stale temporary directory is still there")
		}
		if _, err := os.Stat(fresh); err != nil {
			t.Fatal("a recent temporary directory (maybe another run's) was removed")
		}
	})
}

func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A user who can write to the target's directory swaps every temporary
// entry kha makes for symlinks to a victim while applies and block changes
// run: the victim never changes, and the target only ever holds what kha
// wrote.
func TestSymlinkAttacksInAWritableDirectory(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	dir := t.TempDir()
	os.Chmod(dir, 0o1777&^0o1000) // world-writable, no sticky bit
	victimDir := t.TempDir()
	victim := filepath.Join(victimDir, "shadow")
	os.WriteFile(victim, []byte("root secret\n"), 0o600)
	for _, name := range []string{"new", "previous", "log", "block"} {
		os.Symlink(victim, filepath.Join(victimDir, name))
	}
	target, hosts := filepath.Join(dir, "lb.cfg"), filepath.Join(dir, "hosts")
	os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644)

	stop := make(chan struct{})
	var attacks sync.WaitGroup
	attacks.Add(1)
	go func() { // the attacker
		defer attacks.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			for _, name := range entries(t, dir) {
				if !strings.Contains(name, ".kha-") {
					continue
				}
				p := filepath.Join(dir, name)
				if os.Rename(p, filepath.Join(dir, fmt.Sprintf("moved-%d", n))) == nil {
					os.Symlink([]string{victimDir, "/etc"}[n%2], p)
				}
			}
		}
	}()
	for i := range 30 {
		content := fmt.Sprintf("v%d\n", i)
		_, err := c.Put(context.Background(), File{Path: target, Content: []byte(content), Mode: 0o644, ValidateCommand: "true"})
		if got, rerr := os.ReadFile(target); err == nil && (rerr != nil || string(got) != content) {
			t.Fatalf("apply %d succeeded but the target holds %q (%v)", i, got, rerr)
		}
		_, _ = c.Put(context.Background(), Block{Path: hosts, Marker: "lb", Content: []byte(fmt.Sprintf("10.0.0.%d api", i))})
	}
	close(stop)
	attacks.Wait()
	if got := mustRead(t, victim); string(got) != "root secret\n" {
		t.Fatalf("the victim was overwritten: %q", got)
	}
	if st, _ := os.Stat(victim); st.Mode().Perm() != 0o600 {
		t.Fatalf("the victim's mode changed to %o", st.Mode().Perm())
	}
	for _, name := range []string{"new", "previous", "log", "block"} {
		if _, err := os.Lstat(filepath.Join("/etc", name)); err == nil {
			t.Errorf("/etc/%s was created", name)
		}
	}
}

// A reload command that starts a daemon returns when the command does, not
// when the daemon closes the stdout and stderr it inherited.
func TestReloadThatStartsADaemon(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	dir := t.TempDir()
	target, pidFile := filepath.Join(dir, "lb.cfg"), filepath.Join(dir, "daemon.pid")
	t.Cleanup(func() {
		pids, _ := os.ReadFile(pidFile)
		for _, p := range strings.Fields(string(pids)) {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	// Commands run in the login directory, as a plain SSH command does: a
	// daemon must not start in kha's private directory, which goes away.
	cwd := filepath.Join(dir, "cwd")
	if _, err := c.Put(context.Background(), File{Path: target, Content: []byte("v0\n"), ValidateCommand: "pwd >" + ShellQuote(cwd) + ".validate",
		ReloadCommand: "pwd >" + ShellQuote(cwd)}); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(mustRead(t, cwd))); got != "/root" {
		t.Fatalf("the reload command ran in %q, want the login directory /root", got)
	}
	if got := strings.TrimSpace(string(mustRead(t, cwd+".validate"))); got != "/root" {
		t.Fatalf("the validate command ran in %q, want the login directory /root", got)
	}
	// The "daemon" writes to its inherited stderr after the command exits.
	daemon := "(sleep 2; echo still running >&2; exec sleep 60) & echo $! >> " + ShellQuote(pidFile) + "; echo started"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, File{Path: target, Content: []byte("v1\n"), ReloadCommand: daemon}); err != nil {
		t.Fatalf("apply with a daemon-starting reload command: %v", err)
	}
	if err := c.Remove(ctx, File{Path: target}, daemon); err != nil {
		t.Fatalf("remove with a daemon-starting command: %v", err)
	}
}

// ReloadAgain runs the reload command where the host has the file
// already, and only then; its failure says so and leaves the file.
func TestReloadAgain(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	dir := t.TempDir()
	target, marker := filepath.Join(dir, "keepalived.conf"), filepath.Join(dir, "reloads")
	ctx := context.Background()
	reloads := func() int {
		b, _ := os.ReadFile(marker)
		return strings.Count(string(b), "reloaded\n")
	}
	f := File{Path: target, Content: []byte("v1\n"), ReloadCommand: "echo reloaded >> " + ShellQuote(marker)}
	if _, err := c.Put(ctx, f); err != nil || reloads() != 1 {
		t.Fatalf("the first apply: %v, %d reloads", err, reloads())
	}
	if out, err := c.Put(ctx, f); err != nil || !out.Unchanged || reloads() != 1 {
		t.Fatalf("the same file again: %v, unchanged %v, %d reloads (want 1)", err, out.Unchanged, reloads())
	}
	f.ReloadAgain = true
	if out, err := c.Put(ctx, f); err != nil || !out.Unchanged || reloads() != 2 {
		t.Fatalf("the same file with ReloadAgain: %v, unchanged %v, %d reloads (want 2)", err, out.Unchanged, reloads())
	}
	f.ReloadCommand = "echo no keepalived here >&2; exit 3"
	_, err := c.Put(ctx, f)
	var se *StepError
	if !errors.As(err, &se) || se.Step != StepReload || !strings.Contains(err.Error(), "the host had the file already") ||
		!strings.Contains(err.Error(), "no keepalived here") {
		t.Fatalf("a failing reload with ReloadAgain: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "v1\n" {
		t.Errorf("the failed reload changed the file: %q", b)
	}
}

func TestHostKeyVerification(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	ctx := context.Background()
	connect := func(cfg Config) (*Client, error) { return NewPool(nil).Get(ctx, cfg) }

	// Debian hosts have RSA, ECDSA and Ed25519 keys; a pinned key or
	// known_hosts line of any one type must be enough.
	for name, key := range map[string]testhost.Key{"ed25519": s.HostKey, "ecdsa": s.ECDSAHostKey, "rsa": s.RSAHostKey} {
		t.Run("pinned "+name+" key", func(t *testing.T) {
			cfg := configFor(s)
			cfg.HostKey = key.Public()
			c, err := connect(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(c.HostKey().Marshal(), key.Signer.PublicKey().Marshal()) {
				t.Fatalf("the host presented %s", c.HostKey().Type())
			}
		})
		t.Run("known_hosts with only the "+name+" key", func(t *testing.T) {
			cfg := configFor(s)
			cfg.HostKey, cfg.KnownHosts = "", "# comment\n"+s.KnownHostsName()+" "+key.Public()+"\n"
			if _, err := connect(cfg); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("ssh-keyscan output as it is", func(t *testing.T) {
		out, err := exec.Command("ssh-keyscan", "-p", strconv.Itoa(s.Port), s.Host).Output()
		if err != nil {
			t.Fatalf("ssh-keyscan: %v", err)
		}
		cfg := configFor(s)
		cfg.HostKey, cfg.KnownHosts = "", string(out)
		if _, err := connect(cfg); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("mismatch is refused with both fingerprints and the recovery", func(t *testing.T) {
		cfg := configFor(s)
		cfg.HostKey = testhost.NewKey(t).Public()
		_, err := connect(cfg)
		var keyErr *HostKeyError
		if !errors.As(err, &keyErr) || !strings.Contains(err.Error(), ssh.FingerprintSHA256(s.HostKey.Signer.PublicKey())) ||
			!strings.Contains(err.Error(), "set ssh.host_key") {
			t.Fatalf("want a host key error naming the presented key, got %v", err)
		}
		if strings.Contains(err.Error(), "attempts") {
			t.Fatalf("a host key mismatch must not be retried: %v", err)
		}
	})
	t.Run("a pinned type the host lacks", func(t *testing.T) {
		cfg := configFor(s)
		ecdsa384, err := ssh.NewPublicKey(mustECDSA384(t))
		if err != nil {
			t.Fatal(err)
		}
		cfg.HostKey = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(ecdsa384)))
		if _, err := connect(cfg); err == nil || !strings.Contains(err.Error(), "no host key of the types pinned") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("no host key is refused before dialing", func(t *testing.T) {
		cfg := configFor(s)
		cfg.HostKey = ""
		pool := NewPool(nil)
		_, err := pool.Get(ctx, cfg)
		if !errors.Is(err, ErrNoHostKey) || !strings.Contains(err.Error(), "ssh.host_key") || pool.Dials() != 0 {
			t.Fatalf("want ErrNoHostKey before dialing, got %v (dials %d)", err, pool.Dials())
		}
	})
	t.Run("known_hosts without this address is refused before dialing", func(t *testing.T) {
		cfg := configFor(s)
		cfg.HostKey, cfg.KnownHosts = "", "10.9.9.9 "+s.HostKey.Public()+"\n"
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "no key and no @cert-authority line for "+s.Address()) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("trust on first use records the key and refuses a change", func(t *testing.T) {
		cfg := configFor(s)
		cfg.HostKey, cfg.InsecureTrustOnFirstUse = "", true
		c, err := connect(cfg)
		if err != nil {
			t.Fatal(err)
		}
		seen := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(c.HostKey())))
		cfg.TrustedHostKey = seen
		if _, err := connect(cfg); err != nil {
			t.Fatalf("the recorded key %s must verify the same host: %v", seen, err)
		}
		cfg.TrustedHostKey = testhost.NewKey(t).Public()
		var keyErr *HostKeyError
		if _, err := connect(cfg); !errors.As(err, &keyErr) {
			t.Fatalf("a changed key after first use must be refused, got %v", err)
		}
	})
}

func mustECDSA384(t *testing.T) *ecdsa.PublicKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &priv.PublicKey
}

// A host that presents a host certificate verifies against its CA, and
// also, as with OpenSSH, against its plain key pinned or listed as such.
func TestHostCertificates(t *testing.T) {
	s := testhost.Start(t, testhost.Options{HostCertificate: true})
	ctx := context.Background()
	for name, mutate := range map[string]func(*Config){
		"CA pinned": func(c *Config) { c.HostKey = s.HostCA.Public() },
		"@cert-authority in known_hosts": func(c *Config) {
			c.HostKey, c.KnownHosts = "", "@cert-authority "+s.KnownHostsName()+" "+s.HostCA.Public()+"\n"
		},
		"plain key pinned":       func(c *Config) { c.HostKey = s.HostKey.Public() },
		"plain known_hosts line": func(c *Config) { c.HostKey, c.KnownHosts = "", s.KnownHostsName()+" "+s.HostKey.Public()+"\n" },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := configFor(s)
			mutate(&cfg)
			if _, err := NewPool(nil).Get(ctx, cfg); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("another CA is refused", func(t *testing.T) {
		cfg := configFor(s)
		cfg.HostKey = testhost.NewKey(t).Public()
		if _, err := NewPool(nil).Get(ctx, cfg); err == nil {
			t.Fatal("a host certificate signed by another CA verified")
		}
	})
	t.Run("trust on first use records the certified key and accepts the unchanged host", func(t *testing.T) {
		cfg := configFor(s)
		cfg.HostKey, cfg.InsecureTrustOnFirstUse = "", true
		c, err := NewPool(nil).Get(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, isCert := c.HostKey().(*ssh.Certificate); isCert {
			t.Fatal("trust on first use recorded the certificate instead of the key it certifies")
		}
		cfg.TrustedHostKey = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(c.HostKey())))
		if _, err := NewPool(nil).Get(ctx, cfg); err != nil {
			t.Fatalf("the unchanged host was refused on the next run: %v", err)
		}
	})
}

func TestAuthenticationMethods(t *testing.T) {
	ctx := context.Background()
	t.Run("user certificate", func(t *testing.T) {
		ca, key := testhost.NewKey(t), testhost.NewKey(t)
		s := testhost.Start(t, testhost.Options{TrustedUserCA: ca.Public(), AuthorizedKeys: []string{testhost.NewKey(t).Public()}})
		cfg := configFor(s)
		cfg.PrivateKey = key.PEM
		if _, err := NewPool(nil).Get(ctx, cfg); err == nil {
			t.Fatal("the key alone, not in authorized_keys, was accepted")
		}
		cfg.Certificate = testhost.Certify(t, ca, key, ssh.UserCert, "root")
		if _, err := NewPool(nil).Get(ctx, cfg); err != nil {
			t.Fatalf("the certificate was refused: %v", err)
		}
		cfg.Certificate = testhost.Certify(t, ca, testhost.NewKey(t), ssh.UserCert, "root")
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "does not match ssh.private_key") {
			t.Fatalf("a certificate for another key: %v", err)
		}
	})
	t.Run("agent, with an identity chosen by comment", func(t *testing.T) {
		s := testhost.Start(t, testhost.Options{})
		keyring := agent.NewKeyring()
		other := testhost.NewKey(t)
		for comment, k := range map[string]testhost.Key{"other": other, "deploy": s.ClientKey} {
			priv, err := ssh.ParseRawPrivateKey([]byte(k.PEM))
			if err != nil {
				t.Fatal(err)
			}
			if err := keyring.Add(agent.AddedKey{PrivateKey: priv, Comment: comment}); err != nil {
				t.Fatal(err)
			}
		}
		sock := filepath.Join(t.TempDir(), "agent.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				go func() { _ = agent.ServeAgent(keyring, conn) }() // ends with the connection
			}
		}()
		t.Setenv("SSH_AUTH_SOCK", sock)
		cfg := configFor(s)
		cfg.PrivateKey, cfg.Agent = "", true
		if _, err := NewPool(nil).Get(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		cfg.AgentIdentity = "other"
		if _, err := NewPool(nil).Get(ctx, cfg); err == nil {
			t.Fatal("the agent's other key was accepted")
		}
		cfg.AgentIdentity = ssh.FingerprintSHA256(s.ClientKey.Signer.PublicKey())
		if _, err := NewPool(nil).Get(ctx, cfg); err != nil {
			t.Fatalf("identity by fingerprint: %v", err)
		}
	})
	t.Run("password", func(t *testing.T) {
		pw := testhost.SetPassword(t)
		s := testhost.Start(t, testhost.Options{Password: true})
		cfg := configFor(s)
		cfg.User, cfg.PrivateKey, cfg.Password = testhost.UnprivilegedUser, "", "wrong"
		_, err := NewPool(nil).Get(ctx, cfg)
		var authErr *AuthError
		if !errors.As(err, &authErr) || !strings.Contains(err.Error(), "password") || strings.Contains(err.Error(), "wrong") {
			t.Fatalf("a wrong password: %v", err)
		}
		cfg.Password = pw
		c, err := NewPool(nil).Get(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if out, _, err := c.Run(ctx, "id -un", nil); err != nil || strings.TrimSpace(string(out)) != testhost.UnprivilegedUser {
			t.Fatalf("logged in as %q (%v)", out, err)
		}
	})
}

func TestConnectionFailuresRetryOnlyWhatCanHeal(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	ctx := context.Background()

	t.Run("wrong key names the tried methods, without retries", func(t *testing.T) {
		cfg := configFor(s)
		wrong := testhost.NewKey(t)
		cfg.PrivateKey = wrong.PEM
		_, err := NewPool(nil).Get(ctx, cfg)
		var authErr *AuthError
		if !errors.As(err, &authErr) || !strings.Contains(err.Error(), "publickey (ssh-ed25519 "+ssh.FingerprintSHA256(wrong.Signer.PublicKey())+")") {
			t.Fatalf("want an auth error listing the key, got %v", err)
		}
		if strings.Contains(err.Error(), "attempts") || strings.Contains(err.Error(), "BEGIN OPENSSH") {
			t.Fatalf("auth errors are final and never show the key: %v", err)
		}
	})
	t.Run("a refused port is retried until the timeout, and the error says so", func(t *testing.T) {
		cfg := configFor(s)
		cfg.Port = testhost.FreePort(t, "127.0.0.1")
		cfg.Timeout = 1500 * time.Millisecond
		_, err := NewPool(nil).Get(ctx, cfg)
		var stepErr *StepError
		if !errors.As(err, &stepErr) || stepErr.Step != "connect" || !strings.Contains(err.Error(), "retrying connection refused") ||
			strings.Contains(err.Error(), "after 1 attempts") {
			t.Fatalf("want retries then a connect error, got %v", err)
		}
		if !strings.HasSuffix(err.Error(), GoneHint) {
			t.Fatalf("a connection given up on names the way out for a host that is gone for good: %v", err)
		}
	})
	t.Run("a name that does not resolve fails at once", func(t *testing.T) {
		cfg := configFor(s)
		cfg.Host, cfg.Timeout = "no-such-host.invalid", time.Minute
		start := time.Now()
		_, err := NewPool(nil).Get(ctx, cfg)
		if err == nil || strings.Contains(err.Error(), "gave up") || strings.Contains(err.Error(), GoneHint) || time.Since(start) > 15*time.Second {
			t.Fatalf("an unknown name was retried (%s): %v", time.Since(start), err)
		}
	})
	t.Run("an encrypted private key gets a clear message", func(t *testing.T) {
		priv, err := ssh.ParseRawPrivateKey([]byte(s.ClientKey.PEM))
		if err != nil {
			t.Fatal(err)
		}
		block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("passphrase"))
		if err != nil {
			t.Fatal(err)
		}
		cfg := configFor(s)
		cfg.PrivateKey = string(pem.EncodeToMemory(block))
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "encrypted with a passphrase") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a bad private key gets a clear message and is never echoed", func(t *testing.T) {
		cfg := configFor(s)
		cfg.PrivateKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n"
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "ssh.private_key is not a valid private key") || strings.Contains(err.Error(), "not a key") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestBastion(t *testing.T) {
	target := testhost.Start(t, testhost.Options{ListenAddress: "127.0.0.2"})
	ctx := context.Background()
	through := func(t *testing.T, forwarding string) error {
		bastion := testhost.Start(t, testhost.Options{AuthorizedKeys: []string{target.ClientKey.Public()},
			ExtraConfig: []string{"AllowTcpForwarding " + forwarding}, LogLevel: "DEBUG1"})
		cfg := configFor(target)
		bastionCfg := configFor(bastion)
		bastionCfg.PrivateKey = target.ClientKey.PEM
		cfg.Bastion = &bastionCfg
		c, err := NewPool(nil).Get(ctx, cfg)
		if err != nil {
			return err
		}
		p := filepath.Join(t.TempDir(), "via-bastion")
		if _, err := c.Put(ctx, File{Path: p, Content: []byte("hop\n")}); err != nil {
			return err
		}
		if !strings.Contains(bastion.Log(), fmt.Sprintf("target %s port %d", target.Host, target.Port)) {
			t.Errorf("the bastion's log shows no forwarding to the target:\n%s", bastion.Log())
		}
		return nil
	}
	if err := through(t, "yes"); err != nil {
		t.Fatal(err)
	}
	// The same configuration fails when the bastion refuses to forward:
	// the connection really goes through it.
	if err := through(t, "no"); err == nil || !strings.Contains(err.Error(), "bastion") {
		t.Fatalf("want a failure through a bastion that refuses forwarding, got %v", err)
	}
}

func TestSudoAsUnprivilegedUser(t *testing.T) {
	testhost.RequireUnprivilegedUser(t)
	s := testhost.Start(t, testhost.Options{})
	dir := t.TempDir() // 0700, owned by root
	target := filepath.Join(dir, "etc-kha", "nginx.conf")
	cfg := configFor(s)
	cfg.User = testhost.UnprivilegedUser

	pool := NewPool(nil)
	t.Cleanup(pool.Close)
	c, err := pool.Get(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Put(context.Background(), File{Path: target, Content: []byte("x\n"), CreateParentDirs: true})
	var stepErr *StepError
	if !errors.As(err, &stepErr) {
		t.Fatalf("without sudo the unprivileged user must fail, got %v", err)
	}

	cfg.Sudo = true
	c, err = pool.Get(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := File{Path: target, Content: []byte("events {}\n"), Mode: 0o600, Owner: "root", Group: "root", CreateParentDirs: true}
	if _, err := c.Put(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if o := observe(t, c, f); st.Sys().(*syscall.Stat_t).Uid != 0 || f.Drift(o) != "" {
		t.Fatalf("owner/mode: %+v uid %d", o, st.Sys().(*syscall.Stat_t).Uid)
	}
}

func TestConcurrentAppliesShareOneConnection(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	pool := NewPool(nil)
	t.Cleanup(pool.Close)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := pool.Get(context.Background(), configFor(s))
			if err == nil {
				_, err = c.Put(context.Background(), File{Path: filepath.Join(dir, strconv.Itoa(i)), Content: []byte(strconv.Itoa(i))})
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if names := entries(t, dir); len(names) != 50 {
		t.Fatalf("%d files, want 50: %v", len(names), names)
	}
	if pool.Dials() != 1 {
		t.Fatalf("%d connections, want 1", pool.Dials())
	}
}

func TestReconnectAfterDrop(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, pool := client(t, configFor(s))
	c.mu.Lock()
	c.conn.Close()
	c.mu.Unlock()
	c, err := pool.Get(context.Background(), configFor(s))
	if err != nil {
		t.Fatal(err)
	}
	if o := observe(t, c, File{Path: "/nonexistent-kha"}); o.Exists {
		t.Fatal("a missing file exists")
	}
	if pool.Dials() != 2 {
		t.Fatalf("dials = %d, want a reconnect", pool.Dials())
	}
}

// TestReconnectAfterTheHostDropped: a pooled connection is used again
// without asking the host whether it is alive; one the host dropped is
// made again, whether the pool noticed before the next step or only when
// the step's session was refused.
func TestReconnectAfterTheHostDropped(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, pool := client(t, configFor(s))
	for i, noticed := range []bool{true, false} {
		dials := i + 2
		c.mu.Lock()
		lost := c.lost
		if !noticed { // the pool learns of the end only as the session is refused
			late := make(chan struct{})
			c.lost = late
			go func() { <-lost; close(late) }()
		}
		c.mu.Unlock()
		s.DropConnections()
		if noticed {
			<-lost
		}
		c, err := pool.Get(context.Background(), configFor(s))
		if err != nil {
			t.Fatal(err)
		}
		if o := observe(t, c, File{Path: "/nonexistent-kha"}); o.Exists {
			t.Fatal("a missing file exists")
		}
		if pool.Dials() != dials {
			t.Fatalf("noticed %v: dials = %d, want %d", noticed, pool.Dials(), dials)
		}
	}
	// A host that is gone: the read whose session was refused gives up
	// within its budget, and so do the reads after it, at once.
	cfg := configFor(s)
	cfg.Timeout = time.Second
	c, pool = client(t, cfg)
	s.Stop()
	if _, err := c.Observe(context.Background(), []Item{File{Path: "/nonexistent-kha"}}); !Unreachable(err) {
		t.Fatalf("want the read to give up, got %v", err)
	}
	if _, err := pool.GetForRead(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "not tried again") {
		t.Fatalf("want the next read to fail at once, got %v", err)
	}
}

func TestCheckPath(t *testing.T) {
	for _, p := range []string{"", "relative/x", "/etc/x\n", "/etc/\x00", "/etc/dir/", "/etc/../x", "/etc//x"} {
		if checkPath(p) == nil {
			t.Errorf("%q accepted", p)
		}
	}
	if err := checkPath("/etc/kha/a b'c\"$d.cfg"); err != nil {
		t.Error(err)
	}
}

// FuzzShellQuote round-trips strings through a real sh.
func FuzzShellQuote(f *testing.F) {
	for _, s := range []string{"", "a b", "it's", `"$HOME" $(id) ; rm -rf / ` + "`x`", "\\'\\", "\t\n*?[]"} {
		f.Add(s)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) {
			return
		}
		out, err := exec.Command(sh, "-c", "printf %s "+ShellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Fatalf("%q came back as %q (%v)", s, out, err)
		}
	})
}

func TestBlocks(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	hosts := filepath.Join(t.TempDir(), "hosts")
	original := "127.0.0.1 localhost\n# BEGIN kha other\n10.9.9.9 other\n# END kha other\n::1 localhost ip6-localhost\n"
	if err := os.WriteFile(hosts, []byte(original), 0o640); err != nil {
		t.Fatal(err)
	}
	lb := Block{Path: hosts, Marker: "lb", Content: []byte("10.0.0.100 api.example.com")}
	if _, err := c.Put(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if want := original + BlockLines("lb", "10.0.0.100 api.example.com\n"); string(mustRead(t, hosts)) != want {
		t.Fatalf("after apply:\n%s\nwant:\n%s", mustRead(t, hosts), want)
	}
	if o := observe(t, c, lb); lb.Drift(o) != "" {
		t.Fatalf("drift right after apply: %q", lb.Drift(o))
	}
	if st, _ := os.Stat(hosts); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode changed to %o", st.Mode().Perm())
	}
	// Re-applying replaces the block where it stands.
	lb.Content = []byte("10.0.0.101 api.example.com\n10.0.0.101 api")
	os.WriteFile(hosts, append(mustRead(t, hosts), "# a line after the block\n"...), 0o640)
	if _, err := c.Put(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, hosts)); strings.Count(got, "# BEGIN kha lb") != 1 || !strings.HasSuffix(got, "10.0.0.101 api\n# END kha lb\n# a line after the block\n") {
		t.Fatalf("after re-apply:\n%s", got)
	}
	// An edit inside the block shows as drift.
	os.WriteFile(hosts, []byte(strings.Replace(string(mustRead(t, hosts)), "10.0.0.101 api\n", "10.6.6.6 api\n", 1)), 0o640)
	if d := lb.Drift(observe(t, c, lb)); !strings.Contains(d, `the block "lb" changed`) {
		t.Fatalf("drift inside the block not seen: %q", d)
	}
	if err := c.Remove(ctx, lb, ""); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, hosts)); got != original+"# a line after the block\n" {
		t.Fatalf("after remove:\n%s", got)
	}
	if o := observe(t, c, lb); o.Exists {
		t.Fatalf("removed block still read: %+v", o)
	}
	if _, err := c.Put(ctx, Block{Path: hosts, Marker: "bad'marker", Content: []byte("x")}); err == nil {
		t.Fatal("a marker with a quote was accepted")
	}
}

// A block whose END line was deleted by hand is refused with its lines;
// nothing after BEGIN is ever deleted.
func TestDamagedBlockIsRefused(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	hosts := filepath.Join(t.TempDir(), "hosts")
	damaged := "127.0.0.1 localhost\n# BEGIN kha lb\n10.0.0.100 api\n10.1.1.1 db.internal\n192.168.0.5 printer\n"
	os.WriteFile(hosts, []byte(damaged), 0o644)
	lb := Block{Path: hosts, Marker: "lb", Content: []byte("10.0.0.100 api")}
	for name, op := range map[string]func() error{
		"apply":   func() error { _, err := c.Put(ctx, lb); return err },
		"destroy": func() error { return c.Remove(ctx, lb, "") },
		"read":    func() error { _, err := c.Observe(ctx, []Item{lb}); return err },
	} {
		err := op()
		if err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("%s of a damaged block: %v", name, err)
		}
		if name != "read" && (!strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "line 5: 192.168.0.5 printer")) {
			t.Errorf("%s: the error does not show the lines:\n%v", name, err)
		}
		if got := string(mustRead(t, hosts)); got != damaged {
			t.Fatalf("%s changed the file:\n%s", name, got)
		}
	}
	// An END without BEGIN, and a second BEGIN, are refused too.
	for _, text := range []string{"a\n# END kha lb\n", "# BEGIN kha lb\nx\n# END kha lb\n# BEGIN kha lb\ny\n# END kha lb\n"} {
		os.WriteFile(hosts, []byte(text), 0o644)
		if _, err := c.Put(ctx, lb); err == nil || string(mustRead(t, hosts)) != text {
			t.Fatalf("accepted %q: %v", text, err)
		}
	}
}

// A CRLF file keeps its line endings and never gets a second block.
func TestBlockInCRLFFile(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte("127.0.0.1 localhost\r\n"), 0o644)
	lb := Block{Path: hosts, Marker: "lb", Content: []byte("10.0.0.100 api")}
	for range 2 {
		if _, err := c.Put(ctx, lb); err != nil {
			t.Fatal(err)
		}
	}
	want := "127.0.0.1 localhost\r\n# BEGIN kha lb\r\n10.0.0.100 api\r\n# END kha lb\r\n"
	if got := string(mustRead(t, hosts)); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if d := lb.Drift(observe(t, c, lb)); d != "" {
		t.Fatalf("a CRLF block reads as drift: %q", d)
	}
}

// Parallel changes of blocks in one file, from one process and from
// several (separate pools stand for separate Terraform runs), all land
// even when the host is slow between reading and renaming.
func TestConcurrentBlocksInOneFile(t *testing.T) {
	slow := t.TempDir()
	realAwk, err := exec.LookPath("awk")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(slow, "awk"), []byte("#!/bin/sh\nsleep 0.3\nexec "+realAwk+" \"$@\"\n"), 0o755)
	os.Chmod(slow, 0o755)
	s := testhost.Start(t, testhost.Options{ExtraConfig: []string{"SetEnv PATH=" + slow + ":/usr/sbin:/usr/bin:/sbin:/bin"}})
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644)
	shared := NewPool(nil)
	t.Cleanup(shared.Close)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool := shared
			if i%2 == 1 {
				pool = NewPool(nil)
				defer pool.Close()
			}
			c, err := pool.Get(context.Background(), configFor(s))
			if err == nil {
				_, err = c.Put(context.Background(), Block{Path: hosts, Marker: fmt.Sprintf("b%d", i), Content: []byte(fmt.Sprintf("10.0.0.%d b%d", i, i))})
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := string(mustRead(t, hosts))
	for i := range 8 {
		if !strings.Contains(got, fmt.Sprintf("# BEGIN kha b%d\n10.0.0.%d b%d\n# END kha b%d\n", i, i, i, i)) {
			t.Errorf("block b%d was lost:\n%s", i, got)
		}
	}
}

// verifyFunc adapts a function to Verifier.
type verifyFunc func(ctx context.Context, c *Client) error

func (f verifyFunc) Verify(ctx context.Context, c *Client) error { return f(ctx, c) }

// A verification that fails after the reload restores the previous file
// and reloads it; one that passes keeps the new file; a client that goes
// away during verification leaves the previous file too.
// reloadedService is a host with lb.cfg at "v1\n", whose reload command
// appends the file to reloads.
func reloadedService(t *testing.T) (c *Client, dir, target, reloads, reload string) {
	s := testhost.Start(t, testhost.Options{})
	c, _ = client(t, configFor(s))
	dir = t.TempDir()
	target, reloads = filepath.Join(dir, "lb.cfg"), filepath.Join(dir, "reloads")
	reload = "cat " + ShellQuote(target) + " >> " + ShellQuote(reloads)
	if _, err := c.Put(context.Background(), File{Path: target, Content: []byte("v1\n"), ReloadCommand: reload}); err != nil {
		t.Fatal(err)
	}
	return c, dir, target, reloads, reload
}

// dropConnection kills the client's connection under it.
func dropConnection(c *Client) {
	c.mu.Lock()
	c.conn.Close()
	c.mu.Unlock()
}

func TestVerifyAfterReload(t *testing.T) {
	c, dir, target, reloads, reload := reloadedService(t)
	// The service is a TCP listener on the host's loopback, which the
	// verifier reaches through the SSH connection.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = conn.Write([]byte("hello\n")) // a client that left reads nothing
			conn.Close()
		}
	}()
	served := verifyFunc(func(ctx context.Context, c *Client) error {
		conn, err := c.DialTCP(ctx, l.Addr().String())
		if err != nil {
			return err
		}
		defer conn.Close()
		line, err := bufio.NewReader(conn).ReadString('\n')
		if line != "hello\n" {
			return fmt.Errorf("the service said %q (%v)", line, err)
		}
		return nil
	})
	if _, err := c.Put(context.Background(), File{Path: target, Content: []byte("v2\n"), ReloadCommand: reload, Verify: served}); err != nil {
		t.Fatalf("a passing verification: %v", err)
	}
	if got := string(mustRead(t, target)); got != "v2\n" {
		t.Fatalf("after a passing verification the host has %q", got)
	}

	os.Remove(reloads)
	broken := verifyFunc(func(context.Context, *Client) error { return errors.New("no backend is up: cp1 DOWN (L7STS 401)") })
	_, err = c.Put(context.Background(), File{Path: target, Content: []byte("v3\n"), ReloadCommand: reload, Verify: broken})
	var stepErr *StepError
	if !errors.As(err, &stepErr) || stepErr.Step != "verify" || !strings.Contains(err.Error(), "cp1 DOWN (L7STS 401)") ||
		!strings.Contains(err.Error(), "previous file was restored") {
		t.Fatalf("want a verify error with the verifier's words, got %v", err)
	}
	if got := string(mustRead(t, target)); got != "v2\n" {
		t.Fatalf("after a failed verification the host has %q, want the previous file", got)
	}
	if got := string(mustRead(t, reloads)); got != "v3\nv2\n" {
		t.Fatalf("reloads %q: want the new file's, then the restored one's", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	gone := verifyFunc(func(context.Context, *Client) error {
		cancel()
		dropConnection(c) // the client dies mid-verification
		return errors.New("gone")
	})
	_, _ = c.Put(ctx, File{Path: target, Content: []byte("v4\n"), ReloadCommand: reload, Verify: gone})
	waitFor(t, 10*time.Second, "the host to roll back", func() bool {
		b, _ := os.ReadFile(target)
		return string(b) == "v2\n" && len(entries(t, dir)) == 2
	})
}

// TestPreflight: a throwaway instance runs the new configuration before it
// replaces the live one. Its instance here writes what it serves into a
// file of the test's; the check reads it back over the connection.
func TestPreflight(t *testing.T) {
	c, dir, target, reloads, reload := reloadedService(t)
	serving := filepath.Join(t.TempDir(), "serving")
	// A marker in the command line finds leftover instances.
	serve := `cp "%s" ` + ShellQuote(serving) + ` && exec sleep 3131`
	served := func(want string) func(dir string) ([]byte, Verifier, error) {
		return func(string) ([]byte, Verifier, error) {
			_ = os.Remove(serving) // an earlier instance's
			return []byte(want), verifyFunc(func(ctx context.Context, c *Client) error {
				for ctx.Err() == nil {
					out, _, err := c.Run(ctx, "cat "+ShellQuote(serving), nil)
					if err == nil && string(out) == "v2\n" {
						return nil
					}
					if err == nil && len(out) > 0 { // cp makes the file before it writes it
						return fmt.Errorf("the instance serves %q", out)
					}
					time.Sleep(20 * time.Millisecond)
				}
				return ctx.Err()
			}), nil
		}
	}
	leftovers := func() string {
		out, _ := exec.Command("pgrep", "-f", "sleep 3131").Output()
		return strings.TrimSpace(string(out)) + strings.Join(entries(t, dir), " ")
	}
	pf := func(command string, candidate func(string) ([]byte, Verifier, error)) *Preflight {
		return &Preflight{Command: command, Candidate: candidate, Timeout: 5 * time.Second}
	}

	t.Run("a serving instance lets the file in", func(t *testing.T) {
		_, err := c.Put(context.Background(), File{Path: target, Content: []byte("v2\n"), ReloadCommand: reload, Preflight: pf(serve, served("v2\n"))})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(mustRead(t, target)); got != "v2\n" {
			t.Fatalf("the host has %q", got)
		}
		waitFor(t, 5*time.Second, "the instance to go", func() bool { return leftovers() == "lb.cfg reloads" })
	})
	t.Run("an instance that does not serve keeps the host as it is", func(t *testing.T) {
		_, err := c.Put(context.Background(), File{Path: target, Content: []byte("v3\n"), ReloadCommand: reload, Preflight: pf(serve, served("v3-broken\n"))})
		var stepErr *StepError
		if !errors.As(err, &stepErr) || stepErr.Step != "preflight" || !strings.Contains(err.Error(), `serves "v3-broken\n"`) ||
			!strings.Contains(err.Error(), "untouched") {
			t.Fatalf("want a preflight error with the check's words, got %v", err)
		}
		if got := string(mustRead(t, target)); got != "v2\n" {
			t.Fatalf("the host has %q, want the live file untouched", got)
		}
		if got := string(mustRead(t, reloads)); got != "v1\nv2\n" {
			t.Fatalf("reloads %q: a failed preflight must not reload", got)
		}
		waitFor(t, 5*time.Second, "the instance to go", func() bool { return leftovers() == "lb.cfg reloads" })
	})
	t.Run("an instance that exits is tried three times and quoted", func(t *testing.T) {
		attempts := 0
		candidate := func(work string) ([]byte, Verifier, error) {
			attempts++
			return served("v3\n")(work)
		}
		_, err := c.Put(context.Background(), File{Path: target, Content: []byte("v3\n"), Preflight: pf(`echo "cannot bind socket" >&2; exit 1`, candidate)})
		if err == nil || !strings.Contains(err.Error(), "exited before it served (exited 1)") || !strings.Contains(err.Error(), "cannot bind socket") || attempts != 3 {
			t.Fatalf("want the instance's own words after 3 attempts, got %d attempts: %v", attempts, err)
		}
	})
	t.Run("a client that goes away stops the instance", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		gone := func(work string) ([]byte, Verifier, error) {
			return []byte("v5\n"), verifyFunc(func(context.Context, *Client) error {
				time.Sleep(300 * time.Millisecond) // the instance starts
				cancel()
				dropConnection(c)
				return errors.New("gone")
			}), nil
		}
		if _, err := c.Put(ctx, File{Path: target, Content: []byte("v5\n"), Preflight: pf(serve, gone)}); err == nil {
			t.Fatal("a preflight whose client went away succeeded")
		}
		waitFor(t, 10*time.Second, "the instance and its directory to go", func() bool { return leftovers() == "lb.cfg reloads" })
		if got := string(mustRead(t, target)); got != "v2\n" {
			t.Fatalf("the host has %q", got)
		}
	})
}

// TestEditStartsFromTheReadBeforeIt: a client that remembers its reads
// edits from the content it read, and still refuses a file that changed
// since (a credential rotation), leaving the host's change; the next
// edit reads the file again.
func TestEditStartsFromTheReadBeforeIt(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "kubelet.conf")
	if err := os.WriteFile(target, []byte("server=https://10.0.0.11:6443\nkey=v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.RememberReads()
	if _, err := c.ReadFile(ctx, target); err != nil {
		t.Fatal(err)
	}
	rotated := "server=https://10.0.0.11:6443\nkey=v2\n"
	if err := os.WriteFile(target, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	edit := EditedFile{Path: target, Edit: serverEdit{want: "https://localhost:6443"}}
	if _, err := c.Put(ctx, edit); err == nil || !strings.Contains(err.Error(), "changed on the host after kha read it") {
		t.Fatalf("want the edit refused, got %v", err)
	}
	if got := string(mustRead(t, target)); got != rotated {
		t.Fatalf("the host has %q", got)
	}
	if _, err := c.Put(ctx, edit); err != nil {
		t.Fatal(err)
	}
	if got, want := string(mustRead(t, target)), strings.Replace(rotated, "10.0.0.11", "localhost", 1); got != want {
		t.Fatalf("the host has %q, want %q", got, want)
	}
}

// serverEdit edits the "server=" line of a file, the way a kubeconfig's
// server is edited, with a check the test controls.
type serverEdit struct {
	want, previous string
	check          func(content []byte) error
}

func (e serverEdit) set(current []byte, server string) ([]byte, error) {
	var out []string
	for _, line := range strings.Split(string(current), "\n") {
		if strings.HasPrefix(line, "server=") {
			line = "server=" + server
		}
		out = append(out, line)
	}
	return []byte(strings.Join(out, "\n")), nil
}
func (e serverEdit) Apply(current []byte) ([]byte, error) { return e.set(current, e.want) }
func (e serverEdit) Undo(current []byte) ([]byte, error)  { return e.set(current, e.previous) }
func (e serverEdit) Want() string                         { return "server " + e.want }
func (e serverEdit) State(current []byte) (string, error) {
	for _, line := range strings.Split(string(current), "\n") {
		if s, ok := strings.CutPrefix(line, "server="); ok {
			return "server " + s, nil
		}
	}
	return "", errors.New("no server line")
}
func (e serverEdit) Check(content []byte) Verifier {
	if e.check == nil {
		return nil
	}
	return verifyFunc(func(context.Context, *Client) error { return e.check(content) })
}

// TestEdits: a file kha edits but does not own keeps everything but the
// edit, its mode included; a failed check or reload leaves it byte for
// byte; a file changed between read and commit is not overwritten;
// Remove takes the edit back.
func TestEdits(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	dir := t.TempDir()
	target := filepath.Join(dir, "kubelet.conf")
	original := "# rotated credentials below\nserver=https://10.0.0.11:6443\nkey=v1\n"
	os.WriteFile(target, []byte(original), 0o600)
	var checked []string
	edit := serverEdit{want: "https://localhost:6443", previous: "https://10.0.0.11:6443", check: func(content []byte) error {
		checked = append(checked, string(content))
		return nil
	}}
	ctx := context.Background()
	f := EditedFile{Path: target, Edit: edit}

	o, err := c.Observe(ctx, []Item{f})
	if err != nil || f.Drift(o[0]) != target+": server https://10.0.0.11:6443, want server https://localhost:6443" {
		t.Fatalf("drift before the edit: %q %v", f.Drift(o[0]), err)
	}
	if _, err := c.Put(ctx, f); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(original, "10.0.0.11", "localhost", 1)
	if got := string(mustRead(t, target)); got != want {
		t.Fatalf("after the edit: %q", got)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Fatalf("the edit changed the mode to %o", fi.Mode().Perm())
	}
	if len(checked) != 1 || checked[0] != want {
		t.Fatalf("the check saw %q", checked)
	}
	// Rotated credentials are not drift; a changed server is.
	os.WriteFile(target, []byte(strings.Replace(want, "key=v1", "key=v2", 1)), 0o600)
	if o, _ := c.Observe(ctx, []Item{f}); f.Drift(o[0]) != "" {
		t.Fatalf("a credential rotation is drift: %q", f.Drift(o[0]))
	}

	t.Run("a failed check leaves the file byte for byte", func(t *testing.T) {
		before := mustRead(t, target)
		bad := EditedFile{Path: target, Edit: serverEdit{want: "https://10.0.0.99:6443", check: func([]byte) error { return errors.New("x509: certificate is valid for 10.0.0.11, not 10.0.0.99") }}}
		_, err := c.Put(ctx, bad)
		if err == nil || !strings.Contains(err.Error(), "not 10.0.0.99") || !strings.Contains(err.Error(), "not put in place") {
			t.Fatalf("want the check's error, got %v", err)
		}
		if got := mustRead(t, target); !bytes.Equal(got, before) {
			t.Fatalf("the file changed: %q", got)
		}
	})
	t.Run("a failed reload restores the file", func(t *testing.T) {
		before := mustRead(t, target)
		// A service that does not start with the new server.
		reload := "! grep -q 10.0.0.12 " + ShellQuote(target)
		_, err := c.Put(ctx, EditedFile{Path: target, Edit: serverEdit{want: "https://10.0.0.12:6443"}, ReloadCommand: reload})
		if err == nil || !strings.Contains(err.Error(), "previous file was restored") {
			t.Fatalf("want a reload failure, got %v", err)
		}
		if got := mustRead(t, target); !bytes.Equal(got, before) {
			t.Fatalf("the file was not restored: %q", got)
		}
	})
	t.Run("a file that changes after it was read is not overwritten", func(t *testing.T) {
		rotated := "server=https://localhost:6443\nkey=v3\n"
		racing := EditedFile{Path: target, Edit: serverEdit{want: "https://10.0.0.13:6443", check: func([]byte) error {
			return os.WriteFile(target, []byte(rotated), 0o600) // the kubelet rotates its certificate meanwhile
		}}}
		_, err := c.Put(ctx, racing)
		if err == nil || !strings.Contains(err.Error(), "changed on the host after kha read it") {
			t.Fatalf("want a refusal, got %v", err)
		}
		if got := string(mustRead(t, target)); got != rotated {
			t.Fatalf("the rotated file was overwritten: %q", got)
		}
	})
	t.Run("remove takes the edit back", func(t *testing.T) {
		if err := c.Remove(ctx, f, ""); err != nil {
			t.Fatal(err)
		}
		if got := string(mustRead(t, target)); got != "server=https://10.0.0.11:6443\nkey=v3\n" {
			t.Fatalf("after remove: %q", got)
		}
		os.Remove(target)
		if err := c.Remove(ctx, f, ""); err != nil {
			t.Fatalf("removing the edit of a file that is gone: %v", err)
		}
		if left := entries(t, dir); len(left) != 0 {
			t.Fatalf("left behind: %v", left)
		}
	})
}

// TestEditedCredentialsReadableByOthers: a refresh of a file that holds
// credentials reports that users other than its owner can read it, with
// the path, the mode and the fix, and leaves the mode alone; a private
// file, or one that holds no credentials, has nothing to report.
func TestEditedCredentialsReadableByOthers(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	target := filepath.Join(t.TempDir(), "kubelet.conf")
	ctx := context.Background()
	edit := serverEdit{want: "https://localhost:6443"}
	for _, tc := range []struct {
		mode        os.FileMode
		credentials bool
		notice      bool
	}{{0o644, true, true}, {0o640, true, true}, {0o600, true, false}, {0o400, true, false}, {0o644, false, false}} {
		if err := os.WriteFile(target, []byte("server=https://localhost:6443\nkey=v1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(target, tc.mode); err != nil {
			t.Fatal(err)
		}
		o, err := c.Observe(ctx, []Item{EditedFile{Path: target, Edit: edit, Credentials: tc.credentials}})
		if err != nil {
			t.Fatal(err)
		}
		n := o[0].Notice
		if got := n.Detail != ""; got != tc.notice {
			t.Errorf("mode %04o, credentials %v: notice %+v, want one: %v", tc.mode, tc.credentials, n, tc.notice)
		}
		if tc.notice && (n.Summary != "Credentials Readable by Other Users" || !strings.Contains(n.Detail, fmt.Sprintf("mode %04o", tc.mode)) ||
			!strings.Contains(n.Detail, "chmod 600 "+target)) {
			t.Errorf("mode %04o: the notice does not name the path, mode and fix: %+v", tc.mode, n)
		}
		if fi, _ := os.Stat(target); fi.Mode().Perm() != tc.mode {
			t.Errorf("the refresh changed the mode to %04o", fi.Mode().Perm())
		}
		if o[0].State != "server https://localhost:6443" {
			t.Errorf("the state with the mode line: %q", o[0].State)
		}
	}
}

// TestConnectionDroppedDuringReload: the client is gone (its connection
// closed) while the reload command runs. With a verification pending, the
// host cannot be told to keep the new file, so it puts the previous one
// back and reloads it; without one, a reload that fails is still rolled
// back. Before, the script died on its first write to the closed
// connection and deleted the backup with its private directory.
func TestConnectionDroppedDuringReload(t *testing.T) {
	for name, tc := range map[string]struct {
		verify Verifier
		reload string // after appending the file to reloads
	}{
		"verification pending": {verify: verifyFunc(func(context.Context, *Client) error { return nil }), reload: "echo reloading; sleep 2"},
		"failing reload":       {reload: "echo reloading; sleep 2; grep -q v1 %s"},
	} {
		t.Run(name, func(t *testing.T) {
			c, dir, target, reloads, reload := reloadedService(t)
			os.Remove(reloads)
			reload += "; " + strings.ReplaceAll(tc.reload, "%s", ShellQuote(target))
			done := make(chan error, 1)
			go func() {
				_, err := c.Put(context.Background(), File{Path: target, Content: []byte("v2\n"), ReloadCommand: reload, Verify: tc.verify})
				done <- err
			}()
			waitFor(t, 10*time.Second, "the reload to start", func() bool {
				b, _ := os.ReadFile(reloads)
				return string(b) == "v2\n"
			})
			dropConnection(c)
			if err := <-done; err == nil || !strings.Contains(err.Error(), "lost after the new file was put in place") {
				t.Fatalf("want an error that says the connection was lost after the swap, got %v", err)
			} else if tc.verify != nil && !strings.Contains(err.Error(), "puts the previous file back") {
				t.Errorf("the error does not say that the host rolls back: %v", err)
			}
			waitFor(t, 15*time.Second, "the host to roll back and clean up", func() bool {
				b, _ := os.ReadFile(target)
				return string(b) == "v1\n" && len(entries(t, dir)) == 2
			})
			waitFor(t, 10*time.Second, "the reload with the previous file", func() bool {
				b, _ := os.ReadFile(reloads)
				return string(b) == "v2\nv1\n"
			})
		})
	}
}

// TestConnectionLostMidUpload: a connection that dies while the new file
// is on its way says so, and that the host still has the previous file,
// which it does; the upload's private directory goes.
func TestConnectionLostMidUpload(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	relay := testhost.Delay(t, net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), 40*time.Millisecond)
	cfg := configFor(s)
	cfg.Host, cfg.Port = relay.Host, relay.Port
	cfg.HostKey = s.HostKey.Public()
	c, _ := client(t, cfg)
	dir := t.TempDir()
	target := filepath.Join(dir, "lb.cfg")
	if err := os.WriteFile(target, []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Put(context.Background(), File{Path: target, Content: bytes.Repeat([]byte("x"), 64<<20)})
		done <- err
	}()
	waitForUpload(t, dir)
	dropConnection(c)
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "connection was lost") || !strings.Contains(err.Error(), "the host is unchanged") {
		t.Fatalf("want an error that says the connection was lost before the swap, got %v", err)
	}
	if got := string(mustRead(t, target)); got != "v1\n" {
		t.Fatalf("the previous file changed: %q", got[:min(len(got), 20)])
	}
	waitFor(t, 20*time.Second, "the upload's private directory to go", func() bool { return len(entries(t, dir)) == 1 })
}

// waitForUpload waits until the upload of lb.cfg in dir has begun to
// reach the host.
func waitForUpload(t *testing.T, dir string) {
	t.Helper()
	waitFor(t, 20*time.Second, "the upload to start", func() bool { return testhost.UploadStarted(dir, "lb.cfg") })
}

// A config the quiet validate command (haproxy -c -q, the default)
// rejects: the error carries haproxy's own reason, the line naming the
// missing CA file.
func TestRejectedConfigSaysWhy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("no haproxy")
	}
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	dir := t.TempDir()
	ca := filepath.Join(dir, "missing-ca.pem")
	cfg := "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n" +
		"backend apiserver\n  server cp1 127.0.0.1:6443 check check-ssl verify required ca-file " + ca + "\n"
	f := File{Path: filepath.Join(dir, "haproxy.cfg"), Content: []byte(cfg), ValidateCommand: "haproxy -c -q -f %s"}
	_, err := c.Put(context.Background(), f)
	if err == nil || !strings.Contains(err.Error(), "the validate command rejected the new file") ||
		!strings.Contains(err.Error(), "Couldn't open the ca-file '"+ca+"'") {
		t.Fatalf("the rejection does not carry haproxy's reason: %v", err)
	}
	if _, err := os.Stat(f.Path); !os.IsNotExist(err) {
		t.Fatalf("a rejected file was put in place: %v", err)
	}
	// A validator that says nothing even without -q: the error says so.
	f.ValidateCommand = "false %s"
	if _, err := c.Put(context.Background(), f); err == nil || !strings.Contains(err.Error(), "the validate command printed no reason") {
		t.Fatalf("a silent rejection does not say that it printed nothing: %v", err)
	}
}

// A first create whose reload command fails (a unit the host does not
// have): there was no previous file, so the new one is removed again, and
// the error says so instead of "restoring the previous file failed".
func TestFailedReloadOnFirstCreateRemovesTheNewFile(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	target := filepath.Join(t.TempDir(), "etcd-proxy.cfg")
	reload := `echo "Failed to reload-or-restart haproxy@etcd.service: Unit haproxy@etcd.service not found." >&2; exit 5`
	_, err := c.Put(context.Background(), File{Path: target, Content: []byte("global\n"), ReloadCommand: reload})
	if err == nil || !strings.Contains(err.Error(), "the new file was removed again; the reload command failed with it") ||
		!strings.Contains(err.Error(), "Unit haproxy@etcd.service not found") || strings.Contains(err.Error(), "check the host") {
		t.Fatalf("the error does not say that the new file was removed: %v", err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the new file stayed after its reload failed: %v", err)
	}
	if !ReloadedAfterSwap(err) {
		t.Fatalf("the failure does not count as reloaded after the swap: %v", err)
	}
}

// The first apply of a VIP pair: the real haproxy cannot bind an address
// the host does not have, and the error names the sysctl that lets it.
func TestBindFailureNamesNonlocalBind(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("no haproxy")
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_nonlocal_bind"); err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Skipf("this host binds non-local addresses already (%q, %v)", b, err)
	}
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	target := filepath.Join(t.TempDir(), "haproxy.cfg")
	cfg := "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n" +
		"frontend apiserver\n  bind 192.0.2.10:8443\n  default_backend cp\nbackend cp\n  server cp1 127.0.0.1:6443\n"
	// The service starts with the new file; a haproxy that did bind would
	// run until timeout(1) ends it, and the reload succeed.
	reload := fmt.Sprintf("timeout 3 haproxy -db -f %s; [ $? = 124 ]", target)
	_, err := c.Put(context.Background(), File{Path: target, Content: []byte(cfg), ValidateCommand: "haproxy -c -q -f %s", ReloadCommand: reload})
	if err == nil || !strings.Contains(err.Error(), "cannot bind socket (Cannot assign requested address)") ||
		!strings.Contains(err.Error(), "net.ipv4.ip_nonlocal_bind=1") || !strings.Contains(err.Error(), "every node of the pair") ||
		!strings.Contains(err.Error(), "/etc/sysctl.d") {
		t.Fatalf("the bind failure does not name its fix: %v", err)
	}
}
