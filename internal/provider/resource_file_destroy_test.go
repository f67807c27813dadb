package provider

import (
	"fmt"
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

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// found is a file as a host had it before kha: what destroy must give back.
type found struct {
	path, content string
	mode          os.FileMode
	uid           uint32
}

// place puts the file on the host, with a mode and an owner kha never gives.
func (f found) place(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(f.path, []byte(f.content), f.mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.path, f.mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(f.path, int(f.uid), int(f.uid)); err != nil {
		t.Fatal(err)
	}
}

// isBack checks that the host has the file as it was, and nothing of
// kha's record next to it.
func (f found) isBack() error {
	b, err := os.ReadFile(f.path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(f.path)
	if err != nil {
		return err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if string(b) != f.content || fi.Mode().Perm() != f.mode || st == nil || st.Uid != f.uid {
		return fmt.Errorf("%s is %q %04o uid %v, want the file found before kha: %q %04o uid %d", f.path, b, fi.Mode().Perm(), st.Uid, f.content, f.mode, f.uid)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(f.path), ".*")); len(left) > 0 {
		return fmt.Errorf("left next to it: %v", left)
	}
	return nil
}

func destroyActionIs(p, want string) statecheck.StateCheck {
	return statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("destroy_actions"), knownvalue.MapExact(map[string]knownvalue.Check{p: knownvalue.StringExact(want)}))
}

// TestAccFile_destroyPutsBackWhatWasThere: the distribution's file that a
// kha_file replaces comes back on destroy byte for byte, with its mode and
// owner; the plan says so before (destroy_actions); the saved copy lives
// on the host, never in state; a file in a directory kha made goes, and
// the directory with it.
func TestAccFile_destroyPutsBackWhatWasThere(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	dir := t.TempDir()
	stock := found{path: filepath.Join(dir, "haproxy.cfg"), content: "# the distribution's haproxy.cfg: SECRET-LOOKING-LINE\n", mode: 0o640, uid: 65534}
	stock.place(t)
	created := filepath.Join(dir, "made-by-kha", "lb.cfg")
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, stock.path),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(fileAddr, tfjsonpath.New("on_destroy"), knownvalue.StringExact("restore")),
					plancheck.ExpectUnknownValue(fileAddr, tfjsonpath.New("destroy_actions")), // the host is looked at by the apply
				}},
				ConfigStateChecks: []statecheck.StateCheck{destroyActionIs(stock.path, "restore")},
				Check: resource.ComposeTestCheckFunc(fileIs(stock.path, "frontend kube\n"), func(st *terraform.State) error {
					if strings.Contains(fmt.Sprint(st), "SECRET-LOOKING-LINE") {
						return fmt.Errorf("the file found before kha is in state")
					}
					return nil
				}),
			},
			{
				ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, stock.path, "content", "frontend kube v2\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(fileAddr, tfjsonpath.New("destroy_actions").AtMapKey(stock.path), knownvalue.StringExact("restore")),
				}},
				Check: fileIs(stock.path, "frontend kube v2\n"),
			},
			{
				Destroy: true, ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, stock.path, "content", "frontend kube v2\n"),
				Check: func(*terraform.State) error { return stock.isBack() },
			},
			{
				ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, created),
				ConfigStateChecks: []statecheck.StateCheck{destroyActionIs(created, "delete")},
			},
			{
				Destroy: true, ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, created),
				Check: func(*terraform.State) error {
					if _, err := os.Stat(filepath.Dir(created)); !os.IsNotExist(err) {
						return fmt.Errorf("the directory kha made is left: %v", err)
					}
					return nil
				},
			},
		},
	}))
	if err := stock.isBack(); err != nil {
		t.Fatal(err)
	}
}

// TestAccFile_onDestroyKeepAndDelete: keep leaves kha's file and never
// contacts the host (its sshd is stopped); delete deletes even a file
// found before kha.
func TestAccFile_onDestroyKeepAndDelete(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stock := found{path: filepath.Join(dir, "nginx.conf"), content: "stock\n", mode: 0o644}
	stock.place(t)
	s := testhost.Start(t, testhost.Options{})
	keep := fileVars(s, stock.path, "on_destroy", "keep")
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, stock.path)},
			{
				ConfigDirectory: fileFixture, ConfigVariables: keep,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(fileAddr, tfjsonpath.New("destroy_actions").AtMapKey(stock.path), knownvalue.StringExact("keep")),
				}},
			},
			{
				PreConfig: s.Stop, Destroy: true, ConfigDirectory: fileFixture, ConfigVariables: keep,
				Check: fileIs(stock.path, "frontend kube\n"),
			},
		},
	}))

	other := filepath.Join(t.TempDir(), "nginx.conf")
	found{path: other, content: "stock\n", mode: 0o644}.place(t)
	s2 := testhost.Start(t, testhost.Options{})
	del := fileVars(s2, other, "on_destroy", "delete")
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: fileFixture, ConfigVariables: del, ConfigStateChecks: []statecheck.StateCheck{destroyActionIs(other, "delete")}},
		},
		CheckDestroy: func(*terraform.State) error {
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(other), "*")); len(left) > 0 {
				return fmt.Errorf("on_destroy = \"delete\" left %v", left)
			}
			return nil
		},
	}))
}

// TestAccFile_savedCopyRemovedByHand: destroy with the saved copy gone
// fails, names the way out and removes nothing; on_destroy = "delete" then
// lets the file go.
func TestAccFile_savedCopyRemovedByHand(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	dir := t.TempDir()
	stock := found{path: filepath.Join(dir, "haproxy.cfg"), content: "stock\n", mode: 0o644}
	stock.place(t)
	del := fileVars(s, stock.path, "on_destroy", "delete")
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, stock.path)},
			{
				PreConfig: func() {
					if err := os.Remove(filepath.Join(dir, ".haproxy.cfg.kha", "original")); err != nil {
						t.Fatal(err)
					}
				},
				Destroy: true, ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, stock.path),
				ExpectError: regexp.MustCompile(`(?s)is gone.*nothing was removed.*on_destroy = "delete"`),
			},
			{ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, stock.path), Check: fileIs(stock.path, "frontend kube\n")},
			{ConfigDirectory: fileFixture, ConfigVariables: del},
		},
		CheckDestroy: func(*terraform.State) error {
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
				return fmt.Errorf("left %v", left)
			}
			return nil
		},
	}))
}

// TestAccFile_oneOwnerPerFile: a file that a resource of another state
// owns is refused before anything changes, naming the owner and adopt;
// adopt takes it over. The second state is applied while the first holds
// the file, as another workspace would.
func TestAccFile_oneOwnerPerFile(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	target := filepath.Join(t.TempDir(), "haproxy.cfg")
	secondState := func(*terraform.State) error {
		resource.Test(t, stepProviders(resource.TestCase{
			ProtoV6ProviderFactories: testAccProviders,
			Steps: []resource.TestStep{
				{
					ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, target, "content", "second state's\n"),
					ExpectError: regexp.MustCompile(`(?s)adopt\s+=\s+true.*managed\s+by\s+another\s+kha\s+resource:\s+kha_file\s+applied\s+from`),
				},
				{
					ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, target, "content", "second state's\n", "adopt", true),
					PreConfig: func() {
						if got := string(mustReadFile(t, target)); got != "first state's\n" {
							t.Fatalf("the refused apply changed the file: %q", got)
						}
					},
					Check: fileIs(target, "second state's\n"),
				},
			},
		}))
		return nil
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			// The second state took the file and deleted it on its destroy (it
			// created it, as far as its record says): the first sees it gone.
			{ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, target, "content", "first state's\n"), Check: secondState,
				ExpectNonEmptyPlan: true},
		},
	}))
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAccFile_importIsClean: a file whose content and mode the
// configuration has already imports into an empty plan; a private file
// (never read by import) plans content, and the apply writes nothing and
// runs no reload command.
func TestAccFile_importIsClean(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	dir := t.TempDir()
	public := found{path: filepath.Join(dir, "ca.crt"), content: "frontend kube\n", mode: 0o644}
	public.place(t)
	private := found{path: filepath.Join(dir, "token"), content: "frontend kube\n", mode: 0o600}
	private.place(t)
	reloads := filepath.Join(dir, "reloads")
	inode := func(p string) uint64 {
		fi, err := os.Stat(p)
		if err != nil {
			return 0
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		return st.Ino
	}
	privateInode := inode(private.path)
	withReload := fileVars(s, private.path, "mode", "0600", "reload_command", "echo reloaded >> "+reloads)
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, public.path), ResourceName: fileAddr,
				ImportState: true, ImportStateId: fmt.Sprintf("%s:%s", s.Address(), public.path), ImportStatePersist: true,
			},
			{
				ConfigDirectory: fileFixture, ConfigVariables: fileVars(s, public.path),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	}))
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				ConfigDirectory: fileFixture, ConfigVariables: withReload, ResourceName: fileAddr,
				ImportState: true, ImportStateId: fmt.Sprintf("%s:%s", s.Address(), private.path), ImportStatePersist: true,
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if c := states[0].Attributes["content"]; c != "" {
						return fmt.Errorf("import read a private file: %q", c)
					}
					return nil
				},
			},
			{
				ConfigDirectory: fileFixture, ConfigVariables: withReload,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					if _, err := os.Stat(reloads); !os.IsNotExist(err) {
						return fmt.Errorf("the reload command ran for a file the host had already")
					}
					if inode(private.path) != privateInode {
						return fmt.Errorf("the file the host had already was rewritten")
					}
					return nil
				},
			},
			{
				ConfigDirectory: fileFixture, ConfigVariables: withReload,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	}))
	// Imported files stay on destroy, as they were, and kha's records of
	// them go.
	for _, f := range []found{public, private} {
		if err := f.isBack(); err != nil {
			t.Fatal(err)
		}
	}
}
