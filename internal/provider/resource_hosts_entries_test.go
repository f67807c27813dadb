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

func TestAccHostsEntries_blockInHostsFile(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	hosts := filepath.Join(t.TempDir(), "hosts")
	original := "127.0.0.1 localhost\n::1 localhost ip6-localhost\n10.0.0.5 bastion\n"
	if err := os.WriteFile(hosts, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`
provider "kha" {
  default_ssh = { private_key = %q }
}
resource "kha_cluster_endpoints" "c" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  external_lb         = { address = "10.0.0.100", port = 8443, domain_name = "api.k8s.example.com" }
}
resource "kha_hosts_entries" "lb" {
  entries = kha_cluster_endpoints.c.hosts_entries
  path    = %q
  ssh     = { host = %q, port = %d, host_key = %q }
}`, s.ClientKey.PEM, hosts, s.Host, s.Port, s.HostKey.Public())
	block := "# BEGIN kha entries\n10.0.0.100 api.k8s.example.com\n# END kha entries\n"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			if got, _ := os.ReadFile(hosts); string(got) != original {
				return fmt.Errorf("after destroy the file is\n%s\nwant\n%s", got, original)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kha_hosts_entries.lb", tfjsonpath.New("block"), knownvalue.StringExact(block)),
				}},
				Check: fileIs(hosts, original+block),
			},
			{
				// Someone edits the block and adds a line of their own: the
				// block is put back, their line stays.
				PreConfig: func() {
					b, _ := os.ReadFile(hosts)
					edited := strings.Replace(string(b), "10.0.0.100 api", "10.6.6.6 api", 1) + "10.0.0.7 added-by-hand\n"
					mustWrite(t, hosts, edited)()
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kha_hosts_entries.lb", plancheck.ResourceActionUpdate),
				}},
				Check: fileIs(hosts, original+"10.0.0.7 added-by-hand\n"+block),
			},
			{
				// Terraform sees a hand edit outside the block as no change.
				PreConfig:        func() { mustWrite(t, hosts, original+block)() },
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

func TestAccHostsEntries_invalidEntry(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config:      `resource "kha_hosts_entries" "x" { entries = ["10.0.0.1 ok", "api.example.com 10.0.0.1"] }`,
			ExpectError: regexp.MustCompile(`(?s)Invalid Hosts Entry.*does not start with an IP address`),
		}},
	})
}
