package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// setfacl gives an ACL entry to a directory of the test host.
func setfacl(t *testing.T, entry, dir string) {
	t.Helper()
	if out, err := exec.Command("setfacl", "-m", entry, dir).CombinedOutput(); err != nil {
		t.Fatalf("setfacl -m %s %s: %v\n%s", entry, dir, err, out)
	}
}

// asRoot runs a shell command as root, the test's own user, and fails the
// test when it fails.
func asRoot(t *testing.T, command string) {
	t.Helper()
	if out, err := exec.Command("sh", "-c", command).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
}

// TestNeighbourAncestors: kha judges every directory from / to the file,
// as OpenSSH's StrictModes judges a key's: an ACL entry that lets the
// neighbour write, a root-owned directory inside the neighbour's, and a
// link into or out of the neighbour's tree are each refused before
// anything is written, naming the directory, why and the fix; the
// refresh warns of the same; a link between root's directories and an
// ACL that grants no write are followed as before.
func TestNeighbourAncestors(t *testing.T) {
	c := neighbourHost(t)
	ctx := context.Background()
	put := func(target string) error {
		_, err := c.Put(ctx, File{Path: target, Content: []byte("x\n"), CreateParentDirs: true, Claim: &Claim{ID: "lb", Capture: true}})
		return err
	}
	for _, tc := range []struct {
		name string
		// layout makes the directories and returns the target and the
		// directory the refusal must name.
		layout func(t *testing.T) (target, unsafe string)
		why    string
	}{
		{"an ACL entry for the neighbour", func(t *testing.T) (string, string) {
			dir := testhost.HostDir(t, 0o755, "root", "root")
			setfacl(t, "u:"+testhost.Neighbour+":rwx", dir)
			return filepath.Join(dir, "lb.cfg"), dir
		}, "its ACL lets " + testhost.Neighbour + " write to it"},
		{"an ACL entry for the neighbour's group", func(t *testing.T) (string, string) {
			dir := testhost.HostDir(t, 0o755, "root", "root")
			setfacl(t, "g:"+testhost.Neighbour+":rwx", dir)
			return filepath.Join(dir, "lb.cfg"), dir
		}, "group " + testhost.Neighbour + " can write to it (mode 775, through its ACL)"},
		{"an ACL entry on an ancestor", func(t *testing.T) (string, string) {
			dir := testhost.HostDir(t, 0o755, "root", "root")
			setfacl(t, "u:"+testhost.Neighbour+":rwx", filepath.Dir(dir))
			return filepath.Join(dir, "lb.cfg"), filepath.Dir(dir)
		}, "its ACL lets " + testhost.Neighbour + " write to it"},
		{"a root-owned directory in the neighbour's", func(t *testing.T) (string, string) {
			theirs := testhost.HostDir(t, 0o755, testhost.Neighbour, testhost.Neighbour)
			asRoot(t, "mkdir -m 0755 "+ShellQuote(filepath.Join(theirs, "conf")))
			return filepath.Join(theirs, "conf", "lb.cfg"), theirs
		}, "owned by " + testhost.Neighbour},
		{"directories to make in the neighbour's", func(t *testing.T) (string, string) {
			theirs := testhost.HostDir(t, 0o755, testhost.Neighbour, testhost.Neighbour)
			return filepath.Join(theirs, "a", "b", "lb.cfg"), theirs
		}, "owned by " + testhost.Neighbour},
		{"the neighbour's link to root's directory", func(t *testing.T) (string, string) {
			theirs := testhost.HostDir(t, 0o755, testhost.Neighbour, testhost.Neighbour)
			roots := testhost.HostDir(t, 0o755, "root", "root")
			testhost.AsNeighbour(t, "ln -s "+ShellQuote(roots)+" "+ShellQuote(filepath.Join(theirs, "conf")))
			return filepath.Join(theirs, "conf", "lb.cfg"), theirs
		}, "owned by " + testhost.Neighbour},
		{"root's link into the neighbour's directory", func(t *testing.T) (string, string) {
			roots := testhost.HostDir(t, 0o755, "root", "root")
			theirs := testhost.HostDir(t, 0o755, testhost.Neighbour, testhost.Neighbour)
			if err := os.Symlink(theirs, filepath.Join(roots, "conf")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(roots, "conf", "lb.cfg"), theirs
		}, "owned by " + testhost.Neighbour},
		{"the neighbour's link in a sticky directory", func(t *testing.T) (string, string) {
			sticky := testhost.StickyDir(t)
			roots := testhost.HostDir(t, 0o755, "root", "root")
			link := filepath.Join(sticky, "conf")
			testhost.AsNeighbour(t, "ln -s "+ShellQuote(roots)+" "+ShellQuote(link))
			return filepath.Join(link, "lb.cfg"), link
		}, "it is " + testhost.Neighbour + "'s, in a directory others can write to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, unsafe := tc.layout(t)
			err := put(target)
			if !refused(err, exitUnsafeDir) || !strings.Contains(err.Error(), unsafe+" is not safe: ") || !strings.Contains(err.Error(), tc.why) ||
				!strings.Contains(err.Error(), "chmod go-w") {
				t.Fatalf("want %s refused (%s), got %v", unsafe, tc.why, err)
			}
			if _, err := os.Lstat(target); err == nil {
				t.Fatalf("%s was written", target)
			}
			if _, err := c.Put(ctx, Block{Path: target, Marker: "api", Content: []byte("10.0.0.1 api")}); !refused(err, exitUnsafeDir) {
				t.Fatalf("a block: want it refused, got %v", err)
			}
			for _, it := range []Item{File{Path: target, Claim: &Claim{ID: "lb"}}, Block{Path: target, Marker: "api"}} {
				o := observe(t, c, it)
				if o.Notice.Summary != "Directory Not Safe" || !strings.Contains(o.Notice.Detail, unsafe+": ") || !strings.Contains(o.Notice.Detail, tc.why) {
					t.Fatalf("the refresh of a %T: want a warning naming %s, got %+v", it, unsafe, o.Notice)
				}
			}
			err = c.Remove(ctx, File{Path: target, Claim: &Claim{ID: "lb", Recorded: true}}, "touch /nonexistent/x")
			if !refused(err, exitUnsafeDir) {
				t.Fatalf("a removal: want it refused, got %v", err)
			}
		})
	}

	for _, tc := range []struct {
		name   string
		layout func(t *testing.T) (target, real string)
	}{
		{"a link between root's directories", func(t *testing.T) (string, string) {
			roots, other := testhost.HostDir(t, 0o755, "root", "root"), testhost.HostDir(t, 0o755, "root", "root")
			if err := os.Symlink("../../"+filepath.Base(filepath.Dir(other))+"/conf", filepath.Join(roots, "etc")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(roots, "etc", "lb.cfg"), filepath.Join(other, "lb.cfg")
		}},
		{"an ACL that lets the neighbour only read", func(t *testing.T) (string, string) {
			dir := testhost.HostDir(t, 0o755, "root", "root")
			setfacl(t, "u:"+testhost.Neighbour+":rx", dir)
			return filepath.Join(dir, "lb.cfg"), filepath.Join(dir, "lb.cfg")
		}},
		{"root's directory with a root-writable group", func(t *testing.T) (string, string) {
			dir := testhost.HostDir(t, 0o775, "root", "root")
			return filepath.Join(dir, "lb.cfg"), filepath.Join(dir, "lb.cfg")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, real := tc.layout(t)
			if err := put(target); err != nil {
				t.Fatal(err)
			}
			if got := string(mustRead(t, real)); got != "x\n" {
				t.Fatalf("%s has %q", real, got)
			}
			if o := observe(t, c, File{Path: target, Claim: &Claim{ID: "lb"}}); o.Notice.Detail != "" {
				t.Fatalf("the refresh warns: %+v", o.Notice)
			}
		})
	}
}

// TestDestroyLeavesWhatItCannotVouchFor: a file whose record kha's state
// says there is, but which the host has not (its directory swapped for a
// link to another of root's, the record removed) or has as another
// user's, is left on destroy with ErrUnvouched, and the refresh warns of
// a record that is not kha's.
func TestDestroyLeavesWhatItCannotVouchFor(t *testing.T) {
	c := neighbourHost(t)
	ctx := context.Background()
	owner := func() *Claim { return &Claim{ID: "lb", OnRemove: OnRemoveRestore, Recorded: true} }
	for _, tc := range []struct {
		name string
		// swap changes the host after the apply; it returns the file that
		// must be left as it is, with its content.
		swap func(t *testing.T, dir string) (left, content string)
	}{
		{"the directory swapped for a link to root's", func(t *testing.T, dir string) (string, string) {
			victim := testhost.HostDir(t, 0o755, "root", "root")
			if err := os.WriteFile(filepath.Join(victim, "x.conf"), []byte("root's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			asRoot(t, "mv "+ShellQuote(filepath.Join(dir, "d2"))+" "+ShellQuote(filepath.Join(dir, "old"))+" && ln -s "+
				ShellQuote(victim)+" "+ShellQuote(filepath.Join(dir, "d2")))
			return filepath.Join(victim, "x.conf"), "root's\n"
		}},
		{"the record removed", func(t *testing.T, dir string) (string, string) {
			asRoot(t, "rm -rf "+ShellQuote(filepath.Join(dir, "d2", ".x.conf.kha")))
			return filepath.Join(dir, "d2", "x.conf"), "kha's\n"
		}},
		{"the record the neighbour's", func(t *testing.T, dir string) (string, string) {
			rec := filepath.Join(dir, "d2", ".x.conf.kha")
			asRoot(t, "rm -rf "+ShellQuote(rec)+" && mkdir "+ShellQuote(rec)+" && chown "+testhost.Neighbour+" "+ShellQuote(rec))
			return filepath.Join(dir, "d2", "x.conf"), "kha's\n"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testhost.HostDir(t, 0o755, "root", "root")
			target := filepath.Join(dir, "d2", "x.conf")
			if _, err := c.Put(ctx, File{Path: target, Content: []byte("kha's\n"), CreateParentDirs: true,
				Claim: &Claim{ID: "lb", Capture: true}}); err != nil {
				t.Fatal(err)
			}
			left, content := tc.swap(t, dir)
			o := observe(t, c, File{Path: target, Claim: owner()})
			if _, err := os.Lstat(filepath.Join(filepath.Dir(left), ".x.conf.kha")); err == nil &&
				(o.Notice.Summary != "Record Not kha's" || !strings.Contains(o.Notice.Detail, target)) {
				t.Fatalf("the refresh: want a warning that the record is not kha's, got %+v", o.Notice)
			}
			err := c.Remove(ctx, File{Path: target, Claim: owner()}, "")
			if !errors.Is(err, ErrUnvouched) || !strings.Contains(err.Error(), target+" is left as it is") {
				t.Fatalf("want the file left with ErrUnvouched, got %v", err)
			}
			if got := string(mustRead(t, left)); got != content {
				t.Fatalf("%s has %q, want %q", left, got, content)
			}
		})
	}
	t.Run("a record kha's state does not know of is not asked for", func(t *testing.T) {
		dir := testhost.HostDir(t, 0o755, "root", "root")
		target := filepath.Join(dir, "imported.conf")
		if err := os.WriteFile(target, []byte("imported\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := c.Remove(ctx, File{Path: target, Claim: &Claim{ID: "lb"}}, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(target); err == nil {
			t.Fatal("an imported file kha's state keeps no record of was left")
		}
	})
}

// TestCommandsReadWhatKhaWrote: the validate command and the throwaway
// preflight instance read the new file through a descriptor, so a private
// directory swapped while they run (here by the command itself, at the
// moment a racer would) for one holding another file changes nothing
// they read, and the file put in place is kha's.
func TestCommandsReadWhatKhaWrote(t *testing.T) {
	c := neighbourHost(t)
	ctx := context.Background()
	dir := testhost.HostDir(t, 0o755, "root", "root")
	target := filepath.Join(dir, "lb.cfg")
	read := filepath.Join(t.TempDir(), "read")
	// swap renames the private directory away and puts one with the
	// racer's file in its place, then reads the new file as a command would.
	swap := "for w in " + ShellQuote(dir) + "/.lb.cfg.kha-*; do mv \"$w\" \"$w.gone\" && mkdir \"$w\" && echo racer >\"$w/new\" && " +
		"echo racer >\"$w/candidate\"; done; cat %s >" + ShellQuote(read)
	if _, err := c.Put(ctx, File{Path: target, Content: []byte("kha's\n"), ValidateCommand: swap}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{read, target} {
		if got := string(mustRead(t, p)); got != "kha's\n" {
			t.Fatalf("validate: %s has %q, want kha's file", p, got)
		}
	}
	pf := &Preflight{Command: swap + " && exec sleep 3132", Timeout: 5 * time.Second, Candidate: func(string) ([]byte, Verifier, error) {
		return []byte("kha's candidate\n"), verifyFunc(func(ctx context.Context, c *Client) error {
			for ctx.Err() == nil {
				if got, err := os.ReadFile(read); err == nil && string(got) == "kha's candidate\n" {
					return nil
				} else if err == nil && len(got) > 0 {
					return fmt.Errorf("the instance read %q", got)
				}
				time.Sleep(20 * time.Millisecond)
			}
			return ctx.Err()
		}), nil
	}}
	if err := os.Remove(read); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, File{Path: target, Content: []byte("kha's v2\n"), Preflight: pf}); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, target)); got != "kha's v2\n" {
		t.Fatalf("%s has %q", target, got)
	}
}

// TestCommandLinesTellOthersNothing: what only kha and the owner need
// (the private directory's suffix, the owner's claim, who applied it)
// travels on stdin, not in a command line every local user can read.
func TestCommandLinesTellOthersNothing(t *testing.T) {
	c := neighbourHost(t)
	dir := testhost.HostDir(t, 0o755, "root", "root")
	seen := t.TempDir()
	// The validate command runs while the script holds the private
	// directory: it notes its name and every process's command line.
	look := "ls -d " + ShellQuote(dir) + "/.lb.cfg.kha-* >" + ShellQuote(seen+"/work") + " && ps -eo args >" + ShellQuote(seen+"/ps") + " #%s"
	claim := &Claim{ID: "c1a1m5ecre7", Note: "kha_file applied from /home/operator/estate on laptop-7", Capture: true}
	if _, err := c.Put(context.Background(), File{Path: filepath.Join(dir, "lb.cfg"), Content: []byte("x\n"), ValidateCommand: look, Claim: claim}); err != nil {
		t.Fatal(err)
	}
	work := strings.TrimSpace(string(mustRead(t, seen+"/work")))
	suffix := work[strings.LastIndex(work, "-")+1:]
	ps := string(mustRead(t, seen+"/ps"))
	if !strings.Contains(ps, "sh -c") || !strings.Contains(ps, "lb.cfg") {
		t.Fatalf("the script is not among the processes:\n%s", ps)
	}
	for _, secret := range []string{suffix, claim.ID, "/home/operator/estate", "laptop-7"} {
		if len(secret) < 6 || strings.Contains(ps, secret) {
			t.Errorf("a command line shows %q:\n%s", secret, ps)
		}
	}
}

// TestConnectionUserAndItsGroup: the connection user counts as root does,
// under sudo too: a directory of its own passes, and so does one its own
// group can write while it is the group's only member; root's group
// counts only when kha connects as root, and the connection user's group
// not then.
func TestConnectionUserAndItsGroup(t *testing.T) {
	testhost.RequireNeighbour(t)
	c, rootCfg := unprivilegedClient(t)
	sudoCfg := rootCfg
	sudoCfg.User, sudoCfg.Sudo = testhost.UnprivilegedUser, true
	sudo, _ := client(t, sudoCfg)
	root, _ := client(t, rootCfg)
	user := testhost.UnprivilegedUser
	for _, tc := range []struct {
		name         string
		client       *Client
		mode         os.FileMode
		owner, group string
		why          string // "" passes
	}{
		{"the user's own directory, without sudo", c, 0o755, user, user, ""},
		{"the user's own directory, under sudo", sudo, 0o755, user, user, ""},
		{"a directory the user's own group writes, under sudo", sudo, 0o775, "root", user, ""},
		{"a directory root's group writes, under sudo", sudo, 0o775, "root", "root", "the members of group root can write to it (mode 775)"},
		{"a directory the user's group writes, as root", root, 0o775, "root", user, "the members of group " + user + " can write to it (mode 775)"},
		{"the neighbour's directory, under sudo", sudo, 0o755, testhost.Neighbour, testhost.Neighbour, "it is owned by " + testhost.Neighbour},
		{"a directory the neighbour's group writes, under sudo", sudo, 0o775, user, testhost.Neighbour, "the members of group " + testhost.Neighbour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testhost.HostDir(t, tc.mode, tc.owner, tc.group)
			_, err := tc.client.Put(context.Background(), File{Path: filepath.Join(dir, "lb.cfg"), Content: []byte("x\n")})
			if tc.why == "" && err != nil {
				t.Fatal(err)
			}
			if tc.why != "" && (!refused(err, exitUnsafeDir) || !strings.Contains(err.Error(), tc.why)) {
				t.Fatalf("want %s refused (%s), got %v", dir, tc.why, err)
			}
		})
	}
}

// TestSafePathWithoutGetfacl: on a host without getfacl, a group-writable
// directory with an ACL is refused, naming it (ls -l shows its +), while
// one whose ACL grants no write passes: its group bits, the ACL's mask,
// say no entry can write.
func TestSafePathWithoutGetfacl(t *testing.T) {
	testhost.RequireNeighbour(t)
	bin := t.TempDir()
	for _, tool := range []string{"stat", "readlink", "ls", "printf", "id"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	judge := func(dir string) (string, error) {
		cmd := exec.Command("sh", "-c", "set -u\n"+pathCheck+`safe_path "$1" || { echo "$unsafe_at: $unsafe_why"; exit 1; }`, "sh", dir)
		cmd.Env = []string{"PATH=" + bin}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	writable, readable := testhost.HostDir(t, 0o755, "root", "root"), testhost.HostDir(t, 0o755, "root", "root")
	setfacl(t, "u:"+testhost.Neighbour+":rwx", writable)
	setfacl(t, "u:"+testhost.Neighbour+":rx", readable)
	if out, err := judge(writable); err == nil || !strings.Contains(out, writable+": it has an ACL") || !strings.Contains(out, "install acl") {
		t.Fatalf("want %s refused for its ACL, got %q (%v)", writable, out, err)
	}
	if out, err := judge(readable); err != nil {
		t.Fatalf("an ACL that grants no write: %q (%v)", out, err)
	}
}
