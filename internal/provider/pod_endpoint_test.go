package provider

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// diagnosticPath is a diagnostic's attribute path as kha's diagnostics
// write it: health_check.interval, backends[0].name.
func diagnosticPath(d *tfprotov6.Diagnostic) string {
	if d.Attribute == nil {
		return ""
	}
	var b strings.Builder
	for _, step := range d.Attribute.Steps() {
		switch s := step.(type) {
		case tftypes.AttributeName:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(string(s))
		case tftypes.ElementKeyInt:
			fmt.Fprintf(&b, "[%d]", int64(s))
		case tftypes.ElementKeyString:
			fmt.Fprintf(&b, "[%q]", string(s))
		}
	}
	return b.String()
}

// expectWarnings checks the plan's diagnostics: exactly one warning at
// each path of want, mentioning its substrings, and nothing else.
func expectWarnings(recorder *planRecorder, want map[string][]string) plancheck.PlanCheck {
	return planCheckFunc(func() error {
		got := map[string]*tfprotov6.Diagnostic{}
		for _, d := range recorder.take() {
			p := diagnosticPath(d)
			if d.Severity != tfprotov6.DiagnosticSeverityWarning {
				return fmt.Errorf("not a warning: %s: %s: %s", p, d.Summary, d.Detail)
			}
			got[p] = d
		}
		var paths []string
		for p := range got {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		if len(got) != len(want) {
			return fmt.Errorf("warnings at %v, want them at %d paths: %v", paths, len(want), want)
		}
		for p, substrings := range want {
			d, ok := got[p]
			if !ok {
				return fmt.Errorf("no warning at %s; warnings at %v", p, paths)
			}
			for _, s := range substrings {
				if !strings.Contains(d.Summary+": "+d.Detail, s) {
					return fmt.Errorf("the warning at %s does not say %q: %s: %s", p, s, d.Summary, d.Detail)
				}
			}
		}
		return nil
	})
}

// TestClusterEndpoints_podNetworkEndpoint: pods outside the host network
// get the VIP when there is one, IPv6-safe, with Cilium's and Calico's
// values known at plan time; without a VIP the first control-plane node,
// with a warning; a loopback override warns.
func TestClusterEndpoints_podNetworkEndpoint(t *testing.T) {
	t.Parallel()
	recorder := &planRecorder{}
	stringMapExact := func(m map[string]string) knownvalue.Check {
		checks := map[string]knownvalue.Check{}
		for k, v := range m {
			checks[k] = knownvalue.StringExact(v)
		}
		return knownvalue.MapExact(checks)
	}
	step := func(checks ...plancheck.PlanCheck) resource.TestStep {
		return resource.TestStep{ConfigDirectory: config.TestStepDirectory(), PreConfig: recorder.reset,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: checks}}
	}
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		Steps: []resource.TestStep{
			step(
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("endpoints").AtMapKey("global"), knownvalue.StringExact("https://localhost:6443")),
				knownString("pod_network_endpoint", "https://[fd00::100]:8443"),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("cilium_values"),
					stringMapExact(map[string]string{"k8sServiceHost": "fd00::100", "k8sServicePort": "8443"})),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("calico_kubernetes_services_endpoint"),
					stringMapExact(map[string]string{"KUBERNETES_SERVICE_HOST": "fd00::100", "KUBERNETES_SERVICE_PORT": "8443"})),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("health_check_spec"), knownvalue.ObjectExact(map[string]knownvalue.Check{
					"protocol": knownvalue.StringExact("HTTPS"), "path": knownvalue.StringExact("/readyz"), "port": knownvalue.Int64Exact(6443),
					"interval_seconds": knownvalue.Int64Exact(10), "timeout_seconds": knownvalue.Int64Exact(5),
					"healthy_threshold": knownvalue.Int64Exact(2), "unhealthy_threshold": knownvalue.Int64Exact(3),
				})),
				expectWarnings(recorder, nil),
			),
			step(
				knownString("pod_network_endpoint", "https://10.0.0.11:6443"),
				plancheck.ExpectKnownValue(endpointsAddr, tfjsonpath.New("cilium_values"),
					stringMapExact(map[string]string{"k8sServiceHost": "10.0.0.11", "k8sServicePort": "6443"})),
				expectWarnings(recorder, map[string][]string{"pod_network_endpoint": {"Pods depend on one control-plane node",
					`the apiserver of "cp1" alone`, "Give external_lb", "pod_network_endpoint_override"}}),
			),
			step(
				knownString("pod_network_endpoint", "https://localhost:6443"),
				expectWarnings(recorder, map[string][]string{"pod_network_endpoint_override": {"Loopback endpoint for pods",
					"https://localhost:6443 is the pod's own loopback", "remove pod_network_endpoint_override"}}),
			),
		},
	})
}

// TestLBConfig_timingAgainstAPIServer: the apiservers' shutdown delay and
// minimum request timeout reach the load balancers through
// apiserver_backends and the kubeadm configuration; the load balancers'
// plans (and kha_cluster_endpoints' for a cloud load balancer's idle
// timeout) warn where their timing works against them, and stop once
// fixed.
func TestLBConfig_timingAgainstAPIServer(t *testing.T) {
	t.Parallel()
	recorder := &planRecorder{}
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		Steps: []resource.TestStep{
			{ConfigDirectory: config.TestStepDirectory(), PreConfig: recorder.reset,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kha_cluster_endpoints.c", tfjsonpath.New("apiserver_backends").AtSliceIndex(0).AtMapKey("shutdown_delay_duration"),
						knownvalue.StringExact("12s")),
					plancheck.ExpectKnownValue("kha_cluster_endpoints.c", tfjsonpath.New("apiserver_backends").AtSliceIndex(1).AtMapKey("min_request_timeout"),
						knownvalue.Int64Exact(3600)),
					plancheck.ExpectKnownValue("kha_cluster_endpoints.c", tfjsonpath.New("kubeadm_cluster_configuration"), knownvalue.StringRegexp(regexp.MustCompile(
						`(?s)extraArgs:\n\s+- name: goaway-chance\n\s+value: "0.001"\n\s+- name: min-request-timeout\n\s+value: "3600"\n\s+- name: shutdown-delay-duration\n\s+value: 12s\n`))),
					expectWarnings(recorder, map[string][]string{
						"health_check.interval": {"Load balancer outlasts the apiserver's shutdown delay", "needs up to 15s",
							"apiserver_shutdown_delay_duration to at least 20s"},
						"proxy_timeouts.client": {"Load balancer cuts long requests", "proxy_timeouts.client = 10m", "--min-request-timeout 1h", "Set proxy_timeouts.client to at least 1h"},
						"lb_idle_timeout":       {"Load balancer cuts long requests", "idle for 5m50s (lb_idle_timeout)", "at least 1h0m0s"},
					}),
				}}},
			{ConfigDirectory: config.TestStepDirectory(), PreConfig: recorder.reset,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{expectWarnings(recorder, nil)}}},
		},
	})
}
