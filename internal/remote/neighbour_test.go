package remote

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// The hostile neighbour: testhost.Neighbour, a local user of the host
// with no sudo, who can write in a directory where kha (connected as
// root) manages a file, tries to make kha run a command, write elsewhere
// or use a record kha did not write.

// neighbourHost is a host kha reaches as root, with the neighbour on it.
func neighbourHost(t *testing.T) *Client {
	t.Helper()
	testhost.RequireNeighbour(t)
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	return c
}

// refused says whether err is a script's exit with code (as the
// removal reports it) or says what that exit leaves (as an apply does).
func refused(err error, code exitCode) bool {
	return err != nil && (errors.Is(err, code) || strings.Contains(err.Error(), exitCodes[code].left))
}

// forgedHandover is the record a neighbour writes to make root run pwn
// and overwrite victim.
func forgedHandover(t *testing.T, target, victim, pwn string) string {
	t.Helper()
	raw, err := json.Marshal(HandoverRecord{Path: victim, At: target, Claim: "lb", InterimSHA256: SHA256(mustRead(t, victim)),
		Final: "owned\n", ValidateCommand: "touch " + pwn + " #%s", ReloadCommand: "touch " + pwn})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestNeighbourCannotForgeAHandoverRecord: a record that the neighbour
// writes, where kha kept it before (".<name>.kha.handover") or in a
// record directory of its own making, is never used: kha runs none of
// its commands, writes none of its content, reports it with its owner,
// and plans go on (a junk record does not fail them).
func TestNeighbourCannotForgeAHandoverRecord(t *testing.T) {
	c := neighbourHost(t)
	ctx := context.Background()
	dir := testhost.StickyDir(t)
	victim := filepath.Join(sharedDir(t), "shadow")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pwn := filepath.Join(t.TempDir(), "pwned")
	untouched := func(t *testing.T) {
		t.Helper()
		if _, err := os.Stat(pwn); err == nil {
			t.Fatal("kha ran a command from the neighbour's record")
		}
		if got := string(mustRead(t, victim)); got != "root's\n" {
			t.Fatalf("kha wrote the neighbour's content over %s: %q", victim, got)
		}
	}

	t.Run("next to a file kha manages", func(t *testing.T) {
		target := filepath.Join(dir, "haproxy.cfg")
		if _, err := c.Put(ctx, File{Path: target, Content: []byte("bind :9443\n"), Claim: &Claim{ID: "lb", Capture: true}}); err != nil {
			t.Fatal(err)
		}
		testhost.AsNeighbour(t, "printf '%s' "+ShellQuote(forgedHandover(t, target, victim, pwn))+" >"+ShellQuote(filepath.Join(dir, ".haproxy.cfg.kha.handover")))
		// kha's own record directory is root's: the neighbour cannot put one there.
		if err := exec.Command("runuser", "-u", testhost.Neighbour, "--", "touch", HandoverRecordPath(target)).Run(); err == nil {
			t.Fatal("the neighbour wrote into kha's record directory")
		}
		h := Handover{Path: target}
		if o := observe(t, c, h); h.Drift(o) != "" || o.Notice.Detail != "" {
			t.Fatalf("a forged record next to the file counts: %+v", o)
		}
		if out, err := c.Put(ctx, h); err != nil || !out.Unchanged {
			t.Fatalf("ending no handover: %+v, %v", out, err)
		}
		untouched(t)
	})
	t.Run("in a record directory the neighbour made", func(t *testing.T) {
		target := filepath.Join(dir, "nginx.conf")
		rec := filepath.Join(dir, ".nginx.conf.kha")
		testhost.AsNeighbour(t, "mkdir -m 0700 "+ShellQuote(rec)+" && printf '%s' "+ShellQuote(forgedHandover(t, target, victim, pwn))+
			" >"+ShellQuote(HandoverRecordPath(target)))
		h := Handover{Path: target}
		o := observe(t, c, h)
		if h.Drift(o) != "" || !strings.Contains(o.Notice.Detail, testhost.Neighbour) || !strings.Contains(o.Notice.Detail, "not used") || o.Notice.Summary != "Not kha's, Not Used" {
			t.Fatalf("want the record reported with its owner and not used, got %+v", o)
		}
		if out, err := c.Put(ctx, h); err != nil || !out.Unchanged {
			t.Fatalf("ending no handover: %+v, %v", out, err)
		}
		untouched(t)
	})
	t.Run("junk does not fail a plan", func(t *testing.T) {
		target := filepath.Join(dir, "keepalived.conf")
		testhost.AsNeighbour(t, "echo junk >"+ShellQuote(filepath.Join(dir, ".keepalived.conf.kha.handover")))
		h := Handover{Path: target}
		if o := observe(t, c, h); h.Drift(o) != "" {
			t.Fatalf("junk next to the file counts: %+v", o)
		}
	})
}

// TestNeighbourCannotSwapTheRecordDirectory: a record directory that is
// a link the neighbour planted (to a directory whose files root runs, as
// /etc/cron.hourly's) is refused, however it got there: before the
// first apply, or while the apply runs (here from the validate command,
// which runs after the script looked for the record and before it makes
// one: the window an inotify racer uses).
func TestNeighbourCannotSwapTheRecordDirectory(t *testing.T) {
	c := neighbourHost(t)
	ctx := context.Background()
	dir := testhost.StickyDir(t)
	cron := sharedDir(t)
	plant := func(target string) string {
		return "runuser -u " + testhost.Neighbour + " -- ln -s " + ShellQuote(cron) + " " +
			ShellQuote(filepath.Join(dir, "."+filepath.Base(target)+".kha"))
	}
	for _, tc := range []struct {
		name     string
		validate func(target string) string
	}{
		{"planted before the apply", nil},
		{"planted while it runs", func(target string) string { return plant(target) + " #%s" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			f := File{Path: target, Content: []byte("x\n"), Claim: &Claim{ID: "lb", Capture: true}}
			if tc.validate == nil {
				if out, err := exec.Command("sh", "-c", plant(target)).CombinedOutput(); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
			} else {
				f.ValidateCommand = tc.validate(target)
			}
			_, err := c.Put(ctx, f)
			if err == nil || !strings.Contains(err.Error(), testhost.Neighbour) {
				t.Fatalf("want the link refused, naming its owner, got %v", err)
			}
			if left := entries(t, cron); len(left) != 0 {
				t.Fatalf("kha wrote through the neighbour's link: %v", left)
			}
			if _, err := os.Stat(target); err == nil {
				t.Fatal("the file was put in place without its record")
			}
		})
	}
}

// TestScriptsUseRecordsFromInside: after a script checked a record
// directory it works in it by relative names (into_record), never
// through "$rec/..." paths a swapped directory would redirect; and every
// rename onto a target is mv -T, which never moves into a directory that
// a link names.
func TestScriptsUseRecordsFromInside(t *testing.T) {
	for _, s := range scripts {
		for i, line := range strings.Split(s.body, "\n") {
			code := strings.TrimSpace(line)
			if strings.HasPrefix(code, "echo ") {
				continue // a message may name the path
			}
			if strings.Contains(code, `"$rec/`) {
				t.Errorf("line %d uses a path inside the record directory: %s", i+1, code)
			}
			for _, mv := range strings.Split(code, "mv ")[1:] {
				if !strings.HasPrefix(mv, "-fT ") && !strings.HasPrefix(mv, "-T ") {
					t.Errorf("line %d renames without -T: mv %s", i+1, mv)
				}
			}
		}
	}
}

// TestNeighbourLinksAreNeverFollowed: a target that is a link to a
// directory is refused before anything is saved or written: at apply (a
// link the neighbour planted where kha is to create the file) and at
// destroy (a target replaced by a link after kha wrote it), where the
// saved original would otherwise move into the linked directory.
func TestNeighbourLinksAreNeverFollowed(t *testing.T) {
	c := neighbourHost(t)
	ctx := context.Background()
	elsewhere := sharedDir(t)

	t.Run("apply", func(t *testing.T) {
		dir := testhost.StickyDir(t)
		target := filepath.Join(dir, "lb.cfg")
		testhost.AsNeighbour(t, "ln -s "+ShellQuote(elsewhere)+" "+ShellQuote(target))
		_, err := c.Put(ctx, File{Path: target, Content: []byte("x\n"), Claim: &Claim{ID: "lb", Capture: true}})
		var step *StepError
		if !errors.As(err, &step) || !refused(err, exitNotFile) || !strings.Contains(err.Error(), "symbolic link") {
			t.Fatalf("want the link refused, got %v", err)
		}
		if left := entries(t, elsewhere); len(left) != 0 {
			t.Fatalf("kha wrote through the link: %v", left)
		}
	})
	t.Run("destroy", func(t *testing.T) {
		dir := testhost.HostDir(t, 0o755, "root", "root")
		target := filepath.Join(dir, "lb.cfg")
		if err := os.WriteFile(target, []byte("before kha\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		owner := &Claim{ID: "lb", Capture: true}
		if _, err := c.Put(ctx, File{Path: target, Content: []byte("kha's\n"), Claim: owner}); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(target); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, target); err != nil {
			t.Fatal(err)
		}
		err := c.Remove(ctx, File{Path: target, Claim: &Claim{ID: "lb", OnRemove: OnRemoveRestore, Saved: true}}, "")
		if !refused(err, exitNotFile) {
			t.Fatalf("want the link refused, got %v", err)
		}
		if left := entries(t, elsewhere); len(left) != 0 {
			t.Fatalf("destroy moved the saved file through the link: %v", left)
		}
		if got := string(mustRead(t, filepath.Join(dir, ".lb.cfg.kha", "original"))); got != "before kha\n" {
			t.Fatalf("the saved original: %q", got)
		}
	})
}

// TestNeighbourWritableDirectories: a directory another local user can
// write without the sticky bit (theirs, the world's, their group's) is
// refused at apply, naming the directory, why and the fix; with the
// sticky bit kha works there, and names with kha's that the neighbour
// made first are refused with their owner, never used.
func TestNeighbourWritableDirectories(t *testing.T) {
	c := neighbourHost(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		mode         os.FileMode
		owner, group string
		why          string
	}{
		{"the neighbour's", 0o755, testhost.Neighbour, "root", "owned by " + testhost.Neighbour},
		{"the neighbour's, sticky", os.ModeSticky | 0o755, testhost.Neighbour, "root", "owned by " + testhost.Neighbour},
		{"everyone's", 0o777, "root", "root", "every local user can write to it (mode 777)"},
		{"the neighbour's group's", 0o775, "root", testhost.Neighbour, "group " + testhost.Neighbour + " can write to it (mode 775)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testhost.HostDir(t, tc.mode, tc.owner, tc.group)
			target := filepath.Join(dir, "lb.cfg")
			_, err := c.Put(ctx, File{Path: target, Content: []byte("x\n"), Claim: &Claim{ID: "lb", Capture: true}})
			if !refused(err, exitUnsafeDir) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), tc.why) ||
				!strings.Contains(err.Error(), "chmod") {
				t.Fatalf("want %s refused (%s), got %v", dir, tc.why, err)
			}
			if left := entries(t, dir); len(left) != 0 {
				t.Fatalf("a refused directory has %v", left)
			}
			hosts := filepath.Join(dir, "hosts")
			if _, err := c.Put(ctx, Block{Path: hosts, Marker: "api", Content: []byte("10.0.0.1 api")}); !refused(err, exitUnsafeDir) {
				t.Fatalf("a block in %s: want it refused, got %v", dir, err)
			}
		})
	}

	t.Run("sticky", func(t *testing.T) {
		dir := testhost.StickyDir(t)
		target := filepath.Join(dir, "lb.cfg")
		if _, err := c.Put(ctx, File{Path: target, Content: []byte("x\n"), Claim: &Claim{ID: "lb", Capture: true}}); err != nil {
			t.Fatalf("a sticky directory: %v", err)
		}
		taken := filepath.Join(dir, "taken.cfg")
		testhost.AsNeighbour(t, "mkdir "+ShellQuote(filepath.Join(dir, ".taken.cfg.kha"))+" && mkdir "+ShellQuote(filepath.Join(dir, ".kha-lock")))
		_, err := c.Put(ctx, File{Path: taken, Content: []byte("x\n"), Claim: &Claim{ID: "lb", Capture: true}})
		if err == nil || !strings.Contains(err.Error(), testhost.Neighbour+"'s") || !strings.Contains(err.Error(), "remove it") {
			t.Fatalf("want the neighbour's record directory refused with its owner, got %v", err)
		}
		if _, err := os.Stat(taken); err == nil {
			t.Fatal("the file was put in place beside the neighbour's record")
		}
		_, err = c.Put(ctx, Block{Path: filepath.Join(dir, "hosts"), Marker: "api", Content: []byte("10.0.0.1 api")})
		if err == nil || !strings.Contains(err.Error(), testhost.Neighbour+"'s") {
			t.Fatalf("want the neighbour's lock directory refused with its owner, got %v", err)
		}
	})
}
