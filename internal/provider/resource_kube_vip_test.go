package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
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
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: config.TestNameDirectory(),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectRendered("kha_kube_vip.cp1", `(?s)name: vip_nodename\n\s+value: "cp1".*name: vip_interface\n\s+value: "eth0".*`+
					`name: vip_leasename\n\s+value: "plndr-cp-lock".*name: address\n\s+value: "10\.0\.0\.100".*path: "/etc/kubernetes/super-admin\.conf"`),
				expectRendered("kha_kube_vip.cp2", `(?s)name: port\n\s+value: "6443".*path: "/etc/kubernetes/admin\.conf"`),
				expectRendered("kha_kube_vip.bgp", `(?s)image: "ghcr\.io/kube-vip/kube-vip-iptables:v1\.0\.3".*name: vip_arp\n\s+value: "false".*name: bgp_peers\n\s+value: "10\.0\.0\.1:65001::false,\[fd00::1\]:65002::true".*`+
					`name: lb_fwdmethod\n\s+value: "masquerade".*privileged: true`),
				plancheck.ExpectKnownValue("kha_kube_vip.bgp", tfjsonpath.New("sha256"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{64}$`))),
				plancheck.ExpectKnownValue("kha_kube_vip.bgp", tfjsonpath.New("manifest_path"), knownvalue.StringExact("/etc/kubernetes/manifests/kube-vip.yml")),
			}},
		}},
	})
}

func TestKubeVIP_diagnostics(t *testing.T) {
	expectPlanErrors(t, map[string]string{
		"loopback_vip":                   `(?s)Invalid VIP.*address`,
		"bgp_settings_in_arp_mode":       `(?s)BGP settings in ARP mode.*mode = "bgp"`,
		"bootstrap_with_kubeconfig_path": `(?s)Invalid Attribute Combination.*kubeconfig_path`,
		"lease_timings":                  `(?s)Inconsistent lease timings.*retry_period < renew_deadline < lease_duration`,
	}, nil)
}

// TestAccKubeVIP_bootstrapThenAdminConf delivers the manifest for kubeadm
// init, switches it to admin.conf afterwards, and removes it on destroy.
func TestAccKubeVIP_bootstrapThenAdminConf(t *testing.T) {
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
			if err != nil || !strings.Contains(string(b), `path: "`+want+`"`) || fi.Mode().Perm() != 0o640 {
				return fmt.Errorf("manifest on the host (want kubeconfig %s, mode 0640): %v %q", want, err, b)
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

// TestKubeVIP_bootstrapLeftOnWarns: a plan that keeps bootstrap on after
// the apply that turned it on warns at bootstrap, saying what stays
// mounted and how to switch it off; turning it on, or off, does not.
func TestKubeVIP_bootstrapLeftOnWarns(t *testing.T) {
	ctx := context.Background()
	r := NewKubeVIPResource().(*kubeVIPResource)
	var sch fwresource.SchemaResponse
	r.Schema(ctx, fwresource.SchemaRequest{}, &sch)
	// config is the HCL `node_name = "cp1", address = "10.0.0.100",
	// bootstrap = <bootstrap>`; plan adds the defaults and leaves what
	// rendering computes unknown.
	config := func(bootstrap bool) kubeVIPModel {
		m := kubeVIPModel{NodeName: types.StringValue("cp1"), Address: types.StringValue("10.0.0.100"), Bootstrap: types.BoolValue(bootstrap)}
		m.SSH = types.ObjectNull(attributeTypes(resourceConnectionAttribute()))
		m.Timeouts.Object = types.ObjectNull(attributeTypes(hostAttributes(ctx, "", "")["timeouts"]))
		return m
	}
	plan := func(bootstrap bool) kubeVIPModel {
		m := config(bootstrap)
		m.Port, m.Mode, m.ManifestPath = types.Int64Value(6443), types.StringValue("arp"), types.StringValue("/etc/kubernetes/manifests/kube-vip.yml")
		m.KeepOnDestroy = types.BoolValue(false)
		m.ID, m.SHA256, m.RemoteSHA256, m.TrustedHostKey, m.Rendered = types.StringUnknown(), types.StringUnknown(), types.StringUnknown(),
			types.StringUnknown(), types.StringUnknown()
		return m
	}
	modifyPlan := func(t *testing.T, prior *tfsdk.State, bootstrap bool) fwresource.ModifyPlanResponse {
		t.Helper()
		req := fwresource.ModifyPlanRequest{Config: tfsdk.Config{Schema: sch.Schema}, Plan: tfsdk.Plan{Schema: sch.Schema},
			State: tfsdk.State{Schema: sch.Schema, Raw: tftypes.NewValue(sch.Schema.Type().TerraformType(ctx), nil)}}
		if prior != nil {
			req.State = *prior
		}
		c, p := config(bootstrap), plan(bootstrap)
		configured := tfsdk.State{Schema: sch.Schema} // a configuration is a value of the schema's type too
		diags := configured.Set(ctx, &c)
		diags.Append(req.Plan.Set(ctx, &p)...)
		if diags.HasError() {
			t.Fatal(diags)
		}
		req.Config.Raw = configured.Raw
		resp := fwresource.ModifyPlanResponse{Plan: req.Plan}
		r.ModifyPlan(ctx, req, &resp)
		if resp.Diagnostics.HasError() {
			t.Fatal(resp.Diagnostics)
		}
		return resp
	}
	// The state an apply of a plan leaves (without ssh, the plan is all of it).
	applied := func(t *testing.T, bootstrap bool) *tfsdk.State {
		resp := modifyPlan(t, nil, bootstrap)
		if len(resp.Diagnostics) != 0 {
			t.Errorf("creating with bootstrap = %v: %v", bootstrap, resp.Diagnostics)
		}
		return &tfsdk.State{Schema: sch.Schema, Raw: resp.Plan.Raw}
	}
	for _, c := range []struct {
		before, after, warn bool
	}{{false, true, false}, {true, true, true}, {true, false, false}, {false, false, false}} {
		t.Run(fmt.Sprintf("bootstrap %v then %v", c.before, c.after), func(t *testing.T) {
			diags := modifyPlan(t, applied(t, c.before), c.after).Diagnostics
			if !c.warn {
				if len(diags) != 0 {
					t.Fatalf("unexpected diagnostics: %v", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Severity() != diag.SeverityWarning {
				t.Fatalf("want one warning, got %v", diags)
			}
			d := diags[0]
			if at, ok := d.(diag.DiagnosticWithPath); !ok || !at.Path().Equal(path.Root("bootstrap")) {
				t.Errorf("the warning is not at bootstrap: %v", d)
			}
			for _, want := range []string{`"cp1"`, superAdminConf, "system:masters", "set bootstrap = false", "kubeadm init"} {
				if !strings.Contains(d.Summary()+" "+d.Detail(), want) {
					t.Errorf("the warning does not say %q: %s: %s", want, d.Summary(), d.Detail())
				}
			}
		})
	}
}
