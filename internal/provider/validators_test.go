package provider

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/kha/terraform-provider-kha/internal/hostres"
)

// TestKhaNameIn: kha's own names next to a managed file are found in any
// component of a path; names that merely look alike are not.
func TestKhaNameIn(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"/etc/haproxy/.kha-lock":                     ".kha-lock",
		"/etc/haproxy/.haproxy.cfg.kha":              ".haproxy.cfg.kha",
		"/etc/haproxy/.haproxy.cfg.kha.handover":     ".haproxy.cfg.kha.handover",
		"/etc/haproxy/.haproxy.cfg.kha.previous":     ".haproxy.cfg.kha.previous",
		"/etc/haproxy/.haproxy.cfg.kha.original":     ".haproxy.cfg.kha.original",
		"/etc/haproxy/.haproxy.cfg.kha-3f9a":         ".haproxy.cfg.kha-3f9a",
		"/etc/haproxy/.haproxy.cfg.kha/record":       ".haproxy.cfg.kha",
		"/etc/kubernetes/pki/.apiserver.crt.kha.new": ".apiserver.crt.kha.new",
		"/etc/haproxy/haproxy.cfg":                   "",
		"/etc/haproxy/haproxy.cfg.kha":               "", // not hidden: not kha's
		"/etc/haproxy/.kha":                          "",
		"/etc/haproxy/.haproxy.khaki":                "",
		"/etc/.khalock":                              "",
		"/etc/kha/etcd-proxy.cfg":                    "",
	} {
		if got := khaNameIn(p); got != want {
			t.Errorf("khaNameIn(%q) = %q, want %q", p, got, want)
		}
	}
}

// TestManagedPaths_khaNamesRefused: a resource cannot name one of kha's
// own host-side names as the file it writes: the plan fails at the
// attribute, saying what the name is and what to do.
func TestManagedPaths_khaNamesRefused(t *testing.T) {
	t.Parallel()
	cases := []struct{ fixture, path, at string }{
		{"file", "/etc/haproxy/.kha-lock", `path`},
		{"file", "/etc/haproxy/.haproxy.cfg.kha", `path`},
		{"file", "/etc/haproxy/.haproxy.cfg.kha.handover", `path`},
		{"file", "/etc/haproxy/.haproxy.cfg.kha.previous", `path`},
		{"file", "/etc/haproxy/.haproxy.cfg.kha.original", `path`},
		{"file", "/etc/haproxy/.haproxy.cfg.kha-0123abcd", `path`},
		{"file", "/etc/haproxy/.haproxy.cfg.kha/record", `path`},
		{"hosts_entries", "/etc/.hosts.kha.handover", `path`},
		{"haproxy_config", "/etc/haproxy/.kha-lock", `config_path`},
		{"keepalived_config", "/etc/keepalived/.keepalived.conf.kha.original", `config_path`},
		{"kubeconfig_server", "/etc/kubernetes/.admin.conf.kha.previous", `paths\[1\]`},
		{"kube_vip", "/etc/kubernetes/manifests/.kube-vip.yml.kha", `manifest_path`},
	}
	for _, tc := range cases {
		t.Run(tc.fixture+tc.path, func(t *testing.T) {
			want := regexp.MustCompile(`(?s)Path Is One of kha's Own Names.*` + tc.at + `\s+"` + regexp.QuoteMeta(tc.path) +
				`".*overwrite\s+or\s+forge\s+kha's\s+records.*Choose\s+another\s+path\s+for\s+` + tc.at)
			unitTest(t, stepProviders(resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{
					ConfigDirectory: config.StaticDirectory(filepath.Join("testdata", "TestManagedPaths_khaNamesRefused", tc.fixture)),
					ConfigVariables: config.Variables{"path": config.StringVariable(tc.path)},
					PlanOnly:        true, ExpectError: want,
				}},
			}))
		})
	}
}

// TestManagedPathValidator_nameMax: a managed file's name leaves room for
// kha's longest private name beside it, .<name>.kha-<12 hex>, within the
// 255 bytes a file name has (NAME_MAX): 237 bytes pass, 238 are refused at
// the attribute with the limit, counted in bytes (UTF-8).
func TestManagedPathValidator_nameMax(t *testing.T) {
	t.Parallel()
	validate := func(p string) diag.Diagnostics {
		var resp validator.StringResponse
		managedPathValidator().ValidateString(context.Background(), validator.StringRequest{
			Path: path.Root("path"), ConfigValue: types.StringValue(p)}, &resp)
		return resp.Diagnostics
	}
	if d := validate("/etc/haproxy/" + strings.Repeat("a", 237)); d.HasError() {
		t.Errorf("a 237-byte name is refused: %v", d)
	}
	for _, name := range []string{strings.Repeat("a", 238), strings.Repeat("é", 119), strings.Repeat("a", 255)} {
		d := validate("/etc/haproxy/" + name)
		if !d.HasError() || !regexp.MustCompile(`(?s)path: the file name is \d+ bytes long.*at most 237 bytes.*NAME_MAX`).MatchString(d.Errors()[0].Detail()) {
			t.Errorf("a %d-byte name: %v", len(name), d)
		}
	}
}

// TestManagedPaths_nameMaxRefused: the plan fails at the attribute of a
// managed file whose name is too long for kha's private names beside it.
func TestManagedPaths_nameMaxRefused(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 240)
	for fixture, at := range map[string]string{"file": `path`, "kubeconfig_server": `paths\[1\]`} {
		t.Run(fixture, func(t *testing.T) {
			unitTest(t, stepProviders(resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{
					ConfigDirectory: config.StaticDirectory(filepath.Join("testdata", "TestManagedPaths_khaNamesRefused", fixture)),
					ConfigVariables: config.Variables{"path": config.StringVariable("/etc/kha/" + long)},
					PlanOnly:        true,
					ExpectError:     regexp.MustCompile(`(?s)File Name Too Long.*` + at + `:\s+the\s+file\s+name\s+is\s+240\s+bytes`),
				}},
			}))
		})
	}
}

// TestValidateCommandDescriptions: every validate_command says that each
// %s in it becomes the uploaded copy's quoted path (internal/remote's
// applyArgs replaces them all), that the copy is $KHA_NEW too, and so how
// to write a literal %s.
func TestValidateCommandDescriptions(t *testing.T) {
	t.Parallel()
	found := 0
	for _, s := range servedSchemas(t) {
		a, ok := s.schema.Schema.GetAttributes()["validate_command"]
		if !ok {
			continue
		}
		found++
		d := a.GetMarkdownDescription()
		for _, want := range []string{"Every `%s` in it is replaced by the quoted path of the uploaded copy", "`$KHA_NEW`",
			"a literal `%s` cannot be written", "`printf '%''s\\n'"} {
			if !strings.Contains(d, want) {
				t.Errorf("%s: validate_command's description lacks %q:\n%s", s.name, want, d)
			}
		}
	}
	if found < 5 { // kha_file, kha_haproxy_config, kha_nginx_config, kha_keepalived_config, kha_etcd_access
		t.Errorf("%d resources have validate_command, want 5 or more", found)
	}
}

// TestDurationValidator: a duration is refused at plan time, at its
// attribute, when it does not match or does not fit Go's time.Duration
// (which the resources would otherwise have read as 0).
func TestDurationValidator(t *testing.T) {
	t.Parallel()
	at := path.Root("health_check").AtName("interval")
	for value, want := range map[string]string{
		"10s":                   "",
		"500ms":                 "",
		"2562047h":              "",
		"10":                    `health_check.interval must be a duration such as "500ms", "10s" or "10m", got: "10".`,
		"1.5s":                  `must be a duration such as`,
		"2562048h":              `health_check.interval is "2562048h", longer than a duration can be (at most 2562047h0m0s)`,
		"99999999999999999999s": `longer than a duration can be`,
	} {
		resp := &validator.StringResponse{}
		durationValidator().ValidateString(context.Background(), validator.StringRequest{Path: at, ConfigValue: types.StringValue(value)}, resp)
		switch {
		case want == "" && resp.Diagnostics.HasError():
			t.Errorf("%q refused: %v", value, resp.Diagnostics)
		case want != "" && (!resp.Diagnostics.HasError() || !strings.Contains(hostres.Summary(resp.Diagnostics), want)):
			t.Errorf("%q: got %v, want an error with %q", value, resp.Diagnostics, want)
		case want != "" && !resp.Diagnostics.Errors()[0].(diag.DiagnosticWithPath).Path().Equal(at):
			t.Errorf("%q: the error is not at %s", value, at)
		}
	}
	for _, v := range []types.String{types.StringNull(), types.StringUnknown()} {
		resp := &validator.StringResponse{}
		durationValidator().ValidateString(context.Background(), validator.StringRequest{Path: at, ConfigValue: v}, resp)
		if resp.Diagnostics.HasError() {
			t.Errorf("%v refused: %v", v, resp.Diagnostics)
		}
	}
}
