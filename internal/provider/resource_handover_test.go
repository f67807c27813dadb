package provider

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/remote"
	"github.com/kha/terraform-provider-kha/internal/testhost"
)

func TestHandover_diagnostics(t *testing.T) {
	t.Parallel()
	expectPlanErrors(t, map[string]string{
		"target_not_delivered": `(?s)target_id.*host:port:/path`,
	}, nil)
}

// handoverFixture is a real haproxy on the test host, a client kubeconfig
// that kha_file moves after it, and the kha_handover that ends its moves.
type handoverFixture struct {
	s      *testhost.Server
	h      *liveHAProxy
	client string // the "kubeconfig" file: the server clients use
	backs  []string
}

func (f *handoverFixture) config(port int, clientCheck string) string {
	return f.h.config(f.s, f.backs, f.h.ca) + fmt.Sprintf(`
# The clients: a file naming the server, moved once the load balancer
# serves the new port. Its validate command is the clients' view.
resource "kha_file" "client" {
  path             = %[1]q
  content          = "server: https://127.0.0.1:%[2]d\n"
  validate_command = %[3]q
  ssh              = { host = %[4]q, port = %[5]d, host_key = %[6]q }
  depends_on       = [kha_haproxy_config.test]
}

resource "kha_handover" "test" {
  target_id     = kha_haproxy_config.test.id
  target_sha256 = kha_haproxy_config.test.handover_sha256
  ssh           = { host = %[4]q, port = %[5]d, host_key = %[6]q }
  depends_on    = [kha_file.client]
}
`, f.client, port, clientCheck, f.s.Host, f.s.Port, f.s.HostKey.Public())
}

// serves says whether something accepts connections on the port.
func serves(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// bothServed is a validate command that fails unless both ports accept
// connections: what the clients see at the moment they move.
func bothServed(a, b int) string {
	return fmt.Sprintf(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && exec 4<>/dev/tcp/127.0.0.1/%d'`, a, b)
}

// getThrough sends a request to the server the client's file names.
func getThrough(h *liveHAProxy, client string) error {
	b, err := os.ReadFile(client)
	if err != nil {
		return err
	}
	resp, err := h.client.Get(strings.TrimSpace(strings.TrimPrefix(string(b), "server: ")) + "/whoami")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// TestAccHandover_portMovesInOneApply moves a real haproxy's port in one
// apply while a client sends requests through whatever port its file
// names: the load balancer serves old and new until the client has moved
// (its validate command proves both at that moment), then kha_handover
// drops the old; no request fails. An apply that fails after the interim
// configuration leaves both served, the handover pending (drift of
// kha_handover, none of the load balancer), and the next apply ends it.
func TestAccHandover_portMovesInOneApply(t *testing.T) {
	t.Parallel()
	_, err := os.Stat("/usr/sbin/haproxy")
	testhost.Require(t, err == nil, "haproxy is not installed")
	s := testhost.Start(t, testhost.Options{})
	h := newLiveHAProxy(t)
	f := &handoverFixture{s: s, h: h, client: filepath.Join(h.dir, "client.conf")}
	for i, host := range []string{"127.0.0.2", "127.0.0.3"} {
		addr := testhost.StartAPIServer(t, fmt.Sprintf("cp%d", i+1), host)
		ip, port, _ := net.SplitHostPort(addr)
		f.backs = append(f.backs, fmt.Sprintf(`{ name = "cp%d", address = %q, port = %s }`, i+1, ip, port))
	}
	first, second, third := h.port, testhost.FreePort(t, "127.0.0.1"), testhost.FreePort(t, "127.0.0.1")
	at := func(port int) string {
		return strings.Replace(f.config(port, "true"), fmt.Sprintf("port = %d }", h.port), fmt.Sprintf("port = %d }\n  handover = true", port), 1)
	}
	// The client follows its file, as a kubelet follows its kubeconfig.
	var stop chan struct{}
	var sent, failed atomic.Int64
	var firstFailure atomic.Value
	loadDone := make(chan struct{})
	startLoad := func() {
		stop = make(chan struct{})
		go func() {
			defer close(loadDone)
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := getThrough(h, f.client)
				sent.Add(1)
				if err != nil {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	record := remote.HandoverRecordPath(filepath.Join(h.dir, "haproxy.cfg"))
	recordExists := func(want bool) resource.TestCheckFunc {
		return func(*terraform.State) error {
			if _, err := os.Stat(record); (err == nil) != want {
				return fmt.Errorf("the handover record exists: %v, want %v (%v)", err == nil, want, err)
			}
			return nil
		}
	}
	servedPorts := func(want map[int]bool) resource.TestCheckFunc {
		return func(*terraform.State) error {
			var errs []error
			for port, on := range want {
				if serves(port) != on {
					errs = append(errs, fmt.Errorf("port %d served: %v, want %v", port, !on, on))
				}
			}
			return errors.Join(errs...)
		}
	}
	resumed := strings.Replace(at(third), `validate_command = "true"`, fmt.Sprintf("validate_command = %q", bothServed(second, third)), 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(record); !os.IsNotExist(err) {
				return fmt.Errorf("the handover record is still on the host after destroy (%v)", err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: at(first),
				Check:  resource.ComposeTestCheckFunc(h.waitAnswers("cp1", "cp2"), recordExists(false)),
			},
			{
				PreConfig: startLoad,
				Config:    strings.Replace(at(second), `validate_command = "true"`, fmt.Sprintf("validate_command = %q", bothServed(first, second)), 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kha_haproxy_config.test", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("kha_handover.test", plancheck.ResourceActionUpdate),
					expectRendered("kha_haproxy_config.test", fmt.Sprintf(`bind 127\.0\.0\.1:%d\n`, second)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kha_haproxy_config.test", tfjsonpath.New("rendered"),
						knownvalue.StringRegexp(regexp.MustCompile(fmt.Sprintf(`(?s)^[^%%]*bind 127\.0\.0\.1:%d\n`, second)))),
				},
				Check: resource.ComposeTestCheckFunc(servedPorts(map[int]bool{first: false, second: true}), recordExists(false),
					func(*terraform.State) error {
						close(stop)
						<-loadDone
						t.Logf("during the move: %d requests, %d failed", sent.Load(), failed.Load())
						if failed.Load() > 0 || sent.Load() < 20 {
							return fmt.Errorf("%d of %d requests failed during the move (the first: %v)", failed.Load(), sent.Load(), firstFailure.Load())
						}
						return nil
					}),
			},
			{
				// The interim configuration is in place; the clients fail
				// to move, and the handover is not reached.
				Config:      strings.Replace(at(third), `validate_command = "true"`, `validate_command = "false"`, 1),
				ExpectError: regexp.MustCompile(`(?s)Applying File Failed.*validate`),
			},
			{
				// Refresh: the load balancer is in sync; the handover is
				// pending, shown as drift, and the clients go first.
				PreConfig: func() {
					for _, check := range []resource.TestCheckFunc{servedPorts(map[int]bool{second: true, third: true}), recordExists(true)} {
						if err := check(nil); err != nil {
							t.Errorf("after the failed apply: %v", err)
						}
					}
				},
				Config: resumed,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kha_haproxy_config.test", plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction("kha_handover.test", plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(servedPorts(map[int]bool{second: false, third: true}), recordExists(false)),
			},
			{
				Config:           resumed,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
