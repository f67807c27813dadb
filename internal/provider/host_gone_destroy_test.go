package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// goneDestroyConfig is a kha_file and a kha_hosts_entries on one host,
// which goes away before the destroy.
const goneDestroyConfig = `
terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}
variable "private_key" {
  type      = string
  sensitive = true
}
variable "known_hosts" { type = string }
variable "port" { type = number }
variable "dir" { type = string }

provider "kha" {
  default_ssh = { private_key = var.private_key, known_hosts = var.known_hosts, timeout = "2s" }
}

resource "kha_file" "gone" {
  path    = "${var.dir}/gone.cfg"
  content = "gone\n"
  ssh     = { host = "127.0.0.1", port = var.port }
}

resource "kha_hosts_entries" "gone" {
  entries = ["10.0.0.100 api.k8s.example.com"]
  path    = "${var.dir}/hosts"
  ssh     = { host = "127.0.0.1", port = var.port }
}
`

// TestAccHost_destroyOnGoneHostNamesTheWayOut: whichever way a destroy
// meets a host that is gone (the refresh finds it refusing connections,
// the destroy runs without a refresh, or the host goes between the plan
// and the apply), the destroy fails naming each way out: terraform state
// rm of the resource, or on_destroy = "keep" applied first.
func TestAccHost_destroyOnGoneHostNamesTheWayOut(t *testing.T) {
	t.Parallel()
	testhost.Require(t, os.Getenv("TF_ACC") != "", "TF_ACC is not set")
	tf := terraformPath(t)
	provider := buildProvider(t)
	for name, destroy := range map[string][][]string{
		"refreshed":           {{"destroy", "-auto-approve"}},
		"without a refresh":   {{"destroy", "-auto-approve", "-refresh=false"}},
		"gone after the plan": {{"plan", "-destroy", "-out=destroy.tfplan"}, {"stop"}, {"apply", "destroy.tfplan"}},
	} {
		t.Run(name, func(t *testing.T) {
			key := testhost.NewKey(t)
			host := testhost.Start(t, testhost.Options{AuthorizedKeys: []string{key.Public()}})
			dir := t.TempDir()
			values, err := json.Marshal(map[string]any{"private_key": key.PEM, "known_hosts": host.KnownHosts(),
				"port": host.Port, "dir": dir})
			if err != nil {
				t.Fatal(err)
			}
			for name, content := range map[string][]byte{"main.tf": []byte(goneDestroyConfig), "terraform.tfvars.json": values} {
				if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			terraform := devTerraform(t, tf, dir, provider)
			if out, err := terraform("apply", "-auto-approve").CombinedOutput(); err != nil {
				t.Fatalf("terraform apply: %v\n%s", err, out)
			}
			if destroy[0][0] != "plan" {
				host.Stop()
			}
			var out []byte
			for _, args := range destroy {
				switch args[0] {
				case "stop":
					host.Stop()
					continue
				case "apply":
					cmd := terraform("apply") // the plan file goes after the flags
					cmd.Args = append(cmd.Args, args[1:]...)
					out, err = cmd.CombinedOutput()
				default:
					out, err = terraform(args...).CombinedOutput()
				}
				if args[0] == "plan" && err != nil {
					t.Fatalf("terraform plan -destroy: %v\n%s", err, out)
				}
			}
			if err == nil {
				t.Fatalf("terraform %s on a gone host succeeded:\n%s", strings.Join(destroy[len(destroy)-1], " "), out)
			}
			// Each resource's error names it (a destroy's error has no
			// configuration to point at) and its ways out; Terraform wraps
			// long lines, never inside a word.
			wayOut := regexp.MustCompile(`(?s)terraform\s+state\s+rm\s+<address>.*tofu\s+state\s+rm.*terraform\s+state\s+list\s+-id=.*` +
				`on_destroy\s+=\s+"keep".*apply\s+with\s+-refresh=false`)
			for _, id := range []string{fmt.Sprintf("127.0.0.1:%d:%s/gone.cfg", host.Port, dir), fmt.Sprintf("127.0.0.1:%d:%s/hosts", host.Port, dir)} {
				named := false
				for _, block := range strings.Split(string(out), "Error: ")[1:] {
					if regexp.MustCompile(`state\s+list\s+-id='`+regexp.QuoteMeta(id)+`'`).MatchString(block) && wayOut.MatchString(block) {
						named = true
					}
				}
				if !named {
					t.Errorf("no error of the destroy names %s and the ways out (terraform state rm <address>, on_destroy = \"keep\"):\n%s", id, out)
				}
			}
			// The command the error gives prints the address to state rm.
			list := terraform("state")
			list.Args = []string{tf, "state", "list", "-id=" + fmt.Sprintf("127.0.0.1:%d:%s/gone.cfg", host.Port, dir)}
			if got, err := list.CombinedOutput(); err != nil || strings.TrimSpace(string(got)) != "kha_file.gone" {
				t.Errorf("terraform state list -id=<id>: %v\n%s", err, got)
			}
			if _, err := os.Stat(filepath.Join(dir, "gone.cfg")); err != nil {
				t.Errorf("a failed destroy changed the host: %v", err)
			}
		})
	}
}
