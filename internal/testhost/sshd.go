// Package testhost starts throwaway OpenSSH servers on loopback for tests:
// real sshd processes with their own config, host keys and authorized
// keys, torn down with the test. Like a stock Debian server, each has RSA,
// ECDSA and Ed25519 host keys; on request it also presents a host
// certificate. Sessions run with an empty root home, so this machine's
// shell start-up files do not slow every command down.
package testhost

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// Real skips, in go test -short (make test-unit, the fast tier), a test
// that needs a real host or server process (sshd, etcd, kube-apiserver,
// a running load balancer or keepalived, a network namespace) or the
// Terraform CLI: make test-go runs it.
func Real(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: needs %s; make test-go runs it", what)
	}
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
	return keyOf(t, priv)
}

// NewECDSAKey generates a P-256 key pair.
func NewECDSAKey(t testing.TB) Key {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return keyOf(t, priv)
}

// rsaKey is one 3072-bit RSA key per test process: generating them takes
// long, and tests that need a key of their own use the other types.
var rsaKey = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 3072) })

// RSAKey returns the process's RSA key pair.
func RSAKey(t testing.TB) Key {
	t.Helper()
	priv, err := rsaKey()
	if err != nil {
		t.Fatal(err)
	}
	return keyOf(t, priv)
}

func keyOf(t testing.TB, priv crypto.Signer) Key {
	t.Helper()
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

// Certify signs key with ca as a host certificate (principals: the
// host names it is valid for) or, without principals given as hosts, a
// user certificate for the given users.
func Certify(t testing.TB, ca, key Key, certType uint32, principals ...string) string {
	t.Helper()
	cert := &ssh.Certificate{Key: key.Signer.PublicKey(), CertType: certType, KeyId: "kha-test",
		ValidPrincipals: principals, ValidBefore: ssh.CertTimeInfinity, Serial: 1}
	if certType == ssh.UserCert {
		cert.Permissions.Extensions = map[string]string{"permit-pty": ""}
	}
	if err := cert.SignCert(rand.Reader, ca.Signer); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(cert)))
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
	// HostCertificate makes the server present a certificate for its
	// Ed25519 host key, signed by Server.HostCA.
	HostCertificate bool
	// TrustedUserCA is the public key of a CA whose user certificates
	// the server accepts.
	TrustedUserCA string
	// Password allows password authentication (UnprivilegedUser needs a
	// password: see SetPassword).
	Password bool
	// Port, when set, is the port to listen on (an impostor taking over
	// a host's address); 0 picks a free one.
	Port int
	// PrivateDir, when set, is a directory that only this server's
	// sessions see (an empty tmpfs in its mount namespace), so two
	// servers act as two hosts with the same path. Server.HostPath reads
	// it from the test.
	PrivateDir string
	// PIDNamespace runs the server in a PID namespace of its own, where
	// the PIDs its sessions get count the processes they started.
	PIDNamespace bool
	// NetNS runs the server in this network namespace (NetHost.NS),
	// listening on ListenAddress there, port 22 unless Port says another.
	NetNS string
	// Overlays are directories of this machine (such as /etc) that the
	// server's sessions see through a writable overlay: they read the
	// machine's files, and what they write, rename or delete stays in a
	// layer of this server's own (Server.OverlayChanges lists it), so
	// configurations written with absolute paths land nowhere else.
	Overlays []string
}

// Server is a running sshd.
type Server struct {
	Host string
	Port int
	// HostKey is the server's Ed25519 host key; it also has RSAHostKey
	// and ECDSAHostKey, as Debian's sshd does.
	HostKey, RSAHostKey, ECDSAHostKey Key
	// HostCA signs the host certificate (Options.HostCertificate).
	HostCA    Key
	ClientKey Key // a key it accepts
	Dir       string
	cmd       *exec.Cmd
	pid       int
	exited    chan error
	overlays  []string
	// pidNamespace: sshd is the child of pid (Options.PIDNamespace).
	pidNamespace bool
}

// KnownHosts is what `ssh-keyscan` prints for the server: a line per host
// key, as known_hosts content.
func (s *Server) KnownHosts() string {
	var b strings.Builder
	for _, k := range []Key{s.RSAHostKey, s.ECDSAHostKey, s.HostKey} {
		fmt.Fprintf(&b, "%s %s\n", s.KnownHostsName(), k.Public())
	}
	return b.String()
}

// KnownHostsName is the server's address as known_hosts writes it.
func (s *Server) KnownHostsName() string {
	if s.Port == 22 {
		return s.Host
	}
	return fmt.Sprintf("[%s]:%d", s.Host, s.Port)
}

// Address is host:port.
func (s *Server) Address() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// HostPath is where the test sees path as this server's sessions see it
// (through the server's mount namespace).
func (s *Server) HostPath(path string) string {
	return fmt.Sprintf("/proc/%d/root%s", s.pid, path)
}

// Log returns what sshd logged so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "sshd.log"))
	return string(b)
}

// CPUTime is the CPU time sshd and every session it has finished used so
// far; it first waits (up to 5 s) for the sessions that are ending.
func (s *Server) CPUTime() (time.Duration, error) {
	pid := s.sshdPID()
	for deadline := time.Now().Add(5 * time.Second); len(childPIDs(pid)) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	return ProcessCPU(pid)
}

// ProcessCPU is the CPU time a process and the children it has waited
// for used so far.
func ProcessCPU(pid int) (time.Duration, error) {
	fields, err := processStat(pid)
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, f := range fields[11:15] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// ProcessRunning says whether pid is a process that has not exited (a
// zombie has).
func ProcessRunning(pid int) bool {
	fields, err := processStat(pid)
	return err == nil && fields[0] != "Z"
}

// processStat is /proc/<pid>/stat's fields after the command name: the
// state first; utime, stime, cutime and cstime the 12th to 15th, in clock
// ticks (USER_HZ, 100).
func processStat(pid int) ([]string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(stat, ')')
	var fields []string
	if i >= 0 {
		fields = strings.Fields(string(stat[i+1:]))
	}
	if len(fields) < 15 {
		return nil, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, stat)
	}
	return fields, nil
}

// sshdPID is the listening sshd's PID.
func (s *Server) sshdPID() int {
	if s.pidNamespace {
		if kids := childPIDs(s.pid); len(kids) == 1 {
			return kids[0] // sshd under unshare --fork
		}
	}
	return s.pid
}

func childPIDs(pid int) []int {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// Stop terminates sshd and every process of its mount namespace: the
// per-connection children too (sshd gives each its own session, so they
// are not in its process group), as if the host went away.
//
// The first process is stopped, not killed, until the rest are gone: alive,
// it holds the namespace, whose number the kernel hands to the next
// namespace made once the namespace is freed, and a process of that one
// must not be taken for the server's.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.exited: //nolint:errcheck // how it exited says nothing here
		// sshd died on its own: its PID may be another process's by now.
	default:
		_ = syscall.Kill(s.pid, syscall.SIGSTOP)
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", s.pid)); err == nil {
			for killNamespace(ns, s.pid) > 0 {
			}
		}
		_ = syscall.Kill(-s.pid, syscall.SIGKILL)
		<-s.exited //nolint:errcheck // killed: how it exited says nothing
	}
	s.cmd = nil
}

// killNamespace kills every process of the mount namespace ns but keep,
// and returns how many it found.
func killNamespace(ns string, keep int) int {
	found := 0
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == keep {
			continue
		}
		if other, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && other == ns {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			found++
		}
	}
	return found
}

// DropConnections kills the sshd processes that serve the server's
// connections, as a network failure or a crashed client would end them:
// the clients see their connections close, and the commands the sessions
// ran go on without them.
func (s *Server) DropConnections() { s.signalConnections(syscall.SIGKILL) }

// FreezeConnections stops the sshd processes that serve the server's
// connections, as a network partition that neither end notices: the
// clients wait on them, and the commands the sessions ran wait on their
// input. It returns what thaws them.
func (s *Server) FreezeConnections() (thaw func()) {
	stopped := s.signalConnections(syscall.SIGSTOP)
	return func() {
		for _, pid := range stopped {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
}

// signalConnections sends sig to the sshd processes below the listener,
// and returns them.
func (s *Server) signalConnections(sig syscall.Signal) []int {
	var signalled []int
	var walk func(pid int)
	walk = func(pid int) {
		for _, child := range childPIDs(pid) {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child))
			if strings.HasPrefix(strings.TrimSpace(string(comm)), "sshd") {
				walk(child)
				_ = syscall.Kill(child, sig)
				signalled = append(signalled, child)
			}
		}
	}
	walk(s.sshdPID())
	return signalled
}

// RequireSSHD checks that an sshd can be started here.
func RequireSSHD(t testing.TB) {
	t.Helper()
	Real(t, "a real sshd")
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
	s := &Server{Host: addr, HostKey: NewKey(t), RSAHostKey: RSAKey(t), ECDSAHostKey: NewECDSAKey(t), ClientKey: NewKey(t), Dir: dir}
	for name, k := range map[string]Key{"host_rsa": s.RSAHostKey, "host_ecdsa": s.ECDSAHostKey, "host_ed25519": s.HostKey} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(k.PEM), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if opts.HostCertificate {
		s.HostCA = NewKey(t)
		cert := Certify(t, s.HostCA, s.HostKey, ssh.HostCert, addr)
		if err := os.WriteFile(filepath.Join(dir, "host_ed25519-cert.pub"), []byte(cert+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		opts.ExtraConfig = append(opts.ExtraConfig, "HostCertificate "+filepath.Join(dir, "host_ed25519-cert.pub"))
	}
	if opts.TrustedUserCA != "" {
		if err := os.WriteFile(filepath.Join(dir, "user_ca.pub"), []byte(opts.TrustedUserCA+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		opts.ExtraConfig = append(opts.ExtraConfig, "TrustedUserCAKeys "+filepath.Join(dir, "user_ca.pub"))
	}
	if opts.Password {
		opts.ExtraConfig = append(opts.ExtraConfig, "PasswordAuthentication yes")
	} else {
		opts.ExtraConfig = append(opts.ExtraConfig, "PasswordAuthentication no")
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
		s.Port = opts.Port
		switch {
		case s.Port == 0 && opts.NetNS != "":
			s.Port = 22 // a namespace of its own: nothing else listens there
		case s.Port == 0:
			s.Port = FreePort(t, addr)
		}
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
	// Debian's order of host keys.
	config := fmt.Sprintf(`Port %d
ListenAddress %s
HostKey %[3]s/host_rsa
HostKey %[3]s/host_ecdsa
HostKey %[3]s/host_ed25519
PidFile %[3]s/sshd.pid
AuthorizedKeysFile %[3]s/authorized_keys
PubkeyAuthentication yes
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
		return fmt.Errorf("sshd -t: %w: %s", err, out)
	}
	log, err := os.Create(filepath.Join(s.Dir, "sshd.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	// A mount namespace of its own gives sessions an empty root home: the
	// machine's dotfiles (a pyenv init in .bashrc, say) stay out of every
	// command, as on a real host.
	setup := `mount -t tmpfs -o mode=0700 kha-home /root`
	if opts.PrivateDir != "" {
		if err := os.MkdirAll(opts.PrivateDir, 0o755); err != nil {
			return err
		}
		setup += ` && mount -t tmpfs -o mode=0755 kha-private "$2"`
	}
	for i, dir := range opts.Overlays {
		if !filepath.IsAbs(dir) || strings.ContainsAny(dir, ",:'\\ ") {
			return fmt.Errorf("overlay %q: an absolute path without commas, colons, quotes, backslashes or spaces", dir)
		}
		layer := s.overlayLayer(i)
		if err := os.MkdirAll(filepath.Join(layer, "upper"), 0o755); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(layer, "work"), 0o755); err != nil {
			return err
		}
		setup += fmt.Sprintf(` && mount -t overlay kha-overlay -o 'lowerdir=%s,upperdir=%s/upper,workdir=%s/work' '%s'`, dir, layer, layer, dir)
	}
	args := []string{"--mount", "--propagation", "private"}
	if opts.PIDNamespace {
		args = append(args, "--pid", "--fork", "--kill-child")
	}
	args = append(args, "sh", "-c", setup+` && exec "$0" -D -e -f "$1"`, SSHDPath, cfgPath, opts.PrivateDir)
	cmd := exec.Command("unshare", args...)
	if opts.NetNS != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", opts.NetNS, "unshare"}, args...)...)
	}
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
			return fmt.Errorf("sshd exited: %w: %s", err, s.Log())
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Address(), 200*time.Millisecond); err == nil {
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "SSH-2.0-") {
				s.cmd, s.pid, s.exited, s.pidNamespace, s.overlays = cmd, cmd.Process.Pid, exited, opts.PIDNamespace, opts.Overlays
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited //nolint:errcheck // killed: how it exited says nothing
	return fmt.Errorf("sshd did not answer on %s: %s", s.Address(), s.Log())
}

// portOf is the TCP port a listener listens on.
func portOf(t testing.TB, l net.Listener) int {
	t.Helper()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		t.Fatalf("%s is not a TCP address", l.Addr())
	}
	return addr.Port
}

// SetPassword gives UnprivilegedUser a random password until the test
// ends, for password authentication tests.
func SetPassword(t testing.TB) string {
	t.Helper()
	RequireUnprivilegedUser(t)
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	pw := fmt.Sprintf("kha-%x", b)
	cmd := exec.Command("chpasswd")
	cmd.Stdin = strings.NewReader(UnprivilegedUser + ":" + pw + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chpasswd: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("usermod", "-p", "*", UnprivilegedUser).Run() })
	return pw
}
