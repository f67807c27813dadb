package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

func TestAccHostsEntries_blockInHostsFile(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	hosts := filepath.Join(t.TempDir(), "hosts")
	original := "127.0.0.1 localhost\n::1 localhost ip6-localhost\n10.0.0.5 bastion\n"
	if err := os.WriteFile(hosts, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := func(marker string) config.Variables {
		return config.Variables{"host": config.StringVariable(s.Host), "port": config.IntegerVariable(s.Port),
			"host_key": config.StringVariable(s.HostKey.Public()), "private_key": config.StringVariable(s.ClientKey.PEM),
			"path": config.StringVariable(hosts), "marker": config.StringVariable(marker)}
	}
	block := func(marker string) string {
		return "# BEGIN kha " + marker + "\n10.0.0.100 api.k8s.example.com\n# END kha " + marker + "\n"
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			if got, _ := os.ReadFile(hosts); string(got) != original+"10.0.0.7 added-by-hand\n" {
				return fmt.Errorf("after destroy the file is\n%s\nwant\n%s", got, original)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("entries"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kha_hosts_entries.lb", tfjsonpath.New("block"), knownvalue.StringExact(block("entries"))),
				}},
				Check: fileIs(hosts, original+block("entries")),
			},
			{
				// Someone edits the block and adds a line of their own: the
				// block is put back where it stands, their line stays.
				PreConfig: func() {
					b, _ := os.ReadFile(hosts)
					edited := strings.Replace(string(b), "10.0.0.100 api", "10.6.6.6 api", 1) + "10.0.0.7 added-by-hand\n"
					mustWrite(t, hosts, edited)()
				},
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("entries"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kha_hosts_entries.lb", plancheck.ResourceActionUpdate),
				}},
				Check: fileIs(hosts, original+block("entries")+"10.0.0.7 added-by-hand\n"),
			},
			{
				// Terraform sees a hand edit outside the block as no change.
				PreConfig:       func() { mustWrite(t, hosts, original+block("entries")+"10.0.0.7 added-by-hand\n")() },
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("entries"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// A new marker: the new block is written, the old one removed.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("api"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kha_hosts_entries.lb", plancheck.ResourceActionUpdate),
				}},
				Check: fileIs(hosts, original+"10.0.0.7 added-by-hand\n"+block("api")),
			},
		},
	}))
}

func TestHostsEntries_invalidEntry(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: config.TestNameDirectory(),
			ExpectError:     regexp.MustCompile(`(?s)Invalid Hosts Entry.*does not start with an IP address`),
		}},
	})
}

// TestAccHostsEntries_destroyRemovesTheFileItMade: a hosts file that kha
// made for its block goes with the block on destroy, as the host had no
// file before; one that someone added a line to stays, with their line.
func TestAccHostsEntries_destroyRemovesTheFileItMade(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	dir := t.TempDir()
	for _, tc := range []struct {
		name, added string
	}{{"untouched", ""}, {"a line added by hand", "10.0.0.7 added-by-hand\n"}} {
		t.Run(tc.name, func(t *testing.T) {
			hosts := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			vars := config.Variables{"host": config.StringVariable(s.Host), "port": config.IntegerVariable(s.Port),
				"host_key": config.StringVariable(s.HostKey.Public()), "private_key": config.StringVariable(s.ClientKey.PEM),
				"path": config.StringVariable(hosts)}
			resource.Test(t, stepProviders(resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				CheckDestroy: func(*terraform.State) error {
					got, err := os.ReadFile(hosts)
					switch {
					case tc.added == "" && !os.IsNotExist(err):
						return fmt.Errorf("destroy left the file kha made: %q, %v", got, err)
					case tc.added != "" && string(got) != tc.added:
						return fmt.Errorf("destroy left %q, want the line added by hand alone", got)
					}
					return nil
				},
				Steps: []resource.TestStep{{
					ConfigDirectory: config.StaticDirectory("testdata/TestAccHostsEntries_blockInHostsFile"),
					ConfigVariables: vars,
					Check: func(*terraform.State) error {
						if tc.added != "" {
							f, err := os.OpenFile(hosts, os.O_APPEND|os.O_WRONLY, 0)
							if err != nil {
								return err
							}
							defer f.Close()
							_, err = f.WriteString(tc.added)
							return err
						}
						return nil
					},
				}},
			}))
		})
	}
}
