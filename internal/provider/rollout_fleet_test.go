package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// rolloutCheckFleet is kha_file under a rollout policy, with a validate
// command that records on its host when it ran (a line "start end" in
// validated, next to the file) and then runs var.validate: `true` passes,
// `false` fails the validation.
var rolloutCheckFleet = fleetKind{
	resource: "kha_file",
	variant:  "rollout-check",
	provider: "rollout = { canary = 1, batch = 10, stop_on_failure = true }",
	hcl: `variable "validate" {
  type = string
}
resource "kha_file" "lb" {
  for_each         = var.hosts
  path             = "${each.value.dir}/lb.cfg"
  content          = "frontend kube_api # ${each.key}\n  server cp0 10.0.${var.generation}.1:6443\n"
  validate_command = "t0=$(date -u +%T.%N); sleep 0.2; echo $t0 $(date -u +%T.%N) >>${each.value.dir}/validated; ${var.validate}"
  ssh              = { host = "127.0.0.1", port = each.value.port }
}`,
}

// TestAccRollout_fleet applies kha_file to 100 hosts (KHA_ROLLOUT_HOSTS)
// with `rollout = { canary = 1, batch = 10 }` through the CLI at
// -parallelism=50. A good change reaches every host, one host first and
// alone, then never more than 10 at once (measured on the hosts). A
// change that fails validation everywhere runs the validator on exactly
// one host; every other host keeps its file byte for byte, reports "not
// attempted: canary <id> failed" and keeps its state.
func TestAccRollout_fleet(t *testing.T) {
	t.Parallel()
	testhost.RequireUnprivilegedUser(t)
	tf := terraformPath(t)
	n := 100
	if s := os.Getenv("KHA_ROLLOUT_HOSTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 2 {
			t.Fatalf("KHA_ROLLOUT_HOSTS: %q is not a number of hosts above 1", s)
		}
	}
	bin := buildProvider(t)
	start := time.Now()
	f := startFleet(t, n, rolloutCheckFleet, fleetNetwork{})
	t.Logf("%d hosts started in %s", n, time.Since(start).Round(time.Millisecond))
	terraform := devTerraform(t, tf, f.work, bin)
	apply := func() (string, time.Duration, error) {
		cmd := terraform("apply", "-auto-approve", "-parallelism=50", "-json")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		return out.String(), time.Since(start), err
	}
	content := func(i, generation int) string {
		return fmt.Sprintf("frontend kube_api # %s\n  server cp0 10.0.%d.1:6443\n", fleetHostName(i), generation)
	}

	// A good change: every host, canary first, then batches.
	f.tfvars(t, map[string]any{"generation": 1, "validate": "true"})
	out, wall, err := apply()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	t.Logf("good change, %d hosts, canary = 1, batch = 10, -parallelism=50: %s", n, wall.Round(time.Millisecond))
	spans := make([]span, n)
	for i, dir := range f.dirs {
		got, err := os.ReadFile(filepath.Join(dir, "lb.cfg"))
		if err != nil || string(got) != content(i, 1) {
			t.Fatalf("host %d has %q (%v), want generation 1", i, got, err)
		}
		runs := readSpans(t, filepath.Join(dir, "validated"))
		if len(runs) != 1 {
			t.Fatalf("host %d validated %d times, want once", i, len(runs))
		}
		spans[i] = runs[0]
		if err := os.Remove(filepath.Join(dir, "validated")); err != nil {
			t.Fatal(err)
		}
	}
	first := 0
	for i, s := range spans {
		if s.start.Before(spans[first].start) {
			first = i
		}
	}
	for i, s := range spans {
		if i != first && s.start.Before(spans[first].end) {
			t.Errorf("host %d validated at %s, before the canary (host %d) was done at %s", i, s.start, first, spans[first].end)
		}
	}
	if most := mostAtOnce(spans); most > 10 {
		t.Errorf("%d hosts validated at once, more than batch = 10", most)
	} else {
		t.Logf("at most %d hosts validated at once", most)
	}

	// A change that fails validation on every host.
	f.tfvars(t, map[string]any{"generation": 2, "validate": "false"})
	out, wall, err = apply()
	if err == nil {
		t.Fatalf("apply of a config that fails validation succeeded:\n%s", out)
	}
	t.Logf("failing change, %d hosts: %s", n, wall.Round(time.Millisecond))
	canary := -1
	for i, dir := range f.dirs {
		if _, err := os.Stat(filepath.Join(dir, "validated")); err == nil {
			if canary >= 0 {
				t.Fatalf("hosts %d and %d both ran the validator", canary, i)
			}
			canary = i
		}
		got, err := os.ReadFile(filepath.Join(dir, "lb.cfg"))
		if err != nil || string(got) != content(i, 1) {
			t.Errorf("host %d has %q (%v), want generation 1 unchanged", i, got, err)
		}
	}
	if canary < 0 {
		t.Fatal("no host ran the validator")
	}
	canaryID := fmt.Sprintf("127.0.0.1:%d:%s/lb.cfg", f.servers[canary].Port, f.dirs[canary])
	// Terraform prints a run's errors in no fixed order (its walk collects
	// them in a map): each stopped resource names the canary's error.
	want := "not attempted: canary " + canaryID + " failed: Applying File Failed: "
	errorsOf := map[string]string{} // by resource address
	scanner := bufio.NewScanner(strings.NewReader(out))
	scanner.Buffer(nil, 1<<20)
	for scanner.Scan() {
		var line struct {
			Type       string `json:"type"`
			Diagnostic struct {
				Severity, Summary, Detail, Address string
			} `json:"diagnostic"`
		}
		if json.Unmarshal(scanner.Bytes(), &line) == nil && line.Type == "diagnostic" && line.Diagnostic.Severity == "error" {
			errorsOf[line.Diagnostic.Address] = line.Diagnostic.Summary + ": " + line.Diagnostic.Detail
		}
	}
	for i := range f.dirs {
		address := fmt.Sprintf("kha_file.lb[%q]", fleetHostName(i))
		got, ok := errorsOf[address]
		switch {
		case !ok:
			t.Errorf("%s reported no error", address)
		case i == canary && !strings.HasPrefix(got, "Applying File Failed"):
			t.Errorf("canary %s: %s", address, got)
		case i != canary && !strings.Contains(got, want):
			t.Errorf("%s: got %q, want it to say %q", address, got, want)
		}
	}
	t.Logf("the canary's error:\n%s", errorsOf[fmt.Sprintf("kha_file.lb[%q]", fleetHostName(canary))])
	t.Logf("the others' (%s):\n%s", fleetHostName((canary+1)%n), errorsOf[fmt.Sprintf("kha_file.lb[%q]", fleetHostName((canary+1)%n))])

	// Every resource keeps the state of generation 1.
	text, err := os.ReadFile(filepath.Join(f.work, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Resources []struct {
			Instances []struct {
				IndexKey   string `json:"index_key"`
				Attributes struct{ Content string }
			}
		}
	}
	if err := json.Unmarshal(text, &state); err != nil || len(state.Resources) != 1 || len(state.Resources[0].Instances) != n {
		t.Fatalf("state: %v\n%s", err, text)
	}
	for _, r := range state.Resources[0].Instances {
		i, _ := strconv.Atoi(strings.TrimPrefix(r.IndexKey, "h"))
		if r.Attributes.Content != content(i, 1) {
			t.Errorf("%s's state changed: %q", r.IndexKey, r.Attributes.Content)
		}
	}
}

// span is when one validation ran.
type span struct{ start, end time.Time }

// readSpans reads the lines "start end" (date -u +%T.%N) of a host's
// validated file.
func readSpans(t *testing.T, path string) []span {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spans []span
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 2 {
			t.Fatalf("%s: %q", path, line)
		}
		var s span
		for i, at := range []*time.Time{&s.start, &s.end} {
			if *at, err = time.Parse("15:04:05.999999999", fields[i]); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		spans = append(spans, s)
	}
	return spans
}

// mostAtOnce is the largest number of spans that overlap.
func mostAtOnce(spans []span) int {
	most := 0
	for _, s := range spans {
		at := 0
		for _, o := range spans {
			if !o.start.After(s.start) && o.end.After(s.start) {
				at++
			}
		}
		most = max(most, at)
	}
	return most
}

// A create that fails validation on every host: one host runs the
// validator, the others are not attempted, and no resource is in state.
func TestAccRollout_createNotAttempted(t *testing.T) {
	t.Parallel()
	testhost.RequireUnprivilegedUser(t)
	tf := terraformPath(t)
	bin := buildProvider(t)
	const n = 6
	f := startFleet(t, n, rolloutCheckFleet, fleetNetwork{})
	f.tfvars(t, map[string]any{"generation": 1, "validate": "false"})
	cmd := devTerraform(t, tf, f.work, bin)("apply", "-auto-approve", "-parallelism=50")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("apply of a config that fails validation succeeded:\n%s", out)
	}
	if got := strings.Count(string(out), "not attempted: canary 127.0.0.1:"); got != n-1 {
		t.Errorf("%d resources not attempted, want %d:\n%s", got, n-1, out)
	}
	validated := 0
	for _, dir := range f.dirs {
		if _, err := os.Stat(filepath.Join(dir, "validated")); err == nil {
			validated++
		}
		if _, err := os.Stat(filepath.Join(dir, "lb.cfg")); !os.IsNotExist(err) {
			t.Errorf("%s/lb.cfg: %v, want it not there", dir, err)
		}
	}
	if validated != 1 {
		t.Errorf("%d hosts ran the validator, want 1", validated)
	}
	text, err := os.ReadFile(filepath.Join(f.work, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(text), `"kha_file"`) {
		t.Errorf("the state has resources:\n%s", text)
	}
}
