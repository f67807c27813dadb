package provider

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

func TestFunctions(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
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

// TestFunctions_podEndpoint: pod_endpoint splits a URL for pods into its
// bare host and port, passes kha_cluster_endpoints' pod_network_endpoint,
// and fails the plan on a loopback one such as endpoints.global behind
// node-local load balancers.
func TestFunctions_podEndpoint(t *testing.T) {
	t.Parallel()
	endpoint := func(url, host string, port int64) knownvalue.Check {
		return knownvalue.ObjectExact(map[string]knownvalue.Check{
			"url": knownvalue.StringExact(url), "host": knownvalue.StringExact(host), "port": knownvalue.Int64Exact(port)})
	}
	unitTest(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		ProtoV6ProviderFactories: testAccProviders,
		// The failing plans first: they leave no state for the last step's
		// configuration to destroy.
		Steps: []resource.TestStep{
			{
				ConfigDirectory: config.TestStepDirectory(),
				ExpectError:     regexp.MustCompile(`(?s)Invalid URL:.*https://host:port`),
			},
			{
				ConfigDirectory: config.TestStepDirectory(),
				ExpectError:     regexp.MustCompile(`(?s)Loopback endpoint for pods:\s+https://localhost:6443.*pod_network_endpoint`),
			},
			{
				ConfigDirectory: config.TestStepDirectory(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownOutputValue("v6", endpoint("https://[fd00::100]:8443", "fd00::100", 8443)),
					plancheck.ExpectKnownOutputValue("default", endpoint("https://api.example.com:443", "api.example.com", 443)),
					plancheck.ExpectKnownOutputValue("from_kha", knownvalue.StringExact("fd00::11")),
				}},
			},
		},
	})
}

// TestFunctions_podEndpointLoopbackSpellings: pod_endpoint refuses every
// spelling of this host that a pod's resolver or curl would dial as one,
// with the error of plain loopback.
func TestFunctions_podEndpointLoopbackSpellings(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"https://0x7f000001:6443", "https://2130706433:6443", "https://0177.0.0.1:6443",
		"https://017700000001:6443", "https://127.1:6443", "https://0x7f.1:6443", "https://[::ffff:127.0.0.1]:6443",
		"https://0.0.0.0:6443", "https://[::]:6443", "https://ip6-localhost:6443", "https://ip6-loopback:6443",
		"https://localhost.localdomain:6443", "https://api.localhost:6443"} {
		t.Run(u, func(t *testing.T) {
			unitTest(t, resource.TestCase{
				TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{
					ConfigDirectory: config.StaticDirectory(filepath.Join("testdata", "TestFunctions_podEndpointLoopbackSpellings")),
					ConfigVariables: config.Variables{"url": config.StringVariable(u)},
					ExpectError: regexp.MustCompile(`(?s)Loopback endpoint for pods:\s+` + regexp.QuoteMeta(u) +
						`.*pod's\s+own\s+loopback.*pod_network_endpoint`),
				}},
			})
		})
	}
}

// TestPodEndpointFunction_controllerHostsFile: pod_endpoint refuses a name
// that the hosts file of the machine running Terraform maps to loopback
// (Debian maps its own hostname to 127.0.1.1), saying so; other names,
// and every name without such a file, pass.
func TestPodEndpointFunction_controllerHostsFile(t *testing.T) {
	t.Parallel()
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n127.0.1.1 controller.example.com controller\n10.0.0.100 api.example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(f *podEndpointFunction, u string) *function.FuncError {
		resp := function.RunResponse{Result: function.NewResultData(types.ObjectUnknown(podEndpointType))}
		f.Run(context.Background(), function.RunRequest{Arguments: function.NewArgumentsData([]attr.Value{types.StringValue(u)})}, &resp)
		return resp.Error
	}
	f := &podEndpointFunction{hostsFile: hosts}
	for _, u := range []string{"https://controller:6443", "https://Controller.Example.Com.:6443"} {
		err := run(f, u)
		if err == nil || !regexp.MustCompile(`Loopback endpoint for pods: .*`+regexp.QuoteMeta(hosts)+` on the machine running Terraform maps .* to 127\.0\.1\.1`).MatchString(err.Text) {
			t.Errorf("%s: want the hosts file's loopback named, got %v", u, err)
		}
	}
	if err := run(f, "https://api.example.com:6443"); err != nil {
		t.Errorf("a name the hosts file maps elsewhere: %v", err)
	}
	if err := run(&podEndpointFunction{hostsFile: filepath.Join(t.TempDir(), "none")}, "https://controller:6443"); err != nil {
		t.Errorf("without a hosts file: %v", err)
	}
}
