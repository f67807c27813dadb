package remote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// recordOf is the record directory the engine keeps next to target.
func recordOf(target string) string {
	return filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+".kha")
}

// fileFacts is what must come back byte for byte: content, mode, owner.
type fileFacts struct {
	content  string
	mode     os.FileMode
	uid, gid uint32
}

func factsOf(t *testing.T, p string) fileFacts {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatal("no stat")
	}
	return fileFacts{string(mustRead(t, p)), fi.Mode(), st.Uid, st.Gid}
}

func TestClaimPutsBackTheFileThatWasThere(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "haproxy.cfg")
	// The distribution's file, with a mode and an owner kha never gives.
	os.WriteFile(target, []byte("# the distribution's haproxy.cfg\n"), 0o640)
	if err := os.Chown(target, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	before := factsOf(t, target)
	reloads := filepath.Join(t.TempDir(), "reloads")
	reload := "echo reloaded >> " + ShellQuote(reloads)

	claim := &Claim{ID: "one", Note: "kha_haproxy_config from /work", Capture: true}
	out, err := c.Put(ctx, File{Path: target, Content: []byte("v1\n"), ReloadCommand: reload, Claim: claim})
	if err != nil || !out.Saved || out.Unchanged {
		t.Fatalf("first put: %+v, %v", out, err)
	}
	if fi, err := os.Lstat(recordOf(target)); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Fatalf("record directory: %v, %v", fi, err)
	}
	// Later applies keep the saved file, whatever capture says.
	out, err = c.Put(ctx, File{Path: target, Content: []byte("v2\n"), ReloadCommand: reload, Claim: &Claim{ID: "one", Capture: true}})
	if err != nil || !out.Saved {
		t.Fatalf("second put: %+v, %v", out, err)
	}
	if got := factsOf(t, filepath.Join(recordOf(target), "original")); got != before {
		t.Fatalf("saved %+v, want %+v", got, before)
	}
	if err := c.Remove(ctx, File{Path: target, Claim: &Claim{ID: "one", OnRemove: OnRemoveRestore, Saved: true}}, reload); err != nil {
		t.Fatal(err)
	}
	if got := factsOf(t, target); got != before {
		t.Fatalf("after remove %+v, want %+v", got, before)
	}
	if _, err := os.Lstat(recordOf(target)); !os.IsNotExist(err) {
		t.Fatalf("the record is left: %v", err)
	}
	if got := string(mustRead(t, reloads)); got != "reloaded\nreloaded\nreloaded\n" {
		t.Fatalf("reload and destroy commands ran %q", got)
	}
}

func TestClaimOfAFileKhaCreatedDeletesItAndTheDirectoriesItMade(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	found := t.TempDir()
	os.WriteFile(filepath.Join(found, "kept"), []byte("x"), 0o644)
	target := filepath.Join(found, "kha", "lb", "haproxy.cfg")

	out, err := c.Put(ctx, File{Path: target, Content: []byte("v1\n"), CreateParentDirs: true, Claim: &Claim{ID: "one", Capture: true}})
	if err != nil || out.Saved {
		t.Fatalf("put: %+v, %v", out, err)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	if err := c.Remove(ctx, File{Path: target, Claim: &Claim{ID: "one", OnRemove: OnRemoveRestore}}, "echo stopped >> "+ShellQuote(ran)); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, found); len(got) != 1 || got[0] != "kept" {
		t.Fatalf("left in the directory kha found: %v", got)
	}
	if got := string(mustRead(t, ran)); got != "stopped\n" {
		t.Fatalf("the destroy command: %q", got)
	}

	// A directory kha made that holds something else now stays.
	if _, err := c.Put(ctx, File{Path: target, Content: []byte("v1\n"), CreateParentDirs: true, Claim: &Claim{ID: "two", Capture: true}}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(found, "kha", "someone-elses"), []byte("x"), 0o644)
	if err := c.Remove(ctx, File{Path: target, Claim: &Claim{ID: "two", OnRemove: OnRemoveRestore}}, ""); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, filepath.Join(found, "kha")); len(got) != 1 || got[0] != "someone-elses" {
		t.Fatalf("left in a directory kha made: %v", got)
	}
}

func TestClaimOfAnotherOwnerIsRefused(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "haproxy.cfg")
	reloads := filepath.Join(t.TempDir(), "reloads")
	reload := "echo reloaded >> " + ShellQuote(reloads)

	if _, err := c.Put(ctx, File{Path: target, Content: []byte("node-local\n"), Claim: &Claim{ID: "local", Note: "kha_haproxy_config from /team-a", Capture: true}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Put(ctx, File{Path: target, Content: []byte("external\n"), ReloadCommand: reload, Claim: &Claim{ID: "external", Capture: true}})
	if err == nil || !strings.Contains(err.Error(), "kha_haproxy_config from /team-a") || !strings.Contains(err.Error(), "adopt = true") {
		t.Fatalf("a second owner: %v", err)
	}
	if got := string(mustRead(t, target)); got != "node-local\n" {
		t.Fatalf("the refused put changed the file: %q", got)
	}
	if _, err := os.Stat(reloads); !os.IsNotExist(err) {
		t.Fatal("the refused put ran the reload command")
	}
	// Adopting takes the file over; the first owner's destroy then
	// leaves it to the new one.
	if _, err := c.Put(ctx, File{Path: target, Content: []byte("external\n"), Claim: &Claim{ID: "external", Adopt: true}}); err != nil {
		t.Fatal(err)
	}
	err = c.Remove(ctx, File{Path: target, Claim: &Claim{ID: "local", OnRemove: OnRemoveRestore}}, "")
	if !errors.Is(err, ErrClaimedElsewhere) {
		t.Fatalf("the first owner's remove: %v", err)
	}
	if got := string(mustRead(t, target)); got != "external\n" {
		t.Fatalf("the first owner's remove changed the file: %q", got)
	}
	if err := c.Remove(ctx, File{Path: target, Claim: &Claim{ID: "external", OnRemove: OnRemoveRestore}}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatal("kha created the file, yet its remove left it")
	}
}

func TestRemoveWhoseSavedCopyIsGoneRemovesNothing(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	for _, gone := range []string{"original", ""} { // the saved copy, or the whole record
		target := filepath.Join(t.TempDir(), "nginx.conf")
		os.WriteFile(target, []byte("stock\n"), 0o644)
		if _, err := c.Put(ctx, File{Path: target, Content: []byte("kha\n"), Claim: &Claim{ID: "one", Capture: true}}); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(filepath.Join(recordOf(target), gone))
		err := c.Remove(ctx, File{Path: target, Claim: &Claim{ID: "one", OnRemove: OnRemoveRestore, Saved: true}}, "")
		if err == nil || !strings.Contains(err.Error(), "is gone") || !strings.Contains(err.Error(), `on_destroy = "delete"`) {
			t.Fatalf("remove without the saved copy (%q gone): %v", gone, err)
		}
		if got := string(mustRead(t, target)); got != "kha\n" {
			t.Fatalf("the failed remove changed the file: %q", got)
		}
	}
}

func TestFailedFirstPutTakesItsRecordBack(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	dir := t.TempDir()
	target := filepath.Join(dir, "haproxy.cfg")
	os.WriteFile(target, []byte("stock\n"), 0o640)
	before := factsOf(t, target)
	if _, err := c.Put(ctx, File{Path: target, Content: []byte("kha\n"), ReloadCommand: "exit 1", Claim: &Claim{ID: "one", Capture: true}}); err == nil {
		t.Fatal("a failing reload succeeded")
	}
	if got := factsOf(t, target); got != before {
		t.Fatalf("after the rollback %+v, want %+v", got, before)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Fatalf("left behind: %v", got)
	}
}

// TestFailedFirstPutTakesItsDirectoriesBack: a first put that does not
// leave its file in place (the validate command refuses it, its program
// is not installed, the reload fails) removes the directories it made for
// it, and says which program is missing.
func TestFailedFirstPutTakesItsDirectoriesBack(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	for name, tc := range map[string]struct {
		f    File
		want string
		runs int // of the missing program: each shows the shell's line once
	}{
		"refused":            {File{ValidateCommand: "false"}, "the validate command rejected the new file", 0},
		"a missing program":  {File{ValidateCommand: "kha-no-such-program -c %s"}, "kha-no-such-program is not installed on the host", 1},
		"a failing reload":   {File{ReloadCommand: "exit 1"}, "there was no previous file", 0},
		"a missing reloader": {File{ReloadCommand: "kha-no-such-program reload"}, "kha-no-such-program is not installed on the host", 2},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			f := tc.f
			f.Path, f.Content, f.CreateParentDirs = filepath.Join(dir, "etc-kha", "lb", "lb.cfg"), []byte("x\n"), true
			f.Claim = &Claim{ID: "one", Capture: true}
			_, err := c.Put(ctx, f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
			if n := strings.Count(err.Error(), "kha-no-such-program: not found"); n != tc.runs {
				t.Errorf("the shell's line is in the error %d times, want %d (once per run):\n%v", n, tc.runs, err)
			}
			if got := entries(t, dir); len(got) != 0 {
				t.Fatalf("left behind: %v", got)
			}
		})
	}
}

func TestPutOfWhatTheHostHasWritesNothing(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "ca.crt")
	os.WriteFile(target, []byte("CA\n"), 0o644)
	inode := func() uint64 {
		fi, _ := os.Stat(target)
		st, _ := fi.Sys().(*syscall.Stat_t)
		return st.Ino
	}
	was := inode()
	reloads := filepath.Join(t.TempDir(), "reloads")
	f := File{Path: target, Content: []byte("CA\n"), Mode: 0o644, ValidateCommand: "exit 1", ReloadCommand: "echo reloaded >> " + ShellQuote(reloads)}
	out, err := c.Put(ctx, f)
	if err != nil || !out.Unchanged {
		t.Fatalf("put of what the host has: %+v, %v", out, err)
	}
	if inode() != was {
		t.Fatal("the file was rewritten")
	}
	if _, err := os.Stat(reloads); !os.IsNotExist(err) {
		t.Fatal("the reload command ran")
	}
	// Another mode is a change: validated (and refused here), not skipped.
	f.Mode = 0o600
	if out, err := c.Put(ctx, f); err == nil || out.Unchanged {
		t.Fatalf("a changed mode: %+v, %v", out, err)
	}
}

func TestBlockLeavesNoLockBehind(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644)
	b := Block{Path: hosts, Marker: "api", Content: []byte("10.0.0.100 api")}
	if _, err := c.Put(ctx, b); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Fatalf("after the put: %v", got)
	}
	if err := c.Remove(ctx, b, ""); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, dir); len(got) != 1 || string(mustRead(t, hosts)) != "127.0.0.1 localhost\n" {
		t.Fatalf("after the remove: %v, %q", got, mustRead(t, hosts))
	}
}
