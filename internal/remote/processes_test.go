package remote

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestPutProcesses counts the processes a put starts on the host, its
// session's shell included, in a PID namespace of the host's own: each
// one is a step the change needs, and the scripts keep their bookkeeping
// in shell builtins. A process more per host is a cost on every host of a
// fleet (the fleet bench's processes per host).
func TestPutProcesses(t *testing.T) {
	s := testhost.Start(t, testhost.Options{PIDNamespace: true})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	// newest is the PID of a probe session's shell, the namespace's newest.
	newest := func() int {
		out, _, err := c.Run(ctx, "echo $$", nil)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	target := filepath.Join(t.TempDir(), "lb.cfg")
	put := func(content, reload string) int {
		before := newest()
		if _, err := c.Put(ctx, File{Path: target, Content: []byte(content), Mode: 0o644, ReloadCommand: reload}); err != nil {
			t.Fatal(err)
		}
		return newest() - before - 1 // less the second probe's shell
	}
	for _, step := range []struct {
		what, content, reload string
		want                  int
		processes             string
	}{
		{"create", "a\n", "", 6, "sh, stat (the directory is safe), mkdir (private directory), head (upload), mv, rm (private directory)"},
		{"change without a reload", "b\n", "", 7, "the same and cmp (unchanged?); no backup, since nothing restores it"},
		{"change with a reload", "c\n", "true", 9, "the same, ln (backup) and the reload's subshell"},
		{"unchanged", "c\n", "true", 7, "sh, stat, mkdir, head, cmp, stat (mode and owner), rm; no reload"},
	} {
		if got := put(step.content, step.reload); got != step.want {
			t.Errorf("%s started %d processes, want %d: %s", step.what, got, step.want, step.processes)
		}
	}
	// A refresh reads every whole file of a host in one session, and
	// judges their paths with the stat that reads their modes.
	before := newest()
	if _, err := c.Observe(ctx, []Item{File{Path: target}, File{Path: target + ".missing"}, File{Path: filepath.Join(t.TempDir(), "x")}}); err != nil {
		t.Fatal(err)
	}
	if got := newest() - before - 1; got != 2 {
		t.Errorf("a refresh of three files started %d processes, want 2: sh, stat (the files and their directories); "+
			"sha256sum in the shell's process", got)
	}
}
