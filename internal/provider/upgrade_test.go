package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/kha/terraform-provider-kha/internal/testhost"
	"github.com/kha/terraform-provider-kha/test/install"
)

// The upgrade from the last release to this build, as a user makes it:
// every configuration the release documented (examples/quickstart,
// examples/ha-cluster and every example under examples/resources, as the
// release had them) is applied to test hosts by the release, the version
// constraint then names this build and `terraform init -upgrade` installs
// it, both from one filesystem mirror (scripts/upgrade-mirror.sh, make
// test-upgrade). The first plan after the upgrade must make exactly the
// changes CHANGELOG.md announces (upgrade_expectations_test.go, each with
// its entry), no replacement, no destroy; its apply, a plan with no change
// and a destroy follow, and the hosts must then be as they were before the
// release's apply, but for what the CHANGELOG says destroy does with what
// the release applied (leaveByDesign).
//
// The hosts, and what the test changes in the examples, are the examples
// test's (exampleRun): each address is a test host that sees /etc through
// an overlay of its own, with the distribution's files (haproxy.cfg,
// nginx.conf, /etc/hosts) and kubeadm's where an example expects them.
// The examples' commands run as written, so that the defaults this build
// derives from them run too, against a systemctl that records what it is
// asked (systemctlStandInScript): the hosts share this machine's services.

// releaseUpgrade is what make test-upgrade hands the test.
type releaseUpgrade struct {
	tf string
	// mirror holds both builds; from is the release's version, to this
	// build's, examples the release's examples/.
	mirror, from, to, examples string
}

func openReleaseUpgrade(t *testing.T) *releaseUpgrade {
	t.Helper()
	testhost.Real(t, "a release build, sshd and the Terraform CLI")
	u := &releaseUpgrade{mirror: os.Getenv("KHA_UPGRADE_MIRROR"), from: os.Getenv("KHA_UPGRADE_FROM"),
		to: os.Getenv("KHA_UPGRADE_TO"), examples: os.Getenv("KHA_UPGRADE_FROM_SOURCE")}
	if u.mirror == "" || u.from == "" || u.to == "" || u.examples == "" {
		install.Required(t, "KHA_UPGRADE_MIRROR, KHA_UPGRADE_FROM, KHA_UPGRADE_TO and KHA_UPGRADE_FROM_SOURCE are not set "+
			"(make test-upgrade sets them: eval \"$(scripts/upgrade-mirror.sh DIR)\")")
	}
	u.examples = filepath.Join(u.examples, "examples")
	u.tf = terraformPath(t)
	testhost.RequireSSHD(t)
	testhost.RequireUnprivilegedUser(t)
	return u
}

func TestReleaseUpgrade(t *testing.T) {
	u := openReleaseUpgrade(t)
	files, err := filepath.Glob(filepath.Join(u.examples, "resources", "*", "resource.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples under %s/resources (%v)", u.examples, err)
	}
	runs := map[string]func(t *testing.T){
		"quickstart": u.quickstart,
		"ha-cluster": u.haCluster,
	}
	for _, file := range files {
		name := filepath.Base(filepath.Dir(file))
		runs[name] = func(t *testing.T) {
			r := u.exampleRun(t, filepath.Dir(file), "resource.tf", exampleNeeds[name])
			adapted := releaseExampleAdaptations[u.from][name]
			r.keyOnProvider = adapted.keyOnProvider
			u.discoverHosts(t, r, adapted.files)
			u.run(t, r, withFiles(r.hostFiles(t), adapted.files))
		}
	}
	// Every example run: the tables say what an upgrade does, so an entry
	// none of them needed is stale.
	var mu sync.Mutex
	ran := 0
	t.Cleanup(func() {
		if ran == len(runs) {
			u.checkUpgradeTablesSeen(t)
		}
	})
	upgradeSeen.reset()
	for _, name := range sortedKeys(runs) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			runs[name](t)
			mu.Lock()
			ran++
			mu.Unlock()
			t.Logf("%s: the release's apply, the upgrade, its plan and apply, a plan and destroy in %s", name, time.Since(start).Round(time.Second))
		})
	}
}

// The release's section of CHANGELOG.md is what the release shipped: an
// entry filed there since reads as the release's to a user upgrading from
// it, who then misses the change.
func TestReleaseUpgrade_changelogKeepsTheRelease(t *testing.T) {
	u := openReleaseUpgrade(t)
	ours, err := readChangelog("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := readChangelog(filepath.Join(filepath.Dir(u.examples), "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	shipped := map[string]bool{}
	for _, e := range theirs {
		if e.section == u.from {
			shipped[e.text] = true
		}
	}
	for _, e := range ours {
		if e.section == u.from && !shipped[e.text] {
			t.Errorf("CHANGELOG.md files under [%s] what %s did not ship (its CHANGELOG.md has no such entry): %.160s", u.from, u.from, e.text)
		}
	}
}

// quickstart is the release's examples/quickstart with its worker set, as
// make demo sets it: the worker's node-local HAProxy replaces the
// distribution's haproxy.cfg and runs, started and reloaded by its
// commands, on a test host in a network namespace of its own (HAProxy
// binds 6443 and 8081 there), with kubeadm's CA in place.
func (u *releaseUpgrade) quickstart(t *testing.T) {
	pki := testhost.TestPKI(t)
	r := u.exampleRun(t, filepath.Join(u.examples, "quickstart"), "main.tf", exampleNeed{
		seeds: map[string]func(*testing.T) string{"/etc/kubernetes/pki/ca.crt": func(*testing.T) string { return pki.CAPEM }}})
	net := testhost.NewNetHost(t)
	s := r.startHost(t, "10.0.0.21", testhost.Options{NetNS: net.NS, ListenAddress: net.Addr})
	key := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(key, []byte(r.key.PEM), 0o600); err != nil {
		t.Fatal(err)
	}
	const pid = "/etc/haproxy/haproxy.pid"
	worker := map[string]string{
		"host": hclString(s.Host), "port": fmt.Sprint(s.Port), "host_key": hclString(s.HostKey.Public()),
		"private_key_file": hclString(key), "config_dir": hclString("/etc/haproxy"), "ca_file": hclString("/etc/kubernetes/pki/ca.crt"),
		// make demo's commands.
		"reload_command": hclString("if [ -s " + pid + " ] && kill -0 $(cat " + pid + ") 2>/dev/null; then kill -USR2 $(cat " + pid + "); " +
			"else haproxy -W -D -f /etc/haproxy/haproxy.cfg; fi"),
		"destroy_command": hclString("[ ! -s " + pid + " ] || kill $(cat " + pid + "); rm -f " + pid),
	}
	r.needs.vars = map[string]string{"worker": "{\n" + objectItems(worker, "  ") + "}"}
	u.run(t, r, map[string]string{"zz_test_override.tf": `resource "kha_haproxy_config" "worker" {
  verify_after_reload = false # no apiserver answers at the example's addresses
}
`})
}

// haCluster is the release's examples/ha-cluster in local_lb mode, the
// mode make e2e starts in: three control-plane nodes, a worker on HAProxy
// and one on nginx, which hold the VIP too, each a test host with
// kubeadm's kubelet.conf and CA in place.
func (u *releaseUpgrade) haCluster(t *testing.T) {
	pki := testhost.TestPKI(t)
	r := u.exampleRun(t, filepath.Join(u.examples, "ha-cluster"), "main.tf", exampleNeed{
		seeds: map[string]func(*testing.T) string{
			"/etc/kubernetes/kubelet.conf": exampleKubeletConf,
			"/etc/kubernetes/pki/ca.crt":   func(*testing.T) string { return pki.CAPEM },
		},
		vars: map[string]string{
			"control_plane_nodes": `[{ name = "cp1", ip = "10.0.0.11" }, { name = "cp2", ip = "10.0.0.12" }, { name = "cp3", ip = "10.0.0.13" }]`,
			"worker_nodes":        `[{ name = "w1", ip = "10.0.0.21" }, { name = "w2", ip = "10.0.0.22", local_lb = "nginx" }]`,
			"lb_nodes":            `[{ name = "w1", ip = "10.0.0.21", priority = 150 }, { name = "w2", ip = "10.0.0.22", priority = 100 }]`,
			"vip":                 "10.0.0.100",
			// The provider's key and known_hosts are the test's; the user
			// is the test user, which needs sudo.
			"ssh_user": testhost.UnprivilegedUser, "ssh_private_key_file": "/dev/null", "ssh_known_hosts_file": "/dev/null",
		},
	})
	// No apiserver runs, so there is no live certificate to check the
	// plan against (as make e2e's first plan, before the cluster exists).
	noLiveCertificate := map[string]string{"zz_test.auto.tfvars.json": `{"apiserver_certificate_path": null}`}
	u.discoverHosts(t, r, noLiveCertificate)
	u.run(t, r, withFiles(r.hostFiles(t), noLiveCertificate))
}

// releaseExampleAdaptation is what an example of the release needs, beyond
// its exampleNeeds, to plan and be destroyed as a user could: the release
// had examples that did neither as written (CHANGELOG, "Examples that did
// not plan as written"), which later examples fixed.
type releaseExampleAdaptation struct {
	// files are added to the example's directory.
	files map[string]string
	// keyOnProvider: the provider's default_ssh has the test key.
	keyOnProvider bool
}

// releaseExampleAdaptations are by release, then by example.
var releaseExampleAdaptations = map[string]map[string]releaseExampleAdaptation{"0.1.0": {
	// The example read a haproxy.cfg it did not ship, now beside it; and
	// with the key on the resource alone (private_key_wo), destroy failed
	// with "No Credentials to Remove Files": the example keeps it on the
	// provider's default_ssh since.
	"kha_file": {files: map[string]string{"haproxy.cfg": readExample("kha_file/haproxy.cfg")}, keyOnProvider: true},
	// The cluster had no worker, so the node-local load balancer had
	// nothing to listen on; the example has one since.
	"kha_nginx_config": {files: map[string]string{"zz_upgrade_adapt_override.tf": `resource "kha_cluster_endpoints" "cluster" {
  worker_nodes = [{ name = "w1", ip = "10.0.0.21" }]
}
`}},
}}

// readExample is a file of this tree's examples/resources.
func readExample(path string) string {
	b, err := os.ReadFile(filepath.Join(examplesDir, "resources", path))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// exampleRun is an example of the release, run through the mirror.
func (u *releaseUpgrade) exampleRun(t *testing.T, dir, file string, needs exampleNeed) *exampleRun {
	return loadExample(t, &exampleRun{tf: u.tf, dir: dir, file: file, examples: u.examples,
		cli: install.FilesystemMirrorConfig(u.mirror), needs: needs, systemctlStandIn: true})
}

// discoverHosts plans the example with the release and no host, and
// starts a test host for each address it delivers to.
func (u *releaseUpgrade) discoverHosts(t *testing.T, r *exampleRun, files map[string]string) {
	t.Helper()
	discovery := r.writeConfig(t, "discovery", withFiles(r.discoveryFiles(t), files, u.pin(r, u.from)))
	r.terraform(t, discovery, "init")
	r.planned = r.planJSON(t, discovery).ResourceChanges
	r.startHosts(t)
}

// pin names kha/kha at version: an override of the configuration's own
// requirement, or the requirement of an example that has none (the CLI
// would take its resources for hashicorp/kha's).
func (u *releaseUpgrade) pin(r *exampleRun, version string) map[string]string {
	text := fmt.Sprintf("terraform {\n  required_providers {\n    kha = {\n      source  = \"kha/kha\"\n      version = %q\n    }\n  }\n}\n", version)
	for _, b := range r.body.Blocks {
		if b.Type == "terraform" {
			return map[string]string{"zz_upgrade_override.tf": text}
		}
	}
	return map[string]string{"zz_upgrade.tf": text}
}

func isSet(v any, unknown bool) bool { return unknown || v != nil && v != "" }

func withFiles(sets ...map[string]string) map[string]string {
	all := map[string]string{}
	for _, files := range sets {
		for name, text := range files {
			all[name] += text
		}
	}
	return all
}

// run applies the configuration with the release, upgrades, and checks the
// plan, apply, plan and destroy that follow.
func (u *releaseUpgrade) run(t *testing.T, r *exampleRun, files map[string]string) {
	start := time.Now()
	dir := r.writeConfig(t, "upgrade", withFiles(files, u.pin(r, u.from)))
	r.terraform(t, dir, "init")
	u.expectSelected(t, dir, u.from)
	r.terraform(t, dir, "apply", "-auto-approve")
	releaseState := r.stateJSON(t, dir)
	recorded := r.checkApplied(t, releaseState)
	released := r.changes(t, "applied with "+u.from)
	t.Logf("applied with %s in %s", u.from, time.Since(start).Round(10*time.Millisecond))
	releaseWarnings := warningSummaries(r.terraform(t, dir, "plan"))

	standIns, withStandIns := standIns(r)
	for name, text := range withFiles(u.pin(r, u.to), standIns) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	groupSettings(t, dir)
	r.terraform(t, dir, "init", "-upgrade")
	u.expectSelected(t, dir, u.to)
	out := r.terraform(t, dir, "plan", "-out=tfplan")
	var plan tfjson.Plan
	if err := json.Unmarshal(r.terraform(t, dir, "show", "-json", "tfplan"), &plan); err != nil {
		t.Fatal(err)
	}
	checkUpgradeActions(t, &plan)
	if t.Failed() {
		t.FailNow() // applying a replacement would only hide it
	}
	u.checkUpgradeOutputs(t, &plan)
	u.checkUpgradeWarnings(t, out, releaseWarnings)

	before := snapshotHosts(t, r)
	r.terraform(t, dir, "apply", "tfplan")
	changes := fileChanges(before, snapshotHosts(t, r))
	// Every file the apply changed is one of an instance's, or kha's
	// record of one.
	claimed := map[string]map[string]bool{}
	for _, rc := range plan.ResourceChanges {
		after, _ := rc.Change.After.(map[string]any)
		address, files := r.filesOf(after)
		for path := range files {
			if claimed[address] == nil {
				claimed[address] = map[string]bool{}
			}
			claimed[address][path] = true
		}
	}
	for address, files := range changes {
		for _, f := range files {
			switch {
			case claimed[address][f.path]:
			case upgradeRecordFile.MatchString(f.path) && claimed[address][recordedFile(f.path)]:
				t.Logf("%s: %s: %s", address, f.path, u.cite(t, entryOwner, ""))
			default:
				t.Errorf("the upgrade's apply changes %s on %s, a file of none of the example's resources", f.path, address)
			}
		}
	}
	var instances []upgradeInstance
	for _, rc := range plan.ResourceChanges {
		if rc.Mode != tfjson.ManagedResourceMode || rc.Change.Actions.NoOp() {
			continue
		}
		i := upgradeInstance{rc: rc, standIns: withStandIns[rc.Type+"."+rc.Name]}
		i.before, _ = rc.Change.Before.(map[string]any)
		i.after, _ = rc.Change.After.(map[string]any)
		i.delivered = i.after["destroy_actions"] != nil
		var changed []fileChange
		if i.delivered {
			address, files := r.filesOf(i.after)
			for _, f := range changes[address] {
				if files[f.path] {
					changed = append(changed, f)
				}
			}
		} else {
			for _, attr := range []string{"rendered", "manifest"} {
				if removed, added := lineChanges(i.before[attr], i.after[attr]); len(removed)+len(added) > 0 {
					changed = append(changed, fileChange{path: attr, removed: removed, added: added})
				}
			}
		}
		i.contentChanged = len(changed) > 0
		u.checkUpgradeLines(t, rc.Address, rc.Type, changed)
		instances = append(instances, i)
	}
	u.checkUpgradeChanges(t, instances)

	empty := r.planJSON(t, dir)
	for _, rc := range empty.ResourceChanges {
		if !rc.Change.Actions.NoOp() {
			t.Errorf("the plan after the upgrade's apply would %v %s: %v", rc.Change.Actions, rc.Address, changedAttributes(rc))
		}
	}
	u.leaveByDesign(t, r, &plan, released)
	asked := r.systemctlAsked(t)
	r.terraform(t, dir, "destroy", "-auto-approve")
	r.checkDestroyed(t, recorded)
	u.checkUpgradeDestroyCommands(t, r, releaseState, asked)
}

// systemctlAsked is what systemctlStandInScript recorded on each host so
// far, by address.
func (r *exampleRun) systemctlAsked(t *testing.T) map[string][]string {
	t.Helper()
	asked := map[string][]string{}
	for _, address := range r.addresses() {
		b, err := os.ReadFile(r.hosts[address].HostPath(systemctlRecords))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if len(b) > 0 {
			asked[address] = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		}
	}
	return asked
}

// checkUpgradeDestroyCommands: what destroy asked systemd on each host is
// what the release's state has its resources run, or what
// upgradeDestroyCommands announce.
func (u *releaseUpgrade) checkUpgradeDestroyCommands(t *testing.T, r *exampleRun, state *tfjson.State, before map[string][]string) {
	t.Helper()
	stated := map[string][]string{}
	types := map[string][]string{}
	for _, rs := range stateInstances(state) {
		address, _ := r.filesOf(rs.AttributeValues)
		types[address] = append(types[address], rs.Type)
		for _, attr := range []string{"destroy_command", "restart_command"} {
			if command, _ := rs.AttributeValues[attr].(string); strings.HasPrefix(command, "systemctl ") {
				stated[address] = append(stated[address], strings.TrimPrefix(command, "systemctl "))
			}
		}
	}
	for address, asked := range r.systemctlAsked(t) {
		for _, command := range asked[len(before[address]):] {
			if slices.Contains(stated[address], command) || strings.HasPrefix(command, "is-active ") {
				continue
			}
			n := slices.IndexFunc(upgradeDestroyCommands, func(c upgradeDestroyCommand) bool {
				return slices.Contains(types[address], c.typ) && c.command.MatchString(command)
			})
			if n < 0 {
				t.Errorf("destroy after the upgrade runs `systemctl %s` on %s, which neither the state nor a CHANGELOG entry says", command, address)
				continue
			}
			upgradeSeen.Lock()
			upgradeSeen.destroys[n]++
			upgradeSeen.Unlock()
			t.Logf("destroy runs `systemctl %s` on %s: %s", command, address, u.cite(t, upgradeDestroyCommands[n].entry, ""))
		}
	}
}

// filesOf are the example's address of the test host an instance keeps
// files on, and the paths of those files (destroy_actions names them).
func (r *exampleRun) filesOf(after map[string]any) (address string, paths map[string]bool) {
	id, _ := after["id"].(string)
	for _, a := range r.addresses() {
		if strings.HasPrefix(id, r.hosts[a].Address()+":") {
			address = a
		}
	}
	paths = map[string]bool{}
	actions, _ := after["destroy_actions"].(map[string]any)
	for place := range actions {
		path, _, _ := strings.Cut(place, "#")
		paths[path] = true
	}
	return address, paths
}

// recordedFile is the file a record of kha's (.<name>.kha/record) is of.
func recordedFile(record string) string {
	dir := filepath.Dir(record)
	return filepath.Join(filepath.Dir(dir), strings.TrimSuffix(strings.TrimPrefix(filepath.Base(dir), "."), ".kha"))
}

// leaveByDesign records what destroy leaves changed on the hosts by
// design: the files the hosts had before the release's apply that the
// plan's destroy_actions say destroy deletes, and what the release's apply
// left beside its resources' files (the directories it made for them, a
// pid file a validate command wrote), which the release's destroy left too.
func (u *releaseUpgrade) leaveByDesign(t *testing.T, r *exampleRun, plan *tfjson.Plan, released map[string][]testhost.Change) {
	t.Helper()
	r.leaves = map[string]map[testhost.Change]string{}
	leave := func(address string, c testhost.Change, why string) {
		if r.leaves[address] == nil {
			r.leaves[address] = map[testhost.Change]string{}
		}
		r.leaves[address][c] = why
	}
	files := map[string]bool{}
	for _, rc := range plan.ResourceChanges {
		after, _ := rc.Change.After.(map[string]any)
		actions, _ := after["destroy_actions"].(map[string]any)
		for place := range actions {
			path, _, _ := strings.Cut(place, "#")
			files[path] = true
		}
	}
	for address, changes := range released {
		for _, c := range changes {
			switch _, seeded := r.seeds[c.Path]; {
			case seeded || files[c.Path]:
			case c.Kind == testhost.AddedDir:
				leave(address, c, "made by "+u.from+" for its files: "+u.cite(t, entryReleaseDirsStay, ""))
			default:
				leave(address, c, "left by "+u.from+"'s apply beside its files (a pid file its validate command wrote), as its own destroy left it")
			}
		}
	}
	// A file the release replaced, which it saved nothing of: destroy
	// deletes it. (A file the release made is deleted too, which gives the
	// host back as it was.)
	replaced := func(address, path string) bool {
		_, seeded := r.seeds[path]
		return seeded || slices.Contains(released[address], testhost.Change{Path: path, Kind: testhost.Modified})
	}
	for _, rc := range plan.ResourceChanges {
		after, _ := rc.Change.After.(map[string]any)
		actions, _ := after["destroy_actions"].(map[string]any)
		id, _ := after["id"].(string)
		for _, address := range r.addresses() {
			if !strings.HasPrefix(id, r.hosts[address].Address()+":") {
				continue
			}
			for path, action := range actions {
				if action == "delete" && replaced(address, path) {
					leave(address, testhost.Change{Path: path, Kind: testhost.Removed},
						fmt.Sprintf("%s's destroy_actions planned: %s", rc.Address, u.cite(t, entrySavedNothing, "")))
				}
			}
		}
	}
}

// hostFile is a file's content and mode on a test host.
type hostFile struct {
	content string
	mode    os.FileMode
}

// snapshotHosts are the files each host's sessions added or changed under
// its overlays, by address and path.
func snapshotHosts(t *testing.T, r *exampleRun) map[string]map[string]hostFile {
	t.Helper()
	all := map[string]map[string]hostFile{}
	for _, address := range r.addresses() {
		s := r.hosts[address]
		changes, err := s.OverlayChanges()
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]hostFile{}
		for _, c := range changes {
			if c.Kind != testhost.Added && c.Kind != testhost.Modified {
				continue
			}
			st, err := os.Lstat(s.HostPath(c.Path))
			if err != nil || !st.Mode().IsRegular() {
				continue
			}
			b, err := os.ReadFile(s.HostPath(c.Path))
			if err != nil {
				t.Fatal(err)
			}
			files[c.Path] = hostFile{string(b), st.Mode().Perm()}
		}
		all[address] = files
	}
	return all
}

// fileChanges are how each file the hosts' sessions changed differs
// between two snapshots, by address.
func fileChanges(before, after map[string]map[string]hostFile) map[string][]fileChange {
	out := map[string][]fileChange{}
	for address := range after {
		b, a := before[address], after[address]
		for _, path := range sortedKeys(withKeys(anyKeys(b), anyKeys(a))) {
			old, hadIt := b[path]
			now, hasIt := a[path]
			f := fileChange{path: path}
			switch {
			case !hadIt:
				f.added, f.mode = lineSplit.Split(now.content, -1), fmt.Sprintf("%04o", now.mode)
			case !hasIt:
				f.removed = lineSplit.Split(old.content, -1)
			default:
				f.removed, f.added = lineChanges(old.content, now.content)
				if old.mode != now.mode {
					f.mode = fmt.Sprintf("%04o", now.mode)
				}
			}
			if len(f.removed)+len(f.added) > 0 || f.mode != "" {
				out[address] = append(out[address], f)
			}
		}
	}
	return out
}

func anyKeys(m map[string]hostFile) map[string]any {
	out := map[string]any{}
	for k := range m {
		out[k] = true
	}
	return out
}

// upgradeStandIn is an attribute this build added that the test sets
// with the upgrade, on the delivered resources of a type for which when
// holds of the release's planned instances.
type upgradeStandIn struct {
	attr, value string
	when        func(instances []*tfjson.ResourceChange) bool
}

var upgradeStandIns = map[string][]upgradeStandIn{
	// The VIP check probes the example's network, which the test hosts are
	// not on (exampleOff).
	"kha_keepalived_config": {{attr: "check_vip", value: "false"}},
	// A service whose pid_file the release had is recorded by
	// systemctlStandIn, not run: it counts as running.
	"kha_haproxy_config": {{attr: "running_command", value: `"true"`, when: hasPIDFile}},
	"kha_nginx_config":   {{attr: "running_command", value: `"true"`, when: hasPIDFile}},
}

func hasPIDFile(instances []*tfjson.ResourceChange) bool {
	return plannedAny(instances, "pid_file", isSet)
}

// standIns overrides each delivered resource of the example that the
// test runs with systemctlStandIn with its type's upgradeStandIns, and
// says what it sets on which resources (type.name).
func standIns(r *exampleRun) (map[string]string, map[string]map[string]string) {
	var b strings.Builder
	which := map[string]map[string]string{}
	for _, block := range r.body.Blocks {
		if block.Type != "resource" || len(block.Labels) != 2 || block.Body.Attributes["ssh"] == nil || r.planned == nil {
			continue
		}
		set := map[string]string{}
		for _, s := range upgradeStandIns[block.Labels[0]] {
			if s.when == nil || s.when(r.instancesOf(block.Labels[0], block.Labels[1])) {
				set[s.attr] = s.value
			}
		}
		if len(set) > 0 {
			fmt.Fprintf(&b, "resource %q %q {\n%s}\n", block.Labels[0], block.Labels[1], objectItems(set, "  "))
			which[block.Labels[0]+"."+block.Labels[1]] = set
		}
	}
	return map[string]string{"zz_upgrade_stand_ins_override.tf": b.String()}, which
}

// expectSelected: the lock file selects version of kha/kha.
func (u *releaseUpgrade) expectSelected(t *testing.T, dir, version string) {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(lock), fmt.Sprintf("version     = %q", version)) {
		t.Fatalf("the lock file does not select kha/kha %s:\n%s", version, lock)
	}
}

// changedAttributes are the top-level attributes an update changes.
func changedAttributes(rc *tfjson.ResourceChange) []string {
	before, _ := rc.Change.Before.(map[string]any)
	after, _ := rc.Change.After.(map[string]any)
	unknown, _ := rc.Change.AfterUnknown.(map[string]any)
	var changed []string
	for name := range withKeys(before, after, unknown) {
		if unknown[name] == true || !reflect.DeepEqual(before[name], after[name]) {
			changed = append(changed, name)
		}
	}
	sort.Strings(changed)
	return changed
}

func withKeys(maps ...map[string]any) map[string]bool {
	keys := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			keys[k] = true
		}
	}
	return keys
}

var lineSplit = regexp.MustCompile(`\r?\n`)

// lineChanges are the lines of a text attribute an update removes and
// adds, in the order they come.
func lineChanges(before, after any) (removed, added []string) {
	b, _ := before.(string)
	a, _ := after.(string)
	old, new := lineSplit.Split(b, -1), lineSplit.Split(a, -1)
	for _, l := range old {
		if !slices.Contains(new, l) {
			removed = append(removed, l)
		}
	}
	for _, l := range new {
		if !slices.Contains(old, l) {
			added = append(added, l)
		}
	}
	return removed, added
}

// groupedSettings are the load balancers' settings that moved into nested
// objects after 0.1.0, as the upgrading guide lists them: the old name,
// and the object and name it has now.
var groupedSettings = map[string]map[string][2]string{
	"kha_haproxy_config": {"slowstart": {"servers", "slowstart"}, "server_maxconn": {"servers", "maxconn"}, "server_maxqueue": {"servers", "maxqueue"}},
	"kha_nginx_config":   {"fail_timeout": {"servers", "fail_timeout"}},
	"": { // both
		"connect_timeout": {"proxy_timeouts", "connect"}, "client_timeout": {"proxy_timeouts", "client"}, "server_timeout": {"proxy_timeouts", "server"},
		"healthcheck_listen": {"monitoring", "healthcheck_listen"}, "metrics": {"monitoring", "metrics"},
		"metrics_listen": {"monitoring", "metrics_listen"}, "logs": {"monitoring", "logs"},
		"image": {"static_pod", "image"}, "pod_name": {"static_pod", "name"}, "cpu_request": {"static_pod", "cpu_request"},
		"memory_request": {"static_pod", "memory_request"},
	},
}

// groupSettings rewrites the configuration in dir as a user upgrading
// does, by the upgrading guide: each load balancer's settings that moved
// go into their objects, with the expressions they had.
func groupSettings(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f, diags := hclwrite.ParseConfig(src, file, hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		changed := false
		for _, block := range f.Body().Blocks() {
			if block.Type() != "resource" || len(block.Labels()) != 2 || groupedSettings[block.Labels()[0]] == nil {
				continue
			}
			objects := map[string]hclwrite.Tokens{}
			body := block.Body()
			for _, moves := range []map[string][2]string{groupedSettings[""], groupedSettings[block.Labels()[0]]} {
				for _, old := range sortedKeys(moves) {
					attr := body.GetAttribute(old)
					if attr == nil {
						continue
					}
					to := moves[old]
					item := hclwrite.Tokens{{Type: hclsyntax.TokenIdent, Bytes: []byte(to[1])}, {Type: hclsyntax.TokenEqual, Bytes: []byte("=")}}
					item = append(item, attr.Expr().BuildTokens(nil)...)
					objects[to[0]] = append(objects[to[0]], append(item, &hclwrite.Token{Type: hclsyntax.TokenComma, Bytes: []byte(",")})...)
					body.RemoveAttribute(old)
				}
			}
			for _, name := range sortedKeys(objects) {
				object := hclwrite.Tokens{{Type: hclsyntax.TokenOBrace, Bytes: []byte("{")}}
				object = append(object, objects[name]...)
				body.SetAttributeRaw(name, append(object, &hclwrite.Token{Type: hclsyntax.TokenCBrace, Bytes: []byte("}")}))
				changed = true
			}
		}
		if changed {
			if err := os.WriteFile(file, hclwrite.Format(f.Bytes()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// groupSettings moves what the guide says, keeps the expressions, and
// leaves other resources alone.
func TestGroupSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const config = `resource "kha_haproxy_config" "a" {
  listen         = var.listen
  client_timeout = "1h"
  server_timeout = var.idle # as long as the client's
  server_maxconn = 10
  logs           = false
}

resource "kha_nginx_config" "b" {
  fail_timeout = "10s"
}

resource "kha_file" "c" {
  image = "kept"
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	groupSettings(t, dir)
	src, err := os.ReadFile(filepath.Join(dir, "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	f, diags := hclsyntax.ParseConfig(src, "main.tf", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s\n%s", diags, src)
	}
	want := map[string]map[string]string{
		"a": {"listen": `var.listen`, "proxy_timeouts": `{ client = "1h", server = var.idle, }`, "servers": `{ maxconn = 10, }`,
			"monitoring": `{ logs = false, }`},
		"b": {"servers": `{ fail_timeout = "10s", }`},
		"c": {"image": `"kept"`},
	}
	for _, block := range f.Body.(*hclsyntax.Body).Blocks {
		got := map[string]string{}
		for name, attr := range block.Body.Attributes {
			got[name] = strings.Join(strings.Fields(string(attr.Expr.Range().SliceBytes(src))), " ")
		}
		if w := want[block.Labels[1]]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %v, want %v\n%s", block.Labels[1], got, w, src)
		}
	}
}
