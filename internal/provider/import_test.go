package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/remote"
	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestAccImport_renderedResources imports each resource that renders its
// files from inputs (the load balancers, keepalived, kube-vip, etcd access
// and a hosts block) from files a host already has, through a real sshd:
// the state records the file's digest; the next plan is an update in
// place that fills in the inputs, keeping sha256 where the host already
// has what the configuration renders (the hosts block) and changing it
// where it does not; the apply writes the rendered files, and the plan
// after it is empty. With on_destroy = "restore", destroy puts back the
// files import found, byte for byte and with their modes. A missing file
// and a malformed ID are refused with what to do.
func TestAccImport_renderedResources(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	dir := t.TempDir()
	block := remote.BlockLines("api", "10.0.0.100 api.example.com")
	type imported struct {
		addr, file, id, content string
		mode                    os.FileMode
		pathAttr, rendered      string // rendered: what the file holds after the apply
		unchanged               bool   // the host already has what the configuration renders
	}
	cases := []imported{
		{addr: "kha_haproxy_config.lb", file: "haproxy.cfg", content: "global\n    maxconn 10\n", pathAttr: "config_path", rendered: "bind 127.0.0.1:16443"},
		{addr: "kha_nginx_config.lb", file: "nginx.conf", content: "events {}\n", pathAttr: "config_path", rendered: "listen 127.0.0.1:16444;"},
		{addr: "kha_keepalived_config.vip", file: "keepalived.conf", content: "vrrp_instance old {}\n", pathAttr: "config_path", rendered: "10.0.0.100/32"},
		{addr: "kha_kube_vip.cp1", file: "kube-vip.yml", content: "old manifest\n", mode: 0o600, pathAttr: "manifest_path", rendered: `value: "cp1"`},
		{addr: "kha_etcd_access.etcd", file: "etcd-access.env", content: "ETCD_SERVERS=https://10.0.0.99:2379\n", pathAttr: "env_path",
			rendered: "ETCD_SERVERS=https://10.0.0.11:2379\n"},
		{addr: "kha_hosts_entries.api", file: "hosts", id: "#api", content: "127.0.0.1 localhost\n" + block + "10.0.0.50 other\n",
			pathAttr: "path", rendered: "127.0.0.1 localhost\n" + block + "10.0.0.50 other\n", unchanged: true},
	}
	vars := config.Variables{"host": config.StringVariable(s.Host), "port": config.IntegerVariable(s.Port),
		"private_key": config.StringVariable(s.ClientKey.PEM), "known_hosts": config.StringVariable(s.KnownHosts()),
		"dir": config.StringVariable(dir)}
	fixture := config.TestNameDirectory()
	for _, c := range cases {
		mode := c.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, c.file), mode); err != nil { // beyond the umask's reach
			t.Fatal(err)
		}
	}

	steps := []resource.TestStep{
		{
			ConfigDirectory: fixture, ConfigVariables: vars, ResourceName: "kha_haproxy_config.lb", ImportState: true,
			ImportStateId: s.Address() + ":" + filepath.Join(dir, "missing.cfg"),
			ExpectError:   regexp.MustCompile(`(?s)Import Failed.*has\s+no\s+file\s+at\s+\S+missing\.cfg\s+to\s+import`),
		},
		{
			ConfigDirectory: fixture, ConfigVariables: vars, ResourceName: "kha_hosts_entries.api", ImportState: true,
			ImportStateId: s.Address() + ":" + filepath.Join(dir, "hosts") + "#other",
			ExpectError:   regexp.MustCompile(`(?s)Import Failed.*has\s+no\s+block\s+"# BEGIN kha other"\s+in\s+\S+hosts\s+to\s+import`),
		},
		{
			ConfigDirectory: fixture, ConfigVariables: vars, ResourceName: "kha_kube_vip.cp1", ImportState: true,
			ImportStateId: "kube-vip.yml",
			ExpectError:   regexp.MustCompile(`(?s)Invalid Import ID.*is\s+not\s+host:port:path,\s+e\.g\.\s+10\.0\.0\.11:22:/etc/kubernetes/manifests/kube-vip\.yml`),
		},
	}
	var updates []plancheck.PlanCheck
	for _, c := range cases {
		path := filepath.Join(dir, c.file)
		want := digest(c.content)
		if c.file == "hosts" {
			want = digest(block)
		}
		id := s.Address() + ":" + path + c.id
		steps = append(steps, resource.TestStep{
			ConfigDirectory: fixture, ConfigVariables: vars, ResourceName: c.addr, ImportState: true,
			ImportStateId: id, ImportStatePersist: true,
			ImportStateCheck: func(states []*terraform.InstanceState) error {
				var a map[string]string
				for _, st := range states {
					if st.ID == id {
						a = st.Attributes
					}
				}
				if a["sha256"] != want || a["remote_sha256"] != want || a[c.pathAttr] != path || a["ssh.host"] != s.Host {
					return fmt.Errorf("%s imported as %v; want sha256 and remote_sha256 %s, %s %s", c.addr, sorted(a), want, c.pathAttr, path)
				}
				return nil
			},
		})
		var sha knownvalue.Check = knownvalue.StringFunc(func(v string) error {
			if v == want {
				return fmt.Errorf("sha256 keeps the imported %s, but the configuration renders another file", v)
			}
			return nil
		})
		if c.unchanged {
			sha = knownvalue.StringExact(want)
		}
		updates = append(updates, plancheck.ExpectResourceAction(c.addr, plancheck.ResourceActionUpdate),
			plancheck.ExpectKnownValue(c.addr, tfjsonpath.New("sha256"), sha))
	}
	steps = append(steps,
		resource.TestStep{
			ConfigDirectory: fixture, ConfigVariables: vars,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: updates},
			Check: func(*terraform.State) error {
				for _, c := range cases {
					b, err := os.ReadFile(filepath.Join(dir, c.file))
					if err != nil || !strings.Contains(string(b), c.rendered) {
						return fmt.Errorf("%s after the apply: %v %q, want %q in it", c.file, err, b, c.rendered)
					}
				}
				return nil
			},
		},
		resource.TestStep{
			ConfigDirectory: fixture, ConfigVariables: vars,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
		},
	)
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps:                    steps,
		CheckDestroy: func(*terraform.State) error {
			if b, err := os.ReadFile(filepath.Join(dir, "hosts")); err != nil || string(b) != "127.0.0.1 localhost\n10.0.0.50 other\n" {
				return fmt.Errorf("hosts after destroy: %v %q, want the block gone and the other lines kept", err, b)
			}
			for _, c := range cases {
				if c.file == "hosts" {
					continue
				}
				mode := c.mode
				if mode == 0 {
					mode = 0o644
				}
				b, err := os.ReadFile(filepath.Join(dir, c.file))
				fi, _ := os.Stat(filepath.Join(dir, c.file))
				if err != nil || string(b) != c.content || fi.Mode().Perm() != mode {
					return fmt.Errorf("%s after destroy: %v %q, want the file import found (%04o) back", c.file, err, b, mode)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
				return fmt.Errorf("left after destroy: %v", left)
			}
			return nil
		},
	}))
}

func sorted(attrs map[string]string) []string {
	var out []string
	for k, v := range attrs {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
