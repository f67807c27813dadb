package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// BenchmarkFleet pushes one config to N stand-in hosts through the real
// terraform CLI, next to the floor of raw x/crypto/ssh doing the same work
// in the same run (`make bench-fleet` prints the table). Each host is an
// sshd with Debian's three host key types, its own mount and PID
// namespaces and an empty home, logging in the unprivileged test user.
//
// Phases: first (create on every host), noop (a plan with refresh that
// finds nothing to do), change (one backend changed on every host). The
// floor dials, writes and reads the digest back (first, change; the
// HAProxy config is also checked with `haproxy -c` and reloaded, as kha
// does) or reads the digest only (noop), P hosts at a time as Terraform
// does at -parallelism=P.
//
// Metrics per phase, for kha and for the floor ("raw-" prefix): wall
// seconds; controller CPU per host (terraform and the provider, or the
// floor's own process); sshd CPU per host (sshd and everything its
// sessions ran); connections, sessions and processes per host; behind
// relays, round trips per host (testhost.RelayStats.RoundTrips).
//
// kha_file+rollout is kha_file under the provider's rollout policy
// (canary = 1, batch = 10), beside kha_file without it. ansible is what
// kubespray users run for the same work as kha_haproxy_config (see
// ansibleFleet); its floor is kha_haproxy_config's.
//
// KHA_BENCH_HOSTS sets the fleet sizes (default 10,50,100,200);
// KHA_BENCH_RTT puts every host behind a relay with these round-trip
// times (a comma list of durations such as 2ms,20ms,60ms; default none:
// loopback) and KHA_BENCH_PARALLELISM sets -parallelism (a comma list;
// default 10); each value is a level of the sub-benchmarks' names, as in
// kha_file/rtt=20ms/p=10/hosts=200. KHA_BENCH_CLI (fleetCLIs) runs the
// CLI kinds under each of terraform, opentofu and terraform+http (the
// state in an http backend), a level of its own: kha_file/cli=opentofu/...
// KHA_BENCH_PROVIDER_DIR measures a prebuilt provider instead of this tree.
// KHA_BENCH_NO_REFRESH adds a phase norefresh: a change applied with
// -refresh=false, which reads no host during the plan (the floor's is the
// change's).
func BenchmarkFleet(b *testing.B) {
	testhost.RequireUnprivilegedUser(b)
	bin := buildProvider(b)
	sizes := benchList(b, "KHA_BENCH_HOSTS", []int{10, 50, 100, 200}, positive)
	networks := fleetNetworks(b)
	clis := fleetCLIs(b)
	for _, kind := range []fleetKind{fileFleet, fileRolloutFleet, haproxyFleet, provisionersFleet, ansibleFleet} {
		kindCLIs := clis
		if kind.ansible {
			// Ansible keeps no state; the CLI only renders its template.
			kindCLIs = []fleetCLI{{path: clis[0].path}}
		}
		for _, cli := range kindCLIs {
			for _, network := range networks {
				for _, n := range sizes {
					b.Run(kind.name()+cli.name+network.name+fmt.Sprintf("/hosts=%d", n), func(b *testing.B) {
						if kind.ansible {
							requireAnsible(b)
						}
						f := startFleet(b, n, kind, network)
						for b.Loop() {
							run := func() []phase { return f.terraform(b, cli, bin) }
							if kind.ansible {
								run = func() []phase { return f.ansible(b, cli.path, bin) }
							}
							for _, p := range run() {
								p.report(b, "")
							}
							if kind.rawWrite == "" {
								continue // the floor of another kind
							}
							for _, p := range f.raw(b) {
								p.report(b, "raw-")
							}
						}
					})
				}
			}
		}
	}
}

// fleetNetwork is how the controller reaches the hosts: behind relays
// of a round-trip time or directly (rtt 0, no relay), and how many hosts
// it works on at a time.
type fleetNetwork struct {
	rtt         time.Duration
	parallelism int
	// name is the levels it adds to a sub-benchmark's name.
	name string
}

// fleetNetworks are KHA_BENCH_RTT × KHA_BENCH_PARALLELISM; a variable
// that is not set adds no level to the names.
func fleetNetworks(b *testing.B) []fleetNetwork {
	rtts := benchList(b, "KHA_BENCH_RTT", []time.Duration{0}, func(s string) (time.Duration, bool) {
		d, err := time.ParseDuration(s)
		return d, err == nil && d > 0
	})
	parallelisms := benchList(b, "KHA_BENCH_PARALLELISM", []int{10}, positive)
	var networks []fleetNetwork
	for _, rtt := range rtts {
		for _, p := range parallelisms {
			network := fleetNetwork{rtt: rtt, parallelism: p}
			if os.Getenv("KHA_BENCH_RTT") != "" {
				network.name += "/rtt=" + rtt.String()
			}
			if os.Getenv("KHA_BENCH_PARALLELISM") != "" {
				network.name += fmt.Sprintf("/p=%d", p)
			}
			networks = append(networks, network)
		}
	}
	return networks
}

// positive parses a number above 0.
func positive(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1
}

// benchList parses the comma list in the environment variable, or
// returns def when it is not set.
func benchList[T any](b *testing.B, variable string, def []T, parse func(string) (T, bool)) []T {
	s := os.Getenv(variable)
	if s == "" {
		return def
	}
	var list []T
	for _, f := range strings.Split(s, ",") {
		v, ok := parse(strings.TrimSpace(f))
		if !ok {
			b.Fatalf("%s: %q is not a valid value", variable, f)
		}
		list = append(list, v)
	}
	return list
}

// fleetKind is a resource under measurement and the floor's equivalent.
type fleetKind struct {
	resource string
	// variant tells kinds of one resource apart (the benchmark's name).
	variant string
	// provider is more of the provider block than default_ssh.
	provider string
	hcl      string // the resource block, for_each over var.hosts
	// rawWrite is the floor's command that writes stdin to $1 and checks
	// it; "" measures no floor.
	rawWrite string
	// rawConfig is the content the floor writes at a generation.
	rawConfig func(generation int) string
	// ansible: the phases run ansible-playbook, not terraform.
	ansible bool
}

func (k fleetKind) name() string {
	if k.variant != "" {
		return k.resource + "+" + k.variant
	}
	return k.resource
}

var (
	fileFleet = fleetKind{
		resource: "kha_file",
		hcl: `resource "kha_file" "lb" {
  for_each = var.hosts
  path     = "${each.value.dir}/lb.cfg"
  content  = "frontend kube_api # ${each.key}\n  server cp0 10.0.${var.generation}.1:6443\n"
  ssh      = { host = "127.0.0.1", port = each.value.port }
}`,
		rawWrite:  `cat >"$1"`,
		rawConfig: func(g int) string { return fmt.Sprintf("frontend kube_api\n  server cp0 10.0.%d.1:6443\n", g) },
	}
	// fileRolloutFleet is fileFleet under a rollout policy: one canary
	// alone, then 10 hosts at a time (Terraform's default parallelism),
	// so what it costs beyond fileFleet is the canary's turn and the
	// coordination.
	fileRolloutFleet = fleetKind{
		resource: fileFleet.resource,
		variant:  "rollout",
		provider: "rollout = { canary = 1, batch = 10 }",
		hcl:      fileFleet.hcl,
	}
	// provisionersFleet is what kha replaces: Terraform's file and
	// remote-exec provisioners, re-run when the content changes. A plan
	// does not look at the hosts, so its noop reads nothing. Terraform's
	// SSH client prefers ECDSA host keys: host_key is the host's ECDSA key.
	provisionersFleet = fleetKind{
		resource: "provisioners",
		hcl: `resource "terraform_data" "lb" {
  for_each         = var.hosts
  triggers_replace = [var.generation]
  connection {
    type        = "ssh"
    host        = "127.0.0.1"
    port        = each.value.port
    user        = "` + testhost.UnprivilegedUser + `"
    private_key = file("${path.module}/client_key")
    host_key    = each.value.host_key
    timeout     = "10s"
  }
  provisioner "file" {
    content     = "frontend kube_api # ${each.key}\n  server cp0 10.0.${var.generation}.1:6443\n"
    destination = "${each.value.dir}/lb.cfg"
  }
  provisioner "remote-exec" {
    inline = ["sha256sum ${each.value.dir}/lb.cfg"]
  }
}`,
		rawWrite:  fileFleet.rawWrite,
		rawConfig: fileFleet.rawConfig,
	}
	// haproxyFleet's reload is a cheap stand-in (the hosts run no
	// HAProxy) that ansibleFleet's handler and the floor run too, so
	// the three do the same work on a host.
	haproxyFleet = fleetKind{
		resource: "kha_haproxy_config",
		hcl: `resource "kha_haproxy_config" "lb" {
  for_each = var.hosts
` + haproxyFleetSpec + `
  config_path         = "${each.value.dir}/haproxy.cfg"
  validate_command    = "/usr/sbin/haproxy -c -q -f %s"
  reload_command      = "` + fleetReload("${each.value.dir}") + `"
  destroy_command     = ""
  verify_after_reload = false
  ssh                 = { host = "127.0.0.1", port = each.value.port }
}`,
		rawWrite: `cat >"$1" && /usr/sbin/haproxy -c -q -f "$1" && ` + fleetReload(`"${1%/*}"`),
		rawConfig: func(g int) string {
			return fmt.Sprintf("global\n  maxconn 4000\ndefaults\n  mode tcp\n  timeout connect 1s\n  timeout client 10m\n"+
				"  timeout server 10m\nfrontend kube_api\n  bind 127.0.0.1:7443\n  default_backend kube_api\nbackend kube_api\n"+
				"  server cp0 10.0.%d.1:6443 check\n  server cp1 10.0.0.2:6443 check\n  server cp2 10.0.0.3:6443 check\n", g)
		},
	}
)

// haproxyFleetSpec is haproxyFleet's load balancer: listen, backends (the
// first one's address changes with var.generation) and health check.
const haproxyFleetSpec = `  listen       = { address = "127.0.0.1", port = 7443 }
  backends     = [for i in range(3) : { name = "cp${i}", address = "10.0.${i == 0 ? var.generation : 0}.${i + 1}", port = 6443 }]
  health_check = { type = "tcp" }`

// fleetReload is the reload of haproxyFleet, ansibleFleet and their
// floor, given the config's directory as each writes it.
func fleetReload(dir string) string { return "touch " + dir + "/reloaded" }

type fleet struct {
	kind    fleetKind
	network fleetNetwork
	key     testhost.Key
	servers []*testhost.Server
	// ports are where the controller reaches each server: its relay's,
	// or its own without relays.
	ports    []int
	relays   *relayProcess
	dirs     []string
	work     string
	uid, gid int
	// probeCost is how many PIDs one probe of the process counter uses.
	probeCost []int
}

// phase is what one phase cost the whole fleet.
type phase struct {
	name                string
	wall, controllerCPU time.Duration
	sshdCPU             time.Duration
	conns, sessions     int
	procs               int
	// roundTrips is -1 without relays.
	roundTrips int
	hosts      int
	// stateBytes is the size of Terraform's state after the phase; 0 for
	// phases that keep none.
	stateBytes int64
	// providerCPU is the provider processes' share of controllerCPU; 0
	// where there is no provider or it did not say (an earlier build).
	providerCPU time.Duration
	// stateWrites is how often an http backend received the state in the
	// phase; 0 for a local one, whose writes are not counted.
	stateWrites int
}

func (p phase) report(b *testing.B, prefix string) {
	n := float64(p.hosts)
	b.ReportMetric(p.wall.Seconds(), prefix+p.name+"-s")
	b.ReportMetric(float64(p.controllerCPU.Milliseconds())/n, prefix+p.name+"-ctl-ms/host")
	b.ReportMetric(float64(p.sshdCPU.Milliseconds())/n, prefix+p.name+"-sshd-ms/host")
	b.ReportMetric(float64(p.conns)/n, prefix+p.name+"-conns/host")
	b.ReportMetric(float64(p.sessions)/n, prefix+p.name+"-sessions/host")
	b.ReportMetric(float64(p.procs)/n, prefix+p.name+"-procs/host")
	if p.roundTrips >= 0 {
		b.ReportMetric(float64(p.roundTrips)/n, prefix+p.name+"-rtts/host")
	}
	if p.providerCPU > 0 {
		b.ReportMetric(float64(p.providerCPU.Milliseconds())/n, prefix+p.name+"-provider-ms/host")
	}
	if p.stateBytes > 0 {
		b.ReportMetric(float64(p.stateBytes)/n, prefix+p.name+"-state-B/host")
	}
	if p.stateWrites > 0 {
		b.ReportMetric(float64(p.stateWrites), prefix+p.name+"-state-writes")
	}
}

// startFleet starts n hosts for kind; network's zero value reaches them
// directly, 10 at a time.
func startFleet(b testing.TB, n int, kind fleetKind, network fleetNetwork) *fleet {
	u, err := user.Lookup(testhost.UnprivilegedUser)
	if err != nil {
		b.Fatal(err)
	}
	if network.parallelism == 0 {
		network.parallelism = 10
	}
	f := &fleet{kind: kind, network: network, key: testhost.NewKey(b), work: b.TempDir()}
	f.uid, _ = strconv.Atoi(u.Uid)
	f.gid, _ = strconv.Atoi(u.Gid)
	var addresses []string
	for i := 0; i < n; i++ {
		s := testhost.Start(b, testhost.Options{AuthorizedKeys: []string{f.key.Public()}, PIDNamespace: true})
		dir, err := os.MkdirTemp("", "kha-bench-host-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chown(dir, f.uid, f.gid); err != nil {
			b.Fatal(err)
		}
		f.servers, f.dirs, f.ports = append(f.servers, s), append(f.dirs, dir), append(f.ports, s.Port)
		addresses = append(addresses, s.Address())
	}
	if network.rtt > 0 {
		f.relays, f.ports = startRelays(b, network.rtt, addresses)
	}
	var knownHosts strings.Builder
	for i, s := range f.servers {
		for _, k := range []testhost.Key{s.RSAHostKey, s.ECDSAHostKey, s.HostKey} {
			fmt.Fprintf(&knownHosts, "[127.0.0.1]:%d %s\n", f.ports[i], k.Public())
		}
	}
	f.write(b, "client_key", f.key.PEM)
	f.write(b, "known_hosts", knownHosts.String())
	f.write(b, "main.tf", `
terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}
variable "hosts" {
  type = map(object({ port = number, dir = string, host_key = string }))
}
variable "generation" {
  type = number
}
provider "kha" {
  default_ssh = {
    user        = "`+testhost.UnprivilegedUser+`"
    private_key = file("${path.module}/client_key")
    known_hosts = file("${path.module}/known_hosts")
  }
  `+kind.provider+`
}
`+kind.hcl+"\n")
	// Two probes back to back: what one probe costs in PIDs.
	first, second := f.processCounters(b), f.processCounters(b)
	for i := range first {
		f.probeCost = append(f.probeCost, second[i]-first[i])
	}
	return f
}

func (f *fleet) write(b testing.TB, name, content string) {
	if err := os.WriteFile(filepath.Join(f.work, name), []byte(content), 0o600); err != nil {
		b.Fatal(err)
	}
}

func (f *fleet) variables(b testing.TB, generation int) {
	f.tfvars(b, map[string]any{"generation": generation})
}

// tfvars writes the variables: hosts, and vars.
func (f *fleet) tfvars(b testing.TB, vars map[string]any) {
	hosts := map[string]map[string]any{}
	for i, s := range f.servers {
		hosts[fleetHostName(i)] = map[string]any{"port": f.ports[i], "dir": f.dirs[i], "host_key": s.ECDSAHostKey.Public()}
	}
	vars["hosts"] = hosts
	text, _ := json.Marshal(vars)
	f.write(b, "terraform.tfvars.json", string(text))
}

// fleetHostName is the name of the i-th host in for_each keys and
// inventories.
func fleetHostName(i int) string { return fmt.Sprintf("h%03d", i) }

// snapshot is the fleet's counters at one moment.
type snapshot struct {
	sshdCPU         time.Duration
	conns, sessions int
	relayed         testhost.RelayStats
	pids            []int
}

// take reads every host's counters. The process counter's probe is a
// connection of its own: before the phase it runs first, after the phase
// last, so neither probe is in the CPU, log and relay counts between the
// two.
func (f *fleet) take(b *testing.B, probeFirst bool) snapshot {
	var s snapshot
	if probeFirst {
		s.pids = f.processCounters(b)
	}
	for _, srv := range f.servers {
		cpu, err := srv.CPUTime()
		if err != nil {
			b.Fatal(err)
		}
		s.sshdCPU += cpu
		log := srv.Log()
		s.conns += strings.Count(log, "Accepted publickey")
		s.sessions += strings.Count(log, "Starting session:")
	}
	if f.relays != nil {
		s.relayed = f.relays.settled(b)
	}
	if !probeFirst {
		s.pids = f.processCounters(b)
	}
	return s
}

// measure runs one phase and returns its cost; run does the phase's work
// and returns its wall time and the CPU it used on this side.
func (f *fleet) measure(b *testing.B, name string, run func() (wall, cpu time.Duration)) phase {
	before := f.take(b, true)
	wall, controller := run()
	b.StopTimer()
	after := f.take(b, false)
	b.StartTimer()
	p := phase{name: name, wall: wall, controllerCPU: controller, hosts: len(f.servers), roundTrips: -1,
		sshdCPU: after.sshdCPU - before.sshdCPU, conns: after.conns - before.conns, sessions: after.sessions - before.sessions}
	if f.relays != nil {
		p.roundTrips = after.relayed.Sub(before.relayed).RoundTrips()
	}
	// The PIDs after's probe used up to its shell are not the phase's.
	for i := range before.pids {
		p.procs += after.pids[i] - before.pids[i] - f.probeCost[i]
	}
	return p
}

// timed wraps a phase's work that returns the CPU it used with its wall
// time.
func timed(work func() time.Duration) func() (wall, cpu time.Duration) {
	return func() (time.Duration, time.Duration) {
		start := time.Now()
		cpu := work()
		return time.Since(start), cpu
	}
}

// processCounters asks each host's PID namespace for its newest PID: the
// shell of a probe session prints its own.
func (f *fleet) processCounters(b testing.TB) []int {
	out := make([]int, len(f.servers))
	f.each(b, func(i int, c *ssh.Client) error {
		s, err := c.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
		text, err := s.Output("echo $$")
		if err != nil {
			return err
		}
		out[i], err = strconv.Atoi(strings.TrimSpace(string(text)))
		return err
	})
	return out
}

// terraform runs the three phases through the CLI, then destroys.
func (f *fleet) terraform(b *testing.B, cli fleetCLI, bin string) []phase {
	terraform := devTerraform(b, cli.path, f.work, bin)
	if cli.states != nil {
		b.StopTimer()
		cli.useBackend(b, terraform, f.work, bin)
		b.StartTimer()
	}
	parallelism := fmt.Sprintf("-parallelism=%d", f.network.parallelism)
	// providerCPU is the last command's provider processes' CPU.
	var providerCPU time.Duration
	run := func(args ...string) (time.Duration, error) {
		cmd := terraform(append(args, parallelism)...)
		providerUsage := providerCPUOf(b, cmd, args[0])
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err != nil {
			return 0, fmt.Errorf("terraform %s: %v\n%s", args[0], err, out.String())
		}
		providerCPU = providerUsage()
		// wait4's usage covers terraform and the provider processes it ran.
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
	}
	must := func(args ...string) func() time.Duration {
		return func() time.Duration {
			cpu, err := run(args...)
			if err != nil {
				b.Fatal(err)
			}
			return cpu
		}
	}
	// phaseOf measures a terraform command as a phase, with the provider's
	// share of its CPU and, after an apply, the state it leaves, whose size
	// sets what Terraform spends writing it after each resource.
	phaseOf := func(name string, args ...string) phase {
		writes := cli.stateWrites(f.work)
		p := f.measure(b, name, timed(must(args...)))
		p.providerCPU = providerCPU
		p.stateWrites = cli.stateWrites(f.work) - writes
		if args[0] == "apply" {
			p.stateBytes = cli.stateBytes(b, f.work)
		}
		return p
	}
	f.variables(b, 1)
	phases := []phase{phaseOf("first", "apply", "-auto-approve")}
	phases = append(phases, phaseOf("noop", "plan", "-detailed-exitcode"))
	f.variables(b, 2)
	phases = append(phases, phaseOf("change", "apply", "-auto-approve"))
	if os.Getenv("KHA_BENCH_NO_REFRESH") != "" {
		f.variables(b, 3)
		phases = append(phases, phaseOf("norefresh", "apply", "-auto-approve", "-refresh=false"))
	}
	b.StopTimer()
	must("destroy", "-auto-approve")()
	b.StartTimer()
	return phases
}

// raw does the phases' work with x/crypto/ssh alone: the floor.
func (f *fleet) raw(b *testing.B) []phase {
	session := func(c *ssh.Client, cmd string, stdin string) error {
		s, err := c.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
		s.Stdin = strings.NewReader(stdin)
		if out, err := s.CombinedOutput(cmd); err != nil {
			return fmt.Errorf("%s: %v: %s", cmd, err, out)
		}
		return nil
	}
	path := func(i int) string { return f.dirs[i] + "/raw.cfg" }
	write := func(generation int) func(i int, c *ssh.Client) error {
		return func(i int, c *ssh.Client) error {
			if err := session(c, "sh -c '"+f.kind.rawWrite+"' - "+path(i), f.kind.rawConfig(generation)); err != nil {
				return err
			}
			return session(c, "sha256sum "+path(i), "")
		}
	}
	selfCPU := func(work func(i int, c *ssh.Client) error) func() (wall, cpu time.Duration) {
		return timed(func() time.Duration {
			var before, after syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			f.each(b, work)
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			return time.Duration(after.Utime.Nano()-before.Utime.Nano()) + time.Duration(after.Stime.Nano()-before.Stime.Nano())
		})
	}
	return []phase{
		f.measure(b, "first", selfCPU(write(1))),
		f.measure(b, "noop", selfCPU(func(i int, c *ssh.Client) error { return session(c, "sha256sum "+path(i), "") })),
		f.measure(b, "change", selfCPU(write(2))),
	}
}

// each dials every host, the network's parallelism at a time, and runs
// work on the connection.
func (f *fleet) each(b testing.TB, work func(i int, c *ssh.Client) error) {
	sem := make(chan struct{}, f.network.parallelism)
	var wg sync.WaitGroup
	errs := make(chan error, len(f.servers))
	for i, s := range f.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := ssh.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(f.ports[i])), &ssh.ClientConfig{User: testhost.UnprivilegedUser,
				Auth: []ssh.AuthMethod{ssh.PublicKeys(f.key.Signer)}, HostKeyCallback: ssh.FixedHostKey(s.HostKey.Signer.PublicKey()),
				HostKeyAlgorithms: []string{ssh.KeyAlgoED25519}})
			if err == nil {
				err = work(i, c)
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
}

// BenchmarkPlanScale times large configurations through the CLI:
// kha_cluster_endpoints with 3 control-plane nodes and 5,000 workers in
// each form (plan, apply, then a plan with refresh that finds nothing to
// do), a plan of 1,000 kha_haproxy_config for_each instances, and a
// 1,000-node cluster's whole configuration (scaleCluster). Metrics per
// phase: wall seconds, controller CPU seconds (terraform and the
// provider) and controller CPU milliseconds per resource.
func BenchmarkPlanScale(b *testing.B) {
	tf := terraformPath(b)
	bin := buildProvider(b)
	for _, c := range []struct {
		name      string
		resources int
		apply     bool
	}{{"endpoints_worker_nodes", 1, true}, {"endpoints_worker_addresses", 1, true}, {"haproxy_for_each", 1001, false}} {
		b.Run(c.name, func(b *testing.B) {
			work := b.TempDir()
			copyFixture(b, c.name, work)
			for b.Loop() {
				runScale(b, devTerraform(b, tf, work, bin), work, c.resources, c.apply)
			}
		})
	}
	benchmarkCluster(b, tf, bin)
}

// copyFixture puts a BenchmarkPlanScale fixture's main.tf into work.
func copyFixture(b *testing.B, name, work string) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "BenchmarkPlanScale", name, "main.tf"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "main.tf"), fixture, 0o600); err != nil {
		b.Fatal(err)
	}
}

// runScale plans, and with apply applies (its own plan included) and
// plans again (the no-op plan, with refresh: it must find nothing to do),
// reporting each phase. The state is then dropped rather than destroyed,
// which at thousands of resources takes longer than all three phases:
// whatever the resources put on hosts goes with the hosts.
func runScale(b *testing.B, terraform func(args ...string) *exec.Cmd, work string, resources int, apply bool) {
	run := func(phase string, args ...string) {
		cmd := terraform(args...)
		providerCPU := providerCPUOf(b, cmd, phase)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("terraform %s: %v\n%s", args[0], err, out)
		}
		wall, cpu := time.Since(start), cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime()
		b.ReportMetric(wall.Seconds(), phase+"-s")
		b.ReportMetric(cpu.Seconds(), phase+"-cpu-s")
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(resources), phase+"-cpu-ms/res")
		if provider := providerCPU(); provider > 0 {
			b.ReportMetric(provider.Seconds(), phase+"-provider-cpu-s")
		}
	}
	run("plan", "plan")
	if !apply {
		return
	}
	run("apply", "apply", "-auto-approve")
	run("noop", "plan", "-detailed-exitcode") // exit status 2: changes
	b.StopTimer()
	for _, name := range []string{"terraform.tfstate", "terraform.tfstate.backup"} {
		if err := os.Remove(filepath.Join(work, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			b.Fatal(err)
		}
	}
	b.StartTimer()
}
