package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

func configFor(s *testhost.Server) Config {
	return Config{Host: s.Host, Port: s.Port, User: "root", PrivateKey: s.ClientKey.PEM, HostKey: s.HostKey.Public(), Timeout: 10 * time.Second}
}

func client(t *testing.T, cfg Config) (*Client, *Pool) {
	t.Helper()
	pool := NewPool()
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

func TestApplyReadRemove(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "sub dir", "haproxy 'node'.cfg")

	rf, err := c.ApplyFile(ctx, File{Path: target, Content: []byte("global\n"), Mode: 0o640, CreateParentDirs: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, target); string(got) != "global\n" {
		t.Fatalf("content %q", got)
	}
	if !rf.Exists || rf.Mode != 0o640 || rf.Owner != "root" || rf.Size != 7 ||
		rf.SHA256 != sha256Hex("global\n") {
		t.Fatalf("remote file %+v", rf)
	}

	// Out-of-band edit: the observed digest changes.
	if err := os.WriteFile(target, []byte("edited\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if rf2, err := c.ReadFile(ctx, target); err != nil || rf2.SHA256 != sha256Hex("edited\n") {
		t.Fatalf("after edit: %+v %v", rf2, err)
	}

	if err := c.RemoveFile(ctx, target, ""); err != nil {
		t.Fatal(err)
	}
	if rf3, err := c.ReadFile(ctx, target); err != nil || rf3.Exists {
		t.Fatalf("after remove: %+v %v", rf3, err)
	}
	if err := c.RemoveFile(ctx, target, "false"); err != nil {
		t.Fatalf("removing a missing file must succeed without reloading: %v", err)
	}
}

func TestNoHalfWrittenFiles(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	dir := t.TempDir()
	target := filepath.Join(dir, "lb.cfg")
	v1 := []byte("MUST be here, version 1\n")
	if _, err := c.ApplyFile(ctx, File{Path: target, Content: v1}); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, step string
		file       File
	}{
		{"validate rejects", "validate", File{Path: target, Content: []byte("version 2\n"), ValidateCommand: "grep -q MUST %s"}},
		{"reload fails with the new file", "reload", File{Path: target, Content: []byte("MUST version 2\n"),
			ReloadCommand: "grep -q 'version 1' " + ShellQuote(target)}},
		{"unknown owner", "set owner and mode", File{Path: target, Content: []byte("MUST 3\n"), Owner: "no-such-user-kha"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.ApplyFile(ctx, tc.file)
			var stepErr *StepError
			if !errors.As(err, &stepErr) || stepErr.Step != tc.step || stepErr.Host != s.Address() {
				t.Fatalf("want a %q step error from %s, got %v", tc.step, s.Address(), err)
			}
			if got := mustRead(t, target); !bytes.Equal(got, v1) {
				t.Fatalf("previous file changed: %q", got)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Fatalf("leftover files: %v", entries)
			}
		})
	}

	// A validate command sees the new content at the path it is given.
	if _, err := c.ApplyFile(ctx, File{Path: target, Content: []byte("MUST v4\n"), ValidateCommand: "grep -q v4 %s"}); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, target); string(got) != "MUST v4\n" {
		t.Fatalf("content %q", got)
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
	// The "daemon" writes to its inherited stderr after the command exits.
	daemon := "(sleep 2; echo still running >&2; exec sleep 60) & echo $! >> " + ShellQuote(pidFile) + "; echo started"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ApplyFile(ctx, File{Path: target, Content: []byte("v1\n"), ReloadCommand: daemon}); err != nil {
		t.Fatalf("apply with a daemon-starting reload command: %v", err)
	}
	if err := c.RemoveFile(ctx, target, daemon); err != nil {
		t.Fatalf("remove with a daemon-starting reload command: %v", err)
	}
}

func TestHostKeyVerification(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	ctx := context.Background()

	t.Run("mismatch is refused with both fingerprints", func(t *testing.T) {
		cfg := configFor(s)
		cfg.HostKey = testhost.NewKey(t).Public()
		_, err := NewPool().Get(ctx, cfg)
		var keyErr *HostKeyError
		if !errors.As(err, &keyErr) || !strings.Contains(err.Error(), ssh.FingerprintSHA256(s.HostKey.Signer.PublicKey())) {
			t.Fatalf("want a host key error naming the presented key, got %v", err)
		}
		if strings.Contains(err.Error(), "attempts") {
			t.Fatalf("a host key mismatch must not be retried: %v", err)
		}
	})
	t.Run("no host key is refused before dialing", func(t *testing.T) {
		cfg := configFor(s)
		cfg.HostKey = ""
		pool := NewPool()
		_, err := pool.Get(ctx, cfg)
		if !errors.Is(err, ErrNoHostKey) || !strings.Contains(err.Error(), "ssh.host_key") || pool.Dials() != 0 {
			t.Fatalf("want ErrNoHostKey before dialing, got %v (dials %d)", err, pool.Dials())
		}
	})
	t.Run("known_hosts content", func(t *testing.T) {
		cfg := configFor(s)
		cfg.HostKey = ""
		cfg.KnownHosts = fmt.Sprintf("# comment\n[%s]:%d %s\n", s.Host, s.Port, s.HostKey.Public())
		if _, err := NewPool().Get(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("trust on first use records the key and refuses a change", func(t *testing.T) {
		cfg := configFor(s)
		cfg.HostKey, cfg.InsecureTrustOnFirstUse = "", true
		c, err := NewPool().Get(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if seen := c.HostKey(); seen == nil || !bytes.Equal(seen.Marshal(), s.HostKey.Signer.PublicKey().Marshal()) {
			t.Fatalf("recorded %v", seen)
		}
		cfg.TrustedHostKey = testhost.NewKey(t).Public()
		var keyErr *HostKeyError
		if _, err := NewPool().Get(ctx, cfg); !errors.As(err, &keyErr) {
			t.Fatalf("a changed key after first use must be refused, got %v", err)
		}
	})
}

func TestHostCertificateSignedByCA(t *testing.T) {
	ca := testhost.NewKey(t)
	hostKey := testhost.NewKey(t)
	cert := &ssh.Certificate{Key: hostKey.Signer.PublicKey(), CertType: ssh.HostCert, ValidPrincipals: []string{"127.0.0.1"},
		ValidBefore: ssh.CertTimeInfinity, Serial: 1}
	if err := cert.SignCert(rand.Reader, ca.Signer); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	keyPath := filepath.Join(dir, "host_ca_signed")
	if err := os.WriteFile(keyPath, []byte(hostKey.PEM), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath+"-cert.pub", ssh.MarshalAuthorizedKey(cert), 0o644); err != nil {
		t.Fatal(err)
	}
	s := testhost.Start(t, testhost.Options{ExtraConfig: []string{"HostKey " + keyPath, "HostCertificate " + keyPath + "-cert.pub",
		"HostKeyAlgorithms ssh-ed25519-cert-v01@openssh.com"}})
	cfg := configFor(s)
	cfg.HostKey = ca.Public()
	if _, err := NewPool().Get(context.Background(), cfg); err != nil {
		t.Fatalf("a host certificate signed by the pinned CA must verify: %v", err)
	}
	cfg.HostKey = testhost.NewKey(t).Public()
	if _, err := NewPool().Get(context.Background(), cfg); err == nil {
		t.Fatal("a host certificate signed by another CA must not verify")
	}
}

func TestAuthenticationAndReachability(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	ctx := context.Background()

	t.Run("wrong key names the tried methods, without retries", func(t *testing.T) {
		cfg := configFor(s)
		wrong := testhost.NewKey(t)
		cfg.PrivateKey = wrong.PEM
		_, err := NewPool().Get(ctx, cfg)
		var authErr *AuthError
		if !errors.As(err, &authErr) || !strings.Contains(err.Error(), "publickey (ssh-ed25519 "+ssh.FingerprintSHA256(wrong.Signer.PublicKey())+")") {
			t.Fatalf("want an auth error listing the key, got %v", err)
		}
		if strings.Contains(err.Error(), "attempts") || strings.Contains(err.Error(), "BEGIN OPENSSH") {
			t.Fatalf("auth errors are final and never show the key: %v", err)
		}
	})
	t.Run("unreachable host is retried until the timeout", func(t *testing.T) {
		cfg := configFor(s)
		cfg.Port = closedPort(t)
		cfg.Timeout = 1500 * time.Millisecond
		_, err := NewPool().Get(ctx, cfg)
		var stepErr *StepError
		if !errors.As(err, &stepErr) || stepErr.Step != "connect" || !strings.Contains(err.Error(), "gave up after") ||
			strings.Contains(err.Error(), "after 1 attempts") {
			t.Fatalf("want retries then a connect error, got %v", err)
		}
	})
	t.Run("encrypted key gets a clear message", func(t *testing.T) {
		cfg := configFor(s)
		cfg.PrivateKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n"
		_, err := NewPool().Get(ctx, cfg)
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
		c, err := NewPool().Get(ctx, cfg)
		if err != nil {
			return err
		}
		p := filepath.Join(t.TempDir(), "via-bastion")
		if _, err := c.ApplyFile(ctx, File{Path: p, Content: []byte("hop\n")}); err != nil {
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

	pool := NewPool()
	t.Cleanup(pool.Close)
	c, err := pool.Get(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ApplyFile(context.Background(), File{Path: target, Content: []byte("x\n"), CreateParentDirs: true})
	var stepErr *StepError
	if !errors.As(err, &stepErr) {
		t.Fatalf("without sudo the unprivileged user must fail, got %v", err)
	}

	cfg.Sudo = true
	c, err = pool.Get(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := c.ApplyFile(context.Background(), File{Path: target, Content: []byte("events {}\n"), Mode: 0o600, Owner: "root", Group: "root", CreateParentDirs: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sys().(*syscall.Stat_t).Uid != 0 || rf.Owner != "root" || rf.Mode != 0o600 {
		t.Fatalf("owner/mode: %+v uid %d", rf, st.Sys().(*syscall.Stat_t).Uid)
	}
}

func TestConcurrentAppliesShareOneConnection(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	pool := NewPool()
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
				_, err = c.ApplyFile(context.Background(), File{Path: filepath.Join(dir, strconv.Itoa(i)), Content: []byte(strconv.Itoa(i))})
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
	if entries, _ := os.ReadDir(dir); len(entries) != 50 {
		t.Fatalf("%d files, want 50", len(entries))
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
	if _, err := c.ReadFile(context.Background(), "/nonexistent-kha"); err != nil {
		t.Fatal(err)
	}
	if pool.Dials() != 2 {
		t.Fatalf("dials = %d, want a reconnect", pool.Dials())
	}
}

func TestCheckPath(t *testing.T) {
	for _, p := range []string{"", "relative/x", "/etc/x\n", "/etc/\x00", "/etc/dir/"} {
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
	if _, err := exec.LookPath("sh"); err != nil {
		f.Skip("no sh")
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) {
			return
		}
		out, err := exec.Command("sh", "-c", "printf %s "+ShellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Fatalf("%q came back as %q (%v)", s, out, err)
		}
	})
}

func closedPort(t *testing.T) int {
	t.Helper()
	s := testhost.Start(t, testhost.Options{})
	port := s.Port
	s.Stop()
	return port
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
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
	digest, err := c.ApplyBlock(ctx, hosts, "lb", "10.0.0.100 api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if want := original + BlockLines("lb", "10.0.0.100 api.example.com\n"); string(mustRead(t, hosts)) != want {
		t.Fatalf("after apply:\n%s\nwant:\n%s", mustRead(t, hosts), want)
	}
	if digest != BlockDigest("lb", "10.0.0.100 api.example.com") {
		t.Fatalf("digest %s, want %s", digest, BlockDigest("lb", "10.0.0.100 api.example.com"))
	}
	if st, _ := os.Stat(hosts); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode changed to %o", st.Mode().Perm())
	}
	// Re-applying replaces the block instead of adding one.
	if _, err := c.ApplyBlock(ctx, hosts, "lb", "10.0.0.101 api.example.com\n10.0.0.101 api"); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, hosts)); strings.Count(got, "# BEGIN kha lb") != 1 || !strings.Contains(got, "10.0.0.101 api\n# END kha lb") {
		t.Fatalf("after re-apply:\n%s", got)
	}
	// An edit inside the block shows in the digest.
	edited := strings.Replace(string(mustRead(t, hosts)), "10.0.0.101 api\n", "10.6.6.6 api\n", 1)
	os.WriteFile(hosts, []byte(edited), 0o640)
	if d, _ := c.ReadBlock(ctx, hosts, "lb"); d == BlockDigest("lb", "10.0.0.101 api.example.com\n10.0.0.101 api") || d == "" {
		t.Fatalf("drift inside the block not seen: %s", d)
	}
	if err := c.RemoveBlock(ctx, hosts, "lb"); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, hosts)); got != original {
		t.Fatalf("after remove:\n%s\nwant:\n%s", got, original)
	}
	if d, err := c.ReadBlock(ctx, hosts, "lb"); d != "" || err != nil {
		t.Fatalf("removed block still read: %q %v", d, err)
	}
	if _, err := c.ApplyBlock(ctx, hosts, "bad'marker", "x"); err == nil {
		t.Fatal("a marker with a quote was accepted")
	}
}
