package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// ansibleFleet is what kubespray users run today for kha_haproxy_config's
// work: ansible-playbook (Debian's ansible-core) with one play of a
// template task that writes the bytes kha_haproxy_config renders to the
// same kind of path, validated with `haproxy -c`, and a handler, notified
// when the file changed, that runs haproxyFleet's reload. Otherwise
// Ansible's defaults: the linear strategy, and OpenSSH with
// ControlPersist=60s, so a run's tasks share one connection per host;
// plus pipelining, forks = P and no fact gathering.
//
// Its noop phase is a plain run that changes nothing, what an Ansible user
// runs to converge (as a plan is what a Terraform user runs). Each phase
// is a run of its own: the connections one run leaves open are closed
// before the next (minutes apart in real use, beyond ControlPersist).
var ansibleFleet = fleetKind{resource: "ansible", ansible: true}

func requireAnsible(b testing.TB) {
	_, err := exec.LookPath("ansible-playbook")
	testhost.Require(b, err == nil, "ansible-playbook is not installed (apt-get install --no-install-recommends ansible-core)")
}

// ansibleRecap is a host's line of the play recap.
var ansibleRecap = regexp.MustCompile(`(?m)^(h\d+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0\b`)

// ansible runs the three phases with ansible-playbook, then removes what
// they wrote.
func (f *fleet) ansible(b *testing.B, tf, bin string) []phase {
	rendered := haproxyFleetRendered(b, tf, bin)
	dir := filepath.Join(f.work, "ansible")
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		b.Fatal(err)
	}
	f.writeAnsible(b, dir, rendered)
	run := func(name string, generation, changed int) phase {
		return f.measure(b, name, func() (time.Duration, time.Duration) {
			// Short: the sockets' paths must fit in a sockaddr_un.
			controlDir, err := os.MkdirTemp("", "kha-cp-")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(controlDir)
			cmd := exec.Command("ansible-playbook", "-e", fmt.Sprintf("generation=%d", generation), "site.yml")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "ANSIBLE_CONFIG="+filepath.Join(dir, "ansible.cfg"),
				"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"), "ANSIBLE_SSH_CONTROL_PATH_DIR="+controlDir)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err = cmd.Run()
			wall := time.Since(start)
			if err != nil {
				b.Fatalf("ansible-playbook: %v\n%s", err, out.String())
			}
			f.checkAnsible(b, out.String(), changed, rendered[generation])
			// wait4's usage covers ansible-playbook, its forks and their
			// ssh clients; the connections' masters left the process tree.
			cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() + endProcesses(b, controlDir)
			return wall, cpu
		})
	}
	phases := []phase{run("first", 1, 2), run("noop", 1, 0), run("change", 2, 2)}
	b.StopTimer()
	for _, d := range f.dirs {
		for _, name := range []string{"haproxy.cfg", "reloaded", ".ansible-tmp"} {
			os.RemoveAll(filepath.Join(d, name))
		}
	}
	b.StartTimer()
	return phases
}

// writeAnsible writes the configuration, inventory, playbook and template
// into dir; the template is rendered[1] with the first backend's address
// made of the generation, which must give rendered[2] as well.
func (f *fleet) writeAnsible(b testing.TB, dir string, rendered map[int]string) {
	const first = "10.0.1.1:"
	template := strings.Replace(rendered[1], first, "10.0.{{ generation }}.1:", 1)
	if strings.Count(rendered[1], first) != 1 || strings.ContainsAny(rendered[1], "{}") ||
		strings.Replace(template, "{{ generation }}", "2", 1) != rendered[2] {
		b.Fatalf("the rendered configs do not differ in the first backend alone:\n%s\n%s", rendered[1], rendered[2])
	}
	var inventory strings.Builder
	inventory.WriteString("[fleet]\n")
	for i, d := range f.dirs {
		fmt.Fprintf(&inventory, "%s ansible_port=%d dir=%s ansible_remote_tmp=%s/.ansible-tmp\n", fleetHostName(i), f.ports[i], d, d)
	}
	fmt.Fprintf(&inventory, `[fleet:vars]
ansible_host=127.0.0.1
ansible_user=%s
ansible_ssh_private_key_file=%s
ansible_python_interpreter=/usr/bin/python3
`, testhost.UnprivilegedUser, filepath.Join(f.work, "client_key"))
	files := map[string]string{
		"haproxy.cfg.j2": template,
		"inventory.ini":  inventory.String(),
		"ansible.cfg": fmt.Sprintf(`[defaults]
inventory = inventory.ini
forks = %d
gathering = explicit
host_key_checking = True
retry_files_enabled = False

[ssh_connection]
pipelining = True
ssh_args = -F /dev/null -C -o ControlMaster=auto -o ControlPersist=60s -o StrictHostKeyChecking=yes -o UserKnownHostsFile=%s -o GlobalKnownHostsFile=/dev/null
`, f.network.parallelism, filepath.Join(f.work, "known_hosts")),
		"site.yml": `- hosts: fleet
  gather_facts: false
  tasks:
    - name: HAProxy config
      ansible.builtin.template:
        src: haproxy.cfg.j2
        dest: "{{ dir }}/haproxy.cfg"
        mode: "0644"
        validate: /usr/sbin/haproxy -c -q -f %s
      notify: reload
  handlers:
    - name: reload
      ansible.builtin.command: ` + fleetReload("{{ dir }}") + `
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

// checkAnsible fails unless the run changed changed tasks on every host
// and the first host has want.
func (f *fleet) checkAnsible(b testing.TB, out string, changed int, want string) {
	recaps := ansibleRecap.FindAllStringSubmatch(out, -1)
	for _, r := range recaps {
		if n, _ := strconv.Atoi(r[2]); n != changed {
			b.Fatalf("ansible-playbook changed %d tasks on %s, want %d:\n%s", n, r[1], changed, out)
		}
	}
	if len(recaps) != len(f.dirs) {
		b.Fatalf("ansible-playbook's recap has %d good hosts, want %d:\n%s", len(recaps), len(f.dirs), out)
	}
	if got, err := os.ReadFile(filepath.Join(f.dirs[0], "haproxy.cfg")); err != nil || string(got) != want {
		b.Fatalf("after ansible-playbook, %s has %q (%v), want %q", fleetHostName(0), got, err, want)
	}
}

// endProcesses ends the processes whose command line names dir (the SSH
// connections' masters, which outlive ansible-playbook) and returns the
// CPU they used.
func endProcesses(b testing.TB, dir string) time.Duration {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	var ended []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		used, err := testhost.ProcessCPU(pid)
		if err != nil {
			continue // gone already
		}
		cpu += used
		if syscall.Kill(pid, syscall.SIGTERM) == nil {
			ended = append(ended, pid)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); len(ended) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("processes %v of %s did not end", ended, dir)
		}
		ended = slices.DeleteFunc(ended, func(pid int) bool { return !testhost.ProcessRunning(pid) })
	}
	return cpu
}

// haproxyFleetRendered is what kha_haproxy_config renders for
// haproxyFleetSpec at generations 1 and 2, render-only through the CLI.
func haproxyFleetRendered(b testing.TB, tf, bin string) map[int]string {
	work := b.TempDir()
	if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(`terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}
variable "generation" {
  type = number
}
resource "kha_haproxy_config" "lb" {
`+haproxyFleetSpec+`
}
output "rendered" {
  value = kha_haproxy_config.lb.rendered
}
`), 0o600); err != nil {
		b.Fatal(err)
	}
	terraform := devTerraform(b, tf, work, bin)
	rendered := map[int]string{}
	for _, generation := range []int{1, 2} {
		if out, err := terraform("apply", "-auto-approve", fmt.Sprintf("-var=generation=%d", generation)).CombinedOutput(); err != nil {
			b.Fatalf("terraform apply: %v\n%s", err, out)
		}
		text, err := os.ReadFile(filepath.Join(work, "terraform.tfstate"))
		if err != nil {
			b.Fatal(err)
		}
		var state struct {
			Outputs struct {
				Rendered struct{ Value string } `json:"rendered"`
			} `json:"outputs"`
		}
		if err := json.Unmarshal(text, &state); err != nil || state.Outputs.Rendered.Value == "" {
			b.Fatalf("no rendered output in the state (%v):\n%s", err, text)
		}
		rendered[generation] = state.Outputs.Rendered.Value
	}
	return rendered
}
