package keepalived

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"

	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/kha/terraform-provider-kha/internal/problem"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

func pair(node string) Spec {
	return Spec{Node: node, VIP: "10.77.100.100", VIPPrefix: 24, Interface: "eth0", VirtualRouterID: 77,
		Nodes:        []Node{{Name: "lb1", IP: "10.77.100.1", Priority: 150}, {Name: "lb2", IP: "10.77.100.2", Priority: 100}},
		TrackCommand: "/usr/bin/curl -sf -o /dev/null http://127.0.0.1:8081/healthz"}
}

func requireKeepalived(t testing.TB) string {
	p, err := exec.LookPath("keepalived")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/keepalived"); serr == nil {
			p, err = "/usr/sbin/keepalived", nil
		}
	}
	testhost.Require(t, err == nil, "keepalived is not installed")
	return p
}

// hostInterface is a non-loopback interface of this machine.
func hostInterface(t testing.TB) string {
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifaces {
		if i.Flags&net.FlagLoopback == 0 && problem.IsIdentifier(i.Name) {
			return i.Name
		}
	}
	t.Fatal("keepalived -t needs a non-loopback interface; this machine has none")
	return ""
}

// check runs keepalived -t on a configuration.
func check(t *testing.T, keepalived, text string) error {
	t.Helper()
	f := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(keepalived, "-t", "-f", f).CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

func TestRenderPassesKeepalivedCheck(t *testing.T) {
	keepalived := requireKeepalived(t)
	for _, node := range []string{"lb1", "lb2"} {
		text, err := Render(pair(node))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"unicast_src_ip 10.77.100.", "10.77.100.100/24 dev eth0", "kha_track_lb", "virtual_router_id 77"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: missing %q in\n%s", node, want, text)
			}
		}
		if err := check(t, keepalived, text); err != nil {
			t.Errorf("keepalived -t rejects the %s config: %v\n%s", node, err, text)
		}
	}
	lb1, _ := Render(pair("lb1"))
	if !strings.Contains(lb1, "priority 150") || !strings.Contains(lb1, "unicast_peer {\n        10.77.100.2\n") {
		t.Errorf("lb1 config:\n%s", lb1)
	}
	// Sub-second VRRPv3 adverts, a one-failure track script with room
	// for its own worst case, and a preempt delay against flapping.
	for _, want := range []string{"vrrp_version 3\n", "advert_int 0.25\n", "preempt_delay 2\n", "fall 1\n", "rise 2\n", "timeout 30\n"} {
		if !strings.Contains(lb1, want) {
			t.Errorf("lb1 config lacks %q:\n%s", want, lb1)
		}
	}
	s := pair("lb1")
	s.NoPreempt, s.AdvertInterval = true, 1500*time.Millisecond
	if text, _ := Render(s); strings.Contains(text, "preempt_delay") || !strings.Contains(text, "nopreempt\n") || !strings.Contains(text, "advert_int 1.5\n") {
		t.Errorf("nopreempt config:\n%s", text)
	} else if err := check(t, keepalived, text); err != nil {
		t.Errorf("keepalived -t rejects the nopreempt config: %v", err)
	}
}

// TestRenderHoldsPreviousVIPs: while clients move to a new VIP, the
// interim configuration holds the previous one too, and keepalived
// accepts it.
func TestRenderHoldsPreviousVIPs(t *testing.T) {
	keepalived := requireKeepalived(t)
	s := pair("lb1")
	s.Interface = hostInterface(t)
	s.PreviousVIPs = []string{"10.77.100.99/24"}
	text, err := Render(s)
	if err != nil {
		t.Fatal(err)
	}
	// The previous VIP stays advertised, so that the peer, which may not
	// have reloaded yet, keeps taking this node's adverts.
	want := fmt.Sprintf("    virtual_ipaddress {\n        10.77.100.99/24 dev %[1]s\n    }\n    virtual_ipaddress_excluded {\n"+
		"        10.77.100.100/24 dev %[1]s\n    }\n", s.Interface)
	if !strings.Contains(text, want) {
		t.Errorf("want\n%s\nin\n%s", want, text)
	}
	if err := check(t, keepalived, text); err != nil {
		t.Errorf("keepalived -t rejects the interim config: %v\n%s", err, text)
	}
}

// TestTrackScript runs the rendered track script against a health
// endpoint: it passes while the endpoint answers 200, fails at its first
// check when the endpoint answers otherwise or is gone, and fails on a
// timed-out check only when no check of the run is answered.
func TestTrackScript(t *testing.T) {
	_, err := os.Stat("/usr/bin/curl")
	testhost.Require(t, err == nil, "curl is not installed")
	// health serves answer(n) for the n-th request (from 1): a status, or
	// a pause longer than curl's limit that answers nothing in time.
	health := func(answer func(n int) int) (url string, requests func() int) {
		var mu sync.Mutex
		n := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			n++
			status := answer(n)
			mu.Unlock()
			if status == 0 {
				time.Sleep(time.Second)
				return
			}
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/healthz", func() int { mu.Lock(); defer mu.Unlock(); return n }
	}
	run := func(url string) error {
		script := filepath.Join(t.TempDir(), "track.sh")
		if err := os.WriteFile(script, []byte(TrackScript(url)), 0o755); err != nil {
			t.Fatal(err)
		}
		return exec.Command(script).Run()
	}
	const noAnswer = 0
	cases := []struct {
		name     string
		answer   func(n int) int
		pass     bool
		requests int
	}{
		{"healthy", func(int) int { return 200 }, true, 4},
		{"unhealthy fails at the first check", func(int) int { return 503 }, false, 1},
		{"unhealthy after two good checks", func(n int) int {
			if n <= 2 {
				return 200
			}
			return 503
		}, false, 3},
		{"a busy node: three checks unanswered in time, the last answered", func(n int) int {
			if n <= 3 {
				return noAnswer
			}
			return 200
		}, true, 4},
		{"hung: no check answered in time", func(int) int { return noAnswer }, false, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url, requests := health(c.answer)
			err := run(url)
			if (err == nil) != c.pass {
				t.Fatalf("passed: %v, want %v (%v)", err == nil, c.pass, err)
			}
			if got := requests(); got != c.requests {
				t.Errorf("the script made %d checks, want %d", got, c.requests)
			}
		})
	}
	t.Run("gone", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		if err := run(srv.URL + "/healthz"); err == nil {
			t.Fatal("a load balancer that is gone passed")
		}
	})
	// A healthy load balancer that answers each check slowly, within
	// curl's limit, passes, and within the run's bound (trackTimeout):
	// keepalived would count a longer run as a failure and drop the VIP.
	t.Run("slow but answering", func(t *testing.T) {
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			time.Sleep(400 * time.Millisecond)
		}))
		defer slow.Close()
		start := time.Now()
		if err := run(slow.URL + "/healthz"); err != nil {
			t.Fatalf("a healthy, slow load balancer failed: %v", err)
		}
		if took := time.Since(start); took >= trackTimeout*time.Second {
			t.Fatalf("the run took %s, keepalived's timeout is %d s: a healthy load balancer would lose the VIP", took, trackTimeout)
		}
	})
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name, path string
		mutate     func(*Spec)
	}{
		{"bad vip", "vip", func(s *Spec) { s.VIP = "127.0.0.1" }},
		{"one node", "nodes", func(s *Spec) { s.Nodes = s.Nodes[:1] }},
		{"equal priorities", "nodes[1].priority", func(s *Spec) { s.Nodes[1].Priority = 150 }},
		{"family mismatch", "nodes[1].ip", func(s *Spec) { s.Nodes[1].IP = "fd00::2" }},
		{"unknown node", "node", func(s *Spec) { s.Node = "lb9" }},
		{"router id", "virtual_router_id", func(s *Spec) { s.VirtualRouterID = 256 }},
		{"relative track command", "track_command", func(s *Spec) { s.TrackCommand = "curl localhost" }},
		{"quote in track command", "track_command", func(s *Spec) { s.TrackCommand = `/bin/sh -c "x"` }},
		{"interface", "interface", func(s *Spec) { s.Interface = "eth 0" }},
		{"advert interval off the centisecond", "advert_interval", func(s *Spec) { s.AdvertInterval = 255 * time.Millisecond }},
		{"advert interval too long", "advert_interval", func(s *Spec) { s.AdvertInterval = time.Minute }},
		{"negative preempt delay", "preempt_delay", func(s *Spec) { s.PreemptDelay = -time.Second }},
		{"previous VIP not a prefix", "vip", func(s *Spec) { s.PreviousVIPs = []string{"10.77.100.99\ndev lo"} }},
		{"previous VIP of another family", "vip", func(s *Spec) { s.PreviousVIPs = []string{"fd00::99/64"} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := pair("lb1")
			s.Nodes = append([]Node{}, s.Nodes...)
			tc.mutate(&s)
			for _, p := range s.Validate() {
				if p.Path.String() == tc.path {
					if _, err := Render(s); err == nil {
						t.Error("an invalid spec rendered")
					}
					return
				}
			}
			t.Errorf("want a problem at %s, got %v", tc.path, s.Validate())
		})
	}
}

// livePair is keepalived run with the rendered configs in two network
// namespaces joined by a veth pair, each node's track command passing
// while its healthy file exists.
type livePair struct {
	ns  map[string]string
	dir string
}

func startLivePair(t *testing.T) *livePair {
	keepalived := requireKeepalived(t)
	_, err := exec.LookPath("ip")
	testhost.Require(t, err == nil && os.Geteuid() == 0, "network namespaces need iproute2 and root")
	suffix := make([]byte, 3)
	rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	p := &livePair{ns: map[string]string{"lb1": "kha-ka1-" + id, "lb2": "kha-ka2-" + id}, dir: t.TempDir()}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	for _, n := range p.ns {
		ip("netns", "add", n)
		name := n
		t.Cleanup(func() {
			out, _ := exec.Command("ip", "netns", "pids", name).Output()
			for _, pid := range strings.Fields(string(out)) {
				_ = exec.Command("kill", "-9", pid).Run() // it may have exited
			}
			if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
				t.Errorf("ip netns del %s: %v: %s", name, err, out)
			}
		})
	}
	ip("link", "add", "kv1-"+id, "type", "veth", "peer", "name", "kv2-"+id)
	for i, node := range []string{"lb1", "lb2"} {
		dev := fmt.Sprintf("kv%d-%s", i+1, id)
		ip("link", "set", dev, "netns", p.ns[node])
		ip("-n", p.ns[node], "link", "set", dev, "name", "eth0")
		ip("-n", p.ns[node], "addr", "add", fmt.Sprintf("10.77.100.%d/24", i+1), "dev", "eth0")
		ip("-n", p.ns[node], "link", "set", "eth0", "up")
		ip("-n", p.ns[node], "link", "set", "lo", "up")
	}
	for _, node := range []string{"lb1", "lb2"} {
		os.WriteFile(p.healthy(node), nil, 0o644)
		cfg := p.write(t, node, p.spec(node))
		cmd := exec.Command("ip", "netns", "exec", p.ns[node], keepalived, "-n", "-l", "-D", "-f", cfg,
			"-p", filepath.Join(p.dir, node+".pid"), "-r", filepath.Join(p.dir, node+"-vrrp.pid"), "-c", filepath.Join(p.dir, node+"-chk.pid"))
		log, _ := os.Create(filepath.Join(p.dir, node+".log"))
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	return p
}

func (p *livePair) healthy(node string) string { return filepath.Join(p.dir, node+"-healthy") }

// spec is node's spec, tracking its healthy file.
func (p *livePair) spec(node string) Spec {
	s := pair(node)
	s.TrackCommand = "/usr/bin/test -e " + p.healthy(node)
	return s
}

// write renders s into node's config file.
func (p *livePair) write(t *testing.T, node string, s Spec) string {
	text, err := Render(s)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(p.dir, node+".conf")
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// reload renders s for node and reloads its keepalived, as reload_command does.
func (p *livePair) reload(t *testing.T, node string, s Spec) {
	p.write(t, node, s)
	pid, err := os.ReadFile(filepath.Join(p.dir, node+".pid"))
	if err == nil {
		err = exec.Command("kill", "-HUP", strings.TrimSpace(string(pid))).Run()
	}
	if err != nil {
		t.Fatalf("reloading %s: %v", node, err)
	}
}

// holders lists the nodes that have addr (no prefix) on their eth0.
func (p *livePair) holders(addr string) []string {
	var out []string
	for _, node := range []string{"lb1", "lb2"} {
		b, _ := exec.Command("ip", "-n", p.ns[node], "-br", "addr", "show", "eth0").Output()
		if strings.Contains(string(b), " "+addr+"/") {
			out = append(out, node)
		}
	}
	return out
}

// TestLiveVIPFailover: the VIP starts on lb1, moves to lb2 when lb1's load
// balancer reports unhealthy, and comes back.
func TestLiveVIPFailover(t *testing.T) {
	testhost.Real(t, "running keepalived pairs in network namespaces")
	p := startLivePair(t)
	ns, dir, healthy := p.ns, p.dir, p.healthy
	holder := func() string {
		if h := p.holders("10.77.100.100"); len(h) == 1 {
			return h[0]
		}
		return ""
	}
	waitHolder := func(want string, limit time.Duration) time.Duration {
		start := time.Now()
		for time.Since(start) < limit {
			if holder() == want {
				return time.Since(start)
			}
			time.Sleep(50 * time.Millisecond)
		}
		logs, _ := os.ReadFile(filepath.Join(dir, "lb1.log"))
		t.Fatalf("VIP not on %s within %s (on %q)\n%s", want, limit, holder(), logs)
		return 0
	}
	first := waitHolder("lb1", 20*time.Second)
	os.Remove(healthy("lb1"))
	moved := waitHolder("lb2", 15*time.Second)
	os.WriteFile(healthy("lb1"), nil, 0o644)
	back := waitHolder("lb1", 20*time.Second)
	t.Logf("VIP on lb1 after %s; lb1's load balancer unhealthy -> VIP on lb2 after %s; healthy again -> back after %s",
		first.Round(time.Millisecond), moved.Round(time.Millisecond), back.Round(time.Millisecond))
	// lb1 goes silent (its keepalived frozen, as on a host that hangs or
	// drops off the network): lb2 hears no adverts and takes over. The VIP
	// stays configured on the frozen lb1, so only lb2 is asked about.
	out, _ := exec.Command("ip", "netns", "pids", ns["lb1"]).Output()
	for _, pid := range strings.Fields(string(out)) {
		if out, err := exec.Command("kill", "-STOP", pid).CombinedOutput(); err != nil {
			t.Fatalf("freezing lb1's process %s: %v: %s", pid, err, out)
		}
	}
	start := time.Now()
	for {
		out, _ := exec.Command("ip", "-n", ns["lb2"], "-br", "addr", "show", "eth0").Output()
		if strings.Contains(string(out), "10.77.100.100/24") {
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatal("lb2 did not take the VIP over from a silent lb1")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("lb1 silent -> VIP on lb2 after %s", time.Since(start).Round(time.Millisecond))
}

// FuzzRender: any spec either fails Validate or renders a configuration
// that names the node's own priority and every peer and that keepalived -t
// accepts. keepalived -t refuses interfaces the machine lacks (and
// loopback), so the check renders the same spec on one of the machine's.
func FuzzRender(f *testing.F) {
	f.Add("lb1", "10.0.0.100", 24, "eth0", 77, "10.0.0.1", 150, "10.0.0.2", 100, "/usr/bin/true", false)
	f.Add("b", "fd00::100", 64, "ens3", 1, "fd00::1", 1, "fd00::2", 254, "", true)
	keepalived, machineIface := requireKeepalived(f), hostInterface(f)
	f.Fuzz(func(t *testing.T, node, vip string, prefix int, iface string, vrid int, ip1 string, p1 int, ip2 string, p2 int, track string, noPreempt bool) {
		s := Spec{Node: node, VIP: vip, VIPPrefix: prefix, Interface: iface, VirtualRouterID: vrid, TrackCommand: track, NoPreempt: noPreempt,
			Nodes: []Node{{Name: "a", IP: ip1, Priority: p1}, {Name: "b", IP: ip2, Priority: p2}}}
		text, err := Render(s)
		if s.Validate().HasErrors() != (err != nil) {
			t.Fatalf("Validate and Render disagree: %v / %v", s.Validate(), err)
		}
		if err != nil {
			return
		}
		own, peer := s.Nodes[0], s.Nodes[1]
		if node == "b" {
			own, peer = peer, own
		}
		if !strings.Contains(text, fmt.Sprintf("priority %d\n", own.Priority)) || !strings.Contains(text, "        "+peer.IP+"\n") {
			t.Fatalf("config lacks the node's priority or its peer:\n%s", text)
		}
		s.Interface = machineIface
		onHost, err := Render(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := check(t, keepalived, onHost); err != nil {
			t.Fatalf("valid spec, rejected config: %v\n%s", err, onHost)
		}
	})
}

// TestLiveVIPMovesWithoutSplitBrain moves the VIP to another address as a
// handover does, each node reloaded 2.5 s after the other (longer than the
// peer waits for adverts): the interim configuration, then the final one.
// At no moment does lb2, the backup, hold an address: a node that drops
// the adverts of a peer whose addresses differ from its own would take
// the peer for gone and hold the VIP too.
func TestLiveVIPMovesWithoutSplitBrain(t *testing.T) {
	testhost.Real(t, "running keepalived pairs in network namespaces")
	p := startLivePair(t)
	for start := time.Now(); !slices.Equal(p.holders("10.77.100.100"), []string{"lb1"}); time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("the VIP is on %v, not lb1", p.holders("10.77.100.100"))
		}
	}
	watch := func(what string) {
		for start := time.Now(); time.Since(start) < 2500*time.Millisecond; time.Sleep(10 * time.Millisecond) {
			if h := append(p.holders("10.77.100.100"), p.holders("10.77.100.101")...); slices.Contains(h, "lb2") {
				logs, _ := os.ReadFile(filepath.Join(p.dir, "lb2.log"))
				t.Fatalf("%s: lb2 holds an address (%v) after %s\n%s", what, h, time.Since(start).Round(time.Millisecond), logs)
			}
		}
	}
	moving := func(node string) Spec {
		s := p.spec(node)
		s.VIP, s.PreviousVIPs = "10.77.100.101", []string{"10.77.100.100/24"}
		return s
	}
	moved := func(node string) Spec {
		s := p.spec(node)
		s.VIP = "10.77.100.101"
		return s
	}
	p.reload(t, "lb1", moving("lb1"))
	watch("lb1 on the interim configuration, lb2 not yet")
	if got := p.holders("10.77.100.101"); !slices.Equal(got, []string{"lb1"}) {
		t.Fatalf("the new VIP is on %v during the handover, not lb1", got)
	}
	p.reload(t, "lb2", moving("lb2"))
	watch("both on the interim configuration")
	p.reload(t, "lb1", moved("lb1"))
	watch("lb1 on the final configuration, lb2 on the interim one")
	p.reload(t, "lb2", moved("lb2"))
	watch("both on the final configuration")
	if old, now := p.holders("10.77.100.100"), p.holders("10.77.100.101"); len(old) != 0 || !slices.Equal(now, []string{"lb1"}) {
		t.Fatalf("after the move: the old VIP on %v, the new one on %v", old, now)
	}
}
