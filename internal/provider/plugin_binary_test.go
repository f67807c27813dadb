package provider

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// buildProvider builds the provider binary, as Terraform runs it, into a
// directory for a dev_overrides CLI configuration.
func buildProvider(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("KHA_BENCH_PROVIDER_DIR"); bin != "" {
		return bin // a release or an earlier build, to compare against
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "terraform-provider-kha"), "github.com/kha/terraform-provider-kha")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the provider: %v\n%s", err, out)
	}
	return dir
}

// providerCPUOf makes the provider processes cmd starts write their CPU
// profiles and CPU time (KHA_CPU_PROFILE_DIR) into a directory of their
// own, under KHA_CPU_PROFILE_DIR when it is set so that the profiles stay,
// and returns what tells their CPU time once cmd has run: 0 when none said
// (a build from before the provider wrote it). Set it after cmd's Env.
func providerCPUOf(t testing.TB, cmd *exec.Cmd, name string) func() time.Duration {
	t.Helper()
	base := os.Getenv("KHA_CPU_PROFILE_DIR")
	if base == "" {
		base = t.TempDir()
	}
	dir, err := os.MkdirTemp(base, strings.NewReplacer("/", "-", "=", "").Replace(t.Name()+"-"+name)+"-")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, "KHA_CPU_PROFILE_DIR="+dir)
	return func() time.Duration {
		files, err := filepath.Glob(filepath.Join(dir, "cpu-*.ns"))
		if err != nil {
			t.Fatal(err)
		}
		var total time.Duration
		for _, file := range files {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ns, err := strconv.ParseInt(string(text), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			total += time.Duration(ns)
		}
		return total
	}
}

// terraformPath is the CLI the acceptance tests use.
func terraformPath(t testing.TB) string {
	t.Helper()
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	testhost.Require(t, tf != "", "TF_ACC_TERRAFORM_PATH is not set (eval \"$(scripts/tf-env.sh)\")")
	return tf
}

// devTerraform writes a CLI configuration into dir that runs the provider
// in bin, and returns a maker of terraform commands that run in dir with it.
func devTerraform(t testing.TB, tf, dir, bin string) func(args ...string) *exec.Cmd {
	t.Helper()
	rc := filepath.Join(dir, "cli.tfrc")
	if err := os.WriteFile(rc, []byte(fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"kha/kha\" = %q\n  }\n  direct {}\n}\n", bin)), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) *exec.Cmd {
		cmd := exec.Command(tf, append(args, "-input=false", "-no-color")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
		return cmd
	}
}

// The plugin binary logs at the level Terraform shows its lines at, and no
// finer: debug lines with TF_LOG_PROVIDER=debug, trace lines only with trace.
func TestPluginBinary_logsAtTerraformsLevel(t *testing.T) {
	t.Parallel()
	tf := terraformPath(t)
	bin := buildProvider(t)
	dir := t.TempDir()
	terraform := devTerraform(t, tf, dir, bin)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`
terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}
resource "kha_cluster_endpoints" "c" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	const debugLine, traceLine = "Marking Computed attributes with null configuration values as unknown", "Received request"
	for _, c := range []struct {
		level          string
		debug, traceTo bool
	}{{"DEBUG", true, false}, {"TRACE", true, true}, {"WARN", false, false}} {
		cmd := terraform("plan")
		cmd.Env = append(cmd.Env, "TF_LOG=", "TF_LOG_PROVIDER="+c.level)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("TF_LOG_PROVIDER=%s: terraform plan: %v\n%s", c.level, err, out)
		}
		if got := strings.Contains(string(out), debugLine); got != c.debug {
			t.Errorf("TF_LOG_PROVIDER=%s: the framework's debug line %q shown: %v, want %v", c.level, debugLine, got, c.debug)
		}
		if got := strings.Contains(string(out), traceLine); got != c.traceTo {
			t.Errorf("TF_LOG_PROVIDER=%s: the SDK's trace line %q shown: %v, want %v", c.level, traceLine, got, c.traceTo)
		}
	}
}
