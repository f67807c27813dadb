package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

func TestAccFunctions(t *testing.T) {
	resource.Test(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				Config: `
output "v6"   { value = provider::kha::endpoint_url("FD00::0011", 6443) }
output "name" { value = provider::kha::endpoint_url("Api.Example.com.", 443) }
output "sans" { value = provider::kha::cert_sans(["b.example.com", "10.0.0.1", "fd00::0001", "FD00::1", "*.example.com", "B.EXAMPLE.COM"]) }
`,
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
				Config:      `output "bad" { value = provider::kha::endpoint_url("10.0.0.1", 0) }`,
				ExpectError: regexp.MustCompile(`(?s)Invalid port`),
			},
			{
				Config:      `output "bad" { value = provider::kha::cert_sans(["ok.example.com", "not a host"]) }`,
				ExpectError: regexp.MustCompile(`(?s)index 1.*not a host`),
			},
		},
	})
}
