package provider

import (
	"fmt"
	"os"
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
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

func TestEtcdAccess_modesKnownAtPlan(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				ConfigDirectory: config.TestStepDirectory(),
				ExpectError:     regexp.MustCompile(`(?s)etcd endpoint would fail TLS verification.*host 10\.0\.0\.100 is not among`),
			}, {
				ConfigDirectory: config.TestStepDirectory(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("etcd_servers"), knownvalue.StringExact("https://etcd.example.com:2379")),
					plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("access_addresses"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("https://10.0.0.11:2379"), knownvalue.StringExact("https://192.0.2.12:2379"), knownvalue.StringExact("https://10.0.0.13:2379")})),
					plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("initial_cluster"),
						knownvalue.StringExact("etcd-a=https://10.0.0.11:2380,etcd2=https://192.0.2.12:2380,etcd3=https://10.0.0.13:2380")),
					plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("member_names"), knownvalue.MapExact(map[string]knownvalue.Check{
						"m0": knownvalue.StringExact("etcd-a"), "m1": knownvalue.StringExact("etcd2"), "m2": knownvalue.StringExact("etcd3")})),
					plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("client_urls").AtMapKey("m1"), knownvalue.StringExact("https://etcd-1.example.com:2379")),
					plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("listen_peer_urls").AtMapKey("m1"), knownvalue.StringExact("https://10.0.0.12:2380")),
					plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("listen_metrics_urls").AtMapKey("m2"),
						knownvalue.StringExact("http://10.0.0.13:2382,http://127.0.0.1:2382")),
					plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("metrics_addresses").AtSliceIndex(1), knownvalue.StringExact("https://192.0.2.12:2382")),
					plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("kubeadm_cert_sans"), knownvalue.ListSizeExact(0)),
					plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("cert_sans").AtMapKey("dns_names"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("localhost"), knownvalue.StringExact("m0"), knownvalue.StringExact("etcd-1.example.com"), knownvalue.StringExact("m1"), knownvalue.StringExact("m2"),
						knownvalue.StringExact("etcd.kube-system.svc.cluster.local"), knownvalue.StringExact("etcd.kube-system.svc"),
						knownvalue.StringExact("etcd.kube-system"), knownvalue.StringExact("etcd"), knownvalue.StringExact("etcd.internal"),
						knownvalue.StringExact("etcd.example.com")})),
					plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("cert_sans").AtMapKey("ip_addresses"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("2.3.7.9"), knownvalue.StringExact("10.0.0.11"), knownvalue.StringExact("192.0.2.12"),
						knownvalue.StringExact("10.0.0.12"), knownvalue.StringExact("10.0.0.13"), knownvalue.StringExact("127.0.0.1"), knownvalue.StringExact("::1")})),
					plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("proxy_config"), knownvalue.Null()),
				}},
			},
		},
	})
}

// TestAccEtcdAccess_realCluster computes the access of a three-member TLS
// etcd cluster, pushes the local proxy over SSH and runs it as a real
// haproxy, starts the real etcd with certificates carrying the computed
// SANs, and uses the real etcdctl through every computed endpoint.
func TestAccEtcdAccess_realCluster(t *testing.T) {
	t.Parallel()
	_, err := os.Stat("/usr/sbin/haproxy")
	testhost.Require(t, err == nil, "haproxy is not installed")
	s := testhost.Start(t, testhost.Options{})
	dir := t.TempDir()
	pidFile, cfgFile := filepath.Join(dir, "proxy.pid"), filepath.Join(dir, "etcd-proxy.cfg")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	members := []*testhost.EtcdMember{{Name: "etcd1", IP: "127.0.0.11", ExtraClientIP: "127.0.0.111"}, {Name: "etcd2", IP: "127.0.0.12"}, {Name: "etcd3", IP: "127.0.0.13"}}
	var hcl []string
	for _, m := range members {
		m.ClientPort, m.PeerPort = testhost.FreePort(t, m.IP), testhost.FreePort(t, m.IP)
		hcl = append(hcl, fmt.Sprintf(`{ name = %q, ip = %q, client_port = %d, peer_port = %d }`, m.Name, m.IP, m.ClientPort, m.PeerPort))
	}
	proxyPort := testhost.FreePort(t, "127.0.0.1")
	reload := fmt.Sprintf(`if [ -s %[1]s ] && kill -0 $(cat %[1]s) 2>/dev/null; then kill -USR2 $(cat %[1]s); else haproxy -W -D -p %[1]s -f %[2]s; fi`, pidFile, cfgFile)
	config := fmt.Sprintf(`
provider "kha" {
  default_ssh = { private_key = %q }
}
resource "kha_etcd_access" "test" {
  members           = [%s]
  mode              = "local_proxy"
  local_proxy_port  = %d
  proxy_config_path = %q
  env_path          = %q
  reload_command    = %q
  destroy_command   = "kill $(cat %s)"
  ssh               = { host = %q, port = %d, host_key = %q }
}`, s.ClientKey.PEM, strings.Join(hcl, ", "), proxyPort, cfgFile, filepath.Join(dir, "etcd.env"), reload, pidFile, s.Host, s.Port, s.HostKey.Public())

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("kha_etcd_access.test", tfjsonpath.New("single_endpoint"), knownvalue.StringExact(fmt.Sprintf("https://127.0.0.1:%d", proxyPort))),
			}},
			Check: func(st *terraform.State) error {
				attrs := st.RootModule().Resources["kha_etcd_access.test"].Primary.Attributes
				var sanIPs, access []string
				for i := 0; attrs[fmt.Sprintf("cert_sans.ip_addresses.%d", i)] != ""; i++ {
					sanIPs = append(sanIPs, attrs[fmt.Sprintf("cert_sans.ip_addresses.%d", i)])
				}
				for i := 0; attrs[fmt.Sprintf("access_addresses.%d", i)] != ""; i++ {
					access = append(access, attrs[fmt.Sprintf("access_addresses.%d", i)])
				}
				cluster := testhost.StartEtcd(t, members, sanIPs)
				// Every computed endpoint verifies: each member, and the proxy.
				for _, ep := range append(access, attrs["single_endpoint"]) {
					if _, err := retry(10*time.Second, func() (string, error) { return cluster.Etcdctl(ep, "put", "kha", ep) }); err != nil {
						return err
					}
				}
				// An address outside the SANs does not.
				if out, err := cluster.Etcdctl(fmt.Sprintf("https://127.0.0.111:%d", members[0].ClientPort), "get", "kha"); err == nil {
					return fmt.Errorf("127.0.0.111 is not in the SANs, yet etcdctl succeeded: %s", out)
				}
				// A member dies: direct access (all members) and the proxy keep working.
				members[1].Kill()
				for _, ep := range []string{attrs["etcd_servers"], strings.Join(access, ",")} {
					if _, err := retry(15*time.Second, func() (string, error) { return cluster.Etcdctl(ep, "put", "after-kill", "ok") }); err != nil {
						return fmt.Errorf("after killing etcd2: %w", err)
					}
				}
				env, err := os.ReadFile(filepath.Join(dir, "etcd.env"))
				if err != nil || !strings.Contains(string(env), "ETCD_SERVERS="+attrs["etcd_servers"]) {
					return fmt.Errorf("env file on the host: %q %v", env, err)
				}
				return nil
			},
		}},
	})
}

func retry(limit time.Duration, f func() (string, error)) (string, error) {
	deadline := time.Now().Add(limit)
	for {
		out, err := f()
		if err == nil || time.Now().After(deadline) {
			return out, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A local proxy that the reload command starts as a systemd unit is
// stopped on destroy by default; a destroy_command set is kept, and other
// modes have none.
func TestEtcdAccess_localProxyStopsOnDestroy(t *testing.T) {
	t.Parallel()
	const members = `members = [{ name = "etcd1", ip = "10.0.0.11" }, { name = "etcd2", ip = "10.0.0.12" }]`
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
resource "kha_etcd_access" "proxy" {
  %[1]s
  mode           = "local_proxy"
  reload_command = "systemctl enable haproxy@etcd && systemctl reload-or-restart haproxy@etcd"
}
resource "kha_etcd_access" "own" {
  %[1]s
  mode            = "local_proxy"
  reload_command  = "systemctl reload-or-restart haproxy@etcd"
  destroy_command = "systemctl stop haproxy@etcd"
}
resource "kha_etcd_access" "script" {
  %[1]s
  mode           = "local_proxy"
  reload_command = "/usr/local/bin/restart-proxy"
}
resource "kha_etcd_access" "direct" {
  %[1]s
  reload_command = "systemctl restart haproxy@etcd"
}`, members),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("kha_etcd_access.proxy", tfjsonpath.New("destroy_command"), knownvalue.StringExact("systemctl disable --now haproxy@etcd")),
				plancheck.ExpectKnownValue("kha_etcd_access.own", tfjsonpath.New("destroy_command"), knownvalue.StringExact("systemctl stop haproxy@etcd")),
				plancheck.ExpectKnownValue("kha_etcd_access.script", tfjsonpath.New("destroy_command"), knownvalue.Null()),
				plancheck.ExpectKnownValue("kha_etcd_access.direct", tfjsonpath.New("destroy_command"), knownvalue.Null()),
			}},
		}},
	})
}
