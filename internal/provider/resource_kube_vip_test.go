package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestKubeVIP_renderedFromClusterEndpoints: the manifests are known at
// plan time from kha_cluster_endpoints' VIP, the first control-plane node
// reads super-admin.conf for kubeadm init, BGP and IPVS are expressed.
func TestKubeVIP_renderedFromClusterEndpoints(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: config.TestNameDirectory(),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectRendered("kha_kube_vip.cp1", `(?s)name: vip_nodename\n\s+value: "cp1".*name: vip_interface\n\s+value: "eth0".*`+
					`name: vip_leasename\n\s+value: "plndr-cp-lock".*name: address\n\s+value: "10\.0\.0\.100".*path: "/etc/kubernetes/super-admin\.conf"`),
				expectRendered("kha_kube_vip.cp2", `(?s)hostAliases:\n\s+- ip: 10\.0\.0\.12\n\s+hostnames:\n\s+- kubernetes\n.*name: port\n\s+value: "6443".*path: "/etc/kubernetes/admin\.conf"`),
				expectRendered("kha_kube_vip.bgp", `(?s)image: "ghcr\.io/kube-vip/kube-vip-iptables:v1\.0\.3".*name: vip_arp\n\s+value: "false".*name: bgp_peers\n\s+value: "10\.0\.0\.1:65001::false,\[fd00::1\]:65002::true".*`+
					`name: lb_fwdmethod\n\s+value: "masquerade".*privileged: true`),
				plancheck.ExpectKnownValue("kha_kube_vip.bgp", tfjsonpath.New("sha256"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{64}$`))),
				plancheck.ExpectKnownValue("kha_kube_vip.bgp", tfjsonpath.New("manifest_path"), knownvalue.StringExact("/etc/kubernetes/manifests/kube-vip.yml")),
			}},
		}},
	})
}

func TestKubeVIP_diagnostics(t *testing.T) {
	t.Parallel()
	expectPlanErrors(t, map[string]string{
		"loopback_vip":                   `(?s)Invalid VIP.*address`,
		"bgp_settings_in_arp_mode":       `(?s)BGP settings in ARP mode.*mode = "bgp"`,
		"bootstrap_with_kubeconfig_path": `(?s)Invalid Attribute Combination.*kubeconfig_path`,
		"lease_timings":                  `(?s)Inconsistent lease timings.*retry_period < renew_deadline < lease_duration`,
		"lease_through_the_vip":          `(?s)Lease through the VIP.*local_apiserver_address is the VIP 10\.0\.0\.100`,
		"check_vip_in_bgp_mode":          `(?s)VIP Cannot Be Checked.*check_vip: check_vip is true, but in bgp mode the VIP is routed`,
		"check_vip_without_nodes":        `(?s)VIP Cannot Be Checked.*check_vip: check_vip is true, but nodes is unset`,
		"node_not_listed":                `(?s)Node Not Listed.*nodes: "cp1" is not in the list`,
		"node_of_another_family":         `(?s)Node Address of Another Family.*nodes\[0\]\.ip: fd00::11 is not of 10\.0\.0\.100's family`,
	}, nil)
}

// TestAccKubeVIP_bootstrapThenAdminConf delivers the manifest for kubeadm
// init, switches it to admin.conf afterwards, and removes it on destroy.
func TestAccKubeVIP_bootstrapThenAdminConf(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	manifest := filepath.Join(t.TempDir(), "manifests", "kube-vip.yml")
	cfg := func(bootstrap bool) string {
		return fmt.Sprintf(`
provider "kha" {
  default_ssh = { private_key = %q }
}
resource "kha_kube_vip" "cp1" {
  node_name     = "cp1"
  address       = "10.0.0.100"
  bootstrap     = %t
  manifest_path = %q
  ssh           = { host = %q, port = %d, host_key = %q }
}`, s.ClientKey.PEM, bootstrap, manifest, s.Host, s.Port, s.HostKey.Public())
	}
	onHost := func(want string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			b, err := os.ReadFile(manifest)
			fi, _ := os.Stat(manifest)
			if err != nil || !strings.Contains(string(b), `path: "`+want+`"`) || fi.Mode().Perm() != 0o600 {
				return fmt.Errorf("manifest on the host (want kubeconfig %s, mode 0600): %v %q", want, err, b)
			}
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(manifest); !os.IsNotExist(err) {
				return fmt.Errorf("the manifest outlived destroy: %v", err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{Config: cfg(true), Check: onHost("/etc/kubernetes/super-admin.conf")},
			{
				Config: cfg(false),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kha_kube_vip.cp1", plancheck.ResourceActionUpdate),
				}},
				Check: onHost("/etc/kubernetes/admin.conf"),
			},
		},
	})
}

// TestKubeVIP_bootstrapLeftOnWarns: the plan after the apply that turned
// bootstrap on warns at bootstrap while it stays on, saying what stays
// mounted and how to switch it off; the plans that turn it on or off do
// not. Terraform plans the fixtures in testdata/<test>/<step>.
func TestKubeVIP_bootstrapLeftOnWarns(t *testing.T) {
	t.Parallel()
	recorder := &planRecorder{}
	step := func(warn bool) resource.TestStep {
		return resource.TestStep{
			ConfigDirectory: config.TestStepDirectory(),
			PreConfig:       recorder.reset,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{planCheckFunc(func() error {
				var found []string
				for _, d := range recorder.take() {
					found = append(found, d.Summary)
					if d.Severity != tfprotov6.DiagnosticSeverityWarning || d.Attribute.String() != tftypes.NewAttributePath().WithAttributeName("bootstrap").String() {
						return fmt.Errorf("a diagnostic other than the warning at bootstrap: %s: %s", d.Summary, d.Detail)
					}
					for _, want := range []string{`"cp1"`, superAdminConf, "system:masters", "set bootstrap = false", "kubeadm init"} {
						if !strings.Contains(d.Summary+" "+d.Detail, want) {
							return fmt.Errorf("the warning does not say %q: %s: %s", want, d.Summary, d.Detail)
						}
					}
				}
				if (len(found) == 1) != warn || len(found) > 1 {
					return fmt.Errorf("the plan's warnings: %q; want one: %v", found, warn)
				}
				return nil
			})}},
		}
	}
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		Steps: []resource.TestStep{
			step(false), // 1: created with bootstrap = true, for kubeadm init
			step(true),  // 2: bootstrap still on: the plan warns
			step(false), // 3: switched off
			step(false), // 4: on again (a cluster built anew)
		},
	})
}

// planRecorder serves the provider and keeps the diagnostics of the
// plans and refreshes Terraform asks it for: the testing framework shows
// only errors.
type planRecorder struct {
	tfprotov6.ProviderServer
	mu    sync.Mutex
	diags []*tfprotov6.Diagnostic
	// applied are the applies' diagnostics, apart from the plans'.
	applied []*tfprotov6.Diagnostic
}

func (p *planRecorder) factories() map[string]func() (tfprotov6.ProviderServer, error) {
	return p.factoriesOf(testAccProviders["kha"])
}

// processPerCommand are factories of a new provider for every command, as
// the CLI starts a new provider process for each: nothing is pooled from
// one command to the next.
func (p *planRecorder) processPerCommand() map[string]func() (tfprotov6.ProviderServer, error) {
	return p.factoriesOf(func() (tfprotov6.ProviderServer, error) {
		return providerserver.NewProtocol6WithError(New("test", "test")())()
	})
}

func (p *planRecorder) factoriesOf(provider func() (tfprotov6.ProviderServer, error)) map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){"kha": func() (tfprotov6.ProviderServer, error) {
		server, err := provider()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.ProviderServer = server
		return p, err
	}}
}

func (p *planRecorder) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp, err := p.ProviderServer.PlanResourceChange(ctx, req)
	if resp != nil {
		p.record(resp.Diagnostics)
	}
	return resp, err
}

func (p *planRecorder) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	resp, err := p.ProviderServer.ReadResource(ctx, req)
	if resp != nil {
		p.record(resp.Diagnostics)
	}
	return resp, err
}

func (p *planRecorder) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	resp, err := p.ProviderServer.ApplyResourceChange(ctx, req)
	if resp != nil {
		p.mu.Lock()
		p.applied = append(p.applied, resp.Diagnostics...)
		p.mu.Unlock()
	}
	return resp, err
}

// record keeps a response's diagnostics.
func (p *planRecorder) record(diags []*tfprotov6.Diagnostic) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.diags = append(p.diags, diags...)
}

func (p *planRecorder) reset() {
	p.take()
	p.takeApplied()
}

func (p *planRecorder) takeApplied() []*tfprotov6.Diagnostic {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.applied
	p.applied = nil
	return d
}

func (p *planRecorder) take() []*tfprotov6.Diagnostic {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.diags
	p.diags = nil
	return d
}

// planCheckFunc is a plan check made of a function.
type planCheckFunc func() error

func (f planCheckFunc) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = f()
}

// TestAccKubeVIP_checksTheVIP: a node on a layer-2 segment beside another
// control-plane node and a stranger, interface unset (kube-vip takes the
// default route's): a VIP the stranger holds is refused before the
// manifest is written; one the other node holds (a running control plane)
// is fine and shows in vip_holders; a second holder is reported by the
// next plan with where to look (the Lease), and plans vip_holders anew;
// a neighbour that answers for the VIP cannot stop an apply that leaves
// the manifest as it is, nor hide among the nodes (neighbourSteps); one
// off the default route's link is refused at `interface`.
func TestAccKubeVIP_checksTheVIP(t *testing.T) {
	t.Parallel()
	check := newVIPCheckTest(t)
	s, vip := check.sshd, check.vip
	if out, err := exec.Command("ip", "-n", check.selfNS, "route", "add", "default", "via", check.otherIP, "dev", testhost.SegmentInterface).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	manifest := filepath.Join(t.TempDir(), "kube-vip.yml")
	config := func(vip string) string {
		return fmt.Sprintf(`
provider "kha" {
  default_ssh = { private_key = %q }
}
resource "kha_kube_vip" "cp1" {
  node_name     = "cp1"
  address       = %q
  nodes         = [{ name = "cp1", ip = %q }, { name = "cp2", ip = %q }]
  manifest_path = %q
  ssh           = { host = %q, port = %d, host_key = %q }
}`, s.ClientKey.PEM, vip, check.selfIP, check.otherIP, manifest, s.Host, s.Port, s.HostKey.Public())
	}
	recorder := &planRecorder{}
	check.node, check.other, check.address, check.vipAttr, check.path = "cp1", "cp2", "kha_kube_vip.cp1", "address", manifest
	check.config = config(vip)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		Steps: append(append(check.steps(t, recorder, "kubectl -n kube-system get lease plndr-cp-lock"),
			check.neighbourSteps(t, recorder, strings.Replace(check.config, "manifest_path", "port          = 6444\n  manifest_path", 1))...),
			resource.TestStep{
				Config: config("10.81.0.100"),
				ExpectError: regexp.MustCompile(`(?s)VIP Not On-Link.*interface:\s+on\s+cp1,\s+10\.81\.0\.100:.*it\s+goes\s+through\s+a\s+router.*"` +
					testhost.SegmentInterface + `"\s+\(the\s+default\s+route's,\s+taken\s+while\s+interface\s+is\s+unset\)`),
			},
		),
	})
}
