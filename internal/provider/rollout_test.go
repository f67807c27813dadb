package provider

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// Bad values of rollout and rollout_group fail the plan at their path
// (testdata/TestRollout_planTimeValidation/<case>); good ones plan.
func TestRollout_planTimeValidation(t *testing.T) {
	t.Parallel()
	expectPlanErrors(t, map[string]string{
		"batch_zero":      `Attribute rollout\.batch value must be at least 1, got: 0`,
		"canary_negative": `Attribute rollout\.canary value must be at least 0, got: -1`,
		"group_batch":     `Attribute rollout\.groups\["lb"\]\.batch value must be at\s+least 1`,
		"group_name":      `Attribute rollout\.groups\[""\] string length must be at least 1`,
		"rollout_group":   `Attribute rollout_group string length must be at least 1`,
	}, nil)
	unitTest(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{ConfigDirectory: config.StaticDirectory("testdata/TestRollout_planTimeValidation/valid"),
			PlanOnly: true, ExpectNonEmptyPlan: true}},
	}))
}

// A change of rollout_group alone is the state's: the apply neither
// contacts the host (stopped here) nor waits for a rollout.
func TestAccRollout_groupChangeLeavesTheHostAlone(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	target := filepath.Join(t.TempDir(), "lb.cfg")
	cfg := func(group, onDestroy string) string {
		return fmt.Sprintf(`
provider "kha" {
  default_ssh = { private_key = %q, known_hosts = %q, refresh_timeout = "1s" }
  rollout     = { canary = 1, batch = 1 }
}
resource "kha_file" "test" {
  path          = %q
  content       = "frontend kube\n"
  ssh           = { host = %q, port = %d }
  rollout_group = %s
  on_destroy    = %q
}`, s.ClientKey.PEM, s.KnownHosts(), target, s.Host, s.Port, group, onDestroy)
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: cfg("null", "restore"), Check: fileIs(target, "frontend kube\n")},
			{
				PreConfig: s.Stop,
				Config:    cfg(`"lb"`, "restore"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kha_file.test", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kha_file.test", tfjsonpath.New("rollout_group"), knownvalue.StringExact("lb")),
				},
			},
			// The host is gone: let it go without contacting it.
			{Config: cfg(`"lb"`, "keep")},
		},
	}))
}
