package provider

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestLBConfig_renderOnlyKnownAtPlan chains kha_cluster_endpoints into
// both load balancers without a host: everything is known at plan time.
func TestLBConfig_renderOnlyKnownAtPlan(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: config.TestNameDirectory(),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("kha_haproxy_config.w1", tfjsonpath.New("rendered"), knownvalue.StringRegexp(regexp.MustCompile(
					`(?s)bind 127\.0\.0\.1:16443\n\s+bind \[::1\]:16443.*verify required ca-file /etc/kubernetes/pki/ca\.crt.*server cp2 10\.0\.0\.12:6443\n`))),
				plancheck.ExpectKnownValue("kha_haproxy_config.w1", tfjsonpath.New("manifest"), knownvalue.StringRegexp(regexp.MustCompile(
					`(?s)haproxy-cfg-checksum: "sha256:[0-9a-f]{64}".*path: "/etc/haproxy"`))),
				plancheck.ExpectKnownValue("kha_haproxy_config.w1", tfjsonpath.New("reload_command"), knownvalue.StringExact("")),
				// A static pod is the kubelet's: nothing says whether it runs,
				// so the plan says none, not "(known after apply)".
				plancheck.ExpectKnownValue("kha_haproxy_config.w1", tfjsonpath.New("service_running"), knownvalue.Null()),
				// A node-local load balancer's health port on loopback, and
				// the static pod's probes ask there; the metrics on loopback.
				expectRendered("kha_haproxy_config.w1", `(?s)bind 127\.0\.0\.1:8081\n\s+bind \[::1\]:8081 v6only\n.*`+
					`http-request use-service prometheus-exporter if \{ path /metrics \} \{ dst 127\.0\.0\.0/8 ::1 \}\n`),
				plancheck.ExpectKnownValue("kha_haproxy_config.w1", tfjsonpath.New("manifest"), knownvalue.StringRegexp(regexp.MustCompile(
					`(?s)livenessProbe:\n\s+httpGet:\n\s+host: 127\.0\.0\.1\n\s+path: /healthz\n\s+port: 8081\n`))),
				// An external one's on every address, which a cloud load
				// balancer or another host checks.
				expectRendered("kha_haproxy_config.external", `(?s)bind 0\.0\.0\.0:8081\n\s+monitor-uri /healthz\n`),
				// The defaults come from the role, not from values the plan
				// fills in: an unset group stays null.
				plancheck.ExpectKnownValue("kha_haproxy_config.external", tfjsonpath.New("monitoring"), knownvalue.Null()),
				plancheck.ExpectKnownValue("kha_haproxy_config.w1", tfjsonpath.New("sha256"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{64}$`))),
				plancheck.ExpectKnownValue("kha_nginx_config.w1", tfjsonpath.New("rendered"), knownvalue.StringRegexp(regexp.MustCompile(
					`(?s)load_module /usr/lib/nginx/modules/ngx_stream_module\.so;.*server 10\.0\.0\.13:6443 max_fails=1 fail_timeout=5s; # cp3.*listen \[::1\]:16443;`))),
				plancheck.ExpectKnownValue("kha_nginx_config.w1", tfjsonpath.New("validate_command"), knownvalue.StringExact("nginx -t -q -c %s")),
				plancheck.ExpectKnownValue("kha_nginx_config.w1", tfjsonpath.New("manifest"), knownvalue.Null()),
				plancheck.ExpectKnownValue("kha_nginx_config.w1", tfjsonpath.New("remote_sha256"), knownvalue.Null()),
			}},
		}},
	})
}

// TestLBConfig_hardenedClusterWithFallback: kha_cluster_endpoints' inputs
// for a hardened cluster with an external load balancer reach both load
// balancers, with kubespray's tuning values expressed.
func TestLBConfig_hardenedClusterWithFallback(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: config.TestNameDirectory(),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("kha_cluster_endpoints.c", tfjsonpath.New("local_lb_fallback"), knownvalue.ObjectExact(map[string]knownvalue.Check{
					"address": knownvalue.StringExact("api.k8s.example.com"), "port": knownvalue.Int64Exact(8443)})),
				plancheck.ExpectKnownValue("kha_cluster_endpoints.c", tfjsonpath.New("kubeadm_cluster_configuration"),
					knownvalue.StringRegexp(regexp.MustCompile(`(?s)extraArgs:\n\s+- name: anonymous-auth\n\s+value: "false"`))),
				expectRendered("kha_haproxy_config.w1", `(?s)timeout client 5m\n\s+timeout server 15m\n.*`+
					`verify required ca-file /etc/kubernetes/pki/ca\.crt crt /etc/kubernetes/pki/lb-health\.crt .* slowstart 1m maxconn 1000 maxqueue 256\n.*`+
					`server kha_fallback api\.k8s\.example\.com:8443 backup`),
				plancheck.ExpectKnownValue("kha_haproxy_config.w1", tfjsonpath.New("manifest"), knownvalue.StringRegexp(regexp.MustCompile(
					`(?s)mountPath: "/etc/kubernetes/pki/lb-health\.crt".*mountPath: "/etc/kubernetes/pki/lb-health\.key"`))),
				expectRendered("kha_nginx_config.w1", `(?s)worker_connections 16384;.*fail_timeout=10s; # cp2\n\s+server api\.k8s\.example\.com:8443 max_fails=1 fail_timeout=10s backup;`),
			}},
		}},
	})
}

func TestLBConfig_diagnostics(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"anonymous_check_on_a_hardened_cluster":     `(?s)Anonymous health checks on apiservers that refuse them.*health_check\.type.*apiserver_anonymous_auth = false.*"https_client_cert".*"tcp"`,
		"client_cert_check_without_a_cert":          `(?s)Missing client certificate.*health_check\.client_cert`,
		"fallback_on_loopback":                      `(?s)Invalid fallback address.*fallback\.address`,
		"handover_with_static_pod":                  `(?s)Handover Needs systemd Delivery.*handover.*delivery = "systemd"`,
		"metrics_exposed_without_a_health_port":     `(?s)Nothing to expose.*monitoring\.metrics_listen.*set monitoring\.metrics = true and\s+healthcheck_port`,
		"metrics_exposed_on_a_loopback_health_port": `(?s)Nothing to expose on.*monitoring\.metrics_listen.*monitoring\.healthcheck_listen = "loopback"\s+binds\s+it\s+on\s+the\s+host's\s+loopback\s+only:\s+set\s+monitoring\.healthcheck_listen\s+=\s+"all"\s+too`,
		"node_local_listener_off_loopback":          `(?s)Node-local load balancer off loopback.*listen\.address:.*role = "external"`,
		"unknown_local_first":                       `(?s)Unknown backend.*local_first`,
		"run_as_with_static_pod":                    `(?s)run_as Needs systemd Delivery.*run_as.*image runs HAProxy as its own user`,
		"run_as_not_an_account":                     `(?s)Invalid Attribute Value Match.*run_as.*must be user:group`,
		"run_as_without_a_group":                    `(?s)Invalid Attribute Value Match.*run_as.*must be user:group`,
	}
	expectPlanErrors(t, cases, nil)
}

// TestLBConfig_runAs: HAProxy under systemd drops root to Debian's
// haproxy user and group by default, to the ones run_as names, to none
// with run_as = "root"; a static pod's config names none, its image's
// HAProxy runs as its own user.
func TestLBConfig_runAs(t *testing.T) {
	t.Parallel()
	noUser := func(addr string) plancheck.PlanCheck {
		return plancheck.ExpectKnownValue(addr, tfjsonpath.New("rendered"), knownvalue.StringFunc(func(v string) error {
			if regexp.MustCompile(`(?m)^\s*(user|group|uid|gid) `).MatchString(v) {
				return fmt.Errorf("%s names a user or group:\n%s", addr, v)
			}
			return nil
		}))
	}
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: config.TestNameDirectory(),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectRendered("kha_haproxy_config.default", `(?s)^[^\n]*\nglobal\n    user haproxy\n    group haproxy\n`),
				expectRendered("kha_haproxy_config.named", `(?s)^[^\n]*\nglobal\n    user kha-lb\n    group kha\n`),
				noUser("kha_haproxy_config.root"),
				noUser("kha_haproxy_config.static_pod"),
			}},
		}},
	})
}

// liveHAProxy is a host directory where the pushed config runs as a real
// haproxy in master-worker mode, started or reloaded by reload_command.
type liveHAProxy struct {
	dir, pid, ca string
	port         int
	healthPort   int
	client       *http.Client
}

func newLiveHAProxy(t *testing.T) *liveHAProxy {
	dir := t.TempDir()
	h := &liveHAProxy{dir: dir, pid: filepath.Join(dir, "haproxy.pid"), ca: filepath.Join(dir, "ca.crt"), port: testhost.FreePort(t, "127.0.0.1"),
		healthPort: testhost.FreePort(t, "127.0.0.1")}
	if err := os.WriteFile(h.ca, []byte(testhost.TestPKI(t).CAPEM), 0o644); err != nil {
		t.Fatal(err)
	}
	h.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: testhost.TestPKI(t).Pool}}}
	t.Cleanup(func() {
		if b, err := os.ReadFile(h.pid); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return h
}

// startLiveHAProxy starts a test host, a liveHAProxy's directory and a
// stand-in apiserver (cp1, cp2, ...) on each of hosts, whose backends it
// returns as HCL objects.
func startLiveHAProxy(t *testing.T, hosts ...string) (*testhost.Server, *liveHAProxy, []string) {
	_, err := os.Stat("/usr/sbin/haproxy")
	testhost.Require(t, err == nil, "haproxy is not installed")
	s := testhost.Start(t, testhost.Options{})
	h := newLiveHAProxy(t)
	var backends []string
	for i, host := range hosts {
		ip, port, _ := net.SplitHostPort(testhost.StartAPIServer(t, fmt.Sprintf("cp%d", i+1), host))
		backends = append(backends, fmt.Sprintf(`{ name = "cp%d", address = %q, port = %s }`, i+1, ip, port))
	}
	return s, h, backends
}

func (h *liveHAProxy) url() string { return fmt.Sprintf("https://127.0.0.1:%d", h.port) }

func (h *liveHAProxy) config(s *testhost.Server, backends []string, caFile string) string {
	cfg := filepath.Join(h.dir, "haproxy.cfg")
	reload := fmt.Sprintf(`if [ -s %[1]s ] && kill -0 $(cat %[1]s) 2>/dev/null; then kill -USR2 $(cat %[1]s); else haproxy -W -D -p %[1]s -f %[2]s; fi`, h.pid, cfg)
	return fmt.Sprintf(`
provider "kha" {
  default_ssh = { private_key = %q }
}

resource "kha_haproxy_config" "test" {
  listen           = { address = "127.0.0.1", port = %d }
  backends         = [%s]
  healthcheck_port = %d
  health_check     = { ca_file = %q }
  config_path      = %q
  reload_command   = %q
  destroy_command  = "kill $(cat %s)"
  ssh              = { host = %q, port = %d, host_key = %q }
}
`, s.ClientKey.PEM, h.port, strings.Join(backends, ", "), h.healthPort, caFile, cfg, reload, h.pid, s.Host, s.Port, s.HostKey.Public())
}

// answers sends n requests through the load balancer, verifying the
// apiservers' certificates, and counts the answers by apiserver.
func (h *liveHAProxy) answers(n int) (map[string]int, error) {
	seen := map[string]int{}
	for i := 0; i < n; i++ {
		resp, err := h.client.Get(h.url() + "/whoami")
		if err != nil {
			return seen, err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen[string(body)]++
	}
	return seen, nil
}

// load sends requests through the load balancer until stop is closed,
// then reports how many were sent and the failures.
func (h *liveHAProxy) load(stop <-chan struct{}) <-chan []error {
	done := make(chan []error, 1)
	go func() {
		var failures []error
		for n := 0; ; n++ {
			select {
			case <-stop:
				done <- append(failures, fmt.Errorf("%d requests", n))
				return
			default:
			}
			if _, err := h.answers(1); err != nil {
				failures = append(failures, err)
			}
		}
	}()
	return done
}

// waitAnswers polls until the answers come from exactly the given set.
func (h *liveHAProxy) waitAnswers(want ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		deadline := time.Now().Add(15 * time.Second)
		for {
			seen, err := h.answers(len(want) * 6)
			ok := err == nil && len(seen) == len(want)
			for _, w := range want {
				ok = ok && seen[w] > 0
			}
			if ok {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("through the pushed haproxy: answers %v (%v), want %v", seen, err, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// TestAccHAProxyConfig_liveOverSSH pushes the config to an sshd, runs it
// as a real haproxy in front of three TLS apiserver stand-ins, changes the
// backend list while a response is in flight, survives a config the real
// haproxy rejects, and rolls back a config it accepts that serves nothing.
func TestAccHAProxyConfig_liveOverSSH(t *testing.T) {
	t.Parallel()
	s, h, backends := startLiveHAProxy(t, "127.0.0.2", "127.0.0.3", "127.0.0.4")
	var stream chan []string
	wrongCA := filepath.Join(h.dir, "other-ca.crt")
	var stopLoad chan struct{}
	var loadDone <-chan []error
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(filepath.Join(h.dir, "haproxy.cfg")); !os.IsNotExist(err) {
				return fmt.Errorf("config still on the host after destroy (%v)", err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: h.config(s, backends, h.ca),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kha_haproxy_config.test", tfjsonpath.New("validate_command"), knownvalue.StringExact("haproxy -c -q -f %s")),
				}},
				Check: h.waitAnswers("cp1", "cp2", "cp3"),
			},
			{
				// A long response is in flight while apply drops cp3 and reloads.
				PreConfig: func() {
					stream = make(chan []string, 1)
					resp, err := h.client.Get(h.url() + "/stream?lines=30") //nolint:bodyclose // the reader below closes it
					if err != nil {
						t.Fatal(err)
					}
					go func() {
						defer resp.Body.Close()
						var lines []string
						for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
							lines = append(lines, sc.Text())
						}
						stream <- lines
					}()
				},
				Config: h.config(s, backends[:2], h.ca),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kha_haproxy_config.test", plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(h.waitAnswers("cp1", "cp2"), func(*terraform.State) error {
					if lines := <-stream; len(lines) != 30 {
						return fmt.Errorf("the in-flight response was cut by the reload after %d of 30 lines", len(lines))
					}
					return nil
				}),
			},
			{
				// The plan accepts this path; the real haproxy does not.
				Config:      h.config(s, backends, "/nonexistent/ca.crt"),
				ExpectError: regexp.MustCompile(`(?s)Applying File Failed.*validate\s+of.*haproxy\.cfg\s+failed`),
			},
			{
				// A CA that signed none of the apiservers: haproxy -c accepts
				// the file, but every health check would fail and nothing
				// would be served. The throwaway instance shows it before
				// the live haproxy is touched: requests never stop.
				PreConfig: func() {
					if err := os.WriteFile(wrongCA, []byte(testhost.OtherCAPEM(t)), 0o644); err != nil {
						t.Fatal(err)
					}
					stopLoad = make(chan struct{})
					loadDone = h.load(stopLoad)
				},
				Config: h.config(s, backends[:2], wrongCA),
				ExpectError: regexp.MustCompile(`(?s)Applying File Failed.*preflight\s+of.*haproxy\.cfg\s+failed.*throwaway\s+instance.*untouched` +
					`.*no\s+apiserver\s+is\s+up.*cp1\s+DOWN\s+\(check\s+L6RSP\)`),
			},
			{
				// The previous config still runs, and Terraform agrees.
				Config:           h.config(s, backends[:2], h.ca),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: resource.ComposeTestCheckFunc(h.waitAnswers("cp1", "cp2"), func(*terraform.State) error {
					close(stopLoad)
					results := <-loadDone
					t.Logf("during the rejected apply: %v, %d failed", results[len(results)-1], len(results)-1)
					if failed := results[:len(results)-1]; len(failed) > 0 {
						return fmt.Errorf("%d requests failed while the wrong CA was tried, the first: %v", len(failed), failed[0])
					}
					return nil
				}),
			},
		},
	})
	if _, err := h.answers(1); err == nil {
		t.Error("haproxy still answers after destroy ran destroy_command")
	}
}

// TestLBConfig_renderedKnownWithUnknownHost: a host created in the same
// run has no address at plan time; the rendered config and its digest are
// known anyway, only the ID waits.
func TestLBConfig_renderedKnownWithUnknownHost(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: config.TestNameDirectory(),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("kha_haproxy_config.test", tfjsonpath.New("rendered"),
					knownvalue.StringRegexp(regexp.MustCompile(`server cp1 10\.0\.0\.11:6443`))),
				plancheck.ExpectKnownValue("kha_haproxy_config.test", tfjsonpath.New("sha256"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{64}$`))),
				plancheck.ExpectUnknownValue("kha_haproxy_config.test", tfjsonpath.New("id")),
			}},
			// The address turns out to be a closed port: apply fails to connect.
			ExpectError: regexp.MustCompile(`(?s)SSH Connection Failed.*127\.0\.0\.1:1`),
		}},
	})
}

// TestAccLBConfig_pathAndDeliveryChanges: a changed config path and a
// static pod given up for systemd leave no old file and no old manifest.
func TestAccLBConfig_pathAndDeliveryChanges(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	dir := t.TempDir()
	vars := func(nginxConfig, delivery string) config.Variables {
		return config.Variables{"host": config.StringVariable(s.Host), "port": config.IntegerVariable(s.Port),
			"host_key": config.StringVariable(s.HostKey.Public()), "private_key": config.StringVariable(s.ClientKey.PEM),
			"dir": config.StringVariable(dir), "nginx_config": config.StringVariable(nginxConfig), "haproxy_delivery": config.StringVariable(delivery)}
	}
	exist := func(want bool, paths ...string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			for _, p := range paths {
				if _, err := os.Stat(filepath.Join(dir, p)); (err == nil) != want {
					return fmt.Errorf("%s: exists %v, want %v", p, err == nil, want)
				}
			}
			return nil
		}
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             exist(false, "a.conf", "b.conf", "haproxy/haproxy.cfg", "manifests/haproxy.yml"),
		Steps: []resource.TestStep{
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("a.conf", "static_pod"),
				Check: resource.ComposeTestCheckFunc(exist(true, "a.conf", "haproxy/haproxy.cfg", "manifests/haproxy.yml"),
					modeIs(filepath.Join(dir, "manifests/haproxy.yml"), 0o600)),
			},
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("b.conf", "systemd"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kha_nginx_config.test", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("kha_haproxy_config.test", plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(exist(true, "b.conf", "haproxy/haproxy.cfg"),
					exist(false, "a.conf", "manifests/haproxy.yml")),
			},
		},
	}))
}

// TestAccHAProxyConfig_stoppedServiceIsStartedAgain: a load balancer kha
// configured that stopped (killed here) shows in the plan as
// service_running known after apply, with its configuration unchanged,
// and the apply starts it with reload_command; the next plan is empty.
func TestAccHAProxyConfig_stoppedServiceIsStartedAgain(t *testing.T) {
	t.Parallel()
	s, h, backends := startLiveHAProxy(t, "127.0.0.2", "127.0.0.3")
	cfg := strings.Replace(h.config(s, backends, h.ca), "  reload_command", fmt.Sprintf("  pid_file         = %q\n  reload_command", h.pid), 1)
	const addr = "kha_haproxy_config.test"
	running := statecheck.ExpectKnownValue(addr, tfjsonpath.New("service_running"), knownvalue.Bool(true))
	kill := func() {
		b, err := os.ReadFile(h.pid)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid == 0 {
			t.Fatalf("no HAProxy to stop: %q (%v)", b, err)
		}
		_ = exec.Command("pkill", "-9", "-P", strconv.Itoa(pid)).Run()
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("HAProxy %d did not stop", pid)
			}
		}
		if _, err := h.answers(1); err == nil {
			t.Fatal("the load balancer still answers")
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: cfg, Check: h.waitAnswers("cp1", "cp2"), ConfigStateChecks: []statecheck.StateCheck{running}},
			{
				PreConfig: kill,
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("service_running")),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("remote_sha256"), knownvalue.NotNull()),
				}},
				Check:             h.waitAnswers("cp1", "cp2"),
				ConfigStateChecks: []statecheck.StateCheck{running},
			},
			{Config: cfg, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		},
	})
}
