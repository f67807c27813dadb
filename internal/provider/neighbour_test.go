package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/kha/terraform-provider-kha/internal/remote"
	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// The hostile neighbour through the real CLI: testhost.Neighbour, a local
// user of the host with no sudo who can write where kha (connected as
// root) manages files, tries each attack of the security round. The
// engine's own tests (internal/remote/neighbour_test.go) try the same
// closer up.

var neighbourFixture = config.StaticDirectory("testdata/neighbour")

// neighbourVars are testdata/neighbour's variables for a host; more pairs
// set the paths.
func neighbourVars(s *testhost.Server, more ...string) config.Variables {
	v := config.Variables{
		"host":        config.StringVariable(s.Host),
		"port":        config.IntegerVariable(s.Port),
		"private_key": config.StringVariable(s.ClientKey.PEM),
		"known_hosts": config.StringVariable(s.KnownHosts()),
	}
	for i := 0; i+1 < len(more); i += 2 {
		v[more[i]] = config.StringVariable(more[i+1])
	}
	return v
}

func neighbourHost(t *testing.T) *testhost.Server {
	t.Helper()
	testhost.RequireNeighbour(t)
	return testhost.Start(t, testhost.Options{})
}

// inOrder matches an error that has parts in order, however Terraform
// wrapped its lines (wrapped).
func inOrder(parts ...string) *regexp.Regexp {
	for i, p := range parts {
		parts[i] = wrapped(p)
	}
	return regexp.MustCompile(`(?s)` + strings.Join(parts, ".*"))
}

// nothingIn checks that no one wrote into dir.
func nothingIn(dir string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if left, _ := os.ReadDir(dir); len(left) > 0 {
			return fmt.Errorf("kha wrote into %s: %s", dir, left[0].Name())
		}
		return nil
	}
}

// TestAccNeighbour_forgedHandoverRecords: handover records the neighbour
// writes (where kha kept them before, ".<name>.kha.handover", and in a
// record directory of the neighbour's making) never make kha run a command
// or write a file, and junk in their place fails no plan.
func TestAccNeighbour_forgedHandoverRecords(t *testing.T) {
	t.Parallel()
	s := neighbourHost(t)
	dir := testhost.StickyDir(t)
	victim := filepath.Join(testhost.HostDir(t, 0o755, "root", "root"), "shadow")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(t.TempDir(), "pwned")
	lb, other := filepath.Join(dir, "haproxy.cfg"), filepath.Join(dir, "nginx.conf")
	vars := func(content string) config.Variables {
		return neighbourVars(s, "file_path", lb, "handover_of", other, "content", content)
	}
	forge := func(target, at string) string {
		raw, _ := json.Marshal(map[string]any{"path": victim, "at": target, "claim": "x", "interim_sha256": remote.SHA256(mustReadFile(t, victim)),
			"final": "owned\n", "validate_command": "touch " + pwned + " #%s", "reload_command": "touch " + pwned, "previous": []string{"\x1b[2K\rApply complete!"}})
		return "printf '%s' " + remote.ShellQuote(string(raw)) + " >" + remote.ShellQuote(at)
	}
	harmless := func(*terraform.State) error {
		if _, err := os.Stat(pwned); err == nil {
			return fmt.Errorf("kha ran a command from the neighbour's record")
		}
		if got := string(mustReadFile(t, victim)); got != "root's\n" {
			return fmt.Errorf("kha wrote the neighbour's content over %s: %q", victim, got)
		}
		return nil
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: neighbourFixture, ConfigVariables: vars("frontend kube\n")},
			{
				PreConfig: func() {
					testhost.AsNeighbour(t, forge(lb, filepath.Join(dir, ".haproxy.cfg.kha.handover")))
					testhost.AsNeighbour(t, "mkdir -m 0700 "+remote.ShellQuote(filepath.Join(dir, ".nginx.conf.kha"))+" && "+
						forge(other, remote.HandoverRecordPath(other)))
				},
				// The target changes, so both kha_handover apply.
				ConfigDirectory: neighbourFixture, ConfigVariables: vars("frontend kube v2\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kha_handover.lb[0]", plancheck.ResourceActionUpdate),
				}},
				Check: harmless,
			},
			{
				PreConfig: func() {
					testhost.AsNeighbour(t, "echo junk >"+remote.ShellQuote(filepath.Join(dir, ".haproxy.cfg.kha.handover")))
				},
				ConfigDirectory: neighbourFixture, ConfigVariables: vars("frontend kube v2\n"),
				PlanOnly: true,
			},
		},
	}))
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("kha ran a command from the neighbour's record")
	}
}

// TestAccNeighbour_linksAndNames: what the neighbour plants where kha is
// about to write is refused with its owner, and nothing is written
// through it: a record directory that is a link to a directory whose
// files root runs (as /etc/cron.hourly's), a target that is a link to a
// directory, and a lock directory of the neighbour's.
func TestAccNeighbour_linksAndNames(t *testing.T) {
	t.Parallel()
	s := neighbourHost(t)
	dir := testhost.StickyDir(t)
	cron := testhost.HostDir(t, 0o755, "root", "root")
	link := func(to, at string) func() {
		return func() { testhost.AsNeighbour(t, "ln -s "+remote.ShellQuote(to)+" "+remote.ShellQuote(at)) }
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				PreConfig:       link(cron, filepath.Join(dir, ".lb.cfg.kha")),
				ConfigDirectory: neighbourFixture, ConfigVariables: neighbourVars(s, "file_path", filepath.Join(dir, "lb.cfg")),
				ExpectError: inOrder("is not a directory that root owns", "it is "+testhost.Neighbour+"'s"),
			},
			{
				PreConfig:       link(cron, filepath.Join(dir, "nginx.conf")),
				ConfigDirectory: neighbourFixture, ConfigVariables: neighbourVars(s, "file_path", filepath.Join(dir, "nginx.conf")),
				ExpectError: inOrder("refusing to manage", "nginx.conf: it is a symbolic link"),
			},
			{
				PreConfig:       func() { testhost.AsNeighbour(t, "mkdir "+remote.ShellQuote(filepath.Join(dir, ".kha-lock"))) },
				ConfigDirectory: neighbourFixture, ConfigVariables: neighbourVars(s, "hosts_path", filepath.Join(dir, "hosts")),
				ExpectError: inOrder(".kha-lock, the lock of kha's changes", "it is "+testhost.Neighbour+"'s"),
			},
		},
	}))
	if err := nothingIn(cron)(nil); err != nil {
		t.Fatal(err)
	}
}

// TestAccNeighbour_destroyThroughALink: a target replaced by a link to a
// directory after the refresh read it (here by a command that destroy
// runs just before the target's removal) fails destroy, saying why, and
// the file found before kha stays in kha's record rather than moving
// into the linked directory; once the link is gone, destroy puts the
// file back.
func TestAccNeighbour_destroyThroughALink(t *testing.T) {
	t.Parallel()
	s := neighbourHost(t)
	dir := testhost.HostDir(t, 0o755, "root", "root")
	elsewhere := testhost.HostDir(t, 0o755, "root", "root")
	target := filepath.Join(dir, "lb.cfg")
	if err := os.WriteFile(target, []byte("before kha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	swap := "rm " + remote.ShellQuote(target) + " && ln -s " + remote.ShellQuote(elsewhere) + " " + remote.ShellQuote(target)
	vars := neighbourVars(s, "file_path", target, "racer_command", swap)
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: neighbourFixture, ConfigVariables: vars},
			{
				Destroy: true, ConfigDirectory: neighbourFixture, ConfigVariables: vars,
				ExpectError: inOrder("refusing to manage", "lb.cfg: it is a symbolic link"),
			},
			{
				PreConfig: func() {
					if err := nothingIn(elsewhere)(nil); err != nil {
						t.Fatal(err)
					}
					if err := os.Remove(target); err != nil {
						t.Fatal(err)
					}
				},
				Destroy: true, ConfigDirectory: neighbourFixture, ConfigVariables: vars,
				Check: resource.ComposeTestCheckFunc(nothingIn(elsewhere), func(*terraform.State) error {
					if got, err := os.ReadFile(target); err != nil || string(got) != "before kha\n" {
						return fmt.Errorf("destroy did not put back the file found before kha: %q, %v", got, err)
					}
					return nil
				}),
			},
		},
	}))
}

// TestAccNeighbour_writableDirectories: a directory another local user
// can write without the sticky bit is refused at apply, naming it, why
// and the fix, and so is a path through one by a link, whoever made it;
// with the sticky bit kha works there.
func TestAccNeighbour_writableDirectories(t *testing.T) {
	t.Parallel()
	s := neighbourHost(t)
	open := testhost.HostDir(t, 0o777, "root", "root")
	theirs := testhost.HostDir(t, 0o755, testhost.Neighbour, testhost.Neighbour)
	sticky := testhost.StickyDir(t)
	roots := testhost.HostDir(t, 0o755, "root", "root")
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				ConfigDirectory: neighbourFixture, ConfigVariables: neighbourVars(s, "file_path", filepath.Join(open, "lb.cfg")),
				ExpectError: inOrder("another local user could change where a path through", "every local user can write to it (mode 777)", "chmod"),
			},
			{
				ConfigDirectory: neighbourFixture, ConfigVariables: neighbourVars(s, "hosts_path", filepath.Join(theirs, "hosts")),
				ExpectError: inOrder("it is owned by " + testhost.Neighbour + ", who can rename anything in it"),
			},
			{
				// A link the neighbour made to root's directory, and one of
				// root's into the neighbour's: both paths go through theirs.
				PreConfig: func() {
					testhost.AsNeighbour(t, "ln -s "+remote.ShellQuote(roots)+" "+remote.ShellQuote(filepath.Join(theirs, "conf")))
					if err := os.Symlink(theirs, filepath.Join(roots, "theirs")); err != nil {
						t.Fatal(err)
					}
				},
				ConfigDirectory: neighbourFixture, ConfigVariables: neighbourVars(s, "file_path", filepath.Join(theirs, "conf", "lb.cfg")),
				ExpectError: inOrder(theirs+" is not safe", "it is owned by "+testhost.Neighbour),
			},
			{
				ConfigDirectory: neighbourFixture, ConfigVariables: neighbourVars(s, "hosts_path", filepath.Join(roots, "theirs", "hosts")),
				ExpectError: inOrder(theirs+" is not safe", "it is owned by "+testhost.Neighbour),
			},
			{ConfigDirectory: neighbourFixture, ConfigVariables: neighbourVars(s, "file_path", filepath.Join(sticky, "lb.cfg"))},
		},
	}))
	for dir, link := range map[string]string{roots: "theirs", theirs: "conf"} {
		if left, _ := os.ReadDir(dir); len(left) != 1 || left[0].Name() != link {
			t.Fatalf("kha wrote into %s through a link: %v", dir, left)
		}
	}
	if err := nothingIn(open)(nil); err != nil {
		t.Fatal(err)
	}
}

// TestAccNeighbour_pathAncestors: every directory from / to the file
// counts, ACLs and links included. An ACL entry that lets the neighbour
// write to an ancestor fails the apply before anything is written; once
// it is gone the apply goes on. An ancestor handed to the neighbour, who
// swaps the file's directory for a link to root's, fails destroy, and
// root's file there stays; a record removed by hand leaves destroy the
// file, which it can no longer vouch for, and a warning.
func TestAccNeighbour_pathAncestors(t *testing.T) {
	t.Parallel()
	s := neighbourHost(t)
	conf := testhost.HostDir(t, 0o755, "root", "root")
	parent := filepath.Dir(conf)
	target := filepath.Join(conf, "d2", "lb.cfg")
	victim := filepath.Join(testhost.HostDir(t, 0o755, "root", "root"), "lb.cfg")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	vars := func(content string) config.Variables {
		return neighbourVars(s, "file_path", target, "content", content)
	}
	run := func(command string) func() {
		return func() {
			if out, err := exec.Command("sh", "-c", command).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", command, err, out)
			}
		}
	}
	has := func(path, want string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			if got, err := os.ReadFile(path); err != nil || string(got) != want {
				return fmt.Errorf("%s has %q (%v), want %q", path, got, err, want)
			}
			return nil
		}
	}
	q := remote.ShellQuote
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: neighbourFixture, ConfigVariables: vars("v1\n"), Check: has(target, "v1\n")},
			{
				PreConfig:       run("setfacl -m u:" + testhost.Neighbour + ":rwx " + q(parent)),
				ConfigDirectory: neighbourFixture, ConfigVariables: vars("v2\n"),
				ExpectError: inOrder(parent+" is not safe", "its ACL lets "+testhost.Neighbour+" write to it", "setfacl"),
			},
			{
				PreConfig:       run("setfacl -b " + q(parent)),
				ConfigDirectory: neighbourFixture, ConfigVariables: vars("v2\n"), Check: has(target, "v2\n"),
			},
			{
				PreConfig: func() {
					run("chown " + testhost.Neighbour + " " + q(conf))()
					testhost.AsNeighbour(t, "mv "+q(filepath.Dir(target))+" "+q(filepath.Join(conf, "old"))+" && ln -s "+
						q(filepath.Dir(victim))+" "+q(filepath.Dir(target)))
				},
				Destroy: true, ConfigDirectory: neighbourFixture, ConfigVariables: vars("v2\n"),
				ExpectError: inOrder(conf+" is not safe", "it is owned by "+testhost.Neighbour),
			},
			{
				PreConfig: func() {
					if got := string(mustReadFile(t, victim)); got != "root's\n" {
						t.Fatalf("destroy through the link changed root's file: %q", got)
					}
					run("rm " + q(filepath.Dir(target)) + " && mv " + q(filepath.Join(conf, "old")) + " " + q(filepath.Dir(target)) +
						" && chown root " + q(conf) + " && rm -r " + q(filepath.Join(filepath.Dir(target), ".lb.cfg.kha")))()
				},
				Destroy: true, ConfigDirectory: neighbourFixture, ConfigVariables: vars("v2\n"),
				Check: has(target, "v2\n"),
			},
		},
	}))
	if got := string(mustReadFile(t, target)); got != "v2\n" {
		t.Fatalf("destroy without kha's record removed the file: %q", got)
	}
}

// TestAccNeighbour_validateReadsWhatKhaWrote: the validate command reads
// the new file through a descriptor, so a private directory swapped while
// it runs (here by the command itself, at the moment a racer would) for
// one holding another file hands it nothing else, and the file put in
// place is the configuration's.
func TestAccNeighbour_validateReadsWhatKhaWrote(t *testing.T) {
	t.Parallel()
	s := neighbourHost(t)
	dir := testhost.HostDir(t, 0o755, "root", "root")
	target, read := filepath.Join(dir, "lb.cfg"), filepath.Join(t.TempDir(), "read")
	swap := "for w in " + remote.ShellQuote(dir) + "/.lb.cfg.kha-*; do mv \"$w\" \"$w.gone\" && mkdir \"$w\" && " +
		"echo racer >\"$w/new\"; done; cat %s >" + remote.ShellQuote(read)
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: neighbourFixture,
			ConfigVariables: neighbourVars(s, "file_path", target, "content", "kha's\n", "validate_command", swap),
			Check: func(*terraform.State) error {
				for _, p := range []string{read, target} {
					if got := string(mustReadFile(t, p)); got != "kha's\n" {
						return fmt.Errorf("%s has %q, want the configuration's file", p, got)
					}
				}
				return nil
			},
		}},
	}))
}
