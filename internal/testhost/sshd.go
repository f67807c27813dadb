// Package testhost starts throwaway OpenSSH servers on loopback for tests:
// real sshd processes with their own config, host key and authorized keys,
// torn down with the test.
package testhost

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSHDPath is Debian's OpenSSH server; sshd must be started by absolute path.
const SSHDPath = "/usr/sbin/sshd"

// UnprivilegedUser is the login user with passwordless sudo that
// scripts/setup-host.sh creates.
const UnprivilegedUser = "kha-test"

// Require fails the test when a real component is missing in CI (or with
// KHA_REQUIRE_REAL=1), and skips it elsewhere, saying why.
func Require(t testing.TB, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" || os.Getenv("KHA_REQUIRE_REAL") != "" {
		t.Fatalf("%s; run scripts/setup-host.sh as root", what)
	}
	t.Skipf("skipping: %s (run scripts/setup-host.sh as root to enable this test)", what)
}

// Key is an SSH key pair.
type Key struct {
	Signer ssh.Signer
	PEM    string // OpenSSH private key text
}

// Public is the authorized_keys line of the key.
func (k Key) Public() string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k.Signer.PublicKey())))
}

// NewKey generates an ed25519 key pair.
func NewKey(t testing.TB) Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return Key{Signer: signer, PEM: string(pem.EncodeToMemory(block))}
}

// Options change how a server is set up.
type Options struct {
	// ListenAddress defaults to 127.0.0.1.
	ListenAddress string
	// AuthorizedKeys are the public keys allowed to log in (any user);
	// empty means one generated key, returned as Server.ClientKey.
	AuthorizedKeys []string
	// ExtraConfig lines are appended to sshd_config.
	ExtraConfig []string
	// LogLevel defaults to VERBOSE. DEBUG1 logs forwarding requests, but
	// also sends debug lines to the stderr of every session.
	LogLevel string
}

// Server is a running sshd.
type Server struct {
	Host      string
	Port      int
	HostKey   Key // the server's host key
	ClientKey Key // a key it accepts
	Dir       string
	cmd       *exec.Cmd
	exited    chan error
}

// Address is host:port.
func (s *Server) Address() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Log returns what sshd logged so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "sshd.log"))
	return string(b)
}

// Stop terminates sshd and its per-connection children.
func (s *Server) Stop() {
	if s.cmd != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		s.cmd = nil
	}
}

// RequireSSHD checks that an sshd can be started here.
func RequireSSHD(t testing.TB) {
	t.Helper()
	_, err := os.Stat(SSHDPath)
	Require(t, err == nil, SSHDPath+" is not installed")
	Require(t, os.Geteuid() == 0, "starting sshd on loopback needs root")
}

// RequireUnprivilegedUser checks that the sudo-capable test user exists.
func RequireUnprivilegedUser(t testing.TB) {
	t.Helper()
	_, err := user.Lookup(UnprivilegedUser)
	Require(t, err == nil, "user "+UnprivilegedUser+" does not exist")
}

// Start runs an sshd on a free loopback port until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	RequireSSHD(t)
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	addr := opts.ListenAddress
	if addr == "" {
		addr = "127.0.0.1"
	}
	// The directory must be traversable by the login user: sshd reads
	// authorized_keys with that user's privileges.
	dir, err := os.MkdirTemp("", "kha-sshd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Server{Host: addr, HostKey: NewKey(t), ClientKey: NewKey(t), Dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "host_ed25519"), []byte(s.HostKey.PEM), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := opts.AuthorizedKeys
	if len(keys) == 0 {
		keys = []string{s.ClientKey.Public()}
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), []byte(strings.Join(keys, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s.Port = freePort(t, addr)
		if lastErr = s.start(opts); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("sshd did not start: %v", lastErr)
	return nil
}

func (s *Server) start(opts Options) error {
	logLevel := opts.LogLevel
	if logLevel == "" {
		logLevel = "VERBOSE"
	}
	config := fmt.Sprintf(`Port %d
ListenAddress %s
HostKey %[3]s/host_ed25519
PidFile %[3]s/sshd.pid
AuthorizedKeysFile %[3]s/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
StrictModes no
UseDNS no
MaxStartups 200:30:400
MaxSessions 50
LogLevel %s
Subsystem sftp internal-sftp
%s
`, s.Port, s.Host, s.Dir, logLevel, strings.Join(opts.ExtraConfig, "\n"))
	cfgPath := filepath.Join(s.Dir, "sshd_config")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return err
	}
	if out, err := exec.Command(SSHDPath, "-t", "-f", cfgPath).CombinedOutput(); err != nil {
		return fmt.Errorf("sshd -t: %v: %s", err, out)
	}
	log, err := os.Create(filepath.Join(s.Dir, "sshd.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(SSHDPath, "-D", "-e", "-f", cfgPath)
	cmd.Stdout, cmd.Stderr = log, log
	// sshd dies with the test binary, even on a panic or a timeout kill.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("sshd exited: %v: %s", err, s.Log())
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Address(), 200*time.Millisecond); err == nil {
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "SSH-2.0-") {
				s.cmd, s.exited = cmd, exited
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
	return fmt.Errorf("sshd did not answer on %s: %s", s.Address(), s.Log())
}

// freePort asks the kernel for a port that is free at the moment.
func freePort(t testing.TB, host string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
