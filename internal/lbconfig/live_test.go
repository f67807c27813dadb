package lbconfig

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// The live tests run real haproxy and nginx in front of three TLS
// "apiservers": this test binary re-executed as a backend process (so it
// can be killed or frozen with SIGSTOP), serving /readyz, /whoami and a
// slow /stream on 127.0.0.2-4.

const backendEnv = "KHA_TEST_BACKEND" // name,address,certfile,keyfile

func TestMain(m *testing.M) {
	if spec := os.Getenv(backendEnv); spec != "" {
		serveBackend(spec)
		return
	}
	os.Exit(m.Run())
}

func serveBackend(spec string) {
	parts := strings.Split(spec, ",")
	cert, err := tls.LoadX509KeyPair(parts[2], parts[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Fprintln(os.Stderr, testhost.NewAPIServer(parts[0], parts[1], cert).ListenAndServeTLS("", ""))
	os.Exit(1)
}

type backendProc struct {
	name, addr string
	cmd        *exec.Cmd
}

func (b *backendProc) signal(sig syscall.Signal) { _ = b.cmd.Process.Signal(sig) }

// kill ends the backend and waits until it is gone, so its listening
// socket is closed when kill returns.
func (b *backendProc) kill() {
	b.signal(syscall.SIGKILL)
	_ = b.cmd.Wait()
}

func startBackends(t *testing.T, hosts ...string) []*backendProc {
	t.Helper()
	certFile, keyFile := testhost.TestPKI(t).WriteServerFiles(t, t.TempDir())
	var procs []*backendProc
	for i, host := range hosts {
		b := &backendProc{name: fmt.Sprintf("cp%d", i+1), addr: net.JoinHostPort(host, strconv.Itoa(testhost.FreePort(t, host)))}
		b.cmd = exec.Command(os.Args[0])
		b.cmd.Env = append(os.Environ(), backendEnv+"="+strings.Join([]string{b.name, b.addr, certFile, keyFile}, ","))
		b.cmd.Stderr = os.Stderr
		b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := b.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.signal(syscall.SIGCONT); b.signal(syscall.SIGKILL); b.cmd.Wait() })
		procs = append(procs, b)
	}
	for _, b := range procs {
		waitFor(t, 10*time.Second, b.name+" listening", func() bool {
			c, err := net.DialTimeout("tcp", b.addr, 100*time.Millisecond)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	return procs
}

func backendsOf(procs []*backendProc) []Backend {
	var out []Backend
	for _, p := range procs {
		host, port, _ := net.SplitHostPort(p.addr)
		n, _ := strconv.Atoi(port)
		out = append(out, Backend{Name: p.name, Address: host, Port: n})
	}
	return out
}

func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < limit {
		if ok() {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s", what, limit)
	return 0
}

// lbClient opens a new connection per request and verifies the
// apiservers' certificates against the test CA, as kubectl would.
func lbClient(t *testing.T, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: testhost.TestPKI(t).Pool},
	}}
}

// requests sends n requests to /whoami and returns the answers by backend
// and the number of failures.
func requests(c *http.Client, url string, n int) (map[string]int, int) {
	seen, failed := map[string]int{}, 0
	for i := 0; i < n; i++ {
		resp, err := c.Get(url + "/whoami")
		if err != nil {
			failed++
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			failed++
			continue
		}
		seen[string(body)]++
	}
	return seen, failed
}

// haproxyStates reads each server's operational state from the admin
// socket: "2" is up, "0" down.
func haproxyStates(socket string) map[string]string {
	c, err := net.Dial("unix", socket)
	if err != nil {
		return nil
	}
	defer c.Close()
	fmt.Fprintln(c, "show servers state kube_apiserver")
	states := map[string]string{}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 5 && f[1] == "kube_apiserver" {
			states[f[3]] = f[5]
		}
	}
	return states
}

type liveLB struct {
	cmd    *exec.Cmd
	url    string
	dir    string
	spec   Spec
	config string
}

func startHAProxy(t *testing.T, backends []Backend) *liveLB {
	t.Helper()
	return startHAProxyWith(t, backends, func(*Spec) {})
}

// startHAProxyWith runs a real haproxy in front of backends, with the
// spec changed by tune.
func startHAProxyWith(t *testing.T, backends []Backend, tune func(*Spec)) *liveLB {
	t.Helper()
	haproxy := requireBinary(t, "haproxy")
	lb := &liveLB{dir: t.TempDir()}
	port := testhost.FreePort(t, "127.0.0.1")
	lb.url = fmt.Sprintf("https://127.0.0.1:%d", port)
	ca := filepath.Join(lb.dir, "ca.crt")
	os.WriteFile(ca, []byte(testhost.TestPKI(t).CAPEM), 0o644)
	lb.spec = Spec{Listen: []ListenAddr{{Address: "127.0.0.1", Port: port}}, Backends: backends,
		HealthCheck: HealthCheck{CAFile: ca},
		Runtime:     Runtime{PIDFile: filepath.Join(lb.dir, "haproxy.pid"), StatsSocket: filepath.Join(lb.dir, "admin.sock")}}
	tune(&lb.spec)
	lb.write(t)
	lb.cmd = exec.Command(haproxy, "-W", "-db", "-f", lb.config)
	lb.cmd.Stderr = os.Stderr
	lb.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := lb.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-lb.cmd.Process.Pid, syscall.SIGKILL); lb.cmd.Wait() })
	return lb
}

func (lb *liveLB) write(t *testing.T) {
	t.Helper()
	text, err := RenderHAProxy(lb.spec)
	if err != nil {
		t.Fatal(err, lb.spec.Validate())
	}
	lb.config = filepath.Join(lb.dir, "haproxy.cfg")
	if err := os.WriteFile(lb.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (lb *liveLB) socket() string { return lb.spec.Runtime.StatsSocket }

// reload signals haproxy's master (master-worker mode) until a worker with
// server in its configuration answers: a master that has not finished
// starting lets a reload signal go unanswered, which a test that reloads
// within a fraction of a second of the start would otherwise take for a
// failed reload.
func (lb *liveLB) reload(t *testing.T, server string) {
	t.Helper()
	var signalled time.Time
	waitFor(t, 15*time.Second, "a worker with "+server, func() bool {
		if _, ok := haproxyStates(lb.socket())[server]; ok {
			return true
		}
		if time.Since(signalled) > time.Second {
			if err := lb.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
				t.Fatal(err)
			}
			signalled = time.Now()
		}
		return false
	})
}

func (lb *liveLB) waitState(t *testing.T, server, state string) time.Duration {
	return waitFor(t, 15*time.Second, server+" state "+state, func() bool { return haproxyStates(lb.socket())[server] == state })
}

func TestLiveHAProxyFailover(t *testing.T) {
	testhost.Real(t, "running load balancers")
	procs := startBackends(t, "127.0.0.2", "127.0.0.3", "127.0.0.4")
	lb := startHAProxy(t, backendsOf(procs))
	for _, p := range procs {
		lb.waitState(t, p.name, "2")
	}
	client := lbClient(t, 3*time.Second)
	seen, failed := requests(client, lb.url, 30)
	if failed != 0 || len(seen) != 3 {
		t.Fatalf("through haproxy: %d failed, answers %v; want all three apiservers and no failure", failed, seen)
	}

	// A dead apiserver: haproxy marks it down within about a second and
	// no request fails meanwhile (connect errors are redispatched).
	procs[1].kill()
	killed := time.Now()
	var failedDuring int
	downAfter := waitFor(t, 10*time.Second, "cp2 marked down", func() bool {
		_, f := requests(client, lb.url, 1)
		failedDuring += f
		return haproxyStates(lb.socket())["cp2"] == "0"
	})
	seen, failedAfter := requests(client, lb.url, 50)
	t.Logf("killed apiserver: marked down after %s; %d failed requests while detecting, %d of 50 after", downAfter.Round(time.Millisecond), failedDuring, failedAfter)
	if failedAfter != 0 || seen["cp2"] != 0 {
		t.Fatalf("after failover: %d failed, answers %v", failedAfter, seen)
	}
	if downAfter > 5*time.Second {
		t.Errorf("marking a dead backend down took %s", time.Since(killed))
	}

	// A hung apiserver (SIGSTOP: the kernel still accepts connections):
	// the TLS health check times out and haproxy routes around it.
	procs[2].signal(syscall.SIGSTOP)
	hungDown := lb.waitState(t, "cp3", "0")
	seen, failed = requests(client, lb.url, 30)
	t.Logf("hung apiserver: marked down after %s; then %d of 30 requests failed", hungDown.Round(time.Millisecond), failed)
	if failed != 0 || seen["cp1"] != 30 {
		t.Fatalf("after a hung backend: %d failed, answers %v", failed, seen)
	}
	procs[2].signal(syscall.SIGCONT)
	lb.waitState(t, "cp3", "2")
}

// TestLiveHAProxyDropsRoot: a haproxy started as root (as systemd starts
// Debian's) with the spec's user and group serves from a worker that runs
// as them, while the master keeps root to reload.
func TestLiveHAProxyDropsRoot(t *testing.T) {
	testhost.Real(t, "running load balancers")
	u, err := user.Lookup("haproxy")
	testhost.Require(t, err == nil, "the host has no haproxy user")
	g, err := user.LookupGroup("haproxy")
	testhost.Require(t, err == nil, "the host has no haproxy group")
	procs := startBackends(t, "127.0.0.2")
	lb := startHAProxyWith(t, backendsOf(procs), func(s *Spec) { s.Runtime.User, s.Runtime.Group = "haproxy", "haproxy" })
	lb.waitState(t, "cp1", "2")
	want := "Uid:\t" + u.Uid + "\t" + u.Uid + "\t" + u.Uid + "\t" + u.Uid + "\nGid:\t" + g.Gid + "\t" + g.Gid + "\t" + g.Gid + "\t" + g.Gid + "\n"
	var workers int
	children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", lb.cmd.Process.Pid, lb.cmd.Process.Pid))
	for _, pid := range strings.Fields(string(children)) {
		status, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			continue
		}
		if !strings.Contains(string(status), want) {
			t.Errorf("worker %s does not run as haproxy:haproxy (%s:%s):\n%s", pid, u.Uid, g.Gid, status)
		}
		workers++
	}
	if workers == 0 {
		t.Fatalf("no worker under the master %d", lb.cmd.Process.Pid)
	}
	if status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", lb.cmd.Process.Pid)); !strings.Contains(string(status), "Uid:\t0\t0\t0\t0\n") {
		t.Errorf("the master does not keep root:\n%s", status)
	}
	if got, _ := requests(lbClient(t, 5*time.Second), lb.url, 3); got["cp1"] != 3 {
		t.Fatalf("served %v, want 3 responses from cp1", got)
	}
}

// TestLiveHAProxyReloadKeepsConnections changes the backend list and
// reloads haproxy while a long response is in flight.
func TestLiveHAProxyReloadKeepsConnections(t *testing.T) {
	testhost.Real(t, "running load balancers")
	procs := startBackends(t, "127.0.0.2", "127.0.0.3", "127.0.0.4")
	lb := startHAProxy(t, backendsOf(procs[:2]))
	lb.waitState(t, "cp1", "2")
	lb.waitState(t, "cp2", "2")
	client := lbClient(t, 30*time.Second)

	resp, err := client.Get(lb.url + "/stream?lines=20") //nolint:bodyclose // closed below, after the stream is read
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	streamDone, firstLine := make(chan []string, 1), make(chan struct{})
	go func() {
		var lines []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if lines = append(lines, sc.Text()); len(lines) == 1 {
				close(firstLine)
			}
		}
		streamDone <- lines
	}()
	select { // the response is in flight once its first line is here
	case <-firstLine:
	case lines := <-streamDone:
		t.Fatalf("the stream ended before the reload with %d lines", len(lines))
	}

	lb.spec.Backends = backendsOf(procs[1:]) // cp1 leaves, cp3 joins
	lb.write(t)
	lb.reload(t, "cp3")
	select {
	case lines := <-streamDone:
		t.Fatalf("the stream had ended (%d lines) when the reload took: nothing was in flight", len(lines))
	default:
	}
	lb.waitState(t, "cp3", "2")
	lines := <-streamDone
	if len(lines) != 20 {
		t.Fatalf("the in-flight response was cut by the reload after %d of 20 lines", len(lines))
	}
	seen, failed := requests(client, lb.url, 20)
	if failed != 0 || seen["cp1"] != 0 || seen["cp3"] == 0 {
		t.Fatalf("after reload: %d failed, answers %v; want cp2 and cp3 only", failed, seen)
	}
	t.Logf("reload with a changed backend list: in-flight response complete (%d lines), new requests %v", len(lines), seen)
}

// TestLiveHAProxyReloadWithoutStatsSocketRefusesNothing: in master-worker
// mode (-W, as systemd's -Ws), the master hands the listening sockets to
// the new worker by itself, so a configuration without a stats socket
// reloads without refusing or resetting a connection: new TLS
// connections through the load balancer, and its health port, while it
// reloads ten times. The health port of an external load balancer, which
// keepalived's track script reads, never says unhealthy meanwhile: the
// worker a reload replaces counts no server while it stops.
func TestLiveHAProxyReloadWithoutStatsSocketRefusesNothing(t *testing.T) {
	testhost.Real(t, "running load balancers")
	procs := startBackends(t, "127.0.0.2", "127.0.0.3")
	health := testhost.FreePort(t, "127.0.0.1")
	lb := startHAProxyWith(t, backendsOf(procs), func(s *Spec) {
		s.Role = External
		s.Runtime.StatsSocket, s.HealthcheckPort, s.Runtime.HealthOnLoopback = "", health, true
	})
	client := lbClient(t, 5*time.Second)
	client.Transport.(*http.Transport).DisableKeepAlives = true // a new connection for every request
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, failed := requests(client, lb.url, 1); failed == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the load balancer did not serve")
		}
		time.Sleep(100 * time.Millisecond)
	}
	healthURL := fmt.Sprintf("http://127.0.0.1:%d/healthz", health)
	stop := make(chan struct{})
	type tally struct{ sent, failed int }
	// Through the load balancer, then its health port, polled by several
	// clients: the old worker's last answers last well under a millisecond.
	urls := []string{lb.url + "/whoami", healthURL, healthURL, healthURL, healthURL, healthURL, healthURL}
	counts := make([]tally, len(urls))
	var wg sync.WaitGroup
	for i, url := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := &counts[i]
			for {
				select {
				case <-stop:
					return
				default:
				}
				n.sent++
				resp, err := client.Get(url)
				if err != nil {
					n.failed++
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					n.failed++
				}
			}
		}()
	}
	for range 10 {
		time.Sleep(200 * time.Millisecond)
		if err := lb.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	through, healthz := counts[0], tally{}
	for _, c := range counts[1:] {
		healthz.sent, healthz.failed = healthz.sent+c.sent, healthz.failed+c.failed
	}
	if through.failed+healthz.failed != 0 || through.sent < 20 || healthz.sent < 20 {
		t.Fatalf("during ten reloads: %d of %d requests failed, %d of %d health checks", through.failed, through.sent, healthz.failed, healthz.sent)
	}
	t.Logf("ten reloads without a stats socket: %d requests and %d health checks, none failed", through.sent, healthz.sent)
}

// startNginx runs a real nginx in front of backends until the test ends.
func startNginx(t *testing.T, backends []Backend) *liveLB {
	t.Helper()
	nginx := requireBinary(t, "nginx")
	lb := &liveLB{dir: t.TempDir()}
	port := testhost.FreePort(t, "127.0.0.1")
	lb.url = fmt.Sprintf("https://127.0.0.1:%d", port)
	lb.spec = Spec{Listen: []ListenAddr{{Address: "127.0.0.1", Port: port}}, Backends: backends,
		HealthCheck: HealthCheck{InsecureSkipVerify: true},
		Runtime:     Runtime{PIDFile: filepath.Join(lb.dir, "nginx.pid"), NginxStreamModule: streamModule}}
	text, err := RenderNginx(lb.spec)
	if err != nil {
		t.Fatal(err)
	}
	lb.config = filepath.Join(lb.dir, "nginx.conf")
	os.WriteFile(lb.config, []byte(text), 0o644)
	lb.cmd = exec.Command(nginx, "-p", lb.dir, "-e", "stderr", "-c", lb.config, "-g", "daemon off;")
	lb.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := lb.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-lb.cmd.Process.Pid, syscall.SIGKILL); lb.cmd.Wait() })
	return lb
}

func TestLiveNginxFailover(t *testing.T) {
	testhost.Real(t, "running load balancers")
	procs := startBackends(t, "127.0.0.2", "127.0.0.3", "127.0.0.4")
	url := startNginx(t, backendsOf(procs)).url
	client := lbClient(t, 3*time.Second)
	waitFor(t, 10*time.Second, "nginx serving", func() bool { _, f := requests(client, url, 1); return f == 0 })
	if seen, failed := requests(client, url, 30); failed != 0 || len(seen) != 3 {
		t.Fatalf("through nginx: %d failed, answers %v", failed, seen)
	}
	// A dead apiserver refuses connections: nginx moves on to the next
	// upstream at once, so no request fails.
	procs[0].kill()
	seen, failed := requests(client, url, 60)
	t.Logf("nginx, killed apiserver: %d of 60 requests failed, answers %v", failed, seen)
	if failed != 0 || seen["cp1"] != 0 {
		t.Fatalf("nginx after a dead backend: %d failed, answers %v", failed, seen)
	}
}

// TestLiveVerification: the check kha runs after a reload passes on a
// HAProxy that serves, reports what HAProxy says when every backend is
// down (here: certificates that do not verify against the configured CA),
// and passes on nginx once it forwards TLS.
func TestLiveVerification(t *testing.T) {
	testhost.Real(t, "running load balancers")
	procs := startBackends(t, "127.0.0.2", "127.0.0.3")
	dial := Dialer(func(ctx context.Context, address string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", address)
	})
	metrics := testhost.FreePort(t, "127.0.0.1")
	lb := startHAProxyWith(t, backendsOf(procs), func(s *Spec) {
		s.HealthcheckPort, s.Observability.Metrics = metrics, true
	})
	text, _ := RenderHAProxy(lb.spec)
	start := time.Now()
	if err := VerificationFor(HAProxy, lb.spec, text, 15*time.Second).Run(context.Background(), dial); err != nil {
		t.Fatalf("a serving HAProxy failed verification: %v", err)
	}
	t.Logf("HAProxy verified %s after it started", time.Since(start).Round(time.Millisecond))

	// Another configuration than the running one is not verified by it.
	other := lb.spec
	other.Timeouts.Connect = 2 * time.Second
	otherText, _ := RenderHAProxy(other)
	err := VerificationFor(HAProxy, other, otherText, time.Second).Run(context.Background(), dial)
	if err == nil || !strings.Contains(err.Error(), "does not run the new configuration") {
		t.Fatalf("verification accepted a process running another configuration: %v", err)
	}

	// A CA that did not sign the apiservers: every check fails.
	wrongCA := filepath.Join(t.TempDir(), "other-ca.crt")
	os.WriteFile(wrongCA, []byte(testhost.OtherCAPEM(t)), 0o644)
	bad := startHAProxyWith(t, backendsOf(procs), func(s *Spec) {
		s.HealthcheckPort, s.Observability.Metrics, s.HealthCheck.CAFile = testhost.FreePort(t, "127.0.0.1"), true, wrongCA
	})
	badText, _ := RenderHAProxy(bad.spec)
	err = VerificationFor(HAProxy, bad.spec, badText, time.Minute).Run(context.Background(), dial)
	if err == nil || !strings.Contains(err.Error(), "no apiserver is up") || !strings.Contains(err.Error(), "DOWN (check L6RSP") {
		t.Fatalf("want HAProxy's own account of the down backends, got %v", err)
	}
	// Every server down after its checks is a verdict: no waiting out the
	// timeout for a configuration that cannot recover by itself.
	if strings.Contains(err.Error(), "did not serve within") {
		t.Errorf("verification waited for its timeout although every server was down: %v", err)
	}
	t.Logf("verification of a HAProxy that serves nothing: %v", err)

	ngx := startNginx(t, backendsOf(procs))
	if err := VerificationFor(Nginx, ngx.spec, "", 15*time.Second).Run(context.Background(), dial); err != nil {
		t.Fatalf("a serving nginx failed verification: %v", err)
	}
	for _, p := range procs {
		p.kill()
	}
	if err := VerificationFor(Nginx, ngx.spec, "", time.Second).Run(context.Background(), dial); err == nil ||
		!strings.Contains(err.Error(), "TLS handshake through") {
		t.Fatalf("nginx with no apiserver passed verification: %v", err)
	}
}

// TestLivePreflight runs the throwaway instances kha starts before a
// configuration replaces the live one, with the real binaries: they serve
// on loopback whatever the role (here an external load balancer on a VIP
// this machine does not have), and a configuration that passes the
// binaries' own checks but reaches no apiserver fails verification.
func TestLivePreflight(t *testing.T) {
	testhost.Real(t, "running load balancers")
	procs := startBackends(t, "127.0.0.2", "127.0.0.3")
	dial := Dialer(func(ctx context.Context, address string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", address)
	})
	dir := t.TempDir()
	ca, wrongCA := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "other-ca.crt")
	os.WriteFile(ca, []byte(testhost.TestPKI(t).CAPEM), 0o644)
	os.WriteFile(wrongCA, []byte(testhost.OtherCAPEM(t)), 0o644)
	live := Spec{Role: External, Listen: []ListenAddr{{Address: "192.0.2.100", Port: 8443}}, Backends: backendsOf(procs),
		HealthcheckPort: 8081, HealthCheck: HealthCheck{CAFile: ca},
		Runtime: Runtime{PIDFile: "/run/live.pid", StatsSocket: "/run/live.sock", NginxStreamModule: streamModule}}
	var output bytes.Buffer // the last instance's
	run := func(t *testing.T, kind Kind, spec Spec) error {
		output.Reset()
		p, err := PreflightFor(kind, spec, testhost.FreePort(t, "127.0.0.1"), testhost.FreePort(t, "127.0.0.1"), filepath.Join(t.TempDir(), "nginx.pid"), 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, live := range []string{"192.0.2.100", "/run/live.pid", "/run/live.sock", "0.0.0.0:"} {
			if strings.Contains(p.Config, live) {
				t.Fatalf("the throwaway %s configuration uses the live instance's %s:\n%s", kind, live, p.Config)
			}
		}
		config := filepath.Join(t.TempDir(), string(kind)+".conf")
		os.WriteFile(config, []byte(p.Config), 0o644)
		cmd := exec.Command(requireBinary(t, "haproxy"), "-db", "-f", config)
		if kind == Nginx {
			cmd = exec.Command(requireBinary(t, "nginx"), "-p", filepath.Dir(config), "-e", "stderr", "-c", config, "-g", "daemon off;")
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		cmd.Stdout, cmd.Stderr = &output, &output
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
		return p.Verification.Run(context.Background(), dial)
	}
	for _, kind := range []Kind{HAProxy, Nginx} {
		if err := run(t, kind, live); err != nil {
			t.Errorf("the throwaway %s of a working configuration failed verification: %v", kind, err)
		}
	}
	wrong := live
	wrong.HealthCheck.CAFile = wrongCA
	if err := run(t, HAProxy, wrong); err == nil || !strings.Contains(err.Error(), "DOWN (check L6RSP") {
		t.Errorf("the throwaway HAProxy with a CA that signed no apiserver: want its account of the down backends, got %v", err)
	}
	// What the instance printed reaches the user once: its messages, not
	// also the same events as log lines.
	said := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(output.String()), "\n") {
		said[haproxyMessagePrefix.ReplaceAllString(line, "")]++
	}
	for line, n := range said {
		if n > 1 {
			t.Errorf("the throwaway HAProxy said %d times: %s\n%s", n, line, output.String())
		}
	}
	if !strings.Contains(output.String(), "is DOWN") {
		t.Errorf("the throwaway HAProxy did not say which servers are down:\n%s", output.String())
	}
}

// haproxyMessagePrefix is what HAProxy puts before a message on stderr.
var haproxyMessagePrefix = regexp.MustCompile(`^\[[A-Z]+\]\s+\(\d+\) : `)

// TestLiveHealthCheckTypesOnRealAPIServers checks each health check type
// of HAProxy against real kube-apiservers, one answering anonymous
// requests and one hardened (--anonymous-auth=false): the load balancer
// serves through every combination but one, the anonymous https check of
// the hardened apiserver, which kha refuses at plan time (Validate) and
// which verification reports with HAProxy's own words. nginx, checking
// nothing actively, serves through both.
func TestLiveHealthCheckTypesOnRealAPIServers(t *testing.T) {
	testhost.Real(t, "running load balancers")
	testhost.KubeDir(t)
	member := &testhost.EtcdMember{Name: "etcd1", IP: "127.0.0.1"}
	member.ClientPort, member.PeerPort = testhost.FreePort(t, "127.0.0.1"), testhost.FreePort(t, "127.0.0.1")
	etcd := testhost.StartEtcd(t, []*testhost.EtcdMember{member}, []string{"127.0.0.1"})
	apiservers := map[bool]*testhost.KubeAPIServer{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for ip, anonymous := range map[string]bool{"127.0.0.2": true, "127.0.0.3": false} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := testhost.StartKubeAPIServer(t, etcd, ip, anonymous)
			mu.Lock()
			apiservers[anonymous] = s
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(apiservers) != 2 {
		t.FailNow()
	}
	dir := t.TempDir()
	pki := testhost.TestPKI(t)
	ca := pki.WriteCAFile(t, dir)
	// The health checks' client certificate: the certificate and its key
	// side by side, as kubeadm's apiserver-kubelet-client pair.
	healthCert, _ := pki.WriteClientFiles(t, dir, "lb-health")
	// A client of the cluster, to send requests through the load balancer.
	userCert, userKey := pki.WriteClientFiles(t, dir, "user")
	pair, _ := tls.LoadX509KeyPair(userCert, userKey)
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{pair}, ServerName: "localhost"}}}
	dial := Dialer(func(ctx context.Context, address string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", address)
	})
	readyz := func(url string) error {
		resp, err := client.Get(url + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	}
	for _, anonymous := range []bool{true, false} {
		host, port, _ := net.SplitHostPort(apiservers[anonymous].Address)
		p, _ := strconv.Atoi(port)
		backends := []Backend{{Name: "kas", Address: host, Port: p}}
		for _, check := range []string{CheckHTTPS, CheckHTTPSClientCert, CheckTCP} {
			name := fmt.Sprintf("%s check with anonymous-auth=%v", check, anonymous)
			t.Run(name, func(t *testing.T) {
				tune := func(s *Spec) {
					s.HealthcheckPort, s.Observability.Metrics = testhost.FreePort(t, "127.0.0.1"), true
					s.HealthCheck = HealthCheck{Type: check, CAFile: ca}
					if check == CheckHTTPSClientCert {
						s.HealthCheck.ClientCert = healthCert
					}
				}
				spec := Spec{Listen: []ListenAddr{{Address: "127.0.0.1", Port: 6443}}, Backends: backends, AnonymousAuthOff: !anonymous}
				tune(&spec)
				refused := spec.Validate().HasErrors()
				if refused != (check == CheckHTTPS && !anonymous) {
					t.Fatalf("Validate: %v", spec.Validate())
				}
				// Run the configuration regardless, to see what the plan
				// error spares the cluster.
				lb := startHAProxyWith(t, backends, tune)
				text, _ := RenderHAProxy(lb.spec)
				err := VerificationFor(HAProxy, lb.spec, text, 20*time.Second).Run(context.Background(), dial)
				if refused {
					if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "refuses anonymous requests") {
						t.Fatalf("the anonymous check of a hardened apiserver: want HAProxy's 401, got %v", err)
					}
					if readyz(lb.url) == nil {
						t.Fatal("HAProxy served with its only apiserver marked down")
					}
					return
				}
				if err != nil {
					t.Fatalf("verification: %v", err)
				}
				if err := readyz(lb.url); err != nil {
					t.Fatalf("a request through HAProxy: %v", err)
				}
			})
		}
		t.Run(fmt.Sprintf("nginx with anonymous-auth=%v", anonymous), func(t *testing.T) {
			lb := startNginx(t, backends)
			waitFor(t, 10*time.Second, "nginx serving", func() bool { return readyz(lb.url) == nil })
		})
	}
}

// netnsNode is a network namespace of its own, with loopback and a
// non-loopback address on an interface (one end of a veth pair): a node
// as the network sees it. Whatever it runs is reached at the node address as from another
// host: the connection is made to, and comes from, an address that is
// not loopback.
type netnsNode struct {
	cmd                *exec.Cmd
	nodeIPv4, nodeIPv6 string
}

// startInNetns runs args in a new network namespace until the test ends.
func startInNetns(t *testing.T, dir string, args ...string) *netnsNode {
	t.Helper()
	testhost.Require(t, os.Geteuid() == 0, "a network namespace needs root")
	n := &netnsNode{nodeIPv4: "198.51.100.10", nodeIPv6: "fd00:198:51:100::10"}
	setup := "ip link set lo up && ip link add kha0 type veth peer name kha1 && ip addr add " + n.nodeIPv4 + "/24 dev kha0 && " +
		"ip addr add " + n.nodeIPv6 + "/64 dev kha0 nodad && ip link set kha1 up && ip link set kha0 up && : >netns-ready && " +
		"exec \"$0\" \"$@\""
	n.cmd = exec.Command(requireBinary(t, "unshare"), append([]string{"--net", "--", "sh", "-c", setup}, args...)...)
	var stderr bytes.Buffer
	n.cmd.Dir, n.cmd.Stderr = dir, &stderr
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		n.cmd.Wait()
		if t.Failed() {
			t.Logf("%s in its network namespace:\n%s", args[0], stderr.String())
		}
	})
	// Until then, a connection would be made in this test's namespace.
	waitFor(t, 10*time.Second, "the network namespace", func() bool {
		_, err := os.Stat(filepath.Join(dir, "netns-ready"))
		return err == nil
	})
	return n
}

// dial connects from inside the namespace.
func (n *netnsNode) dial(ctx context.Context, address string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// The thread goes into the namespace for the socket's creation (a
		// socket stays in the namespace it was made in) and comes back.
		// A thread that cannot come back stays locked and ends with this
		// goroutine; one that comes back must, since a thread that ends
		// kills the children it started (Pdeathsig), such as the node's.
		runtime.LockOSThread()
		own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			done <- result{nil, err}
			return
		}
		defer own.Close()
		ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", n.cmd.Process.Pid))
		if err != nil {
			done <- result{nil, err}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{nil, fmt.Errorf("setns: %w", err)}
			return
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", address)
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{conn, err}
	}()
	r := <-done
	return r.conn, r.err
}

// get fetches an HTTP URL from inside the namespace.
func (n *netnsNode) get(url string) (status int, header http.Header, body string, err error) {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, address string) (net.Conn, error) { return n.dial(ctx, address) }}}
	resp, err := client.Get(url)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), err
}

// startHealthPortInNetns runs the real load balancer of kind in a network
// namespace of its own, listening on loopback with a health port 8081
// (tune sets the rest), and returns it with the configuration it runs.
func startHealthPortInNetns(t *testing.T, kind Kind, tune func(*Spec)) (*netnsNode, string) {
	t.Helper()
	dir := t.TempDir()
	spec := Spec{Listen: []ListenAddr{{Address: "127.0.0.1", Port: 6443}, {Address: "::1", Port: 6443}},
		Backends:        []Backend{{Name: "cp1", Address: "198.51.100.11", Port: 6443}},
		HealthcheckPort: 8081, HealthCheck: HealthCheck{InsecureSkipVerify: true},
		Runtime: Runtime{PIDFile: filepath.Join(dir, "lb.pid"), NginxStreamModule: streamModule}}
	tune(&spec)
	config := filepath.Join(dir, "lb.conf")
	render := RenderHAProxy
	args := []string{requireBinary(t, "haproxy"), "-db", "-f", config}
	if kind == Nginx {
		render = RenderNginx
		args = []string{requireBinary(t, "nginx"), "-p", dir, "-e", "stderr", "-c", config, "-g", "daemon off;"}
	}
	text, err := render(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return startInNetns(t, dir, args...), text
}

// TestLiveMetricsStayOnLoopback runs the real haproxy and nginx on a node
// of their own (a network namespace with a non-loopback address) with a
// health port: /healthz answers on the node's IPv4 and IPv6 addresses as
// on loopback, the metrics (HAProxy's /metrics, nginx's stub_status)
// answer on loopback only, as kha's verification after a reload reads
// them, unless metrics_listen = "all" exposes them.
func TestLiveMetricsStayOnLoopback(t *testing.T) {
	testhost.Real(t, "running load balancers")
	for _, kind := range []Kind{HAProxy, Nginx} {
		for _, exposed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s exposed=%v", kind, exposed), func(t *testing.T) {
				metricsPath, marker := "/metrics", "haproxy_process_"
				if kind == Nginx {
					metricsPath, marker = "/stub_status", "Active connections:"
				}
				node, text := startHealthPortInNetns(t, kind, func(s *Spec) {
					s.HealthcheckListen, s.Observability = HealthcheckListenAll, Observability{Metrics: true, ExposeMetrics: exposed}
				})
				nodeV4 := "http://" + net.JoinHostPort(node.nodeIPv4, "8081")
				nodeV6 := "http://" + net.JoinHostPort(node.nodeIPv6, "8081")
				waitFor(t, 10*time.Second, string(kind)+" serving /healthz on the node address", func() bool {
					status, _, _, err := node.get(nodeV4 + "/healthz")
					return err == nil && status == http.StatusOK
				})
				for _, base := range []string{nodeV4, nodeV6, "http://127.0.0.1:8081", "http://[::1]:8081"} {
					if status, _, _, err := node.get(base + "/healthz"); err != nil || status != http.StatusOK {
						t.Errorf("%s/healthz: %d %v, want 200", base, status, err)
					}
				}
				for _, base := range []string{"http://127.0.0.1:8081", "http://[::1]:8081"} {
					status, header, body, err := node.get(base + metricsPath)
					if err != nil || status != http.StatusOK || !strings.Contains(body, marker) {
						t.Errorf("%s%s on loopback: %d %v, want 200 with %q:\n%.300s", base, metricsPath, status, err, marker, body)
					}
					// What the verification after a reload checks.
					if id := header.Get("X-Kha-Config"); kind == HAProxy && id != ConfigID(text) {
						t.Errorf("%s%s: X-Kha-Config %q, want %q", base, metricsPath, id, ConfigID(text))
					}
				}
				for _, base := range []string{nodeV4, nodeV6} {
					status, _, body, err := node.get(base + metricsPath)
					served := err == nil && status == http.StatusOK && strings.Contains(body, marker)
					if served != exposed {
						t.Errorf("%s%s on the node address: %d %v (served: %v, want %v):\n%.300s", base, metricsPath, status, err, served, exposed, body)
					}
				}
			})
		}
	}
}

// TestLiveHealthPortListens: the real HAProxy and nginx answer /healthz
// on the host's loopback, and on the node's addresses only with
// healthcheck_listen = "all" (an external load balancer's default).
func TestLiveHealthPortListens(t *testing.T) {
	testhost.Real(t, "running load balancers")
	for _, kind := range []Kind{HAProxy, Nginx} {
		for _, listen := range []string{HealthcheckListenLoopback, HealthcheckListenAll} {
			t.Run(fmt.Sprintf("%s %s", kind, listen), func(t *testing.T) {
				node, _ := startHealthPortInNetns(t, kind, func(s *Spec) { s.HealthcheckListen = listen })
				healthy := func(base string) bool {
					status, _, _, err := node.get(base + "/healthz")
					return err == nil && status == http.StatusOK
				}
				waitFor(t, 10*time.Second, string(kind)+" serving /healthz on loopback", func() bool { return healthy("http://127.0.0.1:8081") })
				if !healthy("http://[::1]:8081") {
					t.Errorf("http://[::1]:8081/healthz does not answer")
				}
				for _, base := range []string{"http://" + net.JoinHostPort(node.nodeIPv4, "8081"), "http://" + net.JoinHostPort(node.nodeIPv6, "8081")} {
					if got, want := healthy(base), listen == HealthcheckListenAll; got != want {
						t.Errorf("%s/healthz answers: %v, want %v", base, got, want)
					}
				}
			})
		}
	}
}
