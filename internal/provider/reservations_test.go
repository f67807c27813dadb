package provider

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// settingsOf are the path settings of a model with the string
// attributes given, and a list of strings "paths".
func settingsOf(attrs map[string]string, paths ...string) []pathSetting {
	var settings []pathSetting
	for name, v := range attrs {
		settings = append(settings, pathSetting{path.Root(name), types.StringValue(v)})
	}
	for i, p := range paths {
		settings = append(settings, pathSetting{path.Root("paths").AtListIndex(i), types.StringValue(p)})
	}
	return settings
}

// testReserver is a model for the registry: a name, files and a digest.
type testReserver struct {
	name  string
	files []remote.Item
	host  string
	port  int
}

func (c testReserver) ConflictName() string { return c.name }

// pathSettings: an attribute "path" sets its first file's path.
func (c testReserver) PathSettings() []pathSetting {
	if len(c.files) == 0 {
		return nil
	}
	p, _ := c.files[0].Place()
	return settingsOf(map[string]string{"path": p})
}

// placedReserver is a testReserver with the path settings given.
type placedReserver struct {
	testReserver
	settings []pathSetting
}

func (c placedReserver) PathSettings() []pathSetting { return c.settings }

func (c testReserver) take(d *providerData) diag.Diagnostics {
	m := resolvedSSH{cfg: remote.Config{Host: c.host, Port: c.port}}
	return d.reserve(m, c, desiredDigest(c.files), c.files)
}

func file(p, content string) remote.Item { return remote.File{Path: p, Content: []byte(content)} }

// edited is a kubeconfig whose server kha_kubeconfig_server sets.
func edited(p string) remote.Item {
	return &remote.EditedFile{Path: p, Edit: &kubeconfigEdit{server: "https://127.0.0.1:6443"}}
}

// hostsBlock is a block of /etc/hosts.
func hostsBlock(marker, content string) remote.Item {
	return remote.Block{Path: "/etc/hosts", Marker: marker, Content: []byte(content)}
}

func TestReservations_conflicts(t *testing.T) {
	for _, c := range []struct {
		name         string
		first, later testReserver
		want         string // "" for none
	}{
		{"two whole files", testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "10.0.0.21", 22},
			testReserver{"b", []remote.Item{file("/etc/haproxy/haproxy.cfg", "b")}, "10.0.0.21", 22},
			"File Managed by Two Resources: This b and a (id 10.0.0.21:22:/etc/haproxy/haproxy.cfg) both manage 10.0.0.21:22:/etc/haproxy/haproxy.cfg"},
		{"blocks of one marker", testReserver{"a", []remote.Item{hostsBlock("entries", "1.1.1.1 a")}, "h", 22},
			testReserver{"b", []remote.Item{hostsBlock("entries", "2.2.2.2 b")}, "h", 22},
			`Block Managed by Two Resources: This b and a (id h:22:/etc/hosts) both manage the block "entries"`},
		{"a block under a whole file", testReserver{"a", []remote.Item{file("/etc/hosts", "x")}, "h", 22},
			testReserver{"b", []remote.Item{hostsBlock("entries", "2.2.2.2 b")}, "h", 22},
			`File Managed by Two Resources: This b (its block "entries") and a (id h:22:/etc/hosts; the whole file) both manage h:22:/etc/hosts`},
		{"a whole file over a block", testReserver{"a", []remote.Item{hostsBlock("entries", "2.2.2.2 b")}, "h", 22},
			testReserver{"b", []remote.Item{file("/etc/hosts", "x")}, "h", 22},
			`File Managed by Two Resources: This b (the whole file) and a (id h:22:/etc/hosts; its block "entries") both manage h:22:/etc/hosts`},
		{"an edited file under a whole file", testReserver{"a", []remote.Item{file("/etc/kubernetes/kubelet.conf", "x")}, "h", 22},
			testReserver{"b", []remote.Item{edited("/etc/kubernetes/kubelet.conf")}, "h", 22},
			"This b and a (id h:22:/etc/kubernetes/kubelet.conf) both manage h:22:/etc/kubernetes/kubelet.conf"},
		{"blocks of two markers", testReserver{"a", []remote.Item{hostsBlock("api", "1.1.1.1 a")}, "h", 22},
			testReserver{"b", []remote.Item{hostsBlock("registry", "2.2.2.2 b")}, "h", 22}, ""},
		{"two hosts", testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "10.0.0.21", 22},
			testReserver{"b", []remote.Item{file("/etc/haproxy/haproxy.cfg", "b")}, "10.0.0.22", 22}, ""},
		{"two ports", testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "h", 22},
			testReserver{"b", []remote.Item{file("/etc/haproxy/haproxy.cfg", "b")}, "h", 2222}, ""},
		{"two paths", testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "h", 22},
			testReserver{"b", []remote.Item{file("/etc/kha/external-proxy.cfg", "b")}, "h", 22}, ""},
		{"one resource planned twice", testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "h", 22},
			testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "h", 22}, ""},
		{"one type, another content", testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "h", 22},
			testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "changed")}, "h", 22}, "This a and another a (id h:22:/etc/haproxy/haproxy.cfg) both manage"},
		{"one host in two spellings", testReserver{"a", []remote.Item{file("/etc/x", "a")}, "Node1.Example.com", 22},
			testReserver{"b", []remote.Item{file("/etc/x", "b")}, "node1.example.com", 0}, "both manage node1.example.com:22:/etc/x"},
		{"one IPv6 address in two spellings", testReserver{"a", []remote.Item{file("/etc/x", "a")}, "2001:db8:0::1", 22},
			testReserver{"b", []remote.Item{file("/etc/x", "b")}, "2001:DB8::1", 22}, "both manage [2001:DB8::1]:22:/etc/x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &providerData{reservations: newReservations()}
			if diags := c.first.take(d); diags.HasError() {
				t.Fatalf("first claim: %v", diags)
			}
			diags := c.later.take(d)
			got := ""
			if diags.HasError() {
				got = diags.Errors()[0].Summary() + ": " + diags.Errors()[0].Detail()
			}
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("second claim: got %q, want %q", got, c.want)
			}
		})
	}
}

// TestReservations_bastion: one private address behind two bastions is two
// machines; behind one, one.
func TestReservations_bastion(t *testing.T) {
	d := &providerData{reservations: newReservations()}
	behind := func(bastion string) resolvedSSH {
		return resolvedSSH{cfg: remote.Config{Host: "10.0.0.5", Bastion: &remote.Config{Host: bastion}}}
	}
	f := []remote.Item{file("/etc/x", "a")}
	for i, c := range []struct {
		m       resolvedSSH
		name    string
		wantErr bool
	}{{behind("bastion-a"), "a", false}, {behind("bastion-b"), "b", false}, {behind("bastion-a"), "c", true},
		{resolvedSSH{cfg: remote.Config{Host: "10.0.0.5"}}, "d", false},
		{resolvedSSH{cfg: remote.Config{Host: "10.0.0.5"}, unknown: []string{"bastion_host"}}, "e", false}} {
		got := d.reserve(c.m, placedReserver{testReserver{name: c.name}, settingsOf(map[string]string{"path": "/etc/x"})}, fmt.Sprint(i), f).HasError()
		if got != c.wantErr {
			t.Errorf("reservation %s: error %v, want %v", c.name, got, c.wantErr)
		}
	}
}

// TestReservations_detail: a third reserver names both before it, in order; the
// error is at the attribute that sets the path, with the fix of each.
func TestReservations_detail(t *testing.T) {
	d := &providerData{reservations: newReservations()}
	m := resolvedSSH{cfg: remote.Config{Host: "10.0.0.21"}}
	take := func(name, digest string, settings []pathSetting, files ...remote.Item) diag.Diagnostics {
		return d.reserve(m, placedReserver{testReserver{name: name}, settings}, digest, files)
	}
	take("kha_file with path = \"/etc/hosts\"", "1", settingsOf(map[string]string{"path": "/etc/hosts"}), file("/etc/hosts", "x"))
	take("z_hosts", "2", settingsOf(map[string]string{"path": "/etc/hosts"}), hostsBlock("entries", "x"))
	diags := take("a_edit", "3", settingsOf(nil, "/etc/kubernetes/admin.conf", "/etc/hosts"),
		edited("/etc/kubernetes/admin.conf"), edited("/etc/hosts"))
	if len(diags) != 1 {
		t.Fatalf("got %d diagnostics, want 1: %v", len(diags), diags)
	}
	e, ok := diags[0].(diag.DiagnosticWithPath)
	if !ok || e.Path().String() != "paths[1]" {
		t.Errorf("diagnostic %v is not at paths[1]", diags[0])
	}
	want := `This a_edit (the whole file) and kha_file with path = "/etc/hosts" (id 10.0.0.21:22:/etc/hosts; the whole file) and ` +
		`z_hosts (id 10.0.0.21:22:/etc/hosts; its block "entries") ` +
		"both manage 10.0.0.21:22:/etc/hosts. Writing the whole file drops the block, and putting the block back changes the file: " +
		"every apply undoes the other, and every later plan changes it back.\n\n" +
		"Give the file to one of them: on this resource, set `paths[1]` to another file; or on kha_file with path = \"/etc/hosts\", " +
		"set `path` to another file; or on z_hosts, set `path` to another file. A resource already applied is found by its id: " +
		"terraform state list -id=<id> (OpenTofu: tofu state list -id=<id>)."
	if got := diags[0].Detail(); got != want {
		t.Errorf("detail:\n%s\nwant:\n%s", got, want)
	}
}

// TestReservations_parallel: of many resources claiming one file at once,
// exactly one wins.
func TestReservations_parallel(t *testing.T) {
	d := &providerData{reservations: newReservations()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := testReserver{fmt.Sprintf("r%d", i), []remote.Item{file("/etc/x", fmt.Sprint(i))}, "h", 22}
			if !c.take(d).HasError() {
				mu.Lock()
				won++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("%d reservations won, want 1", won)
	}
}

// TestReservations_lbFix: a load balancer's fix names the attributes to set for
// its delivery, role and kind.
func TestReservations_lbFix(t *testing.T) {
	lb := func(role, delivery string) lbConfigModel {
		return lbConfigModel{Role: types.StringValue(role), Delivery: types.StringValue(delivery),
			Listen: &lbListenModel{Address: types.StringValue("10.0.0.100"), Port: types.Int64Value(8443)}}
	}
	haproxy := haproxyConfigModel{lbConfigModel: lb("external", deliverySystemd)}
	if got, want := haproxy.ConflictName(), `kha_haproxy_config with role = "external" listening on 10.0.0.100:8443`; got != want {
		t.Errorf("name %q, want %q", got, want)
	}
	move := func(m ConflictMover, attr string) string {
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
			"`manifest_path = \"/etc/kubernetes/manifests/nginx-proxy-external.yml\"` and `pod_name = \"nginx-external\"`"},
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
