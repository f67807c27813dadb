package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

func TestFunctions(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				ConfigDirectory: config.TestStepDirectory(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownOutputValue("v6", knownvalue.StringExact("https://[fd00::11]:6443")),
					plancheck.ExpectKnownOutputValue("name", knownvalue.StringExact("https://api.example.com:443")),
					plancheck.ExpectKnownOutputValue("sans", knownvalue.ObjectExact(map[string]knownvalue.Check{
						"dns_names":    knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("b.example.com"), knownvalue.StringExact("*.example.com")}),
						"ip_addresses": knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("10.0.0.1"), knownvalue.StringExact("fd00::1")}),
					})),
				}},
			},
			{
				ConfigDirectory: config.TestStepDirectory(),
				ExpectError:     regexp.MustCompile(`(?s)Invalid port`),
			},
			{
				ConfigDirectory: config.TestStepDirectory(),
				ExpectError:     regexp.MustCompile(`(?s)index 1.*not a host`),
			},
		},
	})
}
