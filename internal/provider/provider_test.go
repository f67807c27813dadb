package provider

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// testAccProviders serves the provider in-process to the real terraform
// binary that terraform-plugin-testing drives.
var testAccProviders = map[string]func() (tfprotov6.ProviderServer, error){
	"kha": providerserver.NewProtocol6WithError(New("test", "test")()),
}

// stepProviders moves a test case's provider onto its steps: a fixture
// with a provider block counts as naming its providers, and the testing
// framework then wants them on the steps rather than on the test case.
func stepProviders(tc resource.TestCase) resource.TestCase {
	for i := range tc.Steps {
		tc.Steps[i].ProtoV6ProviderFactories = tc.ProtoV6ProviderFactories
	}
	tc.ProtoV6ProviderFactories = nil
	return tc
}

// expectPlanErrors plans each fixture testdata/<test name>/<case> (with
// vars; it may configure the provider) and wants the plan to fail with
// the case's pattern.
func expectPlanErrors(t *testing.T, cases map[string]string, vars config.Variables) {
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			unitTest(t, stepProviders(resource.TestCase{
				TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{ConfigDirectory: config.StaticDirectory(filepath.Join("testdata", strings.Split(t.Name(), "/")[0], name)),
					ConfigVariables: vars, PlanOnly: true, ExpectError: regexp.MustCompile(want)}},
			}))
		})
	}
}

// expectRendered checks at plan time that a resource's `rendered` is known
// and matches pattern.
func expectRendered(addr, pattern string) plancheck.PlanCheck {
	return plancheck.ExpectKnownValue(addr, tfjsonpath.New("rendered"), knownvalue.StringRegexp(regexp.MustCompile(pattern)))
}

// unitTest is resource.UnitTest: plans (or applies) through the real CLI
// that need no host. go test -short (make test-unit) skips them.
func unitTest(t *testing.T, tc resource.TestCase) {
	t.Helper()
	testhost.Real(t, "the Terraform CLI")
	resource.UnitTest(t, tc)
}
