package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

const endpointsAddr = "kha_cluster_endpoints.test"

// localLBFixture is three control-plane nodes and a worker behind a
// node-local HAProxy.
var localLBFixture = config.StaticDirectory("testdata/TestClusterEndpoints_knownAtPlanAndUpdatedInPlace/1")

func knownString(attr, want string) plancheck.PlanCheck {
	return plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New(attr), knownvalue.StringExact(want))
}

func TestClusterEndpoints_knownAtPlanAndUpdatedInPlace(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				ConfigDirectory: config.TestStepDirectory(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(endpointsAddr, plancheck.ResourceActionCreate),
					knownString("mode", "local_lb"),
					knownString("lb_domain_name", "localhost"),
					knownString("kubeadm_control_plane_endpoint", "10.0.0.11:6443"),
					knownString("kubeconfig_server", "https://10.0.0.11:6443"),
					knownString("local_lb_type", "haproxy"),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("endpoints"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"control_plane": knownvalue.StringExact("https://10.0.0.11:6443"),
						"worker":        knownvalue.StringExact("https://localhost:16443"),
						"global":        knownvalue.StringExact("https://localhost:16443"),
						"external":      knownvalue.StringExact("https://10.0.0.11:6443"),
					})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("node_endpoints"), knownvalue.MapExact(map[string]knownvalue.Check{
						"cp1": knownvalue.StringExact("https://10.0.0.11:6443"),
						"cp2": knownvalue.StringExact("https://10.0.0.12:6443"),
						"cp3": knownvalue.StringExact("https://10.0.0.13:6443"),
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
						"anonymous_auth": knownvalue.Bool(true), "shutdown_delay_duration": knownvalue.Null(), "min_request_timeout": knownvalue.Null(),
					})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_fallback"), knownvalue.Null()),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_nodes"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("w1")})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_node_ips"), knownvalue.MapExact(map[string]knownvalue.Check{
						"w1": knownvalue.StringExact("10.0.0.21")})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("hosts_entries"), knownvalue.ListSizeExact(0)),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{32}$`))),
					knownString("kubeadm_discovery_address", "10.0.0.11:6443"),
					knownString("kube_proxy_server", "https://127.0.0.1:16443"),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("kubeadm_cluster_configuration"), knownvalue.StringRegexp(regexp.MustCompile(
						`(?s)kind: ClusterConfiguration\ncontrolPlaneEndpoint: 10\.0\.0\.11:6443\n.*certSANs:\n`))),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("metallb_manifests"), knownvalue.Null()),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("apiserver_port"), knownvalue.Int64Exact(6443)),
					statecheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("mode"), knownvalue.StringExact("local_lb")),
				},
			},
			{
				// Adding an external LB changes the matrix in place, and the
				// new values are known before apply.
				ConfigDirectory: config.TestStepDirectory(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(endpointsAddr, plancheck.ResourceActionUpdate),
					knownString("mode", "external_lb"),
					knownString("kubeadm_control_plane_endpoint", "lb-apiserver.kubernetes.local:8383"),
					knownString("kubeconfig_server", "https://10.0.0.100:8383"),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_listen"), knownvalue.Null()),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_type"), knownvalue.Null()),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_node_ips"), knownvalue.MapSizeExact(0)),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("hosts_entries"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("10.0.0.100 lb-apiserver.kubernetes.local"),
					})),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("node_endpoints").AtMapKey("cp1"), knownvalue.StringExact("https://10.0.0.11:6443")),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("node_endpoints").AtMapKey("w1"), knownvalue.StringExact("https://lb-apiserver.kubernetes.local:8383")),
				}},
			},
			{
				// Workers in compact form: w1 moves there unchanged, w2 joins.
				ConfigDirectory: config.TestStepDirectory(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(endpointsAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("node_endpoints"), knownvalue.MapExact(map[string]knownvalue.Check{
						"cp1": knownvalue.StringExact("https://10.0.0.11:6443"),
						"cp2": knownvalue.StringExact("https://10.0.0.12:6443"),
						"cp3": knownvalue.StringExact("https://10.0.0.13:6443"),
						"w1":  knownvalue.StringExact("https://lb-apiserver.kubernetes.local:8383"),
						"w2":  knownvalue.StringExact("https://lb-apiserver.kubernetes.local:8383"),
					})),
				}},
			},
			{
				// Re-applying the same configuration plans nothing.
				ConfigDirectory: config.StaticDirectory("testdata/TestClusterEndpoints_knownAtPlanAndUpdatedInPlace/3"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
}

func TestClusterEndpoints_unknownInputsStayUnknown(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: config.TestNameDirectory(),
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

func TestClusterEndpoints_diagnostics(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"node_in_both_lists_with_other_addresses": `(?s)Node listed twice with different addresses.*worker_nodes\[0\]: "cp1" is in\s+control_plane_nodes and among the workers`,
		"compact_worker_with_a_bad_address":       `(?s)Invalid IP address.*worker_addresses\["w1"\]: ip "10\.0\.0\.300" is not an IP`,
		"loopback_external_lb":                    `(?s)Loopback load balancer address.*local_lb = \{ every_node = true`,
		"loopback_node_address":                   `(?s)Invalid node address.*worker_nodes\[0\]\.ip: ip 127\.0\.1\.1 is a loopback\s+address.*Give\s+the\s+address\s+other\s+hosts\s+reach`,
		"every_node_on_the_apiserver_port":        `(?s)Port conflict.*local_lb\.port: on node "cp1"`,
		"ip_given_as_a_name":                      `(?s)Host name instead of an IP address.*access_ip takes an IP address only`,
		"ipv6_in_ipv4_cluster":                    `(?s)Address family mismatch.*control_plane_nodes\[0\]\.ip: ip fd00::11 is not an IPv4 address.*ip_family\s+=\s+"dual"`,
		"vip_port_collides":                       `(?s)Port conflict.*external_lb\.port: on node "cp1", kube-apiserver on \[::\]:6443`,
		"existing_cert_lacks_lb_name": `(?s)would fail TLS verification.*existing_cert_sans: .*not api\.example\.com.*` + wrapped(
			"the certificate must have DNS: kubernetes, kubernetes.default (missing), kubernetes.default.svc (missing), "+
				"kubernetes.default.svc.cluster.local (missing), localhost, api.example.com (missing), cp1 (missing); "+
				"IP: 10.233.0.1 (missing), 127.0.0.1 (missing), ::1 (missing), 10.0.0.100, 10.0.0.11."),
		"kubeadm_service_range":  `(?s)Service range contradicts the cluster.*service_cidr: existing_cert_sans lacks 10\.233\.0\.1.*has\s+10\.96\.0\.1.*set\s+service_cidr\s+=\s+"10\.96\.0\.0/12"`,
		"kubeadm_dns_domain":     `(?s)DNS domain contradicts the cluster.*dns_domain: existing_cert_sans lacks.*set\s+dns_domain\s+=\s+"corp\.example"`,
		"port_out_of_range":      `(?s)apiserver_port.*between 1 and 65535`,
		"unknown_lb_type":        `(?s)local_lb\.type.*value must be one of`,
		"goaway_chance_too_high": `(?s)apiserver_goaway_chance.*between 0\.000000 and\s+0\.020000`,
	}
	expectPlanErrors(t, cases, nil)
}

func TestClusterEndpoints_importIsRefused(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: localLBFixture},
			{
				ConfigDirectory: localLBFixture,
				ResourceName:    endpointsAddr,
				ImportState:     true,
				ImportStateId:   "anything",
				ExpectError:     regexp.MustCompile(`(?s)Resource Import Not Implemented.*does not support import`),
			},
		},
	})
}

func TestClusterEndpoints_epiphanyKubePrismAndMetalLB(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: config.TestNameDirectory(),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				knownString("mode", "local_lb_every_node"),
				knownString("kubeadm_control_plane_endpoint", "localhost:3446"),
				knownString("kubeconfig_server", "https://192.168.56.42:443"),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("endpoints").AtMapKey("external"), knownvalue.StringExact("https://api.example.com:443")),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("node_endpoints"), knownvalue.MapExact(map[string]knownvalue.Check{
					"cp1": knownvalue.StringExact("https://10.0.0.11:6443"),
					"cp2": knownvalue.StringExact("https://10.0.0.12:6443"),
					"w1":  knownvalue.StringExact("https://localhost:3446"),
				})),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_nodes"), knownvalue.ListExact([]knownvalue.Check{
					knownvalue.StringExact("cp1"), knownvalue.StringExact("cp2"), knownvalue.StringExact("w1")})),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("local_lb_node_ips"), knownvalue.MapExact(map[string]knownvalue.Check{
					"cp1": knownvalue.StringExact("10.0.0.11"), "cp2": knownvalue.StringExact("10.0.0.12"), "w1": knownvalue.StringExact("10.0.0.21")})),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("hosts_entries"), knownvalue.ListExact([]knownvalue.Check{
					knownvalue.StringExact("192.168.56.42 api.example.com")})),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("apiserver_cert_sans").AtMapKey("dns_names"), knownvalue.ListPartial(map[int]knownvalue.Check{
					6: knownvalue.StringExact("m0"), 7: knownvalue.StringExact("m0.dc1.example.com")})),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("metallb_manifests"), knownvalue.StringRegexp(regexp.MustCompile(
					`(?s)kind: Service\n.*metallb\.universe\.tf/loadBalancerIPs: 192\.168\.56\.42\n.*---\n.*kind: EndpointSlice\n`))),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("kubeadm_cluster_configuration"), knownvalue.StringRegexp(regexp.MustCompile(
					`(?s)controlPlaneEndpoint: localhost:3446\n.*external:\n\s+endpoints:\n\s+- https://10\.0\.0\.11:2379\n`))),
			}},
		}},
	})
}

// withComputed writes only the attributes computedValues names; one the
// schema marks computed but the list forgets would stay unknown in the plan.
func TestClusterEndpoints_computedValuesCoverTheSchema(t *testing.T) {
	t.Parallel()
	var resp fwresource.SchemaResponse
	NewClusterEndpointsResource().Schema(context.Background(), fwresource.SchemaRequest{}, &resp)
	var computed []string
	for name, a := range resp.Schema.Attributes {
		if a.IsComputed() && !a.IsOptional() {
			computed = append(computed, name)
		}
	}
	var m clusterEndpointsModel
	var written []string
	for name := range m.computedValues() {
		written = append(written, name)
	}
	sort.Strings(computed)
	sort.Strings(written)
	if !slices.Equal(computed, written) {
		t.Fatalf("computed attributes %v, computedValues writes %v", computed, written)
	}
}

// TestClusterEndpoints_ignoredLocalLBSettingsWarn: local_lb settings with
// external_lb and without local_lb.enabled = true are ignored (mode
// external_lb), and the plan warns at local_lb.enabled with the fix; with
// the fix applied the plan is silent and a node-local load balancer runs.
func TestClusterEndpoints_ignoredLocalLBSettingsWarn(t *testing.T) {
	t.Parallel()
	recorder := &planRecorder{}
	step := func(warn bool, mode string) resource.TestStep {
		return resource.TestStep{
			ConfigDirectory: config.TestStepDirectory(),
			PreConfig:       recorder.reset,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				knownString("mode", mode),
				planCheckFunc(func() error {
					found := recorder.take()
					for _, d := range found {
						if d.Severity != tfprotov6.DiagnosticSeverityWarning || d.Attribute.String() != tftypes.NewAttributePath().WithAttributeName("local_lb").WithAttributeName("enabled").String() {
							return fmt.Errorf("a diagnostic other than the warning at local_lb.enabled: %s: %s", d.Summary, d.Detail)
						}
						for _, want := range []string{"local_lb.healthcheck_port, local_lb.type", "set local_lb.enabled = true", "nothing to listen on"} {
							if !strings.Contains(d.Detail, want) {
								return fmt.Errorf("the warning does not say %q: %s", want, d.Detail)
							}
						}
					}
					if (len(found) > 0) != warn {
						return fmt.Errorf("the plan's diagnostics: %v; want the warning: %v", found, warn)
					}
					return nil
				}),
			}},
		}
	}
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		Steps:                    []resource.TestStep{step(true, "external_lb"), step(false, "local_lb_with_unmanaged_lb")},
	})
}

// wrapped matches text as Terraform prints it in a diagnostic: words
// separated by spaces or line breaks.
func wrapped(text string) string {
	words := strings.Fields(text)
	for i, w := range words {
		words[i] = regexp.QuoteMeta(w)
	}
	return strings.Join(words, `\s+`)
}

// TestClusterEndpoints_noCertificateYet: existing_cert_sans with both lists
// null, what kha_apiserver_certificate with allow_missing reads before the
// first apiserver runs, checks nothing; empty lists are a certificate
// without SANs, and the plan refuses it.
func TestClusterEndpoints_noCertificateYet(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: config.TestStepDirectory(), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)would fail TLS verification.*` + wrapped("DNS: kubernetes (missing)"))},
			{ConfigDirectory: config.TestStepDirectory(), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				knownString("kubeadm_control_plane_endpoint", "api.example.com:6443")}}},
		},
	})
}

// TestClusterEndpoints_drainThenRemove: the two applies that remove a
// control-plane node. In the first, the draining node is in no backend, no
// other node's endpoint and no kube-vip, the plan warns with what still
// points at it, and the SANs keep it; in the second it is gone from every
// value.
func TestClusterEndpoints_drainThenRemove(t *testing.T) {
	t.Parallel()
	recorder := &planRecorder{}
	step := func(draining bool) resource.TestStep {
		checks := []plancheck.PlanCheck{
			plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("apiserver_backends"), knownvalue.ListExact([]knownvalue.Check{
				knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact("cp2")}),
				knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact("cp3")}),
			})),
			plancheck.ExpectKnownValue("kha_haproxy_config.w1", tfjsonpath.New("rendered"), knownvalue.StringFunc(func(v string) error {
				if strings.Contains(v, "10.0.0.11") || !strings.Contains(v, "server cp2 10.0.0.12:6443") {
					return fmt.Errorf("the worker's HAProxy should forward to cp2 and cp3 only:\n%s", v)
				}
				return nil
			})),
			knownString("kubeadm_control_plane_endpoint", "10.0.0.12:6443"),
			knownString("kubeadm_discovery_address", "10.0.0.12:6443"),
			knownString("kubeconfig_server", "https://10.0.0.12:6443"),
			plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("endpoints").AtMapKey("external"), knownvalue.StringExact("https://10.0.0.12:6443")),
			kubeVIPOn{"cp2", "cp3"},
		}
		sans := []knownvalue.Check{knownvalue.StringExact("10.233.0.1"), knownvalue.StringExact("127.0.0.1"), knownvalue.StringExact("::1")}
		if draining {
			sans = append(sans, knownvalue.StringExact("10.0.0.11"))
			checks = append(checks, plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("node_endpoints").AtMapKey("cp1"),
				knownvalue.StringExact("https://10.0.0.11:6443")))
		} else {
			checks = append(checks, plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("node_endpoints"), knownvalue.MapExact(map[string]knownvalue.Check{
				"cp2": knownvalue.StringExact("https://10.0.0.12:6443"), "cp3": knownvalue.StringExact("https://10.0.0.13:6443"),
				"w1": knownvalue.StringExact("https://localhost:6443"),
			})))
		}
		sans = append(sans, knownvalue.StringExact("10.0.0.12"), knownvalue.StringExact("10.0.0.13"))
		checks = append(checks,
			plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("apiserver_cert_sans").AtMapKey("ip_addresses"), knownvalue.ListExact(sans)),
			planCheckFunc(func() error {
				var warnings []*tfprotov6.Diagnostic
				for _, d := range recorder.take() {
					if d.Summary == "Control-plane node draining" {
						warnings = append(warnings, d)
					}
				}
				if !draining {
					if len(warnings) > 0 {
						return fmt.Errorf("a draining warning without a draining node: %s", warnings[0].Detail)
					}
					return nil
				}
				// Terraform plans the resource more than once; each plan warns alike.
				if len(warnings) == 0 {
					return fmt.Errorf("no draining warning")
				}
				d := warnings[0]
				at := tftypes.NewAttributePath().WithAttributeName("control_plane_nodes").WithElementKeyInt(0).WithAttributeName("draining")
				if d.Severity != tfprotov6.DiagnosticSeverityWarning || d.Attribute.String() != at.String() {
					return fmt.Errorf("the warning is at %s, severity %v", d.Attribute, d.Severity)
				}
				for _, want := range []string{"cp1 is draining", `node_endpoints["cp1"] https://10.0.0.11:6443: its own kubelet`,
					"kubeadm.etcd_endpoints https://10.0.0.11:2379", "HAProxy within 30 s", "remove cp1 from control_plane_nodes in a second apply"} {
					if !strings.Contains(d.Detail, want) {
						return fmt.Errorf("the warning does not say %q:\n%s", want, d.Detail)
					}
				}
				return nil
			}))
		return resource.TestStep{
			ConfigDirectory:  config.TestNameDirectory(),
			ConfigVariables:  config.Variables{"removed": config.BoolVariable(!draining)},
			PreConfig:        recorder.reset,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: checks},
		}
	}
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		Steps: []resource.TestStep{step(true), step(false), {ConfigDirectory: config.TestNameDirectory(),
			ConfigVariables: config.Variables{"removed": config.BoolVariable(true)}, PlanOnly: true}},
	})
}

// kubeVIPOn checks that the plan has kha_kube_vip.cp on these nodes alone.
type kubeVIPOn []string

func (want kubeVIPOn) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	var got []string
	for _, rc := range req.Plan.ResourceChanges {
		if after, ok := rc.Change.After.(map[string]any); ok && rc.Type == "kha_kube_vip" {
			got = append(got, fmt.Sprint(after["node_name"]))
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		resp.Error = fmt.Errorf("kha_kube_vip on %v, want %v", got, []string(want))
	}
}

// TestClusterEndpoints_loadBalancerAsControlPlaneEndpoint: with node-local
// load balancers and a VIP by name that the user runs, kubeadm gets the
// first control-plane node's address by default (kubespray's), and the
// VIP's name with external_lb.control_plane_endpoint, kubeadm's advice for
// HA: a name that stays while cp1 drains and after it leaves, for init,
// joins and admin.conf. The nodes keep their node-local paths.
func TestClusterEndpoints_loadBalancerAsControlPlaneEndpoint(t *testing.T) {
	t.Parallel()
	const lb = "api.k8s.example:8443"
	step := func(controlPlaneEndpoint bool, stage, kubeadm string) resource.TestStep {
		vars := config.Variables{"stage": config.StringVariable(stage)}
		if controlPlaneEndpoint {
			vars["control_plane_endpoint"] = config.BoolVariable(true)
		}
		return resource.TestStep{
			ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				knownString("mode", "local_lb_with_unmanaged_lb"),
				knownString("kubeadm_control_plane_endpoint", kubeadm),
				knownString("kubeadm_discovery_address", kubeadm),
				knownString("kubeconfig_server", "https://10.62.0.100:8443"),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("kubeadm_cluster_configuration"), knownvalue.StringRegexp(
					regexp.MustCompile(`(?m)^controlPlaneEndpoint: `+regexp.QuoteMeta(kubeadm)+`$`))),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("node_endpoints").AtMapKey("w1"), knownvalue.StringExact("https://localhost:6443")),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("node_endpoints").AtMapKey("cp2"), knownvalue.StringExact("https://10.62.0.12:6443")),
			}},
		}
	}
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			step(false, "none", "10.62.0.11:6443"),
			step(false, "draining", "10.62.0.12:6443"),
			step(true, "none", lb),
			step(true, "draining", lb),
			step(true, "removed", lb),
		},
	})
}

// TestClusterEndpoints_controlPlaneKubeletLocalMode: behind an external
// load balancer, control-plane kubelets talk to their own apiserver as
// kubeadm 1.33 and later writes them (kubernetes_version unset too), and
// through the load balancer with an older kubeadm or where the feature
// gate is off, which kubeadm_cluster_configuration then tells kubeadm;
// kubeadm 1.36, without the gate, refuses the choice.
func TestClusterEndpoints_controlPlaneKubeletLocalMode(t *testing.T) {
	t.Parallel()
	const lb = "https://api.k8s.example:8443"
	// local: whether the control-plane kubelets are planned on their own
	// apiserver; gate: the featureGates value kubeadm is told, "" for none.
	step := func(version string, localMode *bool, local bool, gate string) resource.TestStep {
		vars := config.Variables{}
		if version != "" {
			vars["kubernetes_version"] = config.StringVariable(version)
		}
		if localMode != nil {
			vars["local_mode"] = config.BoolVariable(*localMode)
		}
		var gates knownvalue.Check = knownvalue.StringFunc(func(v string) error {
			if strings.Contains(v, "featureGates") {
				return fmt.Errorf("want no feature gate:\n%s", v)
			}
			return nil
		})
		if gate != "" {
			gates = knownvalue.StringRegexp(regexp.MustCompile(`(?m)^featureGates:\n  ControlPlaneKubeletLocalMode: ` + gate + `$`))
		}
		nodes := map[string]knownvalue.Check{"w1": knownvalue.StringExact(lb)}
		for i, cp := range []string{"cp1", "cp2", "cp3"} {
			nodes[cp] = knownvalue.StringExact(lb)
			if local {
				nodes[cp] = knownvalue.StringExact(fmt.Sprintf("https://10.63.0.1%d:6443", i+1)) // its ip, not cp2's access_ip
			}
		}
		return resource.TestStep{
			ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				knownString("mode", "external_lb"),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("node_endpoints"), knownvalue.MapExact(nodes)),
				// admin.conf, joins and outside clients keep the load balancer.
				knownString("kubeadm_control_plane_endpoint", "api.k8s.example:8443"),
				knownString("kubeconfig_server", "https://10.63.0.100:8443"),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("kubeadm_cluster_configuration"), gates),
			}},
		}
	}
	off, on := false, true
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			step("", nil, true, ""),
			step("v1.36.3", nil, true, ""),
			step("v1.32.9", nil, false, ""),
			step("v1.34.2", &off, false, "false"),
			step("v1.32.9", &on, true, "true"),
			{
				ConfigDirectory: config.TestNameDirectory(),
				ConfigVariables: config.Variables{"kubernetes_version": config.StringVariable("v1.36.3"), "local_mode": config.BoolVariable(false)},
				ExpectError: regexp.MustCompile(`(?s)kubeadm Always Uses the Local Apiserver.*kubeadm\.control_plane_kubelet_local_mode.*` +
					`kubeadm 1\.36 removed the\s+ControlPlaneKubeletLocalMode`),
			},
		},
	})
}
