package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// The examples under examples/resources are the documentation's, and each
// must survive plan, apply, a no-op plan and destroy as written. This test
// runs every examples/resources/*/resource.tf through the real CLI against
// throwaway sshd hosts: a plan without hosts tells which addresses the
// example delivers to (one test host each), then plan, apply, a plan that
// must be empty, each `terraform import` of its import.sh (into a copy of
// the state without that instance; the configuration must take it over in
// place), and destroy. Examples without a host (kha_cluster_endpoints) go
// through the same steps in the state only. A new example is covered
// without a change here; one that cannot run says why in exampleNeeds, or
// the test fails.
//
// What the test changes, always through Terraform's own override files
// (zz_test_override.tf, and zz_test.tf for what the example does not
// have), never by editing the example's text:
//
//   - Each `ssh` points at a test host: the example's own host expression
//     (each.value, a literal) picks it from local.kha_test_hosts, so every
//     address the example delivers to is a host of its own. host_key (when
//     pinned) becomes that host's key, user (when set) the sudo-capable
//     test user, a private key the test key; every other field stays as
//     written.
//   - The provider's default_ssh (the example's own, or examples/provider's
//     for examples without a provider block, as the documentation pairs
//     them) gets the test key, the test hosts' known_hosts and the test
//     user; the rest stays as written. An example whose resources bring
//     keys of their own gets no key from examples/provider, so that a key
//     destroy cannot use (a write-only private_key_wo) fails the test.
//   - reload_command, restart_command and destroy_command (written or by
//     default) act on this machine's services and kernel, which the test
//     hosts share: each becomes a command that records, on its host, that
//     it ran, and the test asserts the records.
//   - verify_after_reload and verify (the proof against live apiservers)
//     are turned off: no apiserver listens at the example's addresses.
//   - running_command is `true` where a resource watches its service:
//     the services are recorded, not run.
//
// Paths stay as written: each test host sees /etc through an overlay of
// its own (testhost.Options.Overlays), so /etc/haproxy/haproxy.cfg lands in
// that host's layer, and after destroy the layer must hold no file or
// directory the example created or changed, and the files the test put
// there first (exampleNeed.seeds) and the files the machine has that the
// example replaced (haproxy's packaged haproxy.cfg) must be as they were:
// on_destroy's default puts them back. Validate commands run as written, with
// the host's real haproxy, nginx, keepalived, systemd-analyze and sysctl.
//
// The CLI runs the built provider through dev_overrides (as
// TestPluginBinary does), not through terraform-plugin-testing: its state
// shim rejects for_each instances ("for_each is not supported"), and most
// examples use for_each.

// exampleNeed says what an example needs from its hosts besides what it
// writes itself, or why it is skipped.
type exampleNeed struct {
	// skip, when set, is why the example is not run.
	skip string
	// seeds are files the example expects on each of its hosts (made by
	// kubeadm or copied by other resources), by path.
	seeds map[string]func(t *testing.T) string
	// vars are values for the example's variables.
	vars map[string]string
	// replacedForGood are seeds that the example replaces and destroy
	// leaves replaced, by design, with where the host keeps the seed
	// instead, byte for byte: a file kha did not create is never lost.
	replacedForGood map[string]string
}

var exampleNeeds = map[string]exampleNeed{
	"kha_file": {vars: map[string]string{"bootstrap_token": "abcdef.0123456789abcdef"}},
	"kha_haproxy_config": {seeds: map[string]func(*testing.T) string{
		// The CA the external load balancer's health checks verify with
		// ("not on this host unless copied there").
		"/etc/haproxy/kubernetes-ca.crt": func(t *testing.T) string { return testhost.TestPKI(t).CAPEM },
	}},
	"kha_endpoint_configmaps": {seeds: map[string]func(*testing.T) string{
		// The node's admin.conf names a real kube-apiserver, where
		// kubeadm init's ConfigMaps are.
		"/etc/kubernetes/admin.conf": exampleEndpointCluster,
	}},
	"kha_apiserver_serving_certificate": {seeds: map[string]func(*testing.T) string{
		// kubeadm init's CA and serving pair (the proof against a live
		// apiserver is off).
		"/etc/kubernetes/pki/ca.crt":        func(t *testing.T) string { return testhost.TestPKI(t).CAPEM },
		"/etc/kubernetes/pki/ca.key":        func(t *testing.T) string { return testhost.TestPKI(t).CAKeyPEM(t) },
		"/etc/kubernetes/pki/apiserver.crt": func(t *testing.T) string { return testhost.TestPKI(t).ServerPEM(t, "crt") },
		"/etc/kubernetes/pki/apiserver.key": func(t *testing.T) string { return testhost.TestPKI(t).ServerPEM(t, "key") },
	}, replacedForGood: map[string]string{
		// Destroy leaves the re-issued certificate that clients rely on.
		"/etc/kubernetes/pki/apiserver.crt": "/etc/kubernetes/pki/.apiserver.crt.kha.previous/apiserver.crt",
		"/etc/kubernetes/pki/apiserver.key": "/etc/kubernetes/pki/.apiserver.crt.kha.previous/apiserver.key",
	}},
	"kha_handover": {seeds: map[string]func(*testing.T) string{
		"/etc/kubernetes/kubelet.conf": exampleKubeletConf,
	}},
	"kha_kubeconfig_server": {seeds: map[string]func(*testing.T) string{
		// kubeadm join's kubelet.conf, pointing at the first control-plane node.
		"/etc/kubernetes/kubelet.conf": exampleKubeletConf,
	}},
}

// exampleKubeletConf is a kubelet.conf as kubeadm join writes one.
func exampleKubeletConf(t *testing.T) string {
	pki := testhost.TestPKI(t)
	cert, key := nodeCredentials(t, pki)
	return nodeKubeconfig("https://10.0.0.11:6443", pki.CAPEM, cert, key)
}

const (
	examplesDir = "../../examples"
	// exampleRecordsDir is private to each test host; the recording
	// commands write there.
	exampleRecordsDir = "/run/kha-examples"
	exampleRecords    = exampleRecordsDir + "/commands.log"
)

// exampleCommands act on the host's services or kernel; the test records
// them instead.
var exampleCommands = []string{"reload_command", "restart_command", "destroy_command"}

// exampleOff are attributes the test turns off where an example leaves
// them on: proofs of a change against live apiservers (on when true), and
// checks of the example's network, which the test hosts are not on (on
// unless false).
var exampleOff = []struct {
	attr string
	on   func(v any, unknown bool) bool
}{
	{"verify_after_reload", isTrueOrUnknown},
	{"verify", isTrueOrUnknown},
	{"check_vip", func(v any, _ bool) bool { return v != false }},
}

func isTrueOrUnknown(v any, unknown bool) bool { return unknown || v == true }

func TestAccExamples_survivePlanApplyNoopDestroy(t *testing.T) {
	t.Parallel()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1")
	}
	tf := terraformPath(t)
	testhost.RequireSSHD(t)
	testhost.RequireUnprivilegedUser(t)
	files, err := filepath.Glob(filepath.Join(examplesDir, "resources", "*", "resource.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples under %s/resources (%v)", examplesDir, err)
	}
	names := map[string]bool{}
	for _, file := range files {
		names[filepath.Base(filepath.Dir(file))] = true
	}
	dirs, err := filepath.Glob(filepath.Join(examplesDir, "resources", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if !names[filepath.Base(dir)] {
			t.Errorf("%s has no resource.tf, so no test runs it", dir)
		}
	}
	for name := range exampleNeeds {
		if !names[name] {
			t.Errorf("exampleNeeds names %s, which is not an example", name)
		}
	}
	bin := buildProvider(t)
	for _, file := range files {
		name := filepath.Base(filepath.Dir(file))
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each example has hosts, directories and CLI runs of its own
			needs := exampleNeeds[name]
			if needs.skip != "" {
				t.Skip(needs.skip)
			}
			start := time.Now()
			newExampleRun(t, tf, bin, filepath.Dir(file), needs).run(t)
			t.Logf("plan, apply, no-op plan, imports and destroy in %s", time.Since(start).Round(10*time.Millisecond))
		})
	}
}

// exampleRun is one example on its test hosts.
type exampleRun struct {
	tf, bin, dir string
	// file is the example's file with its resources and provider block,
	// and examples the directory whose provider/provider.tf pairs with
	// it: examplesDir's, or a release's (the upgrade test).
	file, examples string
	// cli is the CLI configuration; empty, the CLI runs bin through
	// dev_overrides.
	cli   string
	needs exampleNeed

	src  []byte
	body *hclsyntax.Body
	// provider is the provider block the example's default_ssh comes
	// from, and ownProvider whether the example has it itself.
	provider    *hclsyntax.Block
	providerSrc []byte
	ownProvider bool
	key         testhost.Key
	// planned is the first plan's instances.
	planned []*tfjson.ResourceChange
	// hosts are the test hosts, by the example's address.
	hosts map[string]*testhost.Server
	// seeds are the files put on every host before the apply.
	seeds map[string]string
	// leaves are what destroy leaves changed on a host by design, by
	// address and change, with why.
	leaves map[string]map[testhost.Change]string
	// keyOnProvider gives the provider's default_ssh the test key even
	// where the example's resources bring keys of their own.
	keyOnProvider bool
	// systemctlStandIn leaves the example's commands as written (and the
	// defaults derived from them), and gives every host a systemctl that
	// records what it is asked (systemctlStandInScript) in place of
	// recording commands.
	systemctlStandIn bool
}

func newExampleRun(t *testing.T, tf, bin, dir string, needs exampleNeed) *exampleRun {
	return loadExample(t, &exampleRun{tf: tf, bin: bin, dir: dir, file: "resource.tf", examples: examplesDir, needs: needs})
}

// loadExample reads r's example and its provider block.
func loadExample(t *testing.T, r *exampleRun) *exampleRun {
	r.key, r.hosts = testhost.NewKey(t), map[string]*testhost.Server{}
	r.src, r.body = parseHCL(t, filepath.Join(r.dir, r.file))
	r.provider, r.providerSrc, r.ownProvider = providerBlock(r.body), r.src, true
	if r.provider == nil {
		var body *hclsyntax.Body
		r.providerSrc, body = parseHCL(t, filepath.Join(r.examples, "provider", "provider.tf"))
		r.provider, r.ownProvider = providerBlock(body), false
		if r.provider == nil {
			t.Fatal(`examples/provider/provider.tf has no provider "kha" block`)
		}
	}
	return r
}

func (r *exampleRun) run(t *testing.T) {
	// The example as written but for the provider's key and trust, planned
	// without any host: which addresses it delivers to, and what it runs
	// there.
	discovery := r.writeConfig(t, "discovery", r.discoveryFiles(t))
	r.planned = r.planJSON(t, discovery).ResourceChanges
	r.startHosts(t)

	dir := r.writeConfig(t, "hosts", r.hostFiles(t))
	r.terraform(t, dir, "plan", "-out=tfplan")
	r.terraform(t, dir, "apply", "tfplan")
	applied := r.stateJSON(t, dir)
	recorded := r.checkApplied(t, applied)

	plan := r.planJSON(t, dir)
	var resp plancheck.CheckPlanResponse
	plancheck.ExpectEmptyPlan().CheckPlan(context.Background(), plancheck.CheckPlanRequest{Plan: plan}, &resp)
	if resp.Error != nil {
		t.Fatalf("the plan after apply is not empty: %v\n%s", resp.Error, r.terraform(t, dir, "show", "-no-color", "tfplan"))
	}

	r.checkImports(t, dir, applied)

	r.terraform(t, dir, "destroy", "-auto-approve")
	r.checkDestroyed(t, recorded)
}

func providerBlock(body *hclsyntax.Body) *hclsyntax.Block {
	for _, b := range body.Blocks {
		if b.Type == "provider" && len(b.Labels) == 1 && b.Labels[0] == "kha" {
			return b
		}
	}
	return nil
}

func parseHCL(t *testing.T, file string) ([]byte, *hclsyntax.Body) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := hclsyntax.ParseConfig(src, file, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		t.Fatalf("%s: not native HCL syntax", file)
	}
	return src, body
}

// terraform runs the CLI in dir with the built provider and the example's
// variables, and returns its output; it fails the test when the CLI fails.
func (r *exampleRun) terraform(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	rc := filepath.Join(dir, "..", "cli.tfrc")
	if _, err := os.Stat(rc); err != nil {
		text := r.cli
		if text == "" {
			// The examples name no source: the CLI takes them as
			// hashicorp/kha (examples/provider names kha/kha).
			text = fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"hashicorp/kha\" = %[1]q\n    \"kha/kha\" = %[1]q\n  }\n  direct {}\n}\n", r.bin)
		}
		if err := os.WriteFile(rc, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if slices.Contains([]string{"init", "plan", "apply", "import", "destroy"}, args[0]) {
		args = append([]string{args[0], "-input=false", "-no-color"}, args[1:]...)
	}
	cmd := exec.CommandContext(ctx, r.tf, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	for name, value := range r.needs.vars {
		cmd.Env = append(cmd.Env, "TF_VAR_"+name+"="+value)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("terraform %s: %s", strings.Join(args, " "), time.Since(start).Round(10*time.Millisecond))
	if err != nil {
		t.Fatalf("terraform %s in %s: %v\n%s%s", strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

func (r *exampleRun) planJSON(t *testing.T, dir string) *tfjson.Plan {
	t.Helper()
	r.terraform(t, dir, "plan", "-out=tfplan")
	var plan tfjson.Plan
	if err := json.Unmarshal(r.terraform(t, dir, "show", "-json", "tfplan"), &plan); err != nil {
		t.Fatal(err)
	}
	return &plan
}

func (r *exampleRun) stateJSON(t *testing.T, dir string) *tfjson.State {
	t.Helper()
	var state tfjson.State
	if err := json.Unmarshal(r.terraform(t, dir, "show", "-json"), &state); err != nil {
		t.Fatal(err)
	}
	if state.Values == nil {
		state.Values = &tfjson.StateValues{RootModule: &tfjson.StateModule{}}
	}
	return &state
}

// startHosts starts a test host for each address the plan delivers to,
// with the example's seeds.
func (r *exampleRun) startHosts(t *testing.T) {
	t.Helper()
	for _, rc := range r.planned {
		after, _ := rc.Change.After.(map[string]any)
		ssh, _ := after["ssh"].(map[string]any)
		if ssh == nil {
			continue
		}
		host, _ := ssh["host"].(string)
		if host == "" {
			t.Fatalf("%s: an ssh without a host the test can stand in for", rc.Address)
		}
		if r.hosts[host] != nil {
			continue
		}
		r.startHost(t, host, testhost.Options{})
	}
}

// startHost starts the test host for an address of the example, with
// the example's seeds; opts add to what every test host has.
func (r *exampleRun) startHost(t *testing.T, address string, opts testhost.Options) *testhost.Server {
	t.Helper()
	if r.seeds == nil {
		r.seeds = map[string]string{}
		for path, content := range r.needs.seeds {
			r.seeds[path] = content(t)
		}
	}
	opts.Overlays, opts.PrivateDir, opts.AuthorizedKeys = []string{"/etc"}, exampleRecordsDir, []string{r.key.Public()}
	if r.systemctlStandIn {
		opts.Overlays = append(opts.Overlays, filepath.Dir(systemctlPath))
		r.seeds[systemctlPath] = systemctlStandInScript
	}
	s := testhost.Start(t, opts)
	r.hosts[address] = s
	for path, content := range r.seeds {
		if err := os.MkdirAll(filepath.Dir(s.HostPath(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o600)
		if path == systemctlPath {
			mode = 0o755
		}
		if err := os.WriteFile(s.HostPath(path), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// systemctlStandInScript is systemd for hosts that have none: the commands the
// examples write and kha derives (systemctl reload-or-restart UNIT,
// systemctl disable --now UNIT) are recorded in systemctlRecords, and
// every unit is active. It lies first on the PATH of a session, and of
// sudo's secure_path.
const (
	systemctlPath          = "/usr/local/sbin/systemctl"
	systemctlRecords       = exampleRecordsDir + "/systemctl.log"
	systemctlStandInScript = "#!/bin/sh\n# The test's stand-in for systemd: it records what it is asked, and every unit is active.\n" +
		"echo \"$*\" >>" + systemctlRecords + "\n[ \"$1\" != is-active ] || echo active\n"
)

// writeConfig copies the example's directory and adds files.
func (r *exampleRun) writeConfig(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for file, content := range files {
		if content == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// discoveryFiles: the provider's default_ssh with the test key and trust
// on first use (no host is known yet, and planning connects to none).
func (r *exampleRun) discoveryFiles(t *testing.T) map[string]string {
	files := r.providerFiles(t, map[string]string{"insecure_trust_on_first_use": "true"})
	files["zz_test_override.tf"] += r.resourceOverrides(t, true)
	return files
}

// hostFiles: the provider's default_ssh for the test hosts, the test host
// of each address, and every resource's ssh, commands and proofs.
func (r *exampleRun) hostFiles(t *testing.T) map[string]string {
	var hosts, knownHosts strings.Builder
	for _, a := range r.addresses() {
		s := r.hosts[a]
		fmt.Fprintf(&hosts, "    %s = { host = %s, port = %d, host_key = %s }\n", hclString(a), hclString(s.Host), s.Port, hclString(s.HostKey.Public()))
		knownHosts.WriteString(s.KnownHosts())
	}
	files := r.providerFiles(t, map[string]string{"known_hosts": hclString(knownHosts.String())})
	files["zz_test.tf"] += "\n# The test host that stands for each address of the example.\nlocals {\n  kha_test_hosts = {\n" + hosts.String() + "  }\n}\n"
	files["zz_test_override.tf"] += r.resourceOverrides(t, false)
	return files
}

// providerFiles writes the provider block: the example's default_ssh with
// the test user and key where it has a user and a key, and the fields of
// set. An example that gives its resources keys of their own gets no key
// from examples/provider: destroy must work with the credentials the
// example gives it.
func (r *exampleRun) providerFiles(t *testing.T, set map[string]string) map[string]string {
	t.Helper()
	items := map[string]string{}
	if attr := r.provider.Body.Attributes["default_ssh"]; attr != nil {
		obj, ok := attr.Expr.(*hclsyntax.ObjectConsExpr)
		if !ok {
			t.Fatalf("the provider's default_ssh is not an object: %s", exprText(r.providerSrc, attr.Expr))
		}
		for _, item := range obj.Items {
			switch name := objectKey(t, item); name {
			case "user":
				items[name] = hclString(testhost.UnprivilegedUser)
			case "private_key":
				if r.ownProvider || r.keyOnProvider || !r.resourceKeys(t) {
					items[name] = hclString(r.key.PEM)
				}
			case "known_hosts":
			default:
				items[name] = exprText(r.providerSrc, item.ValueExpr)
			}
		}
	}
	for k, v := range set {
		items[k] = v
	}
	block := "provider \"kha\" {\n  default_ssh = {\n" + objectItems(items, "    ") + "  }\n}\n"
	if r.ownProvider {
		return map[string]string{"zz_test_override.tf": block, "zz_test.tf": ""}
	}
	return map[string]string{"zz_test_override.tf": "", "zz_test.tf": "# examples/provider's provider configuration.\n" + block}
}

// resourceOverrides: for every resource of the example with an ssh, its
// ssh on the test host, recording commands and no proofs. Before the
// hosts exist (discovery), only the keys in its ssh are the test's.
func (r *exampleRun) resourceOverrides(t *testing.T, discovery bool) string {
	var b strings.Builder
	for _, block := range r.body.Blocks {
		if block.Type != "resource" || len(block.Labels) != 2 {
			continue
		}
		typ, name := block.Labels[0], block.Labels[1]
		instances := r.instancesOf(typ, name)
		attr := block.Body.Attributes["ssh"]
		if attr == nil || len(instances) == 0 && !discovery {
			continue
		}
		fmt.Fprintf(&b, "\nresource %q %q {\n  ssh = {\n%s  }\n", typ, name, objectItems(r.testSSH(t, typ+"."+name, attr.Expr, discovery), "    "))
		label := typ + "." + name
		switch {
		case block.Body.Attributes["for_each"] != nil:
			label += `[\"${each.key}\"]`
		case block.Body.Attributes["count"] != nil:
			label += "[${count.index}]"
		}
		for _, command := range exampleCommands {
			if !r.systemctlStandIn && plannedAny(instances, command, func(v any, unknown bool) bool { return unknown || v != nil && v != "" }) {
				fmt.Fprintf(&b, "  %s = \"echo '%s %s' >>%s\"\n", command, label, command, exampleRecords)
			}
		}
		for _, off := range exampleOff {
			if plannedAny(instances, off.attr, off.on) {
				fmt.Fprintf(&b, "  %s = false\n", off.attr)
			}
		}
		// The services are recorded, not run: they count as running.
		if plannedAny(instances, "service_running", func(any, bool) bool { return true }) {
			b.WriteString("  running_command = \"true\"\n")
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// testSSH is a resource's ssh with its host's test host in place of the
// example's address, host key, user and key; the other fields as written.
// For discovery, only the keys are the test's.
func (r *exampleRun) testSSH(t *testing.T, resource string, expr hclsyntax.Expression, discovery bool) map[string]string {
	obj, ok := expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		t.Fatalf("%s: ssh is not an object: %s", resource, exprText(r.src, expr))
	}
	written, items := map[string]string{}, map[string]string{}
	for _, item := range obj.Items {
		key, value := objectKey(t, item), exprText(r.src, item.ValueExpr)
		written[key], items[key] = value, value
		switch key {
		case "private_key", "private_key_wo":
			written[key], items[key] = hclString(r.key.PEM), hclString(r.key.PEM)
		case "password", "password_wo", "known_hosts", "certificate", "agent", "agent_identity",
			"bastion_host", "bastion_port", "bastion_user", "bastion_private_key", "bastion_private_key_wo", "bastion_host_key":
			t.Fatalf("%s: the test does not stand in for ssh.%s yet", resource, key)
		}
	}
	host := written["host"]
	if host == "" {
		t.Fatalf("%s: ssh has no host", resource)
	}
	if discovery {
		return written
	}
	test := "local.kha_test_hosts[" + host + "]"
	items["host"], items["port"] = test+".host", test+".port"
	if _, pinned := items["host_key"]; pinned {
		items["host_key"] = test + ".host_key"
	}
	if _, set := items["user"]; set {
		items["user"] = hclString(testhost.UnprivilegedUser)
	}
	return items
}

// resourceKeys: whether a resource of the example has a key of its own.
func (r *exampleRun) resourceKeys(t *testing.T) bool {
	for _, block := range r.body.Blocks {
		if attr := block.Body.Attributes["ssh"]; block.Type == "resource" && attr != nil {
			if obj, ok := attr.Expr.(*hclsyntax.ObjectConsExpr); ok {
				for _, item := range obj.Items {
					if key := objectKey(t, item); key == "private_key" || key == "private_key_wo" {
						return true
					}
				}
			}
		}
	}
	return false
}

// instancesOf are the planned instances of a resource.
func (r *exampleRun) instancesOf(typ, name string) []*tfjson.ResourceChange {
	var instances []*tfjson.ResourceChange
	for _, rc := range r.planned {
		if rc.Type == typ && rc.Name == name && rc.Mode == tfjson.ManagedResourceMode {
			instances = append(instances, rc)
		}
	}
	return instances
}

// plannedAny: whether the planned value of attr (or its being unknown)
// passes for any instance.
func plannedAny(instances []*tfjson.ResourceChange, attr string, pass func(v any, unknown bool) bool) bool {
	for _, rc := range instances {
		after, _ := rc.Change.After.(map[string]any)
		unknown, _ := rc.Change.AfterUnknown.(map[string]any)
		if v, has := after[attr]; has && pass(v, false) || unknown[attr] == true && pass(nil, true) {
			return true
		}
	}
	return false
}

func objectKey(t *testing.T, item hclsyntax.ObjectConsItem) string {
	t.Helper()
	key := hcl.ExprAsKeyword(item.KeyExpr)
	if key == "" {
		t.Fatalf("a field name that is not a plain name at %s", item.KeyExpr.Range())
	}
	return key
}

func exprText(src []byte, expr hclsyntax.Expression) string {
	rng := expr.Range()
	return string(src[rng.Start.Byte:rng.End.Byte])
}

// objectItems writes object items, sorted, one a line.
func objectItems(items map[string]string, indent string) string {
	keys := make([]string, 0, len(items))
	for k := range items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s%s = %s\n", indent, k, items[k])
	}
	return b.String()
}

// hclString quotes s as an HCL string with no templates.
func hclString(s string) string {
	return strings.NewReplacer("${", "$${", "%{", "%%{").Replace(strconv.Quote(s))
}

// stateInstances are the managed instances of a state, by address.
func stateInstances(state *tfjson.State) map[string]*tfjson.StateResource {
	instances := map[string]*tfjson.StateResource{}
	for _, rs := range state.Values.RootModule.Resources {
		if rs.Mode == tfjson.ManagedResourceMode {
			instances[rs.Address] = rs
		}
	}
	return instances
}

// hostOf is the test host an instance of the state delivered to.
func (r *exampleRun) hostOf(rs *tfjson.StateResource) (*testhost.Server, error) {
	ssh, _ := rs.AttributeValues["ssh"].(map[string]any)
	host, _ := ssh["host"].(string)
	if host == "" {
		return nil, nil
	}
	port, _ := ssh["port"].(float64)
	for _, s := range r.hosts {
		if s.Host == host && s.Port == int(port) {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%s: delivered to %s:%v, which is no test host", rs.Address, host, port)
}

// checkApplied: the reload and restart commands of every instance ran on
// its host. It returns the destroy commands' records to look for later.
func (r *exampleRun) checkApplied(t *testing.T, state *tfjson.State) map[*testhost.Server][]string {
	t.Helper()
	destroys := map[*testhost.Server][]string{}
	for addr, rs := range stateInstances(state) {
		s, err := r.hostOf(rs)
		if err != nil {
			t.Error(err)
		}
		if s == nil {
			continue
		}
		for _, command := range exampleCommands {
			if v, _ := rs.AttributeValues[command].(string); !strings.Contains(v, exampleRecords) {
				continue
			}
			if record := addr + " " + command; command == "destroy_command" {
				destroys[s] = append(destroys[s], record)
			} else {
				expectRan(t, s, record)
			}
		}
	}
	r.changes(t, "applied")
	return destroys
}

// expectRan: the recording command of record ran on s.
func expectRan(t *testing.T, s *testhost.Server, record string) {
	t.Helper()
	b, err := os.ReadFile(s.HostPath(exampleRecords))
	if err != nil || !slices.Contains(strings.Split(string(b), "\n"), record) {
		t.Errorf("%s did not run on its host (%v)", record, err)
		return
	}
	t.Logf("ran: %s", record)
}

// changes are what the sessions of each host changed under /etc, by the
// example's address; they are logged.
func (r *exampleRun) changes(t *testing.T, when string) map[string][]testhost.Change {
	t.Helper()
	all := map[string][]testhost.Change{}
	for _, address := range r.addresses() {
		changes, err := r.hosts[address].OverlayChanges()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s on %s: %v", when, address, changes)
		all[address] = changes
	}
	return all
}

// addresses are the example's addresses with a test host, sorted.
func (r *exampleRun) addresses() []string {
	addresses := make([]string, 0, len(r.hosts))
	for a := range r.hosts {
		addresses = append(addresses, a)
	}
	sort.Strings(addresses)
	return addresses
}

// checkDestroyed: every destroy command ran, and no host keeps a file the
// example created; the seeds are as they were.
func (r *exampleRun) checkDestroyed(t *testing.T, destroys map[*testhost.Server][]string) {
	t.Helper()
	for s, records := range destroys {
		for _, record := range records {
			expectRan(t, s, record)
		}
	}
	changes := r.changes(t, "after destroy")
	for _, address := range r.addresses() {
		kept := map[string]bool{}
		for path, seed := range r.seeds {
			at := path
			if keptAt, ok := r.needs.replacedForGood[path]; ok {
				at, kept[keptAt], kept[filepath.Dir(keptAt)] = keptAt, true, true
			}
			if b, err := os.ReadFile(r.hosts[address].HostPath(at)); err != nil || string(b) != seed {
				t.Errorf("%s: %s, there before the apply, is not as it was at %s (%v)", address, path, at, err)
			}
		}
		for _, c := range changes[address] {
			_, seeded := r.seeds[c.Path]
			switch {
			case c.Kind == testhost.ModifiedSame: // a file put back where it was, byte for byte
			case seeded && c.Kind == testhost.Added: // compared above
			case kept[c.Path] && (c.Kind == testhost.Added || c.Kind == testhost.AddedDir): // compared above
			case c.Kind == testhost.AddedDir && r.seedsUnder(c.Path): // the test's own, for a seed
			case c.Kind == testhost.Removed && filepath.Base(c.Path) == ".kha-lock":
				// An older kha's block lock left on this machine, which
				// kha now removes after each change.
			case r.leaves[address][c] != "":
				t.Logf("%s after destroy: %s, as %s", address, c, r.leaves[address][c])
			default:
				t.Errorf("%s after destroy: %s", address, c)
			}
		}
	}
}

// seedsUnder says whether a seed lies under dir.
func (r *exampleRun) seedsUnder(dir string) bool {
	for path := range r.seeds {
		if strings.HasPrefix(path, dir+"/") {
			return true
		}
	}
	return false
}

// importLine is a line of an example's import.sh.
var importLine = regexp.MustCompile(`^terraform import ('[^']+'|\S+) (\S+)$`)

// checkImports imports each instance the example's import.sh names, by
// its ID with the example's address in it replaced by its test host's,
// into a copy of the applied state without it; the configuration must
// then take it over in place. (Import records the digest of the file the
// ID names, so a resource of several files plans an update.)
func (r *exampleRun) checkImports(t *testing.T, dir string, applied *tfjson.State) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, "import.sh"))
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	instances := stateInstances(applied)
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := importLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("import.sh: %q is not `terraform import ADDRESS ID`", line)
		}
		addr, id := strings.Trim(m[1], "'"), m[2]
		host, rest, _ := strings.Cut(id, ":")
		_, path, ok := strings.Cut(rest, ":")
		s := r.hosts[host]
		if !ok || s == nil || instances[addr] == nil {
			t.Errorf("import.sh imports %s as %s, but the example delivers no such instance to %s", addr, id, host)
			continue
		}
		// The applied state without the instance, as after a
		// `terraform state rm` or before the first apply of a
		// configuration for files that are already there.
		into := r.writeConfig(t, "import", map[string]string{})
		for _, f := range []string{"zz_test.tf", "zz_test_override.tf", "terraform.tfstate"} {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
				if err := os.WriteFile(filepath.Join(into, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		r.terraform(t, into, "state", "rm", addr)
		r.terraform(t, into, "import", addr, s.Address()+":"+path)
		if stateInstances(r.stateJSON(t, into))[addr] == nil {
			t.Errorf("import of %s as %s left no %s in the state", addr, id, addr)
			continue
		}
		// The configuration takes the imported instance over in place.
		for _, rc := range r.planJSON(t, into).ResourceChanges {
			if rc.Address == addr && !rc.Change.Actions.NoOp() && !rc.Change.Actions.Update() {
				t.Errorf("after the import of %s, the plan would %v it", addr, rc.Change.Actions)
			}
		}
	}
}
