package provider

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fleetCLI is the CLI BenchmarkFleet drives the fleet with, and where it
// keeps the state: its local backend, or an http backend on loopback
// (stateServer), which persists the state as Terraform's remote backends
// do rather than after every resource instance.
type fleetCLI struct {
	// name is the level it adds to a sub-benchmark's name: "" adds none.
	name string
	path string
	// states is the http backend's server; nil keeps the state in
	// terraform.tfstate.
	states *stateServer
}

// fleetCLIs parses KHA_BENCH_CLI, a comma list of terraform, opentofu,
// terraform+http and opentofu+http, each found as scripts/terraform-cli.sh
// finds it; without it, the acceptance tests' CLI, adding no level.
func fleetCLIs(b *testing.B) []fleetCLI {
	list := os.Getenv("KHA_BENCH_CLI")
	if list == "" {
		return []fleetCLI{{path: terraformPath(b)}}
	}
	var states *stateServer
	var clis []fleetCLI
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		kind, backend, _ := strings.Cut(name, "+")
		if (kind != "terraform" && kind != "opentofu") || (backend != "" && backend != "http") {
			b.Fatalf("KHA_BENCH_CLI: %q is not terraform, opentofu, terraform+http or opentofu+http", name)
		}
		cli := fleetCLI{name: "/cli=" + name, path: cliPath(b, kind)}
		if backend == "http" {
			if states == nil {
				states = startStateServer(b)
			}
			cli.states = states
		}
		clis = append(clis, cli)
	}
	return clis
}

// cliPath is scripts/terraform-cli.sh's CLI of kind, refused when it is
// the other kind (the script falls back to OpenTofu without Terraform).
func cliPath(b *testing.B, kind string) string {
	out, err := exec.Command(filepath.Join("..", "..", "scripts", "terraform-cli.sh"), kind).Output()
	if err != nil {
		b.Fatalf("scripts/terraform-cli.sh %s: %v", kind, err)
	}
	path := strings.TrimSpace(string(out))
	version, err := exec.Command(path, "version").Output()
	if err != nil {
		b.Fatalf("%s version: %v", path, err)
	}
	if isTofu := bytes.Contains(version, []byte("OpenTofu")); isTofu != (kind == "opentofu") {
		b.Fatalf("KHA_BENCH_CLI asks for %s, but this machine has only %s", kind, path)
	}
	return path
}

// useBackend points the configuration in work at the http backend under a
// name of its own and initializes it. terraform init installs the
// provider from a filesystem mirror of bin, since dev_overrides (which
// the other commands keep using) make init look for it in a registry.
func (c fleetCLI) useBackend(b testing.TB, terraform func(args ...string) *exec.Cmd, work, bin string) {
	address := c.states.url + "/" + stateName(work)
	backend := fmt.Sprintf("terraform {\n  backend \"http\" {\n    address        = %q\n    lock_address   = %q\n    unlock_address = %q\n  }\n}\n",
		address, address, address)
	if err := os.WriteFile(filepath.Join(work, "backend.tf"), []byte(backend), 0o600); err != nil {
		b.Fatal(err)
	}
	mirror := filepath.Join(work, "mirror")
	for _, registry := range []string{"registry.terraform.io", "registry.opentofu.org"} {
		dir := filepath.Join(mirror, registry, "kha", "kha", "0.0.1", "linux_amd64")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(bin, "terraform-provider-kha"), filepath.Join(dir, "terraform-provider-kha_v0.0.1")); err != nil {
			b.Fatal(err)
		}
	}
	rc := filepath.Join(work, "init.tfrc")
	if err := os.WriteFile(rc, []byte(fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", mirror)), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := terraform("init")
	cmd.Env = append(cmd.Env, "TF_CLI_CONFIG_FILE="+rc)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("init with the http backend: %v\n%s", err, out)
	}
}

// stateBytes is the size of the state the CLI keeps for work.
func (c fleetCLI) stateBytes(b testing.TB, work string) int64 {
	if c.states != nil {
		return c.states.size(stateName(work))
	}
	info, err := os.Stat(filepath.Join(work, "terraform.tfstate"))
	if err != nil {
		b.Fatal(err)
	}
	return info.Size()
}

// stateServer is an http state backend on loopback, as a team runs one
// (GitLab's, or any of the REST backends Terraform's http backend speaks
// to): GET, POST and DELETE a state, LOCK and UNLOCK it.
type stateServer struct {
	url    string
	mu     sync.Mutex
	states map[string][]byte
	locks  map[string][]byte
	// writes counts each state's POSTs: how often the CLI persisted it.
	writes map[string]int
}

func startStateServer(b *testing.B) *stateServer {
	s := &stateServer{states: map[string][]byte{}, locks: map[string][]byte{}, writes: map[string]int{}}
	server := httptest.NewServer(s)
	b.Cleanup(server.Close)
	s.url = server.URL + "/state"
	return s
}

// stateName is the name the http backend keeps the state of the
// configuration in work under.
func stateName(work string) string { return filepath.Base(work) }

func (s *stateServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/state/")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		state, ok := s.states[name]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_, _ = w.Write(state)
	case http.MethodPost:
		s.states[name] = body
		s.writes[name]++
	case http.MethodDelete:
		delete(s.states, name)
	case "LOCK":
		if held, ok := s.locks[name]; ok {
			w.WriteHeader(http.StatusLocked)
			_, _ = w.Write(held)
			return
		}
		s.locks[name] = body
	case "UNLOCK":
		delete(s.locks, name)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func (s *stateServer) size(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.states[name]))
}

// stateWrites is how often the CLI has persisted the state kept for work
// in the http backend so far; 0 for a local backend, whose writes are not
// counted.
func (c fleetCLI) stateWrites(work string) int {
	if c.states == nil {
		return 0
	}
	c.states.mu.Lock()
	defer c.states.mu.Unlock()
	return c.states.writes[stateName(work)]
}
