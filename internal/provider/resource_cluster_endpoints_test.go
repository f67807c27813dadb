package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

const endpointsAddr = "kha_cluster_endpoints.test"

// threeNodesHCL is the node list both configurations share.
const threeNodesHCL = `
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12", access_ip = "192.0.2.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_nodes = [{ name = "w1", ip = "10.0.0.21" }]
`

const localLBConfig = `
resource "kha_cluster_endpoints" "test" {` + threeNodesHCL + `
  local_lb     = { type = "haproxy", port = 16443, healthcheck_port = 8081 }
  supplementary_addresses = ["k8s.example.com"]
}
`

const externalLBConfig = `
resource "kha_cluster_endpoints" "test" {` + threeNodesHCL + `
  external_lb  = { address = "10.0.0.100", port = 8383, domain_name = "lb-apiserver.kubernetes.local" }
}
`

func knownString(addr, attr, want string) plancheck.PlanCheck {
	return plancheck.ExpectKnownValue(addr, tfjsonpath.New(attr), knownvalue.StringExact(want))
}

func TestAccClusterEndpoints_knownAtPlanAndUpdatedInPlace(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				Config: localLBConfig,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(endpointsAddr, plancheck.ResourceActionCreate),
					knownString(endpointsAddr, "mode", "local_lb"),
					knownString(endpointsAddr, "lb_domain_name", "localhost"),
					knownString(endpointsAddr, "kubeadm_control_plane_endpoint", "10.0.0.11:6443"),
					knownString(endpointsAddr, "kubeconfig_server", "https://10.0.0.11:6443"),
					knownString(endpointsAddr, "local_lb_type", "haproxy"),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("endpoints"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"control_plane": knownvalue.StringExact("https://127.0.0.1:6443"),
						"worker":        knownvalue.StringExact("https://localhost:16443"),
						"global":        knownvalue.StringExact("https://localhost:16443"),
						"external":      knownvalue.StringExact("https://10.0.0.11:6443"),
					})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("node_endpoints"), knownvalue.MapExact(map[string]knownvalue.Check{
						"cp1": knownvalue.StringExact("https://127.0.0.1:6443"),
						"cp2": knownvalue.StringExact("https://127.0.0.1:6443"),
						"cp3": knownvalue.StringExact("https://127.0.0.1:6443"),
						"w1":  knownvalue.StringExact("https://localhost:16443"),
					})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("apiserver_cert_sans").AtMapKey("ip_addresses"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("10.233.0.1"), knownvalue.StringExact("127.0.0.1"), knownvalue.StringExact("::1"),
						knownvalue.StringExact("10.0.0.11"), knownvalue.StringExact("192.0.2.12"), knownvalue.StringExact("10.0.0.13"),
						knownvalue.StringExact("10.0.0.12"),
					})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("apiserver_cert_sans").AtMapKey("dns_names"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("kubernetes"), knownvalue.StringExact("kubernetes.default"), knownvalue.StringExact("kubernetes.default.svc"),
						knownvalue.StringExact("kubernetes.default.svc.cluster.local"), knownvalue.StringExact("localhost"),
						knownvalue.StringExact("k8s.example.com"), knownvalue.StringExact("cp1"), knownvalue.StringExact("cp2"), knownvalue.StringExact("cp3"),
					})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_listen"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"address": knownvalue.StringExact("127.0.0.1"), "ipv6_address": knownvalue.Null(), "port": knownvalue.Int64Exact(16443),
					})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_backends").AtSliceIndex(1), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"name": knownvalue.StringExact("cp2"), "address": knownvalue.StringExact("192.0.2.12"), "port": knownvalue.Int64Exact(6443),
					})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_nodes"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("w1")})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("hosts_entries"), knownvalue.ListSizeExact(0)),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{32}$`))),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("apiserver_port"), knownvalue.Int64Exact(6443)),
					statecheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("mode"), knownvalue.StringExact("local_lb")),
				},
			},
			{
				// Adding an external LB changes the matrix in place, and the
				// new values are known before apply.
				Config: externalLBConfig,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(endpointsAddr, plancheck.ResourceActionUpdate),
					knownString(endpointsAddr, "mode", "external_lb"),
					knownString(endpointsAddr, "kubeadm_control_plane_endpoint", "lb-apiserver.kubernetes.local:8383"),
					knownString(endpointsAddr, "kubeconfig_server", "https://10.0.0.100:8383"),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_listen"), knownvalue.Null()),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_type"), knownvalue.Null()),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("hosts_entries"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("10.0.0.100 lb-apiserver.kubernetes.local"),
					})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("node_endpoints").AtMapKey("cp1"), knownvalue.StringExact("https://lb-apiserver.kubernetes.local:8383")),
				}},
			},
			{
				// Re-applying the same configuration plans nothing.
				Config: externalLBConfig,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
}

func TestAccClusterEndpoints_unknownInputsStayUnknown(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config: `
resource "terraform_data" "later" {}

resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [
    # Known only after apply: the matrix must not pretend to know it.
    { name = "cp1", ip = cidrhost("10.0.0.0/24", length(terraform_data.later.id) > 0 ? 11 : 12) },
  ]
}
`,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectUnknownValue(endpointsAddr, tfjsonpath.New("kubeadm_control_plane_endpoint")),
				plancheck.ExpectUnknownValue(endpointsAddr, tfjsonpath.New("apiserver_cert_sans")),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("kubeadm_control_plane_endpoint"), knownvalue.StringExact("10.0.0.11:6443")),
			},
		}},
	})
}

func TestAccClusterEndpoints_diagnostics(t *testing.T) {
	cases := map[string]struct {
		config string
		err    string
	}{
		"duplicate node name": {`
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  worker_nodes        = [{ name = "cp1", ip = "10.0.0.21" }]
}`, `(?s)Duplicate node name.*worker_nodes\[0\]\.name: node name "cp1" is already used by\s+control_plane_nodes\[0\]\.name`},
		"IPv6 address in an IPv4 cluster": {`
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "fd00::11" }]
}`, `(?s)Address family mismatch.*control_plane_nodes\[0\]\.ip: ip fd00::11 is not an IPv4 address.*ip_family\s+=\s+"dual"`},
		"VIP port collides with the apiserver": {`
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  external_lb         = { address = "10.0.0.100", runs_on_control_plane = true }
}`, `(?s)Port conflict.*external_lb\.port: on node "cp1", kube-apiserver on \[::\]:6443`},
		"existing certificate lacks the LB name": {`
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  external_lb         = { address = "10.0.0.100", domain_name = "api.example.com" }
  existing_cert_sans  = { dns_names = ["kubernetes", "localhost"], ip_addresses = ["10.0.0.100", "10.0.0.11"] }
}`, `(?s)would fail TLS verification.*existing_cert_sans: .*not api\.example\.com`},
		"port out of range (schema validator)": {`
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  apiserver_port      = 70000
}`, `(?s)apiserver_port.*between 1 and 65535`},
		"unknown LB type (schema validator)": {`
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  local_lb            = { type = "envoy" }
}`, `(?s)local_lb\.type.*value must be one of`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps:                    []resource.TestStep{{Config: tc.config, ExpectError: regexp.MustCompile(tc.err)}},
			})
		})
	}
}

func TestAccClusterEndpoints_importIsRefused(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: localLBConfig},
			{
				ResourceName:  endpointsAddr,
				ImportState:   true,
				ImportStateId: "anything",
				ExpectError:   regexp.MustCompile(`(?i)import`),
			},
		},
	})
}
