package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/kha/terraform-provider-kha/internal/remote"
	"github.com/kha/terraform-provider-kha/internal/testhost"
)

const fileAddr = "kha_file.test"

// fileFixture is testdata/file, a kha_file with its credentials on the
// provider, and fileVars its variables for a server; more pairs override.
var fileFixture = config.StaticDirectory("testdata/file")

func fileVars(s *testhost.Server, path string, more ...any) config.Variables {
	v := config.Variables{
		"host":        config.StringVariable(s.Host),
		"port":        config.IntegerVariable(s.Port),
		"private_key": config.StringVariable(s.ClientKey.PEM),
		"known_hosts": config.StringVariable(s.KnownHosts()),
		"path":        config.StringVariable(path),
		"content":     config.StringVariable("frontend kube\n"),
	}
	for i := 0; i+1 < len(more); i += 2 {
		switch value := more[i+1].(type) {
		case string:
			v[more[i].(string)] = config.StringVariable(value)
		case bool:
			v[more[i].(string)] = config.BoolVariable(value)
		case nil:
			delete(v, more[i].(string))
		}
	}
	return v
}

func digest(s string) string { return remote.SHA256([]byte(s)) }

func fileIs(path, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if string(got) != want {
			return fmt.Errorf("%s holds %q, want %q", path, got, want)
		}
		return nil
	}
}

func mustWrite(t *testing.T, path, content string) func() {
	return func() {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAccFile_lifecycleDriftImport(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	target := filepath.Join(t.TempDir(), "conf.d", "lb.cfg")
	vars := fileVars(s, target, "mode", "0640")
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				return fmt.Errorf("%s still exists after destroy (%v)", target, err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				ConfigDirectory: fileFixture, ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(fileAddr, tfjsonpath.New("sha256"), knownvalue.StringExact(digest("frontend kube\n"))),
					plancheck.ExpectKnownValue(fileAddr, tfjsonpath.New("id"), knownvalue.StringExact(fmt.Sprintf("%s:%s", s.Address(), target))),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("remote_sha256"), knownvalue.StringExact(digest("frontend kube\n"))),
				},
				Check: resource.ComposeTestCheckFunc(fileIs(target, "frontend kube\n"), modeIs(target, 0o640)),
			},
			{
				// Edited outside Terraform: the plan shows the drift, apply puts it right.
				PreConfig:       mustWrite(t, target, "edited by hand\n"),
				ConfigDirectory: fileFixture, ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(fileAddr, tfjsonpath.New("remote_sha256"), knownvalue.StringExact(digest("frontend kube\n"))),
				}},
				Check: fileIs(target, "frontend kube\n"),
			},
			{
				// Only the mode changed on the host: that is drift too.
				PreConfig:       func() { os.Chmod(target, 0o666) },
				ConfigDirectory: fileFixture, ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionUpdate),
				}},
				Check: modeIs(target, 0o640),
			},
			{
				// Deleted outside Terraform: planned for re-creation.
				PreConfig:       func() { os.Remove(target) },
				ConfigDirectory: fileFixture, ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionUpdate),
				}},
				Check: fileIs(target, "frontend kube\n"),
			},
			{
				// A no-change plan stays empty.
				ConfigDirectory: fileFixture, ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Import reads the file's digest, never its content.
				ConfigDirectory: fileFixture, ConfigVariables: vars,
				ResourceName:                         fileAddr,
				ImportState:                          true,
				ImportStateId:                        fmt.Sprintf("%s:%s", s.Address(), target),
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "id",
				ImportStateVerifyIgnore:              []string{"ssh", "content", "on_destroy", "destroy_actions"}, // import keeps the file on destroy
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if _, ok := states[0].Attributes["content"]; ok {
						return fmt.Errorf("import stored the file's content: %q", states[0].Attributes["content"])
					}
					return nil
				},
			},
			{
				// Changing the content updates in place and keeps the path.
				ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, target, "mode", "0640", "content", "frontend kube v2\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionUpdate),
				}},
				Check: fileIs(target, "frontend kube v2\n"),
			},
		},
	}))
}

func modeIs(path string, want os.FileMode) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			return fmt.Errorf("mode of %s: %v %v, want %o", path, st, err, want)
		}
		return nil
	}
}

func TestAccFile_failedValidationKeepsPreviousFile(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	target := filepath.Join(t.TempDir(), "haproxy.cfg")
	v1 := fileVars(s, target, "content", "MUST stay\n", "validate_command", "grep -q MUST %s")
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: fileFixture, ConfigVariables: v1, Check: fileIs(target, "MUST stay\n")},
			{
				ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, target, "content", "broken\n", "validate_command", "grep -q MUST %s"),
				ExpectError: regexp.MustCompile(`(?s)Applying File Failed.*validate\s+of\s+\S+haproxy\.cfg\s+failed.*previous file is\s+untouched`),
			},
			{
				// The host still has v1 byte for byte, and Terraform agrees.
				ConfigDirectory: fileFixture, ConfigVariables: v1,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            fileIs(target, "MUST stay\n"),
			},
		},
	}))
}

// Destroy runs destroy_command after the file is removed, and never
// reload_command: a `sysctl -p FILE` would fail on the removed file.
func TestAccFile_destroyRunsDestroyCommandNotReload(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	dir := t.TempDir()
	target, ran := filepath.Join(dir, "99-kha.conf"), filepath.Join(dir, "ran")
	vars := fileVars(s, target, "content", "net.ipv4.ip_nonlocal_bind = 1\n",
		"reload_command", fmt.Sprintf("test -f %s && echo reload >>%s", target, ran),
		"destroy_command", fmt.Sprintf("test ! -e %s && echo destroy >>%s", target, ran))
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				return fmt.Errorf("%s still exists after destroy (%v)", target, err)
			}
			return fileIs(ran, "reload\ndestroy\n")(nil)
		},
		Steps: []resource.TestStep{
			{ConfigDirectory: fileFixture, ConfigVariables: vars, Check: fileIs(ran, "reload\n")},
		},
	}))
}

// exampleStrings are the string attributes of one resource block in an
// example file, as Terraform reads them.
func exampleStrings(t *testing.T, file, block string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, block+" {\n")
	if start < 0 {
		t.Fatalf("%s has no %s", file, block)
	}
	body := text[start:]
	body = body[:strings.Index(body, "\n}\n")]
	attrs := map[string]string{}
	// <<-EOT heredocs, with the indentation of their least indented line
	// taken away, as Terraform does.
	for _, m := range regexp.MustCompile(`(?ms)^\s*(\w+)\s*=\s*<<-(\w+)\n(.*?)\n\s*(\w+)$`).FindAllStringSubmatch(body, -1) {
		lines := strings.Split(m[3], "\n")
		indent := len(m[3])
		for _, l := range lines {
			if strings.TrimSpace(l) != "" {
				indent = min(indent, len(l)-len(strings.TrimLeft(l, " ")))
			}
		}
		for i, l := range lines {
			lines[i] = l[min(indent, len(l)):]
		}
		attrs[m[1]] = strings.Join(lines, "\n") + "\n"
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*(\w+)\s*=\s*("(?:[^"\\]|\\.)*")\s*(?:#.*)?$`).FindAllStringSubmatch(body, -1) {
		value, err := strconv.Unquote(m[2])
		if err != nil {
			t.Fatalf("%s: %s: %v", file, m[1], err)
		}
		attrs[m[1]] = value
	}
	return attrs
}

// The documented nonlocal_bind recipe, applied as written to a host whose
// /etc/sysctl.d is its own. The test host shares this machine's kernel, so
// the recipe's reload and destroy commands run as written but in a network
// namespace of their own (net.ipv4.* and net.ipv6.* are per namespace):
// the reload must set net.ipv4.ip_nonlocal_bind there. The validate
// command must refuse a misspelt key.
func TestAccFile_nonlocalBindRecipe(t *testing.T) {
	t.Parallel()
	recipe := exampleStrings(t, "../../examples/resources/kha_file/resource.tf", `resource "kha_file" "nonlocal_bind"`)
	for _, name := range []string{"path", "content", "validate_command", "reload_command", "destroy_command"} {
		if strings.Contains(recipe[name], "'") && (name == "reload_command" || name == "destroy_command") || recipe[name] == "" {
			t.Fatalf("the recipe's %s is %q", name, recipe[name])
		}
	}
	s := testhost.Start(t, testhost.Options{PrivateDir: "/etc/sysctl.d"})
	isolated := func(command, check string) string { return fmt.Sprintf("unshare -n sh -c '%s && %s'", command, check) }
	vars := func(content string) config.Variables {
		return fileVars(s, recipe["path"], "content", content, "validate_command", recipe["validate_command"],
			"reload_command", isolated(recipe["reload_command"], `[ "$(sysctl -n net.ipv4.ip_nonlocal_bind)" = 1 ]`),
			"destroy_command", isolated(recipe["destroy_command"], `[ "$(sysctl -n net.ipv4.ip_nonlocal_bind)" = 0 ]`))
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(s.HostPath(recipe["path"])); !os.IsNotExist(err) {
				return fmt.Errorf("%s still exists after destroy (%v)", recipe["path"], err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{ConfigDirectory: fileFixture, ConfigVariables: vars(recipe["content"]), Check: fileIs(s.HostPath(recipe["path"]), recipe["content"])},
			{
				ConfigDirectory: fileFixture, ConfigVariables: vars(strings.Replace(recipe["content"], "nonlocal_bind", "nonlocal_bnd", 1)),
				ExpectError: regexp.MustCompile(`(?s)validate\s+of\s+/etc/sysctl\.d/\S+\s+failed.*ip_nonlocal_bnd`),
			},
		},
	}))
}

// The documented unit that runs the etcd local proxy (Debian and Ubuntu
// ship haproxy.service only), applied as written to a host whose
// /etc/systemd/system is its own: the real systemd-analyze in its
// validate command accepts it, and refuses a unit without ExecStart. The
// test host runs no systemd, so the recipe's daemon-reload commands are
// left out.
func TestAccFile_haproxyInstanceUnitRecipe(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("no systemd-analyze")
	}
	recipe := exampleStrings(t, "../../examples/resources/kha_etcd_access/resource.tf", `resource "kha_file" "haproxy_instance_unit"`)
	if recipe["reload_command"] != "systemctl daemon-reload" || recipe["destroy_command"] != "systemctl daemon-reload" ||
		!strings.Contains(recipe["content"], "CONFIG=/etc/kha/%i-proxy.cfg") {
		t.Fatalf("the recipe changed: %q", recipe)
	}
	s := testhost.Start(t, testhost.Options{PrivateDir: "/etc/systemd/system"})
	vars := func(content string) config.Variables {
		return fileVars(s, recipe["path"], "content", content, "validate_command", recipe["validate_command"])
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: fileFixture, ConfigVariables: vars(recipe["content"]), Check: fileIs(s.HostPath(recipe["path"]), recipe["content"])},
			{
				ConfigDirectory: fileFixture, ConfigVariables: vars(strings.Replace(recipe["content"], "ExecStart=", "ExecStrat=", 1)),
				ExpectError: regexp.MustCompile(`(?s)validate\s+of\s+\S+haproxy@\.service\s+failed.*no\s+ExecStart=`),
			},
		},
	}))
}

// A reload command that hangs fails the apply at the resource's update
// timeout, with the previous file restored.
func TestAccFile_hangingReloadFailsAtItsTimeout(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	target := filepath.Join(t.TempDir(), "lb.cfg")
	hangOnV2 := "! grep -q v2 " + remote.ShellQuote(target) + " || sleep 600"
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, target, "content", "v1\n", "reload_command", hangOnV2)},
			{
				ConfigDirectory: fileFixture,
				ConfigVariables: fileVars(s, target, "content", "v2\n", "reload_command", hangOnV2, "update_timeout", "12s"),
				ExpectError:     regexp.MustCompile(`(?s)reload.*did\s+not\s+finish\s+within\s+the\s+operation's\s+timeout;\s+the\s+previous\s+file\s+was\s+restored`),
			},
			{
				ConfigDirectory:  fileFixture,
				ConfigVariables:  fileVars(s, target, "content", "v1\n", "reload_command", hangOnV2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            fileIs(target, "v1\n"),
			},
		},
	}))
}

// A link that goes dead (nothing arrives, nothing closes) fails the apply
// at the resource's update timeout, not when the kernel gives up on the
// connection a quarter of an hour later: while the new file is on its
// way, with the error that says the host is unchanged; while the reload
// runs, with the error that says the host goes on alone (its script
// restores the previous file when the reload outlasts the timeout). Once
// the link is back the plan is empty: the host has the previous file.
func TestAccFile_deadLinkFailsAtItsTimeout(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	relay := testhost.Delay(t, s.Address(), 0)
	dir := t.TempDir()
	target, reloading := filepath.Join(dir, "lb.cfg"), filepath.Join(dir, "reloading")
	hangOnV2 := "touch " + remote.ShellQuote(reloading) + "; ! grep -q v2 " + remote.ShellQuote(target) + " || sleep 600"
	vars := func(content string, more ...any) config.Variables {
		v := fileVars(s, target, append([]any{"content", content, "reload_command", hangOnV2,
			"known_hosts", relay.KnownHostsName() + " " + s.HostKey.Public() + "\n"}, more...)...)
		v["port"] = config.IntegerVariable(relay.Port)
		return v
	}
	const timeout, grace = 10 * time.Second, 5 * time.Second
	cut := make(chan time.Time, 1)
	cutWhen := func(ready func() bool) func() {
		return func() {
			go func() {
				for !ready() {
					time.Sleep(2 * time.Millisecond)
				}
				if err := relay.SmallSendBuffers(); err != nil {
					t.Error(err)
				}
				relay.BlackHole()
				cut <- time.Now()
			}()
		}
	}
	healInTime := func() {
		relay.Heal()
		if took := time.Since(<-cut); took > timeout+grace {
			t.Errorf("the apply ended %s after the link went dead, past its %s update timeout and %s", took, timeout, grace)
		}
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: fileFixture, ConfigVariables: vars("v1\n")},
			{
				PreConfig:       cutWhen(func() bool { return testhost.UploadStarted(dir, "lb.cfg") }),
				ConfigDirectory: fileFixture,
				ConfigVariables: vars(strings.Repeat("x", 16<<20), "update_timeout", timeout.String()),
				ExpectError:     regexp.MustCompile(`(?s)the\s+operation\s+ended\s+before\s+the\s+new\s+file\s+was\s+put\s+in\s+place;\s+the\s+host\s+is\s+unchanged`),
			},
			{
				PreConfig: func() {
					healInTime()
					_ = os.Remove(reloading)
					cutWhen(func() bool { _, err := os.Stat(reloading); return err == nil })()
				},
				ConfigDirectory: fileFixture,
				ConfigVariables: vars("v2\n", "update_timeout", timeout.String()),
				ExpectError:     regexp.MustCompile(`(?s)connection\s+was\s+lost\s+after\s+the\s+new\s+file\s+was\s+put\s+in\s+place.*the\s+host\s+goes\s+on\s+alone`),
			},
			{
				PreConfig:        healInTime,
				ConfigDirectory:  fileFixture,
				ConfigVariables:  vars("v1\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            fileIs(target, "v1\n"),
			},
		},
	}))
}

func TestAccFile_connectionErrors(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	target := filepath.Join(t.TempDir(), "x")
	cases := map[string]struct {
		vars config.Variables
		err  string
	}{
		"host key mismatch": {fileVars(s, target, "known_hosts", fmt.Sprintf("%s %s\n", s.KnownHostsName(), testhost.NewKey(t).Public())),
			`(?s)host key verification failed.*presented ssh-ed25519`},
		"no host key": {fileVars(s, target, "known_hosts", nil),
			`(?s)Invalid Connection.*set ssh\.host_key`},
		"known_hosts for another host": {fileVars(s, target, "known_hosts", "10.9.9.9 "+s.HostKey.Public()+"\n"),
			`(?s)Invalid Connection.*ssh\.known_hosts has no key and no @cert-authority line for`},
		"wrong client key": {fileVars(s, target, "private_key", testhost.NewKey(t).PEM),
			`(?s)SSH Connection Failed.*unable to authenticate as\s+root@.*tried:\s+publickey`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, stepProviders(resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps:                    []resource.TestStep{{ConfigDirectory: fileFixture, ConfigVariables: tc.vars, ExpectError: regexp.MustCompile(tc.err)}},
			}))
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Fatalf("a failed connection must not write anything: %v", err)
			}
		})
	}
}

// TestAccFile_secretsStayOutOfStateAndPlan writes secret content with
// content_wo and a write-only private key, then searches the plan JSON,
// the state JSON, every state file and Terraform's and the provider's
// trace log for them.
func TestAccFile_secretsStayOutOfStateAndPlan(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	work := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", work)
	logFile := filepath.Join(t.TempDir(), "trace.log")
	t.Setenv("TF_LOG", "TRACE")
	t.Setenv("TF_ACC_LOG_PATH", logFile)
	target := filepath.Join(t.TempDir(), "token")
	keyLine := strings.Split(strings.TrimSpace(s.ClientKey.PEM), "\n")[1]
	secrets := []string{keyLine, "s3cret-token-1", "s3cret-token-2"}
	vars := func(token string) config.Variables {
		return config.Variables{"host": config.StringVariable(s.Host), "port": config.IntegerVariable(s.Port),
			"host_key": config.StringVariable(s.RSAHostKey.Public()), "private_key": config.StringVariable(s.ClientKey.PEM),
			"token": config.StringVariable(token), "path": config.StringVariable(target)}
	}
	resource.Test(t, stepProviders(resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("s3cret-token-1"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					noSecretsInPlan(secrets),
					plancheck.ExpectKnownValue(fileAddr, tfjsonpath.New("sha256"), knownvalue.StringExact(digest("s3cret-token-1"))),
				}},
				ConfigStateChecks: []statecheck.StateCheck{noSecretsInState(work, secrets)},
				Check:             fileIs(target, "s3cret-token-1"),
			},
			{
				// A new secret plans an update through its digest alone.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("s3cret-token-2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					noSecretsInPlan(secrets),
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{noSecretsInState(work, secrets)},
				Check:             fileIs(target, "s3cret-token-2"),
			},
			{
				// Refresh cannot use the write-only key; the plan still
				// finds the drift with the configuration's key.
				PreConfig:       mustWrite(t, target, "drifted\n"),
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("s3cret-token-2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					noSecretsInPlan(secrets),
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionUpdate),
				}},
				Check: fileIs(target, "s3cret-token-2"),
			},
		},
	}))
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log, []byte("ApplyResourceChange")) {
		t.Fatal("the trace log has no ApplyResourceChange: it is not the log of the run")
	}
	for _, secret := range secrets {
		if bytes.Contains(log, []byte(secret)) {
			t.Errorf("the trace log holds the secret %q", secret)
		}
	}
}

// noSecretsInPlan fails when the plan's JSON holds any of secrets.
func noSecretsInPlan(secrets []string) plancheck.PlanCheck { return secretCheck{secrets: secrets} }

type secretCheck struct {
	secrets []string
	work    string
}

func (c secretCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	raw, err := json.Marshal(req.Plan)
	if err != nil {
		resp.Error = err
		return
	}
	for _, s := range c.secrets {
		if strings.Contains(string(raw), s) {
			resp.Error = fmt.Errorf("the plan holds the secret %q", s)
		}
	}
}

// noSecretsInState fails when the state's JSON, or any state file of the
// working directory, holds any of secrets.
func noSecretsInState(work string, secrets []string) statecheck.StateCheck {
	return secretCheck{secrets: secrets, work: work}
}

func (c secretCheck) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	raw, err := json.Marshal(req.State)
	if err != nil {
		resp.Error = err
		return
	}
	blobs := map[string][]byte{"state JSON": raw}
	_ = filepath.Walk(c.work, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".tfstate") {
			blobs[p], _ = os.ReadFile(p)
		}
		return nil
	})
	for where, b := range blobs {
		for _, s := range c.secrets {
			if strings.Contains(string(b), s) {
				resp.Error = fmt.Errorf("%s holds the secret %q", where, s)
			}
		}
	}
}

// TestAccFile_sudoThroughBastion writes a root-owned file into a root-only
// directory as an unprivileged user, through a jump host.
func TestAccFile_sudoThroughBastion(t *testing.T) {
	t.Parallel()
	testhost.RequireUnprivilegedUser(t)
	target := testhost.Start(t, testhost.Options{ListenAddress: "127.0.0.2"})
	bastion := testhost.Start(t, testhost.Options{AuthorizedKeys: []string{target.ClientKey.Public()}, LogLevel: "DEBUG1"})
	path := filepath.Join(t.TempDir(), "root-only", "nginx.conf")
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: config.TestNameDirectory(),
			ConfigVariables: config.Variables{
				"user": config.StringVariable(testhost.UnprivilegedUser), "private_key": config.StringVariable(target.ClientKey.PEM),
				"path": config.StringVariable(path), "host": config.StringVariable(target.Host), "port": config.IntegerVariable(target.Port),
				"host_key": config.StringVariable(target.ECDSAHostKey.Public()), "bastion_host": config.StringVariable(bastion.Host),
				"bastion_port": config.IntegerVariable(bastion.Port), "bastion_host_key": config.StringVariable(bastion.HostKey.Public()),
			},
			Check: resource.ComposeTestCheckFunc(fileIs(path, "stream {}\n"), func(*terraform.State) error {
				st, err := os.Stat(path)
				if err != nil {
					return err
				}
				if st.Sys().(*syscall.Stat_t).Uid != 0 || st.Mode().Perm() != 0o600 {
					return fmt.Errorf("owner uid %d mode %o", st.Sys().(*syscall.Stat_t).Uid, st.Mode().Perm())
				}
				if !strings.Contains(bastion.Log(), fmt.Sprintf("target %s port %d", target.Host, target.Port)) {
					return fmt.Errorf("the bastion forwarded nothing to the target")
				}
				return nil
			}),
		}},
	}))
}

// TestAccFile_trustOnFirstUse: the first connection pins the host's key
// whenever it happens (create, the first refresh after the setting is
// turned on, after an import), and an impostor on the host's address is
// refused with the recovery in the error.
func TestAccFile_trustOnFirstUse(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	target := filepath.Join(t.TempDir(), "tofu")
	tofu := fileVars(s, target, "known_hosts", nil, "trust_on_first_use", true)
	pinned := func() statecheck.StateCheck {
		return statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("trusted_host_key"), knownvalue.StringExact(s.HostKey.Public()))
	}
	impostor := func() {
		port := s.Port
		s.Stop()
		s = testhost.Start(t, testhost.Options{Port: port, AuthorizedKeys: []string{s.ClientKey.Public()}})
	}
	refused := regexp.MustCompile(`(?s)host key verification failed.*set\s+ssh\.host_key`)
	// recovery is the documented way to accept a legitimate new key:
	// pin it (here through known_hosts). Its variables are filled when
	// the step runs, after the new host is up.
	recovery := func() resource.TestStep {
		vars := config.Variables{}
		original := s.ClientKey.PEM
		return resource.TestStep{
			PreConfig: func() {
				for k, v := range fileVars(s, target, "private_key", original) {
					vars[k] = v
				}
			},
			ConfigDirectory: fileFixture, ConfigVariables: vars,
		}
	}
	t.Run("from the first apply", func(t *testing.T) {
		resource.Test(t, stepProviders(resource.TestCase{
			ProtoV6ProviderFactories: testAccProviders,
			Steps: []resource.TestStep{
				{
					ConfigDirectory: fileFixture, ConfigVariables: tofu,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectUnknownValue(fileAddr, tfjsonpath.New("trusted_host_key")),
					}},
					ConfigStateChecks: []statecheck.StateCheck{pinned()},
				},
				{PreConfig: impostor, ConfigDirectory: fileFixture, ConfigVariables: tofu, ExpectError: refused},
				recovery(),
			},
		}))
	})
	s = testhost.Start(t, testhost.Options{})
	t.Run("turned on for an existing resource", func(t *testing.T) {
		resource.Test(t, stepProviders(resource.TestCase{
			ProtoV6ProviderFactories: testAccProviders,
			Steps: []resource.TestStep{
				{ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, target)},
				{
					// The refresh before this plan is the first connection
					// with trust on first use: it pins the key.
					ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, target, "known_hosts", nil, "trust_on_first_use", true),
					ConfigStateChecks: []statecheck.StateCheck{pinned()},
				},
				{PreConfig: impostor, ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, target, "known_hosts", nil, "trust_on_first_use", true),
					ExpectError: refused},
				recovery(),
			},
		}))
	})
	s = testhost.Start(t, testhost.Options{})
	os.WriteFile(target, []byte("frontend kube\n"), 0o644)
	t.Run("after an import", func(t *testing.T) {
		vars := fileVars(s, target, "known_hosts", nil, "trust_on_first_use", true)
		resource.Test(t, stepProviders(resource.TestCase{
			ProtoV6ProviderFactories: testAccProviders,
			Steps: []resource.TestStep{
				{
					ConfigDirectory: fileFixture, ConfigVariables: vars,
					ResourceName: fileAddr, ImportState: true, ImportStateId: fmt.Sprintf("%s:%s", s.Address(), target),
					ImportStatePersist: true,
					ImportStateCheck: func(states []*terraform.InstanceState) error {
						if got := states[0].Attributes["trusted_host_key"]; got != s.HostKey.Public() {
							return fmt.Errorf("import recorded %q, want the host's key", got)
						}
						return nil
					},
				},
				{PreConfig: impostor, ConfigDirectory: fileFixture, ConfigVariables: vars, ExpectError: refused},
				recovery(),
			},
		}))
	})
}

// TestAccFile_movingToAnotherHostReplaces: a changed ssh.port (another
// host) replaces the resource, so the old host is cleaned.
func TestAccFile_movingToAnotherHostReplaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := testhost.Start(t, testhost.Options{PrivateDir: dir})
	b := testhost.Start(t, testhost.Options{PrivateDir: dir, AuthorizedKeys: []string{a.ClientKey.Public()}})
	target := filepath.Join(dir, "lb.cfg")
	onB := fileVars(b, target, "private_key", a.ClientKey.PEM, "known_hosts", a.KnownHosts()+b.KnownHosts())
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: fileFixture, ConfigVariables: fileVars(a, target), Check: fileIs(a.HostPath(target), "frontend kube\n")},
			{
				ConfigDirectory: fileFixture, ConfigVariables: onB,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeTestCheckFunc(fileIs(b.HostPath(target), "frontend kube\n"), func(*terraform.State) error {
					if _, err := os.Stat(a.HostPath(target)); !os.IsNotExist(err) {
						return fmt.Errorf("the file is still on the old host (%v)", err)
					}
					return nil
				}),
			},
		},
	}))
}

// TestAccFile_debugLogShowsEngineSteps: TF_LOG=debug shows every step on
// the host, with host and path, and no secret.
func TestAccFile_debugLogShowsEngineSteps(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	logFile := filepath.Join(t.TempDir(), "provider.log")
	t.Setenv("TF_LOG", "DEBUG")
	t.Setenv("TF_ACC_LOG_PATH", logFile)
	target := filepath.Join(t.TempDir(), "lb.cfg")
	keyLine := strings.Split(strings.TrimSpace(s.ClientKey.PEM), "\n")[1]
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: fileFixture,
			ConfigVariables: fileVars(s, target, "content", "secret-free\n", "validate_command", "true", "reload_command", "true"),
		}},
	}))
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	log := string(raw)
	for _, step := range []string{"dialing", "connected; host key verified", "uploading and validating",
		"validated; committing: rename into place and reload", "in place and reloaded", "reading digests", "removing"} {
		if !regexp.MustCompile(regexp.QuoteMeta(step) + `.*` + regexp.QuoteMeta(s.Address())).MatchString(log) {
			t.Errorf("the debug log has no %q step for %s", step, s.Address())
		}
	}
	if !strings.Contains(log, `"path":"`+target+`"`) && !strings.Contains(log, "path="+target) {
		t.Errorf("the debug log never names the path %s", target)
	}
	if strings.Contains(log, keyLine) {
		t.Error("the debug log holds the private key")
	}
}

func TestFile_planTimeChecks(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"malformed_private_key":         `(?s)ssh\.private_key: ssh\.private_key is not a valid private key`,
		"certificate_not_a_certificate": `(?s)ssh\.certificate: ssh\.certificate is not an SSH user certificate`,
		"malformed_host_key":            `(?s)ssh\.host_key: not a public key`,
		"relative_path":                 `(?s)Attribute path must be an absolute path to a file`,
		"dot_dot_path":                  `(?s)Attribute path must be an absolute path to a file`,
		"owner_that_cannot_be":          `(?s)Attribute owner must be a user or group name`,
		"content_and_content_wo":        `(?s)Exactly one of these attributes must be configured: \[content,content_wo\]`,
		"neither_content":               `(?s)Exactly one of these attributes must be configured: \[content,content_wo\]`,
		"secret_twice":                  `(?s)Secret Given Twice.*ssh\.private_key and ssh\.private_key_wo`,
		"bad_timeout":                   `(?s)ssh\.timeout "soon" is not a positive duration`,
		"bad_refresh_timeout":           `(?s)ssh\.refresh_timeout "0s" is not a positive duration`,
	}
	// One variable serves the cases that need a private key that parses.
	expectPlanErrors(t, cases, config.Variables{"private_key": config.StringVariable(testhost.NewKey(t).PEM)})
}

// goneForGood is two hosts with a kha_file each (testdata/
// TestAccFile_hostGoneForGood): one stays, the other goes away for good.
type goneForGood struct {
	key                testhost.Key
	live, gone         *testhost.Server
	livePath, gonePath string
}

func newGoneForGood(t *testing.T) goneForGood {
	key := testhost.NewKey(t)
	dir := t.TempDir()
	return goneForGood{key: key,
		live:     testhost.Start(t, testhost.Options{AuthorizedKeys: []string{key.Public()}}),
		gone:     testhost.Start(t, testhost.Options{AuthorizedKeys: []string{key.Public()}}),
		livePath: filepath.Join(dir, "live.cfg"), gonePath: filepath.Join(dir, "gone.cfg")}
}

// values are the fixture's variables.
func (g goneForGood) values(liveContent string) map[string]any {
	return map[string]any{"private_key": g.key.PEM, "known_hosts": g.live.KnownHosts() + g.gone.KnownHosts(),
		"live_port": g.live.Port, "gone_port": g.gone.Port, "live_path": g.livePath, "gone_path": g.gonePath,
		"live_content": liveContent}
}

func (g goneForGood) vars(liveContent string) config.Variables {
	v := config.Variables{}
	for name, value := range g.values(liveContent) {
		switch value := value.(type) {
		case string:
			v[name] = config.StringVariable(value)
		case int:
			v[name] = config.IntegerVariable(value)
		}
	}
	return v
}

// untouched checks that the gone host's file is as it was, and whether
// the live host's file is there.
func (g goneForGood) untouched(liveContent string) resource.TestCheckFunc {
	if liveContent != "" {
		return resource.ComposeTestCheckFunc(fileIs(g.gonePath, "gone\n"), fileIs(g.livePath, liveContent))
	}
	return resource.ComposeTestCheckFunc(fileIs(g.gonePath, "gone\n"), func(*terraform.State) error {
		if _, err := os.Stat(g.livePath); !os.IsNotExist(err) {
			return fmt.Errorf("%s still exists after destroy (%v)", g.livePath, err)
		}
		return nil
	})
}

// goneError is the error of a plan or destroy that needs the gone host:
// a connect error after ssh.timeout that names the way out.
func (g goneForGood) goneError() *regexp.Regexp {
	return regexp.MustCompile(`(?s)SSH Connection Failed.*` + regexp.QuoteMeta(g.gone.Address()) +
		`.*gave up after.*connection refused.*gone\s+for\s+good.*removed\s+block.*destroy\s+=\s+false.*terraform\s+state\s+rm`)
}

// TestAccFile_hostGoneForGood: when a host is gone for good, a plan that
// destroys its resource fails to connect, with an error that names the
// way out; a removed block with destroy = false takes the resource out
// of the state without touching any host, and the resource on the live
// host stays managed and is destroyed as usual.
func TestAccFile_hostGoneForGood(t *testing.T) {
	t.Parallel()
	g := newGoneForGood(t)
	fixture := func(name string) config.TestStepConfigFunc {
		return config.StaticDirectory(filepath.Join("testdata", "TestAccFile_hostGoneForGood", name))
	}
	const liveAddr, goneAddr = "kha_file.live", "kha_file.gone"
	notInState := func(s *terraform.State) error {
		if _, ok := s.RootModule().Resources[goneAddr]; ok {
			return fmt.Errorf("%s is still in the state", goneAddr)
		}
		return nil
	}
	// Terraform does not read a resource that it forgets; OpenTofu does,
	// and so needs apply -refresh=false, as the guide says.
	var cli *resource.AdditionalCLIOptions
	if isOpenTofu(t) {
		cli = &resource.AdditionalCLIOptions{Plan: resource.PlanOptions{NoRefresh: true}}
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_7_0)},
		AdditionalCLIOptions:     cli,
		CheckDestroy:             g.untouched(""),
		Steps: []resource.TestStep{
			{ConfigDirectory: fixture("both"), ConfigVariables: g.vars("live\n"), Check: g.untouched("live\n")},
			{
				// The host is gone and its resource left the configuration:
				// the plan fails in seconds (ssh.timeout), naming the way out.
				PreConfig:       g.gone.Stop,
				ConfigDirectory: fixture("live_only"), ConfigVariables: g.vars("live\n"),
				ExpectError: g.goneError(),
			},
			{
				// The way out: forgotten, not destroyed; no host is touched.
				ConfigDirectory: fixture("removed"), ConfigVariables: g.vars("live\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectForget(goneAddr), plancheck.ExpectResourceAction(liveAddr, plancheck.ResourceActionNoop),
				}},
				Check: resource.ComposeTestCheckFunc(notInState, g.untouched("live\n")),
			},
			{
				// The live host's resource is still managed.
				ConfigDirectory: fixture("removed"), ConfigVariables: g.vars("live, changed\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(liveAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(notInState, g.untouched("live, changed\n")),
			},
		},
	}))
}

// TestAccFile_hostGoneForGoodCLI: terraform destroy, as a user runs it,
// fails on a host that is gone for good and names the way out. Then each
// way out that needs no host lets the next destroy remove the live host's
// file and leave the gone host's alone: terraform state rm of its
// resource, or keep_on_destroy = true applied without a refresh (a change
// of keep_on_destroy alone contacts no host).
func TestAccFile_hostGoneForGoodCLI(t *testing.T) {
	t.Parallel()
	testhost.Require(t, os.Getenv("TF_ACC") != "", "TF_ACC is not set")
	tf := terraformPath(t)
	provider := buildProvider(t)
	for name, wayOut := range map[string][][]string{
		"state rm":        {{"state", "rm", "kha_file.gone"}, {"destroy", "-auto-approve"}},
		"keep_on_destroy": {{"keep"}, {"apply", "-auto-approve", "-refresh=false"}, {"destroy", "-auto-approve", "-refresh=false"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := newGoneForGood(t)
			dir := t.TempDir()
			values, err := json.Marshal(g.values("live\n"))
			if err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{"terraform.tfvars.json": values,
				"versions.tf": []byte("terraform {\n  required_providers {\n    kha = { source = \"kha/kha\" }\n  }\n}\n")}
			for _, name := range []string{"live.tf", "gone.tf"} {
				if files[name], err = os.ReadFile(filepath.Join("testdata", "TestAccFile_hostGoneForGood", "both", name)); err != nil {
					t.Fatal(err)
				}
			}
			for name, content := range files {
				if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			terraform := devTerraform(t, tf, dir, provider)
			run := func(args ...string) (string, error) {
				cmd := terraform(args...)
				if args[0] == "state" {
					cmd.Args = append([]string{tf}, args...) // state takes neither -input nor -no-color
				}
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			if out, err := run("apply", "-auto-approve"); err != nil {
				t.Fatalf("terraform apply: %v\n%s", err, out)
			}
			if err := g.untouched("live\n")(nil); err != nil {
				t.Fatal(err)
			}

			g.gone.Stop()
			out, err := run("destroy", "-auto-approve")
			if err == nil || !g.goneError().MatchString(out) {
				t.Fatalf("terraform destroy with a host gone: want the connect error and the way out, got %v\n%s", err, out)
			}
			if err := g.untouched("live\n")(nil); err != nil {
				t.Fatalf("a failed destroy changed a host: %v", err)
			}

			for _, args := range wayOut {
				if args[0] == "keep" {
					gone := filepath.Join(dir, "gone.tf")
					b, _ := os.ReadFile(gone)
					os.WriteFile(gone, bytes.Replace(b, []byte("content = \"gone\\n\""), []byte("content = \"gone\\n\"\n  keep_on_destroy = true"), 1), 0o600)
					continue
				}
				if out, err := run(args...); err != nil {
					t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			if err := g.untouched("")(nil); err != nil {
				t.Fatal(err)
			}
			if out, err := run("state", "list"); err != nil || strings.TrimSpace(out) != "" {
				t.Fatalf("the state after destroy: %v\n%s", err, out)
			}
		})
	}
}

// isOpenTofu says whether the acceptance tests run OpenTofu.
func isOpenTofu(t *testing.T) bool {
	out, err := exec.Command(terraformPath(t), "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", terraformPath(t), err)
	}
	return strings.Contains(string(out), "OpenTofu")
}

// expectForget wants the plan to forget addr: take it out of the state
// and leave what it made alone.
func expectForget(addr string) plancheck.PlanCheck { return forgetCheck(addr) }

type forgetCheck string

func (c forgetCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address == string(c) {
			if !rc.Change.Actions.Forget() {
				resp.Error = fmt.Errorf("%s: planned %v, want forget", c, rc.Change.Actions)
			}
			return
		}
	}
	resp.Error = fmt.Errorf("%s is not in the plan", c)
}
