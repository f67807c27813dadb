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
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestAccKeepalivedConfig_pushedAndChecked renders one node's config at
// plan time and pushes it, checked by the real `keepalived -t`.
func TestAccKeepalivedConfig_pushedAndChecked(t *testing.T) {
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
	cases := map[string]string{
		"router_id_out_of_range": `(?s)Invalid Attribute Value.*virtual_router_id.*between 1 and 255`,
		"equal_priorities":       `(?s)Equal priorities.*nodes\[1\]\.priority`,
		"vip_family_mismatch":    `(?s)Address family mismatch.*nodes\[0\]\.ip`,
	}
	expectPlanErrors(t, cases, nil)
}
