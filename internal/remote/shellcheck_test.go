package remote

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// shellcheckExcluded are the checks that do not fit how the scripts are
// made, each for one reason:
//   - SC2034 (assigned but unused): the generated header defines every
//     exit code and protocol word for every script;
//   - SC2317 (unreachable): the shared helpers are defined in every script
//     and called by some;
//   - SC2015 (A && B || C): the scripts mean "C when any of A and B
//     fails", which is what the shell does.
const shellcheckExcluded = "SC2034,SC2317,SC2015"

// TestScripts_shellcheck runs shellcheck on every script as the engine
// sends it (generated header and body), as the dash that Debian's sh is:
// no finding passes.
func TestScripts_shellcheck(t *testing.T) {
	bin, err := exec.LookPath("shellcheck")
	testhost.Require(t, err == nil, "shellcheck is not installed")
	dir := t.TempDir()
	args := []string{"--shell=dash", "--exclude=" + shellcheckExcluded, "--format=gcc"}
	for i, s := range scripts {
		p := filepath.Join(dir, fmt.Sprintf("script%d.sh", i))
		if err := os.WriteFile(p, []byte(s.header+s.body), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("shellcheck found (%v):\n%s", err, out)
	}
}
