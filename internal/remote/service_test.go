package remote

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestServiceState asks a real host whether a service runs, each way kha
// can tell: the user's command, the process a PID file names (only when
// it is the process named), and a unit (never "running" for one that
// does not exist, whether or not the host runs systemd).
func TestServiceState(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pidFile := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo.pid")
	if err := exec.Command("mkfifo", fifo).Run(); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		s       Service
		running bool
		why     string
	}{
		"a command that succeeds":  {Service{Command: "true"}, true, ""},
		"a command that fails":     {Service{Command: "exit 3", PIDFile: "/nonexistent"}, false, "running_command exited with status 3"},
		"the PID file's process":   {Service{PIDFile: pidFile("live.pid", strconv.Itoa(sleeper.Process.Pid)+"\n"), Process: "sleep"}, true, ""},
		"another program's PID":    {Service{PIDFile: pidFile("other.pid", strconv.Itoa(sleeper.Process.Pid)), Process: "haproxy"}, false, "no haproxy runs as process"},
		"a process that ended":     {Service{PIDFile: pidFile("gone.pid", strconv.Itoa(gone.Process.Pid)), Process: "true"}, false, "no true runs as process"},
		"no PID in the file":       {Service{PIDFile: pidFile("junk.pid", "1; touch /tmp/x\n"), Process: "sleep"}, false, "holds no process ID"},
		"no PID file":              {Service{PIDFile: filepath.Join(dir, "none.pid"), Process: "sleep"}, false, "holds no process ID"},
		"a FIFO is not read":       {Service{PIDFile: fifo, Process: "sleep"}, false, "holds no process ID"},
		"a unit that is not there": {Service{Unit: "kha-no-such-unit.service"}, false, ""},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := c.ServiceState(context.Background(), tc.s)
			if err != nil {
				t.Fatal(err)
			}
			if got.Running != tc.running || !strings.Contains(got.Why, tc.why) || got.Running && !got.Known {
				t.Fatalf("got %+v, want running %v and %q", got, tc.running, tc.why)
			}
		})
	}
}
