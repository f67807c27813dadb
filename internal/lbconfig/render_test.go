package lbconfig

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	goldenCA     = "/etc/kubernetes/pki/ca.crt"
	streamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"
)

var threeBackends = []Backend{{Name: "cp1", Address: "10.0.0.11", Port: 6443}, {Name: "cp2", Address: "10.0.0.12", Port: 6443}, {Name: "cp3", Address: "10.0.0.13", Port: 6443}}

// specMatrix is the rendering test matrix.
func specMatrix() map[string]Spec {
	loop4 := []ListenAddr{{Address: "127.0.0.1", Port: 6443}}
	dual := []ListenAddr{{Address: "127.0.0.1", Port: 16443}, {Address: "::1", Port: 16443}}
	var five []Backend
	for i := 1; i <= 5; i++ {
		five = append(five, Backend{Name: fmt.Sprintf("cp%d", i), Address: fmt.Sprintf("10.0.1.%d", i), Port: 6443})
	}
	return map[string]Spec{
		"node-local-ipv4": {Listen: loop4, Backends: threeBackends, HealthCheck: HealthCheck{CAFile: goldenCA}},
		"node-local-dual-stack-healthcheck": {Listen: dual, Backends: threeBackends, HealthcheckPort: 8081,
			HealthCheck: HealthCheck{CAFile: goldenCA}, Observability: Observability{Metrics: true}},
		"node-local-ipv6-only": {Listen: []ListenAddr{{Address: "::1", Port: 6443}},
			Backends:    []Backend{{Name: "cp1", Address: "fd00:10::11", Port: 6443}, {Name: "cp2", Address: "fd00:10::12", Port: 6443}},
			HealthCheck: HealthCheck{InsecureSkipVerify: true}},
		"node-local-one-backend": {Listen: loop4, Backends: threeBackends[:1], HealthCheck: HealthCheck{CAFile: goldenCA}},
		"node-local-five-backends-roundrobin": {Listen: loop4, Backends: five, Balance: BalanceRoundRobin,
			HealthCheck: HealthCheck{CAFile: goldenCA, Path: "/healthz", Interval: time.Second, Fall: 3, Rise: 1}},
		"control-plane-local-first": {Listen: []ListenAddr{{Address: "127.0.0.1", Port: 16443}}, Backends: threeBackends,
			LocalFirst: "cp2", HealthCheck: HealthCheck{CAFile: goldenCA}},
		"etcd-local-proxy-tcp-check": {Name: "etcd", Listen: []ListenAddr{{Address: "127.0.0.1", Port: 2379}},
			Backends:    []Backend{{Name: "etcd1", Address: "10.0.0.11", Port: 2379}, {Name: "etcd2", Address: "10.0.0.12", Port: 2379}},
			HealthCheck: HealthCheck{Type: CheckTCP}},
		"external-vip": {Role: External, Listen: []ListenAddr{{Address: "10.0.0.100", Port: 8443}}, Backends: threeBackends,
			HealthcheckPort: 8081, HealthCheck: HealthCheck{CAFile: goldenCA}, Timeouts: Timeouts{Client: 3 * time.Hour, Server: 3 * time.Hour}, MaxConn: 20000,
			Observability: Observability{Logs: true, Metrics: true}},
		"node-local-hardened-client-cert-fallback-static-pod": {Listen: loop4, Backends: threeBackends, HealthcheckPort: 8081,
			HealthCheck:      HealthCheck{Type: CheckHTTPSClientCert, CAFile: goldenCA, ClientCert: "/etc/kubernetes/pki/apiserver-kubelet-client.crt"},
			AnonymousAuthOff: true, Fallback: &Backend{Name: "fallback", Address: "api.k8s.example.com", Port: 8443},
			Observability: Observability{Logs: true, LogTarget: LogStdout, Metrics: true}},
		"node-local-tcp-check-fallback-vip": {Listen: loop4, Backends: threeBackends, HealthCheck: HealthCheck{Type: CheckTCP},
			AnonymousAuthOff: true, Fallback: &Backend{Name: "fallback", Address: "10.0.0.100", Port: 8443}},
		"kubespray-values": {Listen: loop4, Backends: threeBackends, HealthcheckPort: 8081, HealthcheckListen: HealthcheckListenAll,
			HealthCheck: HealthCheck{Path: "/healthz", Interval: 15 * time.Second, InsecureSkipVerify: true},
			Timeouts:    Timeouts{Connect: 30 * time.Second, Client: 5 * time.Minute, Server: 15 * time.Minute},
			Servers:     Servers{SlowStart: time.Minute, MaxConn: 1000, MaxQueue: 256, FailTimeout: 10 * time.Second},
			Runtime:     Runtime{NginxWorkerConnections: 16384}, Observability: Observability{Metrics: true, ExposeMetrics: true}},
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n%s", name, got)
	}
}

// forHost gives a rendered spec paths that exist on this machine, so the
// real binaries can check it.
func forHost(t *testing.T, s Spec) Spec {
	dir, err := os.MkdirTemp("", "kha-lb-") // test names may hold '#'
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if s.HealthCheck.CAFile != "" {
		s.HealthCheck.CAFile = filepath.Join(dir, "ca.crt")
		if err := os.WriteFile(s.HealthCheck.CAFile, []byte(testhost.TestPKI(t).CAPEM), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if s.HealthCheck.ClientCert != "" {
		// A certificate and, beside it, its key: kubeadm's layout.
		s.HealthCheck.ClientCert, _ = testhost.TestPKI(t).WriteServerFiles(t, dir)
		if err := os.Rename(filepath.Join(dir, "tls.key"), filepath.Join(dir, "tls.crt")[:len(filepath.Join(dir, "tls.crt"))-4]+".key"); err != nil {
			t.Fatal(err)
		}
	}
	if fb := s.Fallback; fb != nil && fb.Address != "" {
		if _, err := netip.ParseAddr(fb.Address); err != nil {
			s.Fallback = &Backend{Name: fb.Name, Address: "localhost", Port: fb.Port} // nginx resolves names when it starts
		}
	}
	s.Runtime.PIDFile, s.Runtime.StatsSocket, s.Runtime.NginxStreamModule = filepath.Join(dir, "lb.pid"), filepath.Join(dir, "admin.sock"), streamModule
	if s.Role == External {
		// nginx -t binds its listeners, and a VIP is not on this machine
		// (on a standby it needs net.ipv4.ip_nonlocal_bind=1).
		s.Listen = []ListenAddr{{Address: "127.0.0.100", Port: s.Listen[0].Port}}
	}
	return s
}

func requireBinary(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		for _, dir := range []string{"/usr/sbin", "/sbin"} {
			if _, serr := os.Stat(filepath.Join(dir, name)); serr == nil {
				p, err = filepath.Join(dir, name), nil
			}
		}
	}
	testhost.Require(t, err == nil, name+" is not installed")
	return p
}

// checkHAProxy runs the real `haproxy -c` on a config; without -q, which
// silences the alerts that say why a config is refused.
func checkHAProxy(t *testing.T, config string) error {
	t.Helper()
	f := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(f, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(requireBinary(t, "haproxy"), "-c", "-f", f).CombinedOutput()
	if err != nil {
		return &binaryError{"haproxy -c", err, string(out)}
	}
	return nil
}

// checkNginx runs the real `nginx -t` on a config.
func checkNginx(t *testing.T, config string) error {
	t.Helper()
	dir := t.TempDir()
	f := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(f, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(requireBinary(t, "nginx"), "-t", "-q", "-p", dir, "-e", "stderr", "-c", f).CombinedOutput()
	if err != nil {
		return &binaryError{"nginx -t", err, string(out)}
	}
	return nil
}

type binaryError struct {
	cmd    string
	err    error
	output string
}

func (e *binaryError) Error() string { return e.cmd + ": " + e.err.Error() + "\n" + e.output }

func TestRenderMatrix(t *testing.T) {
	for name, spec := range specMatrix() {
		t.Run(name, func(t *testing.T) {
			if ps := spec.Validate(); len(ps) != 0 {
				t.Fatalf("matrix spec does not validate: %v", ps)
			}
			spec.Runtime.NginxStreamModule = streamModule
			hap, err := RenderHAProxy(spec)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".haproxy.cfg", hap)
			ngx, err := RenderNginx(spec)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".nginx.conf", ngx)

			onHost := forHost(t, spec)
			hap, _ = RenderHAProxy(onHost)
			if err := checkHAProxy(t, hap); err != nil {
				t.Errorf("the real haproxy rejects the config: %v\n%s", err, hap)
			}
			ngx, _ = RenderNginx(onHost)
			if err := checkNginx(t, ngx); err != nil {
				t.Errorf("the real nginx rejects the config: %v\n%s", err, ngx)
			}
		})
	}
}

// TestRenderDependsOnTheSpecOnly: a render leaves its spec as it was, and
// the same spec spelled another way (every default written out, slices
// and pointers of its own) renders the same, so nothing but the spec's
// value decides the output.
func TestRenderDependsOnTheSpecOnly(t *testing.T) {
	for name, spec := range specMatrix() {
		for kind, render := range map[string]func(Spec) (string, error){"haproxy": RenderHAProxy, "nginx": RenderNginx} {
			before := copySpec(spec)
			want, err := render(spec)
			if err != nil || want == "" {
				t.Fatalf("%s %s: %q, %v", name, kind, want, err)
			}
			if !reflect.DeepEqual(spec, before) {
				t.Errorf("%s %s: rendering changed the spec:\n%+v\nwas\n%+v", name, kind, spec, before)
			}
			for spelling, other := range map[string]Spec{"defaults written out": spec.WithDefaults(), "a copy": copySpec(spec)} {
				if got, err := render(other); err != nil || got != want {
					t.Errorf("%s %s: %s renders otherwise (%v):\n%s", name, kind, spelling, err, got)
				}
			}
		}
	}
}

// TestRenderMetricsOnLoopbackOnly: with a health port, /healthz answers
// on every address, the metrics only on connections to loopback unless
// they are exposed; a throwaway instance keeps everything on loopback.
func TestRenderMetricsOnLoopbackOnly(t *testing.T) {
	const (
		loopbackOnly = "http-request use-service prometheus-exporter if { path /metrics } { dst 127.0.0.0/8 ::1 }"
		everywhere   = "http-request use-service prometheus-exporter if { path /metrics }"
	)
	everyAddress := []string{"bind 0.0.0.0:8081", "bind [::]:8081 v6only"}
	for _, tc := range []struct {
		name     string
		tune     func(*Spec)
		hapBinds []string
		hapRule  string
		// nginx's health servers: their listen lines, and "stub_status"
		// where it is served.
		ngxServers [][]string
	}{
		{name: "default of a node-local load balancer: loopback", tune: func(*Spec) {},
			hapBinds: []string{"bind 127.0.0.1:8081", "bind [::1]:8081 v6only"}, hapRule: loopbackOnly,
			ngxServers: [][]string{{"listen 127.0.0.1:8081", "listen [::1]:8081", "stub_status"}}},
		{name: "every address", tune: func(s *Spec) { s.HealthcheckListen = HealthcheckListenAll }, hapBinds: everyAddress,
			hapRule: loopbackOnly, ngxServers: [][]string{
				{"listen 8081", "listen [::]:8081 ipv6only=on"},
				{"listen 127.0.0.1:8081", "listen [::1]:8081", "stub_status"}}},
		{name: "default of an external load balancer: every address", tune: func(s *Spec) { s.Role = External }, hapBinds: everyAddress,
			hapRule: loopbackOnly, ngxServers: [][]string{
				{"listen 8081", "listen [::]:8081 ipv6only=on"},
				{"listen 127.0.0.1:8081", "listen [::1]:8081", "stub_status"}}},
		{name: "exposed", tune: func(s *Spec) { s.HealthcheckListen, s.Observability.ExposeMetrics = HealthcheckListenAll, true },
			hapBinds: everyAddress, hapRule: everywhere, ngxServers: [][]string{{"listen 8081", "listen [::]:8081 ipv6only=on", "stub_status"}}},
		{name: "off", tune: func(s *Spec) { s.HealthcheckListen, s.Observability.Metrics = HealthcheckListenAll, false }, hapBinds: everyAddress,
			ngxServers: [][]string{{"listen 8081", "listen [::]:8081 ipv6only=on"}}},
		{name: "off, on loopback", tune: func(s *Spec) { s.Observability.Metrics = false },
			hapBinds: []string{"bind 127.0.0.1:8081", "bind [::1]:8081 v6only"}, ngxServers: [][]string{{"listen 127.0.0.1:8081", "listen [::1]:8081"}}},
		{name: "throwaway instance", tune: func(s *Spec) { s.Runtime.HealthOnLoopback = true }, hapBinds: []string{"bind 127.0.0.1:8081"},
			hapRule: loopbackOnly, ngxServers: [][]string{{"listen 127.0.0.1:8081", "stub_status"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := specMatrix()["node-local-dual-stack-healthcheck"]
			tc.tune(&s)
			hap, err := RenderHAProxy(s)
			if err != nil {
				t.Fatal(err)
			}
			frontend := section(hap, "frontend "+healthzFrontend)
			if got := lines(frontend, "    bind "); !slices.Equal(got, tc.hapBinds) {
				t.Errorf("HAProxy's health frontend: %q, want %q", got, tc.hapBinds)
			}
			if got := strings.Join(lines(frontend, "    http-request use-service"), "\n"); got != tc.hapRule {
				t.Errorf("HAProxy's metrics: %q, want %q", got, tc.hapRule)
			}
			ngx, err := RenderNginx(s)
			if err != nil {
				t.Fatal(err)
			}
			var servers [][]string
			for _, server := range strings.Split(section(ngx, "http {"), "    server {")[1:] {
				if !strings.Contains(server, "location = /healthz") {
					t.Errorf("an nginx health server without /healthz:\n%s", server)
				}
				got := lines(server, "        listen ")
				if strings.Contains(server, "stub_status;") {
					got = append(got, "stub_status")
				}
				servers = append(servers, got)
			}
			if !slices.EqualFunc(servers, tc.ngxServers, slices.Equal) {
				t.Errorf("nginx's health servers: %q, want %q", servers, tc.ngxServers)
			}
			onHost := forHost(t, s)
			hap, _ = RenderHAProxy(onHost)
			if err := checkHAProxy(t, hap); err != nil {
				t.Errorf("the real haproxy rejects the config: %v", err)
			}
			ngx, _ = RenderNginx(onHost)
			if err := checkNginx(t, ngx); err != nil {
				t.Errorf("the real nginx rejects the config: %v", err)
			}
		})
	}
}

// section is the part of a rendered configuration from the line header
// to the next blank line.
func section(text, header string) string {
	i := strings.Index(text, "\n"+header+"\n")
	if i < 0 {
		return ""
	}
	rest := text[i+1:]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// lines are the lines of text that start with prefix, trimmed.
func lines(text, prefix string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(l), ";"))
		}
	}
	return out
}

// copySpec is s with slices and pointers of its own.
func copySpec(s Spec) Spec {
	s.Listen, s.Backends = slices.Clone(s.Listen), slices.Clone(s.Backends)
	if s.Fallback != nil {
		fallback := *s.Fallback
		s.Fallback = &fallback
	}
	return s
}

func TestStaticPods(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  Pod
	}{
		{"haproxy-pod.yaml", Pod{Kind: HAProxy, ConfigDir: "/etc/haproxy", ConfigSHA256: "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881", HealthcheckPort: 8081, CAFile: goldenCA}},
		{"haproxy-client-cert-pod.yaml", Pod{Kind: HAProxy, ConfigDir: "/etc/haproxy", ConfigSHA256: "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881", CAFile: goldenCA,
			ClientCert: "/etc/kubernetes/pki/apiserver-kubelet-client.crt"}},
		{"nginx-proxy-pod.yaml", Pod{Kind: Nginx, ConfigDir: "/etc/nginx", ConfigSHA256: "a1fce4363854ff888cff4b8e7875d600c2682390412a8cf79b37d0b11148b0fa", Image: "registry.example/nginx:1.30", CPURequest: "50m"}},
		{"nginx-proxy-loopback-health-pod.yaml", Pod{Kind: Nginx, ConfigDir: "/etc/nginx", ConfigSHA256: "a1fce4363854ff888cff4b8e7875d600c2682390412a8cf79b37d0b11148b0fa", HealthcheckPort: 8081, HealthOnLoopback: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderStaticPod(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, got)
			pod := testhost.MustParsePod(t, got)
			c := pod.Spec.Containers[0]
			if pod.Kind != "Pod" || pod.APIVersion != "v1" || pod.Metadata.Namespace != "kube-system" || !pod.Spec.HostNetwork ||
				pod.Metadata.Annotations[string(tc.pod.Kind)+"-cfg-checksum"] != "sha256:"+tc.pod.ConfigSHA256 || len(pod.Spec.Containers) != 1 {
				t.Errorf("manifest metadata: %+v", pod)
			}
			if want := map[bool]int{false: 0, true: tc.pod.HealthcheckPort}[tc.pod.HealthcheckPort != 0]; c.LivenessProbe.HTTPGet.Port != want ||
				c.ReadinessProbe.HTTPGet.Port != want {
				t.Errorf("probes on %d/%d, want %d", c.LivenessProbe.HTTPGet.Port, c.ReadinessProbe.HTTPGet.Port, want)
			}
			// With hostNetwork, the kubelet asks the node's address unless
			// told: a health port on loopback needs 127.0.0.1.
			if want := map[bool]string{true: "127.0.0.1"}[tc.pod.HealthOnLoopback]; c.LivenessProbe.HTTPGet.Host != want ||
				c.ReadinessProbe.HTTPGet.Host != want {
				t.Errorf("probes ask %q/%q, want %q", c.LivenessProbe.HTTPGet.Host, c.ReadinessProbe.HTTPGet.Host, want)
			}
			mounts := map[string]string{}
			for _, m := range c.VolumeMounts {
				mounts[m.Name] = m.MountPath
			}
			for _, v := range pod.Spec.Volumes {
				if _, ok := mounts[v.Name]; !ok || v.HostPath.Path == "" {
					t.Errorf("volume %s is not mounted or has no host path", v.Name)
				}
			}
			if mounts["config"] != tc.pod.Kind.configMount() || mounts["ca"] != tc.pod.CAFile {
				t.Errorf("mounts %v", mounts)
			}
			// HAProxy finds the key of a certificate without one beside it.
			if tc.pod.ClientCert != "" && (mounts["client-cert"] != tc.pod.ClientCert ||
				mounts["client-key"] != "/etc/kubernetes/pki/apiserver-kubelet-client.key") {
				t.Errorf("client certificate mounts %v", mounts)
			}
		})
	}
	if _, err := RenderStaticPod(Pod{Kind: "envoy", ConfigDir: "/etc"}); err == nil {
		t.Error("unknown kind accepted")
	}
}

func TestValidate(t *testing.T) {
	good := specMatrix()["node-local-ipv4"]
	cases := []struct {
		name, path, substr string
		mutate             func(*Spec)
	}{
		{"no listen", "listen", "at least one", func(s *Spec) { s.Listen = nil }},
		{"node-local off loopback", "listen[0].address", "loopback", func(s *Spec) { s.Listen = []ListenAddr{{Address: "10.0.0.100", Port: 6443}} }},
		{"bad listen port", "listen[0].port", "65535", func(s *Spec) { s.Listen[0].Port = 0 }},
		{"no backends", "backends", "at least one", func(s *Spec) { s.Backends = nil }},
		{"bad backend address", "backends[1].address", "not the IP address", func(s *Spec) {
			s.Backends = append([]Backend{}, s.Backends...)
			s.Backends[1].Address = "cp2.example"
		}},
		{"duplicate backend name", "backends[1].name", "twice", func(s *Spec) {
			s.Backends = []Backend{threeBackends[0], {Name: "cp1", Address: "10.0.0.12", Port: 6443}}
		}},
		{"bad backend name", "backends[0].name", "server name", func(s *Spec) { s.Backends = []Backend{{Name: "cp 1", Address: "10.0.0.11", Port: 1}} }},
		{"unverified health checks", "health_check.ca_file", "insecure_skip_verify", func(s *Spec) { s.HealthCheck.CAFile = "" }},
		{"relative CA", "health_check.ca_file", "absolute", func(s *Spec) { s.HealthCheck.CAFile = "ca.crt" }},
		{"local first unknown", "local_first", "not a backend", func(s *Spec) { s.LocalFirst = "cp9" }},
		{"healthcheck port collides", "healthcheck_port", "includes the listen address", func(s *Spec) { s.HealthcheckPort = 6443 }},
		{"bad path", "health_check.path", "start with", func(s *Spec) { s.HealthCheck.Path = "readyz" }},
		{"control byte in path", "health_check.path", "printable ASCII", func(s *Spec) { s.HealthCheck.Path = "/ready\x00z" }},
		{"non-ASCII path", "health_check.path", "percent-encode", func(s *Spec) { s.HealthCheck.Path = "/bereitü" }},
		{"name of the health frontend", "name", "own health endpoint", func(s *Spec) { s.Name = "healthz"; s.HealthcheckPort = 8081 }},
		{"bad balance", "balance", "roundrobin", func(s *Spec) { s.Balance = "random" }},
		{"path injection", "pid_file", "absolute path", func(s *Spec) { s.Runtime.PIDFile = "/run/x;\nuser root" }},
		{"interval", "health_check.interval", "between", func(s *Spec) { s.HealthCheck.Interval = time.Millisecond }},
		{"anonymous check on a hardened cluster", "health_check.type", "https_client_cert", func(s *Spec) { s.AnonymousAuthOff = true }},
		{"client cert check without a certificate", "health_check.client_cert", "needs health_check.client_cert", func(s *Spec) { s.HealthCheck.Type = CheckHTTPSClientCert }},
		{"client cert with the anonymous check", "health_check.client_cert", "set type", func(s *Spec) { s.HealthCheck.ClientCert = "/etc/x.pem" }},
		{"user injection", "run_as", "user:group", func(s *Spec) { s.Runtime.User, s.Runtime.Group = "haproxy\n    stats socket /tmp/x", "haproxy" }},
		{"group without a user", "run_as", "user:group", func(s *Spec) { s.Runtime.Group = "haproxy" }},
		{"comma in the stats socket", "stats_socket", "splits socket addresses", func(s *Spec) { s.Runtime.StatsSocket = "/run/a,b.sock" }},
		{"bad check type", "health_check.type", "tcp", func(s *Spec) { s.HealthCheck.Type = "grpc" }},
		{"fallback on loopback", "fallback.address", "cannot be the external", func(s *Spec) { s.Fallback = &Backend{Address: "127.0.0.1", Port: 443} }},
		{"fallback garbage", "fallback.address", "neither", func(s *Spec) { s.Fallback = &Backend{Address: "lb;reload", Port: 443} }},
		{"client timeout", "proxy_timeouts.client", "between", func(s *Spec) { s.Timeouts.Client = time.Millisecond }},
		{"slowstart", "servers.slowstart", "between", func(s *Spec) { s.Servers.SlowStart = 2 * time.Hour }},
		{"fail timeout", "servers.fail_timeout", "whole seconds", func(s *Spec) { s.Servers.FailTimeout = 10 * time.Millisecond }},
		{"negative maxqueue", "servers.maxqueue", "no limit", func(s *Spec) { s.Servers.MaxQueue = -1 }},
		{"metrics exposed without a health port", "monitoring.metrics_listen", "set monitoring.metrics = true and healthcheck_port", func(s *Spec) {
			s.Observability = Observability{Metrics: true, ExposeMetrics: true}
		}},
		{"metrics exposed but off", "monitoring.metrics_listen", "set monitoring.metrics = true", func(s *Spec) {
			s.HealthcheckPort, s.Observability = 8081, Observability{ExposeMetrics: true}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			s.Listen = append([]ListenAddr{}, good.Listen...)
			tc.mutate(&s)
			for _, p := range s.Validate() {
				if p.Path.String() == tc.path && strings.Contains(p.Detail, tc.substr) {
					if _, err := RenderHAProxy(s); !errors.Is(err, ErrInvalid) {
						t.Errorf("rendering an invalid spec: %v", err)
					}
					return
				}
			}
			t.Errorf("want a problem at %s mentioning %q, got %v", tc.path, tc.substr, s.Validate())
		})
	}
}

// TestRenderRunAs: HAProxy drops root to the user and group the spec
// names, in global, which the real haproxy -c accepts where the host has
// them (Debian's haproxy package makes both) and refuses where it has
// not: the validate step catches a host without them before the swap.
func TestRenderRunAs(t *testing.T) {
	s := forHost(t, specMatrix()["node-local-ipv4"])
	s.Runtime.User, s.Runtime.Group = "haproxy", "haproxy"
	text, err := RenderHAProxy(s)
	if err != nil {
		t.Fatal(err)
	}
	if global := section(text, "global"); !strings.Contains(global, "\n    user haproxy\n    group haproxy\n") {
		t.Fatalf("global lacks user and group:\n%s", global)
	}
	if err := checkHAProxy(t, text); err != nil {
		t.Fatal(err)
	}
	s.Runtime.User = "kha-no-such-user"
	text, err = RenderHAProxy(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkHAProxy(t, text); err == nil || !strings.Contains(err.Error(), "cannot find user id for 'kha-no-such-user'") {
		t.Fatalf("haproxy -c with a user the host lacks: %v", err)
	}
}

// FuzzRenderAgainstRealBinaries: any spec either fails Validate, or renders
// configurations the real haproxy and nginx accept.
func FuzzRenderAgainstRealBinaries(f *testing.F) {
	f.Add("127.0.0.1", 6443, "cp1", "10.0.0.11", 6443, "cp2", "fd00::12", 6443, 0, "/readyz", true, "", uint8(0), int64(500), "", int64(0), 0)
	f.Add("::1", 1, "a_b", "192.0.2.1", 65535, "c.d", "192.0.2.2", 1, 8081, "/healthz?x=1", false, "c.d", uint8(1), int64(100), "10.0.0.100", int64(60000), 1000)
	f.Add("10.0.0.100", 8443, "x", "10.0.0.1", 443, "y", "10.0.0.2", 443, 65535, "/", true, "x", uint8(2), int64(3600000), "api.example.com", int64(1), 1)
	f.Add("127.0.0.1", 6443, "cp1", "10.0.0.11", 6443, "cp1", "10.0.0.11", 6443, 6443, "/{}", true, "zz", uint8(3), int64(0), "-x-", int64(-5), -1)
	f.Add("127.0.0.1", 6443, "cp1", "10.0.0.11", 6443, "cp2", "10.0.0.12", 6443, 8081, "/\x00", true, "", uint8(0), int64(500), "fd00::100", int64(0), 0)
	f.Add("127.0.0.1", 6443, "cp1", "10.0.0.11", 6443, "cp2", "10.0.0.12", 6443, 8081, "/readyz", false, "", uint8(8), int64(500), "", int64(0), 0)
	f.Add("127.0.0.1", 6443, "cp1", "10.0.0.11", 6443, "cp2", "10.0.0.12", 6443, 8081, "/readyz", false, "", uint8(17), int64(500), "10.0.0.100", int64(0), 0)
	f.Fuzz(func(t *testing.T, listen string, listenPort int, n1, a1 string, p1 int, n2, a2 string, p2, hc int, path string,
		insecure bool, localFirst string, flags uint8, intervalMS int64, fallback string, slowstartMS int64, maxconn int) {
		s := Spec{
			Role:            []Role{NodeLocal, External}[flags%2],
			Listen:          []ListenAddr{{Address: listen, Port: listenPort}},
			Backends:        []Backend{{Name: n1, Address: a1, Port: p1}, {Name: n2, Address: a2, Port: p2}},
			HealthcheckPort: hc,
			LocalFirst:      localFirst,
			Balance:         []string{"", BalanceLeastConn, BalanceRoundRobin, "x"}[flags/2%4],
			HealthCheck: HealthCheck{Path: path, InsecureSkipVerify: insecure, Interval: time.Duration(intervalMS) * time.Millisecond,
				Type: []string{"", CheckHTTPS, CheckHTTPSClientCert, CheckTCP}[flags/8%4]},
			AnonymousAuthOff: flags&32 != 0,
			Servers:          Servers{SlowStart: time.Duration(slowstartMS) * time.Millisecond, MaxConn: maxconn, MaxQueue: maxconn / 2},
			Observability:    Observability{Logs: flags&64 != 0, Metrics: flags&128 != 0, LogTarget: []string{LogSyslog, LogStdout}[flags/16%2]},
		}
		if s.HealthCheck.Type == CheckHTTPSClientCert {
			s.HealthCheck.ClientCert = "/etc/kubernetes/pki/apiserver-kubelet-client.crt"
		}
		if fallback != "" {
			s.Fallback = &Backend{Name: "fallback", Address: fallback, Port: 8443}
		}
		if !insecure {
			s.HealthCheck.CAFile = goldenCA
		}
		if s.Validate().HasErrors() {
			if _, err := RenderHAProxy(s); !errors.Is(err, ErrInvalid) {
				t.Fatalf("an invalid spec rendered: %v", err)
			}
			return
		}
		onHost := forHost(t, s)
		hap, err := RenderHAProxy(onHost)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkHAProxy(t, hap); err != nil {
			t.Fatalf("valid spec, rejected config: %v\n%s", err, hap)
		}
		ngx, _ := RenderNginx(onHost)
		if err := checkNginx(t, ngx); err != nil {
			t.Fatalf("valid spec, rejected config: %v\n%s", err, ngx)
		}
	})
}

func BenchmarkRender(b *testing.B) {
	for _, n := range []int{5, 500} {
		spec := specMatrix()["node-local-ipv4"]
		spec.Backends = nil
		for i := 0; i < n; i++ {
			spec.Backends = append(spec.Backends, Backend{Name: fmt.Sprintf("cp%d", i), Address: "10.0.0.1", Port: 1000 + i})
		}
		b.Run(fmt.Sprintf("backends=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := RenderHAProxy(spec); err != nil {
					b.Fatal(err)
				}
				if _, err := RenderNginx(spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHealthPortConflicts: a health port on loopback collides only with a
// listener that loopback reaches; on every address, with any listener.
func TestHealthPortConflicts(t *testing.T) {
	for _, c := range []struct {
		role            Role
		listen, address string
		conflict        bool
	}{
		{External, HealthcheckListenLoopback, "10.0.0.100", false},
		{External, HealthcheckListenLoopback, "0.0.0.0", true},
		{External, HealthcheckListenAll, "10.0.0.100", true},
		{NodeLocal, "", "127.0.0.1", true},
		{NodeLocal, HealthcheckListenLoopback, "::1", true},
	} {
		s := specMatrix()["node-local-ipv4"]
		s.Role, s.HealthcheckListen, s.HealthcheckPort = c.role, c.listen, 8443
		s.Listen = []ListenAddr{{Address: c.address, Port: 8443}}
		got := false
		for _, p := range s.Validate() {
			got = got || p.Path.String() == "healthcheck_port"
		}
		if got != c.conflict {
			t.Errorf("%s, healthcheck_listen %q, listen %s: conflict %v, want %v (%v)", c.role, c.listen, c.address, got, c.conflict, s.Validate())
		}
	}
}
