package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestAccKeepalivedConfig_pushedAndChecked renders one node's config at
// plan time and pushes it, checked by the real `keepalived -t`.
func TestAccKeepalivedConfig_pushedAndChecked(t *testing.T) {
	t.Parallel()
	_, err := os.Stat("/usr/sbin/keepalived")
	testhost.Require(t, err == nil, "keepalived is not installed")
	s := testhost.Start(t, testhost.Options{})
	dir := filepath.Join(t.TempDir(), "keepalived")
	cfg, script := filepath.Join(dir, "keepalived.conf"), filepath.Join(dir, "track.sh")
	config := func(routerID int) string {
		return fmt.Sprintf(`
provider "kha" {
  default_ssh = { private_key = %q }
}
resource "kha_keepalived_config" "lb1" {
  node              = "lb1"
  nodes             = [{ name = "lb1", ip = "10.0.0.5", priority = 150 }, { name = "lb2", ip = "10.0.0.6", priority = 100 }]
  vip               = "10.0.0.100"
  vip_prefix        = 24
  interface         = "eth0"
  virtual_router_id = %d
  healthcheck_port  = 8081
  track_script_path = %q
  config_path       = %q
  reload_command    = ""
  check_vip         = false # this machine is not on 10.0.0.0/24 (TestAccKeepalivedConfig_checksTheVIP is)
  ssh               = { host = %q, port = %d, host_key = %q }
}`, s.ClientKey.PEM, routerID, script, cfg, s.Host, s.Port, s.HostKey.Public())
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				Config: config(77),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kha_keepalived_config.lb1", tfjsonpath.New("rendered"), knownvalue.StringRegexp(regexp.MustCompile(
						`(?s)script "`+regexp.QuoteMeta(script)+`".*priority 150\n\s+advert_int 0\.25\n\s+preempt_delay 2\n.*unicast_peer \{\n\s+10\.0\.0\.6\n.*10\.0\.0\.100/24 dev eth0`))),
				}},
				Check: func(*terraform.State) error {
					b, err := os.ReadFile(cfg)
					if err != nil || !strings.Contains(string(b), "router_id lb1") {
						return fmt.Errorf("config on the host: %q %v", b, err)
					}
					// The track script goes with the config, executable.
					b, err = os.ReadFile(script)
					fi, _ := os.Stat(script)
					if err != nil || !strings.Contains(string(b), "http://127.0.0.1:8081/healthz") || fi.Mode().Perm() != 0o755 {
						return fmt.Errorf("track script on the host: %q %v", b, err)
					}
					return nil
				},
			},
		},
	})
}

func TestKeepalivedConfig_diagnostics(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"router_id_out_of_range": `(?s)Invalid Attribute Value.*virtual_router_id.*between 1 and 255`,
		"equal_priorities":       `(?s)Equal priorities.*nodes\[1\]\.priority`,
		"vip_family_mismatch":    `(?s)Address family mismatch.*nodes\[0\]\.ip`,
	}
	expectPlanErrors(t, cases, nil)
}

// TestAccKeepalivedConfig_vipMovesWithHandover moves the VIP to another
// address in one apply: when the clients move (a kha_file here, whose
// validate command reads the live config), keepalived holds both
// addresses; kha_handover then drops the old one, and the plan is empty.
// The resource's id names its track script, its first file: kha_handover
// finds the handover by the id, not by the configuration's path.
func TestAccKeepalivedConfig_vipMovesWithHandover(t *testing.T) {
	t.Parallel()
	_, err := os.Stat("/usr/sbin/keepalived")
	testhost.Require(t, err == nil, "keepalived is not installed")
	s := testhost.Start(t, testhost.Options{})
	dir := filepath.Join(t.TempDir(), "keepalived")
	cfg := filepath.Join(dir, "keepalived.conf")
	holds := func(vips ...string) string {
		var checks []string
		for _, v := range vips {
			checks = append(checks, fmt.Sprintf("grep -q '%s/24 dev eth0' %s", regexp.QuoteMeta(v), cfg))
		}
		return strings.Join(checks, " && ")
	}
	config := func(vip, clientCheck string) string {
		connection := fmt.Sprintf(`{ host = %q, port = %d, host_key = %q }`, s.Host, s.Port, s.HostKey.Public())
		return fmt.Sprintf(`
provider "kha" {
  default_ssh = { private_key = %[1]q }
}
resource "kha_keepalived_config" "lb1" {
  node              = "lb1"
  nodes             = [{ name = "lb1", ip = "10.0.0.5", priority = 150 }, { name = "lb2", ip = "10.0.0.6", priority = 100 }]
  vip               = %[2]q
  vip_prefix        = 24
  interface         = "eth0"
  virtual_router_id = 77
  healthcheck_port  = 8081
  track_script_path = "%[7]s/track.sh"
  config_path       = %[3]q
  reload_command    = ""
  handover          = true
  check_vip         = false # this machine is not on 10.0.0.0/24
  ssh               = %[4]s
}
resource "kha_file" "client" {
  path             = %[5]q
  content          = "server: https://%[2]s:8443\n"
  validate_command = %[6]q
  ssh              = %[4]s
  depends_on       = [kha_keepalived_config.lb1]
}
resource "kha_handover" "lb1" {
  target_id     = kha_keepalived_config.lb1.id
  target_sha256 = kha_keepalived_config.lb1.handover_sha256
  ssh           = %[4]s
  depends_on    = [kha_file.client]
}`, s.ClientKey.PEM, vip, cfg, connection, filepath.Join(dir, "client.conf"), clientCheck, dir)
	}
	onHost := func(want ...string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			b, err := os.ReadFile(cfg)
			if err != nil {
				return err
			}
			if got := regexp.MustCompile(`10\.0\.0\.\d+/24 dev eth0`).FindAllString(string(b), -1); strings.Join(got, ",") != strings.Join(want, ",") {
				return fmt.Errorf("keepalived holds %q, want %q", got, want)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*.kha.handover")); len(left) > 0 {
				return fmt.Errorf("the handover's record is on the host: %v", left)
			}
			return nil
		}
	}
	moved := config("10.0.0.101", holds("10.0.0.100", "10.0.0.101"))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: config("10.0.0.100", "true"), Check: onHost("10.0.0.100/24 dev eth0")},
			{
				Config: moved,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kha_keepalived_config.lb1", tfjsonpath.New("rendered"),
						knownvalue.StringRegexp(regexp.MustCompile(`virtual_ipaddress \{\n\s+10\.0\.0\.101/24 dev eth0\n\s+\}`))),
				}},
				Check: onHost("10.0.0.101/24 dev eth0"),
			},
			{Config: moved, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		},
	})
}

// TestAccKeepalivedConfig_checksTheVIP applies to a node on a layer-2
// segment (network namespaces and a bridge, the real arping and ip) with
// the other node of the pair and a stranger: a VIP the stranger holds is
// refused before anything is written, one the other node holds (a running
// pair) is fine and shows in vip_holders; a second holder is reported by
// the next plan, which plans vip_holders anew, and nobody holding it too,
// whose apply reloads keepalived though the configuration stays. The
// stranger, as a neighbour that answers for the VIP, cannot stop an apply
// that leaves the claim as it is, nor make the holder reload (neighbourSteps).
// A VIP behind no route is refused at `interface` and leaves the previous
// configuration, and check_vip = false skips the check.
func TestAccKeepalivedConfig_checksTheVIP(t *testing.T) {
	t.Parallel()
	check := newVIPCheckTest(t)
	s, vip := check.sshd, check.vip
	cfg, reloads := filepath.Join(t.TempDir(), "keepalived.conf"), filepath.Join(t.TempDir(), "reloads")
	config := func(vip string, checked bool) string {
		return fmt.Sprintf(`
provider "kha" {
  default_ssh = { private_key = %q }
}
resource "kha_keepalived_config" "lb1" {
  node              = "lb1"
  nodes             = [{ name = "lb1", ip = %q, priority = 150 }, { name = "lb2", ip = %q, priority = 100 }]
  vip               = %q
  interface         = %q
  virtual_router_id = 77
  config_path       = %q
  reload_command    = "echo reloaded >> %s"
  check_vip         = %t
  ssh               = { host = %q, port = %d, host_key = %q }
}`, s.ClientKey.PEM, check.selfIP, check.otherIP, vip, testhost.SegmentInterface, cfg, reloads, checked, s.Host, s.Port, s.HostKey.Public())
	}
	holds := func(want string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			b, err := os.ReadFile(cfg)
			if err != nil || !strings.Contains(string(b), want+"/32 dev "+testhost.SegmentInterface) {
				return fmt.Errorf("the config on the host should hold %s: %q %v", want, b, err)
			}
			return nil
		}
	}
	recorder := &planRecorder{}
	check.node, check.other, check.address, check.vipAttr, check.path = "lb1", "lb2", "kha_keepalived_config.lb1", "vip", cfg
	check.config = config(vip, true)
	steps := check.steps(t, recorder, "check that VRRP (IP protocol 112) passes")
	steps[1].Check = holds(vip)
	// Only nobody holding the VIP makes an apply reload keepalived, whose
	// configuration stays, so that keepalived comes back: the split brain
	// the node hears may be a neighbour's.
	reloaded := func(want int) resource.TestCheckFunc {
		return func(*terraform.State) error {
			if b, _ := os.ReadFile(reloads); strings.Count(string(b), "reloaded\n") != want {
				return fmt.Errorf("keepalived was reloaded %d times, want %d", strings.Count(string(b), "reloaded\n"), want)
			}
			return nil
		}
	}
	steps[3].Check = resource.ComposeTestCheckFunc(holds(vip), reloaded(1))
	steps[4].Check = reloaded(2)
	// The neighbour's steps reload only where the configuration changes
	// (the third and the last).
	neighbours := check.neighbourSteps(t, recorder, strings.Replace(check.config, "virtual_router_id = 77", "virtual_router_id = 78", 1))
	for i, want := range []int{2, 2, 3, 3, 4} {
		if neighbours[i].Check == nil {
			neighbours[i].Check = reloaded(want)
		} else {
			neighbours[i].Check = resource.ComposeTestCheckFunc(neighbours[i].Check, reloaded(want))
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		Steps: append(append(steps, neighbours...),
			resource.TestStep{
				PreConfig: func() { check.seg.Hold(t, check.otherNS, vip) },
				Config:    config(vip, true),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue("kha_keepalived_config.lb1",
					tfjsonpath.New("vip_holders"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("lb2")}))},
			},
			resource.TestStep{
				Config:      config("10.81.0.100", true),
				ExpectError: regexp.MustCompile(`(?s)VIP Not On-Link.*interface:\s+on\s+lb1,\s+10\.81\.0\.100:\s+` + "`ip\\s+route\\s+get`" + `\s+says`),
			},
			resource.TestStep{
				// The refused change left the previous configuration.
				PreConfig: func() {
					if err := holds(vip)(nil); err != nil {
						t.Error(err)
					}
				},
				Config: config("10.81.0.100", false),
				Check:  holds("10.81.0.100"),
			},
		),
	})
}
