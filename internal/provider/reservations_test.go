package provider

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/kha/terraform-provider-kha/internal/hostres"
)

// TestReservations_lbFix: a load balancer's fix names the attributes to set for
// its delivery, role and kind.
func TestReservations_lbFix(t *testing.T) {
	t.Parallel()
	lb := func(role, delivery string) lbConfigModel {
		return lbConfigModel{Role: types.StringValue(role), Delivery: types.StringValue(delivery),
			Listen: &lbListenModel{Address: types.StringValue("10.0.0.100"), Port: types.Int64Value(8443)}}
	}
	haproxy := haproxyConfigModel{lbConfigModel: lb("external", deliverySystemd)}
	if got, want := haproxy.ConflictName(), `kha_haproxy_config with role = "external" listening on 10.0.0.100:8443`; got != want {
		t.Errorf("name %q, want %q", got, want)
	}
	move := func(m hostres.ConflictMover, attr string) string {
		move, see := m.ConflictMove(attr)
		return move + " " + see
	}
	for _, c := range []struct {
		name, got, want string
	}{
		{"haproxy systemd", move(&haproxy, "config_path"), "`config_path = \"/etc/kha/external-proxy.cfg\"`, `reload_command = " +
			"\"systemctl enable haproxy@external && systemctl reload-or-restart haproxy@external\"` and `destroy_command = " +
			"\"systemctl disable --now haproxy@external\"`"},
		{"nginx systemd", move(&nginxConfigModel{lbConfigModel: lb("node_local", deliverySystemd)}, "config_path"),
			"`config_path = \"/etc/kha/local-proxy.conf\"`, `pid_file = \"/run/nginx-local.pid\"`, `reload_command = " +
				"\"systemctl enable nginx@local && systemctl reload-or-restart nginx@local\"`"},
		{"haproxy static pod", move(&haproxyConfigModel{lbConfigModel: lb("node_local", deliveryStaticPod)}, "config_path"),
			"`config_path = \"/etc/haproxy-local/haproxy.cfg\"`"},
		{"static pod manifest", move(&nginxConfigModel{lbConfigModel: lb("external", deliveryStaticPod)}, "manifest_path"),
			"`manifest_path = \"/etc/kubernetes/manifests/nginx-proxy-external.yml\"` and `static_pod = { name = \"nginx-external\" }`"},
	} {
		if !strings.Contains(c.got, c.want) || !strings.Contains(c.got, coLocatedDoc) {
			t.Errorf("%s: %q does not say %q and where the documentation is", c.name, c.got, c.want)
		}
	}
}

// TestHostReservations_sharedPlacesRefused: through Terraform, a plan with two
// resources on one file (or one block) of one host fails, naming the
// other and the fix. Which of the two errs depends on the order Terraform
// plans them in; the patterns take either.
func TestHostReservations_sharedPlacesRefused(t *testing.T) {
	t.Parallel()
	words := func(s string) string { return strings.ReplaceAll(s, " ", `\s+`) }
	cases := map[string]string{
		"two_haproxy_at_defaults": `(?s)File Managed by Two Resources.*` + words(`kha_haproxy_config with role = "(node_local|external)"`) +
			`.*` + words(`both manage 192.0.2.21:22:/etc/haproxy/haproxy.cfg.`) + `.*config_path\s+=\s+"/etc/kha/(local|external)-proxy.cfg".*` +
			`haproxy@(local|external).*` + words(`Running a node-local and an external load balancer on one node`),
		"same_hosts_marker": `(?s)Block Managed by Two Resources.*` + words(`kha_hosts_entries with marker = "entries"`) + `.*` +
			words("set `marker` to a name of its own"),
		"file_over_hosts_block": `(?s)File Managed by Two Resources.*` + words(`both manage 192.0.2.21:22:/etc/hosts.`),
		"kubeconfig_and_file": `(?s)File Managed by Two Resources.*` + words(`kha_kubeconfig_server with server = "https://127.0.0.1:6443"`) +
			`.*` + words(`192.0.2.21:22:/etc/kubernetes/kubelet.conf`) + `.*` + words(regexp.QuoteMeta("take the kubeconfig out of `paths` (`paths[1]`)")) +
			`.*` + words(regexp.QuoteMeta(`terraform state list -id=<id>`)),
	}
	expectPlanErrors(t, cases, nil)
}

// TestHostReservations_distinctPlacesPlan: the layouts that do not collide plan.
func TestHostReservations_distinctPlacesPlan(t *testing.T) {
	t.Parallel()
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps:                    []resource.TestStep{{ConfigDirectory: config.TestNameDirectory(), PlanOnly: true, ExpectNonEmptyPlan: true}},
	})
}

// testHostKey is a host key for plans that never connect.
const testHostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh"

// TestHostReservations_coLocatedExamplesPlan: the documented node-local and
// external load balancers on one node plan as written, and without the
// external one's own file and commands the plan fails, saying to set them.
func TestHostReservations_coLocatedExamplesPlan(t *testing.T) {
	t.Parallel()
	provider := `provider "kha" {
  default_ssh = { host_key = "` + testHostKey + `", agent = true }
}
`
	for _, kind := range []string{"haproxy", "nginx"} {
		t.Run(kind, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", "examples", "resources", "kha_"+kind+"_config", "co-located", "main.tf"))
			if err != nil {
				t.Fatal(err)
			}
			example := string(b)
			start := strings.Index(example, `resource "kha_`+kind+`_config" "external" {`)
			end := start + strings.Index(example[start:], "\n}\n")
			own := regexp.MustCompile(`(?m)^\s*(config_path|pid_file|reload_command|destroy_command)\s*=.*\n`)
			if start < 0 || len(own.FindAllString(example[start:end], -1)) < 3 {
				t.Fatalf("the example's external %s sets no config file and commands of its own", kind)
			}
			atDefaults := example[:start] + own.ReplaceAllString(example[start:end], "") + example[end:]
			unitTest(t, stepProviders(resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{
					{Config: provider + example, PlanOnly: true, ExpectNonEmptyPlan: true},
					{Config: provider + atDefaults, PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)File\s+Managed\s+by\s+Two\s+Resources.*` +
						`both\s+manage\s+10\.0\.0\.21:22:/etc/` + kind + `/.*config_path\s+=\s+"/etc/kha/external-proxy\.`)},
				},
			}))
		})
	}
}

// TestHostReservations_coLocatedUnitRecipes: the documented template units pass
// their own validate command (systemd-analyze verify), and HAProxy's is
// the one kha_etcd_access's example delivers for its local proxy.
func TestHostReservations_coLocatedUnitRecipes(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("no systemd-analyze")
	}
	haproxy := exampleStrings(t, "../../examples/resources/kha_haproxy_config/co-located/main.tf", `resource "kha_file" "haproxy_instance_unit"`)
	etcd := exampleStrings(t, "../../examples/resources/kha_etcd_access/resource.tf", `resource "kha_file" "haproxy_instance_unit"`)
	if haproxy["content"] != etcd["content"] {
		t.Errorf("the two examples' haproxy@.service differ:\n%s\n---\n%s", haproxy["content"], etcd["content"])
	}
	nginx := exampleStrings(t, "../../examples/resources/kha_nginx_config/co-located/main.tf", `resource "kha_file" "nginx_instance_unit"`)
	for _, recipe := range []map[string]string{haproxy, nginx} {
		unit := filepath.Join(t.TempDir(), "unit")
		if err := os.WriteFile(unit, []byte(recipe["content"]), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, content := range []string{recipe["content"], strings.Replace(recipe["content"], "ExecStart=", "ExecStrat=", 1)} {
			if err := os.WriteFile(unit, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("sh", "-c", strings.ReplaceAll(recipe["validate_command"], "%s", unit)).CombinedOutput()
			if broken := content != recipe["content"]; (err != nil) != broken {
				t.Errorf("%s (broken: %v): validate_command gave %v: %s", recipe["path"], broken, err, out)
			}
		}
	}
}
