package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// BenchmarkFileFleet measures kha_file through the real terraform CLI
// against N stand-in hosts (one sshd each, logging in as the unprivileged
// test user), next to the floor of raw x/crypto/ssh doing the same work:
//
//	first-apply-s   terraform apply creating one file per host
//	noop-plan-s     terraform plan with refresh, nothing to change
//	cli-plan-s      the same plan without refresh: Terraform's own share
//	raw-apply-s     dial, write and read back the digest, 10 hosts at a time
//	raw-check-s     dial and read the digest, 10 hosts at a time
func BenchmarkFileFleet(b *testing.B) {
	testhost.RequireUnprivilegedUser(b)
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	testhost.Require(b, tf != "", "TF_ACC_TERRAFORM_PATH is not set (eval \"$(scripts/tf-env.sh)\")")
	bin := buildProvider(b)
	for _, n := range []int{10, 50, 100} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			fleet := startFleet(b, n)
			for b.Loop() {
				apply, plan, cliPlan := fleet.terraform(b, tf, bin)
				rawApply, rawCheck := fleet.raw(b)
				b.ReportMetric(apply.Seconds(), "first-apply-s")
				b.ReportMetric(plan.Seconds(), "noop-plan-s")
				b.ReportMetric(cliPlan.Seconds(), "cli-plan-s")
				b.ReportMetric(rawApply.Seconds(), "raw-apply-s")
				b.ReportMetric(rawCheck.Seconds(), "raw-check-s")
			}
		})
	}
}

type fleet struct {
	key      testhost.Key
	servers  []*testhost.Server
	dirs     []string
	work     string
	uid, gid int
}

func startFleet(b *testing.B, n int) *fleet {
	u, err := user.Lookup(testhost.UnprivilegedUser)
	if err != nil {
		b.Fatal(err)
	}
	f := &fleet{key: testhost.NewKey(b), work: b.TempDir()}
	f.uid, _ = strconv.Atoi(u.Uid)
	f.gid, _ = strconv.Atoi(u.Gid)
	var knownHosts strings.Builder
	for i := 0; i < n; i++ {
		s := testhost.Start(b, testhost.Options{AuthorizedKeys: []string{f.key.Public()}})
		dir, err := os.MkdirTemp("", "kha-bench-host-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chown(dir, f.uid, f.gid); err != nil {
			b.Fatal(err)
		}
		f.servers, f.dirs = append(f.servers, s), append(f.dirs, dir)
		fmt.Fprintf(&knownHosts, "[%s]:%d %s\n", s.Host, s.Port, s.HostKey.Public())
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(f.work, name), []byte(content), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	write("client_key", f.key.PEM)
	write("known_hosts", knownHosts.String())
	hosts := map[string]map[string]any{}
	for i, s := range f.servers {
		hosts[fmt.Sprintf("h%03d", i)] = map[string]any{"port": s.Port, "dir": f.dirs[i]}
	}
	vars, _ := json.Marshal(map[string]any{"hosts": hosts})
	write("terraform.tfvars.json", string(vars))
	write("main.tf", `
terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}
variable "hosts" {
  type = map(object({ port = number, dir = string }))
}
provider "kha" {
  default_ssh = {
    user        = "`+testhost.UnprivilegedUser+`"
    private_key = file("${path.module}/client_key")
    known_hosts = file("${path.module}/known_hosts")
  }
}
resource "kha_file" "lb" {
  for_each = var.hosts
  path     = "${each.value.dir}/lb.cfg"
  content  = "frontend kube_api # ${each.key}\n"
  ssh      = { host = "127.0.0.1", port = each.value.port }
}
`)
	return f
}

// terraform times a first apply and a no-change plan, then destroys.
func (f *fleet) terraform(b *testing.B, tf, bin string) (apply, plan, cliPlan time.Duration) {
	rc := filepath.Join(f.work, "cli.tfrc")
	if err := os.WriteFile(rc, []byte(fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"kha/kha\" = %q\n  }\n  direct {}\n}\n", bin)), 0o600); err != nil {
		b.Fatal(err)
	}
	run := func(args ...string) (time.Duration, error) {
		cmd := exec.Command(tf, args...)
		cmd.Dir = f.work
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("terraform %s: %v\n%s", args[0], err, out.String())
		}
		return time.Since(start), err
	}
	var err error
	if apply, err = run("apply", "-auto-approve", "-input=false", "-no-color"); err != nil {
		b.Fatal(err)
	}
	if plan, err = run("plan", "-detailed-exitcode", "-input=false", "-no-color"); err != nil {
		b.Fatalf("the no-change plan must be empty: %v", err)
	}
	if cliPlan, err = run("plan", "-refresh=false", "-detailed-exitcode", "-input=false", "-no-color"); err != nil {
		b.Fatalf("the no-change plan must be empty: %v", err)
	}
	b.StopTimer()
	if _, err := run("destroy", "-auto-approve", "-input=false", "-no-color"); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	return apply, plan, cliPlan
}

// raw does the same work with x/crypto/ssh alone: the floor kha is
// measured against.
func (f *fleet) raw(b *testing.B) (apply, check time.Duration) {
	hostKeys := map[string]ssh.PublicKey{}
	for _, s := range f.servers {
		hostKeys[s.Address()] = s.HostKey.Signer.PublicKey()
	}
	each := func(work func(c *ssh.Client, dir string) error) time.Duration {
		start := time.Now()
		sem := make(chan struct{}, 10)
		var wg sync.WaitGroup
		errs := make(chan error, len(f.servers))
		for i, s := range f.servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				c, err := ssh.Dial("tcp", s.Address(), &ssh.ClientConfig{User: testhost.UnprivilegedUser,
					Auth: []ssh.AuthMethod{ssh.PublicKeys(f.key.Signer)}, HostKeyCallback: ssh.FixedHostKey(hostKeys[s.Address()])})
				if err == nil {
					err = work(c, f.dirs[i])
					c.Close()
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	session := func(c *ssh.Client, cmd string, stdin []byte) error {
		s, err := c.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
		s.Stdin = bytes.NewReader(stdin)
		return s.Run(cmd)
	}
	apply = each(func(c *ssh.Client, dir string) error {
		if err := session(c, "cat > "+dir+"/raw.cfg", []byte("frontend raw\n")); err != nil {
			return err
		}
		return session(c, "sha256sum "+dir+"/raw.cfg", nil)
	})
	check = each(func(c *ssh.Client, dir string) error { return session(c, "sha256sum "+dir+"/raw.cfg", nil) })
	return apply, check
}

