package endpoints

import (
	"strings"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// mustCompute computes in, which must have no errors.
func mustCompute(t *testing.T, in Input) (Result, problem.Problems) {
	t.Helper()
	r, ps := Compute(in)
	if ps.HasErrors() {
		t.Fatal(ps)
	}
	return r, ps
}

// TestPodEndpoint pins the endpoint of pods outside the host network in
// every mode: the external load balancer or VIP when there is one that
// does not need the CNI, else the first control-plane node, never
// localhost.
func TestPodEndpoint(t *testing.T) {
	t.Parallel()
	vip := &ExternalLB{Address: "10.0.0.100", Port: 8443}
	cases := []struct {
		name string
		in   Input
		want PodEndpoint
		// warn is whether the single-point warning is due.
		warn bool
	}{
		{"local_lb: the first control-plane node", Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers},
			PodEndpoint{URL: "https://10.0.0.11:6443", Host: "10.0.0.11", Port: 6443, SinglePoint: true}, true},
		{"local_lb, the first control-plane node draining: the next one",
			Input{ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", Draining: true}, {Name: "cp2", IP: "10.0.0.12"}, {Name: "cp3", IP: "10.0.0.13"}},
				WorkerNodes: twoWorkers},
			PodEndpoint{URL: "https://10.0.0.12:6443", Host: "10.0.0.12", Port: 6443, SinglePoint: true}, true},
		{"local_lb with one control-plane node: no warning, nothing to fail over to",
			Input{ControlPlaneNodes: threeCPs[:1], WorkerNodes: twoWorkers},
			PodEndpoint{URL: "https://10.0.0.11:6443", Host: "10.0.0.11", Port: 6443, SinglePoint: true}, false},
		{"local_lb_with_unmanaged_lb: the external load balancer, not localhost",
			Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers, LocalLB: LocalLB{Enabled: ptr(true)}, ExternalLB: vip},
			PodEndpoint{URL: "https://10.0.0.100:8443", Host: "10.0.0.100", Port: 8443}, false},
		{"external_lb: the load balancer's name",
			Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100", Port: 8443, DomainName: "api.example.com"}},
			PodEndpoint{URL: "https://api.example.com:8443", Host: "api.example.com", Port: 8443}, false},
		{"external_lb named localhost: its address",
			Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100", Port: 8443, DomainName: "localhost"}},
			PodEndpoint{URL: "https://10.0.0.100:8443", Host: "10.0.0.100", Port: 8443}, false},
		{"local_lb_every_node with an external load balancer",
			Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{EveryNode: true, Port: 3446}, ExternalLB: vip},
			PodEndpoint{URL: "https://10.0.0.100:8443", Host: "10.0.0.100", Port: 8443}, false},
		{"MetalLB VIP is a Service: the first control-plane node",
			Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100", Port: 8443, MetalLB: &MetalLB{}}},
			PodEndpoint{URL: "https://10.0.0.11:6443", Host: "10.0.0.11", Port: 6443, SinglePoint: true}, true},
		{"direct: the first control-plane node, as every other endpoint, no extra warning",
			Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{Enabled: ptr(false)}},
			PodEndpoint{URL: "https://10.0.0.11:6443", Host: "10.0.0.11", Port: 6443, SinglePoint: true}, false},
		{"IPv6: bracketed in the URL, bare in the host",
			Input{IPFamily: IPv6, ControlPlaneNodes: []Node{{Name: "cp1", IP: "fd00::11"}, {Name: "cp2", IP: "fd00::12"}}},
			PodEndpoint{URL: "https://[fd00::11]:6443", Host: "fd00::11", Port: 6443, SinglePoint: true}, true},
		{"IPv6 VIP", Input{IPFamily: IPv6, ControlPlaneNodes: []Node{{Name: "cp1", IP: "fd00::11"}}, ExternalLB: &ExternalLB{Address: "fd00::100", Port: 8443}},
			PodEndpoint{URL: "https://[fd00::100]:8443", Host: "fd00::100", Port: 8443}, false},
		{"override wins, canonical", Input{ControlPlaneNodes: threeCPs, PodEndpointOverride: "https://[FD00:0::100]:7443"},
			PodEndpoint{URL: "https://[fd00::100]:7443", Host: "fd00::100", Port: 7443}, false},
		{"override without a port is 443", Input{ControlPlaneNodes: threeCPs, PodEndpointOverride: "https://API.example.com."},
			PodEndpoint{URL: "https://api.example.com:443", Host: "api.example.com", Port: 443}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ps := mustCompute(t, tc.in)
			if r.PodEndpoint != tc.want {
				t.Errorf("pod endpoint = %+v, want %+v", r.PodEndpoint, tc.want)
			}
			if IsLoopbackHost(r.PodEndpoint.Host) {
				t.Errorf("pod endpoint %s is loopback", r.PodEndpoint.URL)
			}
			warned := false
			for _, p := range ps {
				if p.Path.String() == "pod_network_endpoint" {
					warned = p.Severity == problem.Warning && strings.Contains(p.Detail, "pod_network_endpoint_override")
				}
			}
			if warned != tc.warn {
				t.Errorf("single-point warning = %v, want %v: %v", warned, tc.warn, ps)
			}
		})
	}
}

func TestPodEndpointOverrideProblems(t *testing.T) {
	t.Parallel()
	cases := []struct {
		override string
		substr   string
		warn     bool
	}{
		{"https://localhost:6443", "pod's own loopback", true},
		{"https://127.0.0.1:6443", "pod's own loopback", true},
		{"https://[::1]:6443", "pod's own loopback", true},
		{"https://api.localhost:6443", "pod's own loopback", true},
		{"https://[::ffff:127.0.0.1]:6443", "pod's own loopback", true},
		{"http://10.0.0.100:6443", "https://host:port", false},
		{"10.0.0.100:6443", "not a URL", false},
		{"https://10.0.0.100:6443/api", "https://host:port", false},
		{"https://10.0.0.100:0", "no valid port", false},
		{"https://10.0.0.100:65536", "no valid port", false},
		{"https://0.0.0.0:6443", "one host", false},
		{"https://[fe80::1%25eth0]:6443", "no valid host", false},
		{"https://bad_name:6443", "no valid host", false},
		{"https://user@10.0.0.100:6443", "https://host:port", false},
	}
	for _, tc := range cases {
		t.Run(tc.override, func(t *testing.T) {
			_, ps := Compute(Input{ControlPlaneNodes: threeCPs, PodEndpointOverride: tc.override})
			for _, p := range ps {
				if p.Path.String() == "pod_network_endpoint_override" && strings.Contains(p.Detail, tc.substr) {
					if (p.Severity == problem.Warning) != tc.warn {
						t.Errorf("severity of %v: warning=%v, want %v", p, p.Severity == problem.Warning, tc.warn)
					}
					return
				}
			}
			t.Errorf("want a problem at pod_network_endpoint_override mentioning %q, got %v", tc.substr, ps)
		})
	}
}

// TestPodEndpointLoopbackSpellings: every spelling of this host that a
// resolver reads as one (inet_aton's hex, octal, decimal and short
// forms, as glibc's getaddrinfo, curl and WHATWG URLs take them; an
// IPv4-mapped IPv6 address; the unspecified address, which dials this
// host) parses and is loopback, as the plain one is. Numeric spellings of
// other addresses come back canonical; names that only start like a
// number stay names.
func TestPodEndpointLoopbackSpellings(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"https://127.0.0.1:6443", "https://0x7f000001:6443", "https://0X7F000001:6443", "https://2130706433:6443",
		"https://017700000001:6443", "https://0177.0.0.1:6443", "https://127.1:6443", "https://127.0.1:6443",
		"https://0x7f.1:6443", "https://0x7f.0x0.0x0.0x1:6443", "https://127.0.0.0x1:6443", "https://127.000.000.001:6443",
		"https://127.1.:6443", "https://[::ffff:127.0.0.1]:6443", "https://[::ffff:7f00:1]:6443", "https://[::1]:6443",
		"https://[0:0:0:0:0:0:0:1]:6443", "https://0.0.0.0:6443", "https://0:6443", "https://0x0:6443", "https://[::]:6443",
		"https://[::ffff:0.0.0.0]:6443",
	} {
		pe, err := ParsePodEndpoint(u)
		if err != nil || !IsLoopbackHost(pe.Host) {
			t.Errorf("ParsePodEndpoint(%q) = %+v, %v: want a loopback endpoint", u, pe, err)
		}
	}
	for u, host := range map[string]string{
		"https://0x0a000001:6443": "10.0.0.1", "https://10.1:6443": "10.0.0.1", "https://012.0.0.1:6443": "10.0.0.1",
		"https://167772161:6443": "10.0.0.1", "https://0x7f000001.example.com:6443": "0x7f000001.example.com",
		"https://deadbeef:6443": "deadbeef",
	} {
		pe, err := ParsePodEndpoint(u)
		if err != nil || pe.Host != host || IsLoopbackHost(pe.Host) {
			t.Errorf("ParsePodEndpoint(%q) = %+v, %v: want host %s, not loopback", u, pe, err, host)
		}
	}
	for _, u := range []string{"https://0x1ffffffff:6443", "https://256.1:6443", "https://08.0.0.1:6443", "https://1.2.3.4.5:6443",
		"https://127..1:6443", "https://0x7f.0x1000000:6443"} {
		if pe, err := ParsePodEndpoint(u); err == nil {
			t.Errorf("ParsePodEndpoint(%q) = %+v: want an error, no resolver reads it as one address", u, pe)
		}
	}
}

// TestHostsLoopbackNames reads the names a hosts file gives loopback
// addresses, as the resolver of the machine it is on reads them (glibc
// takes inet_aton spellings there too).
func TestHostsLoopbackNames(t *testing.T) {
	t.Parallel()
	hosts := "127.0.0.1\tlocalhost\n127.0.1.1 controller.example.com controller # Debian's own name\n" +
		"::1 ip6-localhost ip6-loopback\nfe00::0 ip6-localnet\n10.0.0.100 api.example.com\n" +
		"  # 127.0.0.1 commented.example.com\n127.0.0.53\n0x7f000001 inet-aton.example.com\nnot-an-address name\n" +
		"::ffff:127.0.0.2 Mapped.Example.com.\n"
	got := HostsLoopbackNames([]byte(hosts))
	for _, name := range []string{"localhost", "controller.example.com", "controller", "ip6-localhost", "ip6-loopback", "mapped.example.com",
		"inet-aton.example.com"} {
		if got[name] == "" {
			t.Errorf("%s is not among the loopback names %v", name, got)
		}
	}
	if got["controller"] != "127.0.1.1" || got["ip6-localhost"] != "::1" || got["mapped.example.com"] != "127.0.0.2" {
		t.Errorf("the loopback names' addresses: %v", got)
	}
	for _, name := range []string{"ip6-localnet", "api.example.com", "commented.example.com", "name"} {
		if got[name] != "" {
			t.Errorf("%s is among the loopback names %v", name, got)
		}
	}
}

func TestLoopbackURLHost(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"https://localhost:6443": true, "https://127.0.0.2:6443": true, "https://[::1]:6443": true, "localhost:6443": true,
		"127.0.0.1": true, "https://LOCALHOST.:6443": true, "https://10.0.0.100:6443": false, "https://[fd00::1]:6443": false,
		"https://api.example.com": false, "api.example.com:6443": false, "https://localhost.example.com:6443": false,
		"https://0x7f000001:6443": true, "127.1": true, "https://0.0.0.0:6443": true, "https://[::]:6443": true,
		"https://0x7f000001.example.com": false, "https://ip6-localhost:6443": true, "https://ip6-loopback:6443": true,
		"https://localhost.localdomain:6443": true, "https://LOCALHOST.LOCALDOMAIN.:6443": true, "https://api.localhost:6443": true,
		"https://ip6-localhost.example.com:6443": false, "https://localdomain:6443": false,
	} {
		if _, got := LoopbackURLHost(s); got != want {
			t.Errorf("LoopbackURLHost(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestHealthCheckSpec pins the health check exported for cloud load
// balancers, and the shutdown timing check against it.
func TestHealthCheckSpec(t *testing.T) {
	t.Parallel()
	d := func(s string) *time.Duration {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	cases := []struct {
		name      string
		in        Input
		want      HealthCheckSpec
		warnDelay string // substring of the shutdown timing warning, "" for none
	}{
		{"defaults: HTTPS /readyz every 5s, down after 2", Input{ControlPlaneNodes: threeCPs},
			HealthCheckSpec{HealthCheckHTTPS, "/readyz", 6443, 5 * time.Second, 2 * time.Second, 2, 2}, ""},
		{"apiserver port", Input{ControlPlaneNodes: threeCPs, APIServerPort: 7443, LBHealthCheck: HealthCheckTiming{Interval: 10 * time.Second, UnhealthyThreshold: 3}},
			HealthCheckSpec{HealthCheckHTTPS, "/readyz", 7443, 10 * time.Second, 2 * time.Second, 2, 3}, ""},
		{"anonymous auth off: TCP, no path", Input{ControlPlaneNodes: threeCPs, AnonymousAuthOff: true, APIServer: APIServerFlags{ShutdownDelay: d("0s")}},
			HealthCheckSpec{HealthCheckTCP, "", 6443, 5 * time.Second, 2 * time.Second, 2, 2}, ""},
		{"delay longer than detection", Input{ControlPlaneNodes: threeCPs, APIServer: APIServerFlags{ShutdownDelay: d("15s")}},
			HealthCheckSpec{HealthCheckHTTPS, "/readyz", 6443, 5 * time.Second, 2 * time.Second, 2, 2}, ""},
		{"delay equal to detection warns", Input{ControlPlaneNodes: threeCPs, APIServer: APIServerFlags{ShutdownDelay: d("10s")}},
			HealthCheckSpec{HealthCheckHTTPS, "/readyz", 6443, 5 * time.Second, 2 * time.Second, 2, 2}, "to at least 15s"},
		{"kube-apiserver's default 0s, declared, warns", Input{ControlPlaneNodes: threeCPs, APIServer: APIServerFlags{ShutdownDelay: d("0s")},
			LBHealthCheck: HealthCheckTiming{Interval: 30 * time.Second, UnhealthyThreshold: 3}},
			HealthCheckSpec{HealthCheckHTTPS, "/readyz", 6443, 30 * time.Second, 2 * time.Second, 2, 3}, "needs up to 1m30s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ps := mustCompute(t, tc.in)
			if r.HealthCheck != tc.want {
				t.Errorf("health check = %+v, want %+v", r.HealthCheck, tc.want)
			}
			var got string
			for _, p := range ps {
				if p.Path.String() == "apiserver_shutdown_delay_duration" && p.Severity == problem.Warning {
					got = p.Detail
				}
			}
			if (tc.warnDelay == "") != (got == "") || !strings.Contains(got, tc.warnDelay) {
				t.Errorf("shutdown warning = %q, want one mentioning %q", got, tc.warnDelay)
			}
		})
	}
}

func TestTimingProblems(t *testing.T) {
	t.Parallel()
	d := func(v time.Duration) *time.Duration { return &v }
	cases := []struct {
		name, path, substr string
		in                 Input
	}{
		{"negative delay", "apiserver_shutdown_delay_duration", "between 0s and 1h", Input{APIServer: APIServerFlags{ShutdownDelay: d(-time.Second)}}},
		{"fractional min request timeout", "apiserver_min_request_timeout", "whole seconds", Input{APIServer: APIServerFlags{MinRequestTimeout: d(1500 * time.Millisecond)}}},
		{"zero min request timeout", "apiserver_min_request_timeout", "whole seconds", Input{APIServer: APIServerFlags{MinRequestTimeout: d(0)}}},
		{"sub-second interval", "lb_health_check.interval", "whole seconds", Input{LBHealthCheck: HealthCheckTiming{Interval: 500 * time.Millisecond}}},
		{"timeout beyond interval", "lb_health_check.timeout", "must not exceed", Input{LBHealthCheck: HealthCheckTiming{Interval: 5 * time.Second, Timeout: 6 * time.Second}}},
		{"threshold", "lb_health_check.unhealthy_threshold", "1 to 10", Input{LBHealthCheck: HealthCheckTiming{UnhealthyThreshold: 11}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.ControlPlaneNodes = threeCPs
			_, ps := Compute(tc.in)
			for _, p := range ps {
				if p.Path.String() == tc.path && strings.Contains(p.Detail, tc.substr) && p.Severity != problem.Warning {
					return
				}
			}
			t.Errorf("want an error at %s mentioning %q, got %v", tc.path, tc.substr, ps)
		})
	}
}

func TestKubeadmAPIServerArgs(t *testing.T) {
	t.Parallel()
	delay, mrt := 70*time.Second, 3600*time.Second
	r, _ := mustCompute(t, Input{ControlPlaneNodes: threeCPs, AnonymousAuthOff: true, APIServer: APIServerFlags{ShutdownDelay: &delay, MinRequestTimeout: &mrt}})
	want := "  extraArgs:\n    - name: anonymous-auth\n      value: \"false\"\n    - name: goaway-chance\n      value: \"0.001\"\n" +
		"    - name: min-request-timeout\n      value: \"3600\"\n    - name: shutdown-delay-duration\n      value: 1m10s\n"
	if !strings.Contains(r.KubeadmClusterConfiguration, want) {
		t.Errorf("kubeadm configuration lacks\n%s\ngot\n%s", want, r.KubeadmClusterConfiguration)
	}
	r, _ = Compute(Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{Enabled: new(bool)}}) // direct
	if strings.Contains(r.KubeadmClusterConfiguration, "extraArgs") {
		t.Errorf("no flags set and no load balancer, yet extraArgs:\n%s", r.KubeadmClusterConfiguration)
	}
}

// FuzzParsePodEndpoint: whatever it accepts comes back as a URL it accepts
// again unchanged, with the host bare and the port valid.
func FuzzParsePodEndpoint(f *testing.F) {
	for _, s := range []string{"https://10.0.0.100:6443", "https://[fd00::100]:8443", "https://api.example.com", "https://localhost:6443",
		"https://[::ffff:10.0.0.1]:1", "http://x:1", "https://[fe80::1%25eth0]:6443", "https://a:b@c:1", "https://API.Example.COM.:443/",
		"https://0x7f000001:6443", "https://127.1:6443", "https://017700000001:1", "https://10.0x1.1:1", "https://0.0.0.0:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pe, err := ParsePodEndpoint(s)
		if err != nil {
			return
		}
		if strings.ContainsAny(pe.Host, "[]") || !problem.ValidPort(pe.Port) {
			t.Fatalf("%q: %+v", s, pe)
		}
		// A host a resolver reads as an address is given in its usual form.
		if a, ok := parseHostAddr(pe.Host); ok && pe.Host != a.String() {
			t.Fatalf("%q: host %q is the address %s", s, pe.Host, a)
		}
		again, err := ParsePodEndpoint(pe.URL)
		if err != nil || again != pe {
			t.Fatalf("%q: %+v reparses as %+v, %v", s, pe, again, err)
		}
	})
}

// TestPodEndpointOverrideVerifies: the override's host is an apiserver
// SAN, and an existing certificate without it fails the plan.
func TestPodEndpointOverrideVerifies(t *testing.T) {
	t.Parallel()
	in := Input{ControlPlaneNodes: threeCPs, PodEndpointOverride: "https://api-pods.example.com:6443"}
	r, _ := mustCompute(t, in)
	if !r.CertSANs.Covers("api-pods.example.com") {
		t.Errorf("SANs %+v lack the override's host", r.CertSANs)
	}
	in.ExistingCertSANs = &SANs{DNSNames: []string{"localhost"}, IPAddresses: []string{"127.0.0.1", "10.0.0.11", "192.0.2.12", "10.0.0.13"}}
	_, ps := Compute(in)
	for _, p := range ps {
		if p.Path.String() == "existing_cert_sans" && strings.Contains(p.Detail, "pod_network_endpoint https://api-pods.example.com:6443: host api-pods.example.com") {
			return
		}
	}
	t.Errorf("want existing_cert_sans to refuse the override's host, got %v", ps)
}

// TestIdleTimeout: a load balancer idle timeout shorter than the
// apiservers' --min-request-timeout warns; either unknown, nothing does.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	mrt := 1800 * time.Second
	cases := []struct {
		name string
		in   Input
		warn string
	}{
		{"AWS NLB's 350s against the default 1800s", Input{LBIdleTimeout: 350 * time.Second, APIServer: APIServerFlags{MinRequestTimeout: &mrt}},
			"connection idle for 5m50s (lb_idle_timeout), shorter than the apiservers' --min-request-timeout 30m0s"},
		{"long enough", Input{LBIdleTimeout: time.Hour, APIServer: APIServerFlags{MinRequestTimeout: &mrt}}, ""},
		{"min request timeout not declared", Input{LBIdleTimeout: 350 * time.Second}, ""},
		{"idle timeout not declared", Input{APIServer: APIServerFlags{MinRequestTimeout: &mrt}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.ControlPlaneNodes = threeCPs[:1]
			_, ps := mustCompute(t, tc.in)
			var got string
			for _, p := range ps {
				if p.Path.String() == "lb_idle_timeout" && p.Severity == problem.Warning {
					got = p.Detail
				}
			}
			if (tc.warn == "") != (got == "") || !strings.Contains(got, tc.warn) {
				t.Errorf("warning %q, want one mentioning %q", got, tc.warn)
			}
		})
	}
	if _, ps := Compute(Input{ControlPlaneNodes: threeCPs, LBIdleTimeout: 1500 * time.Millisecond}); !ps.HasErrors() {
		t.Errorf("a fractional idle timeout passes: %v", ps)
	}
}
