package provider

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

const fileAddr = "kha_file.test"

// fileConfig is a kha_file whose credentials come from the provider's
// default_ssh, as refresh, import and destroy need.
func fileConfig(s *testhost.Server, path, content, extra string) string {
	return fmt.Sprintf(`
provider "kha" {
  default_ssh = {
    private_key = %q
    known_hosts = %q
  }
}

resource "kha_file" "test" {
  path    = %q
  content = %q
  %s
  ssh = {
    host = %q
    port = %d
  }
}
`, s.ClientKey.PEM, fmt.Sprintf("[%s]:%d %s", s.Host, s.Port, s.HostKey.Public()), path, content, extra, s.Host, s.Port)
}

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
	s := testhost.Start(t, testhost.Options{})
	dir := t.TempDir()
	target := filepath.Join(dir, "conf.d", "lb.cfg")
	config := fileConfig(s, target, "frontend kube\n", `mode = "0640"`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				return fmt.Errorf("%s still exists after destroy (%v)", target, err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(fileAddr, tfjsonpath.New("sha256"), knownvalue.StringExact(contentDigest("frontend kube\n"))),
					plancheck.ExpectKnownValue(fileAddr, tfjsonpath.New("id"), knownvalue.StringExact(fmt.Sprintf("%s:%s", s.Address(), target))),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("remote_sha256"), knownvalue.StringExact(contentDigest("frontend kube\n"))),
				},
				Check: resource.ComposeTestCheckFunc(fileIs(target, "frontend kube\n"), func(*terraform.State) error {
					if st, err := os.Stat(target); err != nil || st.Mode().Perm() != 0o640 {
						return fmt.Errorf("mode of %s: %v %v", target, st, err)
					}
					return nil
				}),
			},
			{
				// Edited outside Terraform: the plan shows the drift, apply puts it right.
				PreConfig: mustWrite(t, target, "edited by hand\n"),
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(fileAddr, tfjsonpath.New("remote_sha256"), knownvalue.StringExact(contentDigest("frontend kube\n"))),
				}},
				Check: fileIs(target, "frontend kube\n"),
			},
			{
				// Deleted outside Terraform: planned for re-creation.
				PreConfig: func() { os.Remove(target) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionUpdate),
				}},
				Check: fileIs(target, "frontend kube\n"),
			},
			{
				// A no-change plan stays empty.
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				ResourceName:                         fileAddr,
				ImportState:                          true,
				ImportStateId:                        fmt.Sprintf("%s:%s", s.Address(), target),
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "id",
				ImportStateVerifyIgnore:              []string{"ssh"},
			},
			{
				// Changing the content updates in place and keeps the path.
				Config: fileConfig(s, target, "frontend kube v2\n", `mode = "0640"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionUpdate),
				}},
				Check: fileIs(target, "frontend kube v2\n"),
			},
		},
	})
}

func TestAccFile_failedValidationKeepsPreviousFile(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	target := filepath.Join(t.TempDir(), "haproxy.cfg")
	v1 := fileConfig(s, target, "MUST stay\n", `validate_command = "grep -q MUST %s"`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: v1, Check: fileIs(target, "MUST stay\n")},
			{
				Config:      fileConfig(s, target, "broken\n", `validate_command = "grep -q MUST %s"`),
				ExpectError: regexp.MustCompile(`(?s)Applying File Failed.*validate\s+of\s+\S+haproxy\.cfg\s+failed.*previous file is\s+untouched`),
			},
			{
				// The host still has v1 byte for byte, and Terraform agrees.
				PreConfig:        func() { fileIs(target, "MUST stay\n")(nil) },
				Config:           v1,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            fileIs(target, "MUST stay\n"),
			},
		},
	})
}

func TestAccFile_connectionErrors(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	target := filepath.Join(t.TempDir(), "x")
	resourceWith := func(conn string) string {
		return fmt.Sprintf(`
resource "kha_file" "test" {
  path       = %q
  content    = "x"
  ssh = { %s }
}`, target, conn)
	}
	key := fmt.Sprintf("private_key = %q", s.ClientKey.PEM)
	cases := map[string]struct{ config, err string }{
		"host key mismatch": {resourceWith(fmt.Sprintf(`host = %q, port = %d, %s, host_key = %q`, s.Host, s.Port, key, testhost.NewKey(t).Public())),
			`(?s)host key verification failed.*presented ssh-ed25519`},
		"no host key": {resourceWith(fmt.Sprintf(`host = %q, port = %d, %s`, s.Host, s.Port, key)),
			`(?s)Invalid Connection.*set ssh\.host_key`},
		"wrong client key": {resourceWith(fmt.Sprintf(`host = %q, port = %d, private_key = %q, host_key = %q`, s.Host, s.Port, testhost.NewKey(t).PEM, s.HostKey.Public())),
			`(?s)SSH Connection Failed.*unable to authenticate as\s+root@.*tried:\s+publickey`},
		"unreachable host": {resourceWith(fmt.Sprintf(`host = "127.0.0.1", port = %d, %s, host_key = %q, timeout = "1s"`, closedPort(t), key, s.HostKey.Public())),
			`(?s)SSH Connection Failed.*gave up after`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps:                    []resource.TestStep{{Config: tc.config, ExpectError: regexp.MustCompile(tc.err)}},
			})
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Fatalf("a failed connection must not write anything: %v", err)
			}
		})
	}
}

// TestAccFile_writeOnlySecretsStayOutOfState applies with private_key_wo
// and then searches every file of the working directory for the key.
func TestAccFile_writeOnlySecretsStayOutOfState(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	work := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", work)
	target := filepath.Join(t.TempDir(), "secret-free.cfg")
	keyLine := strings.Split(strings.TrimSpace(s.ClientKey.PEM), "\n")[1]
	config := func(content string) string {
		return fmt.Sprintf(`
resource "kha_file" "test" {
  path            = %q
  content         = %q
  keep_on_destroy = true
  ssh = {
    host           = %q
    port           = %d
    host_key       = %q
    private_key_wo = %q
  }
}`, target, content, s.Host, s.Port, s.HostKey.Public(), s.ClientKey.PEM)
	}
	noKeyMaterial := func(st *terraform.State) error {
		for _, m := range st.Modules {
			for _, r := range m.Resources {
				for k, v := range r.Primary.Attributes {
					if strings.Contains(v, "PRIVATE KEY") || strings.Contains(v, keyLine) {
						return fmt.Errorf("state attribute %s holds key material", k)
					}
				}
			}
		}
		return filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.Contains(p, string(filepath.Separator)+".terraform"+string(filepath.Separator)) {
				return err
			}
			if b, err := os.ReadFile(p); err == nil && strings.HasSuffix(p, ".tfstate") && bytes.Contains(b, []byte(keyLine)) {
				return fmt.Errorf("%s holds key material", p)
			}
			return nil
		})
	}
	resource.Test(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: config("one\n"), Check: resource.ComposeTestCheckFunc(fileIs(target, "one\n"), noKeyMaterial)},
			{
				// Refresh cannot use the write-only key; the plan still
				// finds the drift with the configuration's key.
				PreConfig: mustWrite(t, target, "drifted\n"),
				Config:    config("one\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(fileIs(target, "one\n"), noKeyMaterial),
			},
		},
	})
}

// TestAccFile_sudoThroughBastion writes a root-owned file into a root-only
// directory as an unprivileged user, through a jump host.
func TestAccFile_sudoThroughBastion(t *testing.T) {
	testhost.RequireUnprivilegedUser(t)
	target := testhost.Start(t, testhost.Options{ListenAddress: "127.0.0.2"})
	bastion := testhost.Start(t, testhost.Options{AuthorizedKeys: []string{target.ClientKey.Public()}, LogLevel: "DEBUG1"})
	path := filepath.Join(t.TempDir(), "root-only", "nginx.conf")
	config := fmt.Sprintf(`
provider "kha" {
  default_ssh = {
    user        = %q
    sudo        = true
    private_key = %q
  }
}

resource "kha_file" "test" {
  path    = %q
  content = "stream {}\n"
  owner   = "root"
  mode    = "0600"
  ssh = {
    host             = %q
    port             = %d
    host_key         = %q
    bastion_host     = %q
    bastion_port     = %d
    bastion_host_key = %q
  }
}`, testhost.UnprivilegedUser, target.ClientKey.PEM, path, target.Host, target.Port, target.HostKey.Public(),
		bastion.Host, bastion.Port, bastion.HostKey.Public())
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config: config,
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
	})
}

func TestAccFile_trustOnFirstUse(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	target := filepath.Join(t.TempDir(), "tofu")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
provider "kha" {
  default_ssh = { private_key = %q }
}
resource "kha_file" "test" {
  path       = %q
  content    = "x"
  ssh = { host = %q, port = %d, insecure_trust_on_first_use = true }
}`, s.ClientKey.PEM, target, s.Host, s.Port),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectUnknownValue(fileAddr, tfjsonpath.New("trusted_host_key")),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("trusted_host_key"), knownvalue.StringExact(s.HostKey.Public())),
			},
		}},
	})
}

func closedPort(t *testing.T) int {
	t.Helper()
	s := testhost.Start(t, testhost.Options{})
	s.Stop()
	return s.Port
}

func TestAccFile_secretAndWriteOnlyTwinConflict(t *testing.T) {
	resource.Test(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config: `
resource "kha_file" "test" {
  path    = "/tmp/x"
  content = "x"
  ssh     = { host = "127.0.0.1", private_key = "a", private_key_wo = "b" }
}`,
			ExpectError: regexp.MustCompile(`(?s)Invalid Attribute Combination.*ssh\.private_key_wo`),
		}},
	})
}
