package provider

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// relayProcess is BenchmarkFleet's relays (testhost.Delay), one in front
// of each host, in a process of their own: the floor counts its own
// process's CPU as the controller's, and what the relays do is the
// network's work. It answers each line on its stdin with a line of
// relayReading, one per host.
type relayProcess struct {
	in  io.WriteCloser
	out *json.Decoder
}

// relaySpec is what startRelays asks of the process, in relayVariable.
type relaySpec struct {
	RTT     time.Duration
	Targets []string
}

// relayReading is one relay's counters and the connections it carries.
type relayReading struct {
	Stats  testhost.RelayStats
	Active int
}

const relayVariable = "KHA_BENCH_RELAYS"

// startRelays runs a relay with rtt in front of each target until the
// benchmark ends and returns the relays' ports, in the targets' order.
func startRelays(b testing.TB, rtt time.Duration, targets []string) (*relayProcess, []int) {
	spec, err := json.Marshal(relaySpec{RTT: rtt, Targets: targets})
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFleetRelayProcess$", "-test.timeout=0")
	cmd.Env = append(os.Environ(), relayVariable+"="+string(spec))
	cmd.Stderr = os.Stderr
	// The relays die with the benchmark, even on a panic or a timeout kill.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	p := &relayProcess{in: in, out: json.NewDecoder(out)}
	var ports []int
	if err := p.out.Decode(&ports); err != nil || len(ports) != len(targets) {
		b.Fatalf("the relay process answered %v, %v; want %d ports", ports, err, len(targets))
	}
	return p, ports
}

// settled is the relays' counters, summed, once the connections they
// carry have ended: a phase's last flights are in.
func (p *relayProcess) settled(b testing.TB) testhost.RelayStats {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := io.WriteString(p.in, "\n"); err != nil {
			b.Fatal(err)
		}
		var readings []relayReading
		if err := p.out.Decode(&readings); err != nil {
			b.Fatal(err)
		}
		var sum testhost.RelayStats
		active := 0
		for _, r := range readings {
			sum, active = sum.Add(r.Stats), active+r.Active
		}
		if active == 0 {
			return sum
		}
		if time.Now().After(deadline) {
			b.Fatalf("the relays still carry %d connections after 10 s", active)
		}
	}
}

// TestFleetRelayProcess is not a test but the process startRelays runs;
// it skips unless relayVariable is set.
func TestFleetRelayProcess(t *testing.T) {
	t.Parallel()
	text := os.Getenv(relayVariable)
	if text == "" {
		t.Skip("BenchmarkFleet's relay process (startRelays)")
	}
	var spec relaySpec
	if err := json.Unmarshal([]byte(text), &spec); err != nil {
		t.Fatal(err)
	}
	var relays []*testhost.Relay
	var ports []int
	for _, target := range spec.Targets {
		r := testhost.Delay(t, target, spec.RTT)
		relays, ports = append(relays, r), append(ports, r.Port)
	}
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(ports); err != nil {
		t.Fatal(err)
	}
	for in := bufio.NewScanner(os.Stdin); in.Scan(); {
		readings := make([]relayReading, len(relays))
		for i, r := range relays {
			// Active first: with none, the counters read next are complete.
			readings[i].Active = r.Active()
			readings[i].Stats = r.Stats()
		}
		if err := out.Encode(readings); err != nil {
			t.Fatal(err)
		}
	}
}
