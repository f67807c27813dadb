package provider

import (
	"bufio"
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

	tfjson "github.com/hashicorp/terraform-json"
)

// What the first plan after the upgrade from the release may show, and
// why: each change with the CHANGELOG entry that announces it, quoted by an
// excerpt that must find one entry of CHANGELOG.md filed under Unreleased
// and absent from the release's own CHANGELOG.md. The plan of each
// instance must make exactly the changes whose condition holds for it, the
// upgrade's apply must change exactly the announced lines of its files,
// and the plan may warn only as announced. Every change and line here must
// be seen in a run of every example (a stale one fails too).

// Excerpts of the CHANGELOG entries the changes come from.
const (
	entryOnDestroy        = "After an upgrade, the first plan of each existing host resource records `on_destroy` and `destroy_actions`"
	entrySavedNothing     = "A resource applied with an earlier version saved nothing, so its `destroy_actions` says `delete`"
	entryReleaseDirsStay  = "the directories that version made for its files stay, as its own destroy left them"
	entryOwner            = "that directory also records which resource owns the path"
	entryAdopt            = "unless it sets `adopt = true` (import adopts too)"
	entryHandoverDigest   = "`kha_handover`'s `target_sha256` takes the target's new `handover_sha256`"
	entryMetricsLoopback  = "The new `monitoring = { metrics_listen = \"all\" }` serves the metrics on every address again"
	entryHealthOnLoopback = "answers `healthcheck_port` on the host's loopback only, and its static pod's probes ask `127.0.0.1`"
	entryRunAs            = "renders `user haproxy` and `group haproxy` in `global`"
	entryStopping         = "The health port now ignores a stopping worker"
	entrySkipCheckAdvAddr = "every rendered keepalived configuration gains `vrrp_skip_check_adv_addr`"
	entryTrackScript      = "`kha_keepalived_config`'s track script no longer drops the VIP of a healthy load balancer on a busy node"
	entryKubeVIPLabel     = "`kha_kube_vip`'s manifest carries kubespray's label `k8s-app: kube-vip`"
	entryKubernetesAddr   = "`kha_kube_vip`'s manifest sets `kubernetes_addr = \"kubernetes:<port>\"`"
	entryKubeVIPTimings   = "`kha_kube_vip`'s Lease timings default to client-go's 15, 10 and 2 s"
	entryManifestMode     = "are written with mode `0600`, as kubeadm and kubespray write theirs, not `0640`"
	entryOwnAPIServer     = "A control-plane node's `node_endpoints` entry (the `server` of its `kubelet.conf`) is its own apiserver"
	entryVIPHolders       = "`kha_keepalived_config.vip_holders`: at every refresh each node says who holds the VIP"
	entryServiceRunning   = "`kha_haproxy_config`, `kha_nginx_config` and `kha_keepalived_config` watch the service they configured"
	entryCheckVIP         = "`kha_keepalived_config` checks the VIP on each node before an apply puts the configuration that claims it"
	entryPodEndpoint      = "`kha_cluster_endpoints`: an apiserver endpoint for pods outside the host network"
	entryDeprecatedLBBack = "`kha_cluster_endpoints`: `local_lb_backends` is deprecated in favour of `apiserver_backends`"
	entryBackendTiming    = "`kha_haproxy_config` and `kha_nginx_config`: `shutdown_delay_duration` and `min_request_timeout` in `backends`"
	entryGoawayChance     = "`kha_cluster_endpoints` has `apiserver_goaway_chance` (kube-apiserver `--goaway-chance`)"
	entryEtcdProxyStops   = "destroy now runs `systemctl disable --now UNIT` (the new default `destroy_command`)"
	derivedDigests        = "the digests of the lines of upgradeLines"
)

var watchedTypes = []string{"kha_haproxy_config", "kha_nginx_config", "kha_keepalived_config"}

// upgradeInstance is an instance the first plan after the upgrade changes.
type upgradeInstance struct {
	rc            *tfjson.ResourceChange
	before, after map[string]any
	// delivered: it keeps files on a host; else it renders only.
	delivered bool
	// contentChanged: the upgrade changes its files (or its render).
	contentChanged bool
	// standIns are the upgradeStandIns the test sets on it with the
	// upgrade, by attribute.
	standIns map[string]string
}

// upgradeChange is a change of attributes the first plan after the
// upgrade makes to every instance of types (all types when nil) for which
// when holds.
type upgradeChange struct {
	types []string
	attrs []string
	when  func(i upgradeInstance) bool
	entry string
	// environment says what of the test's environment makes this change
	// (a service it records instead of running, a network it is not on),
	// where the CHANGELOG entry says what the change is.
	environment string
}

var upgradeChanges = []upgradeChange{
	{attrs: []string{"on_destroy"}, entry: entryOnDestroy},
	{attrs: []string{"destroy_actions"}, when: isDelivered, entry: entryOnDestroy},
	{attrs: []string{"adopt"}, entry: entryAdopt},
	{types: watchedTypes, attrs: []string{"handover_sha256"}, entry: entryHandoverDigest},
	// The digests of what changes in upgradeLines.
	{attrs: []string{"sha256", "remote_sha256"}, when: func(i upgradeInstance) bool { return i.delivered && i.contentChanged },
		entry: derivedDigests},
	{attrs: []string{"rendered", "sha256", "id"}, when: func(i upgradeInstance) bool { return !i.delivered && i.contentChanged },
		entry: derivedDigests},
	{types: []string{"kha_kubeconfig_server"}, attrs: []string{"server"}, entry: entryOwnAPIServer,
		when: func(i upgradeInstance) bool {
			return isLoopbackServer(i.before["server"]) && !isLoopbackServer(i.after["server"])
		}},
	{types: []string{"kha_keepalived_config"}, attrs: []string{"vip_holders"}, entry: entryVIPHolders,
		when:        func(i upgradeInstance) bool { return reflect.DeepEqual(i.before["vip_holders"], []any{}) },
		environment: "no keepalived holds the VIP here: the refresh found no holder, which the plan shows until one does"},
	{types: watchedTypes, attrs: []string{"service_running"}, entry: entryServiceRunning,
		when:        func(i upgradeInstance) bool { return i.before["service_running"] == false },
		environment: "the test records the services instead of running them: the refresh, by the release's state, found them stopped"},
	{types: watchedTypes, attrs: []string{"running_command"}, when: standsIn("running_command"), entry: entryServiceRunning,
		environment: "upgradeStandIns: the services are recorded, not run, so they count as running"},
	{types: []string{"kha_keepalived_config"}, attrs: []string{"check_vip"}, when: standsIn("check_vip"), entry: entryCheckVIP,
		environment: "upgradeStandIns: the test hosts are not on the example's network"},
}

func isDelivered(i upgradeInstance) bool { return i.delivered }

// standsIn: the test sets attr on the instance with the upgrade.
func standsIn(attr string) func(i upgradeInstance) bool {
	return func(i upgradeInstance) bool { _, set := i.standIns[attr]; return set }
}

var loopbackServer = regexp.MustCompile(`^https://(127\.0\.0\.1|localhost|\[::1\]):\d+$`)

func isLoopbackServer(v any) bool {
	s, _ := v.(string)
	return loopbackServer.MatchString(s)
}

// upgradeLine is a line the upgrade's apply removes or adds in a file of
// an instance of types (or its render, for an instance that renders only):
// one whose path matches file, if set.
type upgradeLine struct {
	types            []string
	file             *regexp.Regexp
	removed, added   *regexp.Regexp
	mode             string // a mode the file gets, instead of a line
	entry            string
	derivedFromOther bool // a digest of the rest of the file: changes only with another line
}

var upgradeLines = []upgradeLine{
	{types: []string{"kha_haproxy_config"}, added: regexp.MustCompile(`^    (user|group) haproxy$`), entry: entryRunAs},
	{types: []string{"kha_haproxy_config"}, removed: regexp.MustCompile(`^    bind 0\.0\.0\.0:\d+$`),
		added: regexp.MustCompile(`^    bind 127\.0\.0\.1:\d+$`), entry: entryHealthOnLoopback},
	{types: []string{"kha_haproxy_config"}, added: regexp.MustCompile(`^          host: 127\.0\.0\.1$`), entry: entryHealthOnLoopback},
	{types: []string{"kha_haproxy_config"}, removed: regexp.MustCompile(`^    http-request use-service prometheus-exporter if \{ path /metrics \}$`),
		added: regexp.MustCompile(`^    http-request use-service prometheus-exporter if \{ path /metrics \} \{ dst 127\.0\.0\.0/8 ::1 \}$`),
		entry: entryMetricsLoopback},
	{types: []string{"kha_haproxy_config"}, removed: regexp.MustCompile(`^    monitor fail if \{ nbsrv\(kube_apiserver\) lt 1 \}$`),
		added: regexp.MustCompile(`^    monitor fail if \{ nbsrv\(kube_apiserver\) lt 1 \} !\{ stopping \}$`), entry: entryStopping},
	{types: []string{"kha_haproxy_config"}, removed: regexp.MustCompile(`^    http-after-response set-header X-Kha-Config "[0-9a-f]+"$`),
		added: regexp.MustCompile(`^    http-after-response set-header X-Kha-Config "[0-9a-f]+"$`), derivedFromOther: true,
		entry: "the configuration's own digest, which its health frontend sends"},
	{types: []string{"kha_haproxy_config"}, removed: regexp.MustCompile(`^    haproxy-cfg-checksum: "sha256:[0-9a-f]{64}"$`),
		added: regexp.MustCompile(`^    haproxy-cfg-checksum: "sha256:[0-9a-f]{64}"$`), derivedFromOther: true,
		entry: "the static pod's digest of the configuration, which restarts it"},
	{types: []string{"kha_haproxy_config", "kha_kube_vip"}, file: regexp.MustCompile(`/manifests/[^/]+$`), mode: "0600", entry: entryManifestMode},
	{types: []string{"kha_keepalived_config"}, added: regexp.MustCompile(`^    vrrp_skip_check_adv_addr$`), entry: entrySkipCheckAdvAddr},
	{types: []string{"kha_keepalived_config"}, removed: regexp.MustCompile(`^    timeout 2$`), added: regexp.MustCompile(`^    timeout 30$`),
		entry: entryTrackScript},
	// The track script: any line of it.
	{types: []string{"kha_keepalived_config"}, file: regexp.MustCompile(`\.sh$`), removed: regexp.MustCompile(``),
		added: regexp.MustCompile(``), entry: entryTrackScript},
	{types: []string{"kha_kube_vip"}, added: regexp.MustCompile(`^    k8s-app: kube-vip$`), entry: entryKubeVIPLabel},
	{types: []string{"kha_kube_vip"}, added: regexp.MustCompile(`^        - name: kubernetes_addr$|^          value: "kubernetes:\d+"$`),
		entry: entryKubernetesAddr},
	{types: []string{"kha_kube_vip"}, removed: regexp.MustCompile(`^          value: "[531]"$`), added: regexp.MustCompile(`^          value: "(15|10|2)"$`),
		entry: entryKubeVIPTimings},
	{types: []string{"kha_kubeconfig_server"}, removed: regexp.MustCompile(`^    server: https://127\.0\.0\.1:\d+$`),
		added: regexp.MustCompile(`^    server: https://\d+\.\d+\.\d+\.\d+:\d+$`), entry: entryOwnAPIServer},
}

// upgradeOutputChange is a change of the configuration's outputs in the
// first plan after the upgrade: of a value at path (the output's name,
// then .key and [index]), for which when holds, or of the lines of a text
// that match line.
type upgradeOutputChange struct {
	path  *regexp.Regexp
	when  func(before, after any, hadIt bool) bool
	line  *regexp.Regexp
	entry string
}

var upgradeOutputChanges = []upgradeOutputChange{
	// endpoints.control_plane is the first control-plane node's.
	{path: regexp.MustCompile(`^(node_endpoints\.[^.]+|endpoints\.control_plane)$`), entry: entryOwnAPIServer,
		when: func(before, after any, _ bool) bool { return isLoopbackServer(before) && !isLoopbackServer(after) }},
	{path: regexp.MustCompile(`\.backends\[\d+\]\.(min_request_timeout|shutdown_delay_duration)$`), entry: entryBackendTiming,
		when: func(_, after any, hadIt bool) bool { return !hadIt && after == nil }},
	{path: regexp.MustCompile(`(^|\.)(remote_)?sha256$`), entry: derivedDigests},
	{path: regexp.MustCompile(`^kubeadm_cluster_configuration$`), line: regexp.MustCompile(`^\s*(extraArgs:|- name: goaway-chance|value: "0\.001")$`),
		entry: entryGoawayChance},
}

// checkUpgradeOutputs: every value the first plan after the upgrade
// changes in the configuration's outputs is one upgradeOutputChanges
// announce.
func (u *releaseUpgrade) checkUpgradeOutputs(t *testing.T, plan *tfjson.Plan) {
	t.Helper()
	for _, name := range sortedKeys(plan.OutputChanges) {
		oc := plan.OutputChanges[name]
		if oc.Actions.NoOp() {
			continue
		}
		before, after := map[string]any{}, map[string]any{}
		flattenValue(name, oc.Before, before)
		flattenValue(name, oc.After, after)
		for _, path := range sortedKeys(withKeys(before, after)) {
			b, hadIt := before[path]
			a := after[path]
			if reflect.DeepEqual(b, a) && hadIt {
				continue
			}
			var lines []string
			if text, ok := a.(string); ok && strings.Contains(text, "\n") {
				removed, added := lineChanges(b, a)
				lines = append(removed, added...)
			}
			announced := func(c upgradeOutputChange) bool {
				if !c.path.MatchString(path) || c.when != nil && !c.when(b, a, hadIt) {
					return false
				}
				for _, l := range lines {
					if c.line == nil || !c.line.MatchString(l) {
						return false
					}
				}
				return c.line == nil || len(lines) > 0
			}
			n := slices.IndexFunc(upgradeOutputChanges, announced)
			if n < 0 {
				t.Errorf("the first plan after the upgrade changes the output %s (%v -> %v), which no CHANGELOG entry announces", path, b, a)
				continue
			}
			upgradeSeen.Lock()
			upgradeSeen.outputs[n]++
			upgradeSeen.Unlock()
			t.Logf("output %s changes: %s", path, u.cite(t, upgradeOutputChanges[n].entry, ""))
		}
	}
}

// flattenValue puts each leaf of a JSON value into out by its path.
func flattenValue(path string, v any, out map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			flattenValue(path+"."+k, e, out)
		}
	case []any:
		for i, e := range x {
			flattenValue(fmt.Sprintf("%s[%d]", path, i), e, out)
		}
	default:
		out[path] = x
	}
}

// upgradeDestroyCommand is a command destroy runs after the upgrade that
// the state does not hold: a default this build derives.
type upgradeDestroyCommand struct {
	typ     string
	command *regexp.Regexp // systemctl's arguments
	entry   string
}

var upgradeDestroyCommands = []upgradeDestroyCommand{
	{typ: "kha_etcd_access", command: regexp.MustCompile(`^disable --now \S+$`), entry: entryEtcdProxyStops},
}

// upgradeRecordFile is kha's record of a file's owner, which the first
// apply of a file by this build leaves beside it.
var upgradeRecordFile = regexp.MustCompile(`/\.[^/]+\.kha/record$`)

// upgradeWarning is a warning the first plan after the upgrade may give.
type upgradeWarning struct {
	summaries   []string // the warning's summary, up to a colon, as each CLI words it
	entry       string
	environment string
}

var upgradeWarnings = []upgradeWarning{
	// The release's examples read local_lb_backends: Terraform's words,
	// and OpenTofu's.
	{summaries: []string{"Deprecated attribute", "Value derived from a deprecated source"}, entry: entryDeprecatedLBBack},
	{summaries: []string{"Pods depend on one control-plane node"}, entry: entryPodEndpoint},
	{summaries: []string{"VIP Held by No Node"}, entry: entryVIPHolders,
		environment: "no keepalived holds the VIP here, and the refresh checks it by the release's state, before check_vip's stand-in"},
	{summaries: []string{"Load Balancer Not Running"}, entry: entryServiceRunning,
		environment: "the test records the services instead of running them, and the refresh asks by the release's state, before running_command's stand-in"},
}

// upgradeClaimsDrift is the warning of a change by hand. The first
// refresh after the upgrade judges each host against what the release
// applied: a file whose render changed (HAProxy's user, keepalived's
// track script, a manifest's label or mode) but which the host has as the
// release put it there is no change by hand. Judged against this build's
// render of the release's state, as it once was, every such file raised
// it, and drift alerting fired on every node at the upgrade.
const upgradeClaimsDrift = "Changed Outside Terraform"

// upgradeSeen counts, over a run, what each change, line and warning of
// the tables matched, so that a stale one fails.
type upgradeSeenCounts struct {
	sync.Mutex
	changes, lines, warnings, outputs, destroys map[int]int
}

var upgradeSeen upgradeSeenCounts

func (s *upgradeSeenCounts) reset() {
	s.Lock()
	defer s.Unlock()
	s.changes, s.lines, s.warnings, s.outputs, s.destroys = map[int]int{}, map[int]int{}, map[int]int{}, map[int]int{}, map[int]int{}
}

func applies(types []string, typ string) bool { return types == nil || slices.Contains(types, typ) }

// checkUpgradeActions fails a plan that replaces, destroys or creates
// anything: naming each resource and the attributes that force it.
func checkUpgradeActions(t *testing.T, plan *tfjson.Plan) {
	t.Helper()
	for _, rc := range plan.ResourceChanges {
		switch a := rc.Change.Actions; {
		case a.NoOp(), a.Update(), a.Read():
		case a.Replace():
			var paths []string
			for _, p := range rc.Change.ReplacePaths {
				paths = append(paths, replacePath(p))
			}
			t.Errorf("the first plan after the upgrade replaces %s (%v), forced by its attribute %s", rc.Address, a, strings.Join(paths, ", "))
		default:
			t.Errorf("the first plan after the upgrade would %v %s", a, rc.Address)
		}
	}
}

// replacePath writes a plan's path to an attribute (["backends", 0,
// "port"]) as backends[0].port.
func replacePath(p any) string {
	steps, ok := p.([]any)
	if !ok {
		return fmt.Sprint(p)
	}
	var b strings.Builder
	for _, step := range steps {
		if name, ok := step.(string); ok {
			if b.Len() > 0 {
				b.WriteString(".")
			}
			b.WriteString(name)
		} else {
			fmt.Fprintf(&b, "[%v]", step)
		}
	}
	return b.String()
}

// checkUpgradeChanges: each instance's plan makes exactly the changes of
// upgradeChanges whose condition holds for it.
func (u *releaseUpgrade) checkUpgradeChanges(t *testing.T, instances []upgradeInstance) {
	t.Helper()
	for _, i := range instances {
		changed := changedAttributes(i.rc)
		var want []string
		because := map[string]string{}
		for n, c := range upgradeChanges {
			if !applies(c.types, i.rc.Type) || c.when != nil && !c.when(i) {
				continue
			}
			upgradeSeen.Lock()
			upgradeSeen.changes[n]++
			upgradeSeen.Unlock()
			for _, a := range c.attrs {
				want = append(want, a)
				because[a] = u.cite(t, c.entry, c.environment)
			}
		}
		for _, a := range changed {
			if why, ok := because[a]; ok {
				t.Logf("%s: %s changes: %s", i.rc.Address, a, why)
			} else {
				t.Errorf("the first plan after the upgrade changes %s's %s (%v -> %v), which no CHANGELOG entry announces",
					i.rc.Address, a, i.before[a], i.after[a])
			}
		}
		for _, a := range want {
			if !slices.Contains(changed, a) {
				t.Errorf("the first plan after the upgrade leaves %s's %s as it was (%v), where %s", i.rc.Address, a, i.before[a], because[a])
			}
		}
	}
}

// fileChange is how the upgrade's apply changed a file of an instance.
type fileChange struct {
	path           string
	removed, added []string
	mode           string // the new mode, when it changed
}

// checkUpgradeLines: every line the upgrade changes in an instance's files
// (or render) is one of upgradeLines for its type, and a derived line
// changes only with another.
func (u *releaseUpgrade) checkUpgradeLines(t *testing.T, address string, typ string, changes []fileChange) {
	t.Helper()
	match := func(f fileChange, line string, removed bool) (int, bool) {
		for n, l := range upgradeLines {
			re := l.added
			if removed {
				re = l.removed
			}
			if applies(l.types, typ) && re != nil && (l.file == nil || l.file.MatchString(f.path)) && re.MatchString(line) {
				return n, true
			}
		}
		return 0, false
	}
	for _, f := range changes {
		var announced, derived int
		check := func(lines []string, removed bool) {
			for _, line := range lines {
				n, ok := match(f, line, removed)
				sign := map[bool]string{true: "-", false: "+"}[removed]
				if !ok {
					t.Errorf("the upgrade's apply changes %s's %s: %s%q, which no CHANGELOG entry announces", address, f.path, sign, line)
					continue
				}
				if upgradeLines[n].derivedFromOther {
					derived++
				} else {
					announced++
				}
				upgradeSeen.Lock()
				upgradeSeen.lines[n]++
				upgradeSeen.Unlock()
				t.Logf("%s: %s: %s%q: %s", address, f.path, sign, line, u.cite(t, upgradeLines[n].entry, ""))
			}
		}
		check(f.removed, true)
		check(f.added, false)
		if f.mode != "" {
			found := false
			for n, l := range upgradeLines {
				if applies(l.types, typ) && l.mode == f.mode && l.file != nil && l.file.MatchString(f.path) {
					found, announced = true, announced+1
					upgradeSeen.Lock()
					upgradeSeen.lines[n]++
					upgradeSeen.Unlock()
					t.Logf("%s: %s: mode %s: %s", address, f.path, f.mode, u.cite(t, l.entry, ""))
				}
			}
			if !found {
				t.Errorf("the upgrade's apply gives %s's %s mode %s, which no CHANGELOG entry announces", address, f.path, f.mode)
			}
		}
		if derived > 0 && announced == 0 {
			t.Errorf("the upgrade's apply changes only a digest in %s's %s: the rest of the file is as it was", address, f.path)
		}
	}
}

// checkUpgradeWarnings: the plan's output warns only as upgradeWarnings
// say, but for what the release's own plan warned too (released), which
// is no change of the upgrade; upgradeClaimsDrift is a finding of its own.
func (u *releaseUpgrade) checkUpgradeWarnings(t *testing.T, out []byte, released []string) {
	t.Helper()
	for _, summary := range warningSummaries(out) {
		if slices.Contains(released, summary) && !strings.HasPrefix(summary, upgradeClaimsDrift+":") {
			t.Logf("warning %q: the release's plan gave it too", summary)
			continue
		}
		if strings.HasPrefix(summary, upgradeClaimsDrift+":") {
			t.Errorf("the first plan after the upgrade warns %q on a host that has what %s put there (upgradeClaimsDrift: not announced)",
				summary, u.from)
			continue
		}
		found := false
		for n, w := range upgradeWarnings {
			if slices.ContainsFunc(w.summaries, func(s string) bool { return summary == s || strings.HasPrefix(summary, s+":") }) {
				found = true
				upgradeSeen.Lock()
				upgradeSeen.warnings[n]++
				upgradeSeen.Unlock()
				t.Logf("warning %q: %s", summary, u.cite(t, w.entry, w.environment))
			}
		}
		if !found {
			t.Errorf("the first plan after the upgrade warns %q, which no CHANGELOG entry announces", summary)
		}
	}
}

var warningLine = regexp.MustCompile(`(?m)^[│ ]*Warning: (.+)$`)

// warningSummaries are the summaries of the warnings in a CLI's output.
func warningSummaries(out []byte) []string {
	var summaries []string
	for _, m := range warningLine.FindAllSubmatch(out, -1) {
		summaries = append(summaries, strings.TrimSpace(string(m[1])))
	}
	return summaries
}

// checkUpgradeTablesSeen fails the changes, lines and warnings of the
// tables that no example of the run showed: the tables say what an upgrade
// does, not what it once did. A row whose CHANGELOG entry is the release's
// own or older is no change of an upgrade from it, and is not expected
// (an upgrade from the newest release, before anything is announced since,
// expects none).
func (u *releaseUpgrade) checkUpgradeTablesSeen(t *testing.T) {
	t.Helper()
	anyAnnounced := false
	for _, entry := range upgradeTableEntries() {
		anyAnnounced = anyAnnounced || u.announced(entry) == nil
	}
	expected := func(entry string) bool {
		if isDerived(entry) {
			return anyAnnounced
		}
		return u.announced(entry) == nil
	}
	for n, c := range upgradeChanges {
		if upgradeSeen.changes[n] == 0 && expected(c.entry) {
			t.Errorf("upgradeChanges[%d] (%v of %v) applied to no instance of any example", n, c.attrs, c.types)
		}
	}
	for n, l := range upgradeLines {
		if upgradeSeen.lines[n] == 0 && expected(l.entry) {
			t.Errorf("upgradeLines[%d] (%s) matched no line of any example", n, l.entry)
		}
	}
	for n, o := range upgradeOutputChanges {
		if upgradeSeen.outputs[n] == 0 && expected(o.entry) {
			t.Errorf("upgradeOutputChanges[%d] (%s) matched no output of any example", n, o.path)
		}
	}
	for n, d := range upgradeDestroyCommands {
		if upgradeSeen.destroys[n] == 0 && expected(d.entry) {
			t.Errorf("upgradeDestroyCommands[%d] (%s) ran on no example's host", n, d.command)
		}
	}
	for n, w := range upgradeWarnings {
		if upgradeSeen.warnings[n] == 0 && expected(w.entry) {
			t.Errorf("upgradeWarnings[%d] (%q) was given by no example", n, w.summaries)
		}
	}
}

// cite is why a change is made: its CHANGELOG entry, checked to be one
// this build announces since the release, and what of the test's
// environment makes it.
func (u *releaseUpgrade) cite(t *testing.T, excerpt, environment string) string {
	t.Helper()
	why := "CHANGELOG: " + excerpt
	if isDerived(excerpt) {
		why = excerpt // a digest of what upgradeLines list
	} else if err := u.announced(excerpt); err != nil {
		t.Error(err)
	}
	if environment != "" {
		why += " (here because " + environment + ")"
	}
	return why
}

// changelogEntry is a bullet of a CHANGELOG.md, its lines joined, and the
// release section it is under ("Unreleased", "0.1.0").
type changelogEntry struct{ section, text string }

var changelogSection = regexp.MustCompile(`^## (?:\[([^]]+)\]|(Unreleased))`)

func readChangelog(file string) ([]changelogEntry, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var entries []changelogEntry
	section := ""
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch m := changelogSection.FindStringSubmatch(line); {
		case m != nil:
			section = m[1] + m[2]
		case strings.HasPrefix(line, "- "):
			entries = append(entries, changelogEntry{section, strings.TrimPrefix(line, "- ")})
		case strings.HasPrefix(line, "  ") && len(entries) > 0 && strings.TrimSpace(line) != "":
			entries[len(entries)-1].text += " " + strings.TrimSpace(line)
		}
	}
	return entries, nil
}

var changelogs = struct {
	sync.Mutex
	read map[string][]changelogEntry
}{read: map[string][]changelogEntry{}}

func cachedChangelog(file string) ([]changelogEntry, error) {
	changelogs.Lock()
	defer changelogs.Unlock()
	if entries, ok := changelogs.read[file]; ok {
		return entries, nil
	}
	entries, err := readChangelog(file)
	if err == nil {
		changelogs.read[file] = entries
	}
	return entries, err
}

// isDerived: a table row's entry that cites no CHANGELOG entry but says
// what it derives from ("the configuration's own digest ...").
func isDerived(entry string) bool {
	return strings.HasPrefix(entry, "the ") && !strings.Contains(entry, "`")
}

// upgradeTableEntries are the CHANGELOG excerpts the tables cite.
func upgradeTableEntries() []string {
	var entries []string
	for _, c := range upgradeChanges {
		entries = append(entries, c.entry)
	}
	for _, l := range upgradeLines {
		entries = append(entries, l.entry)
	}
	for _, o := range upgradeOutputChanges {
		entries = append(entries, o.entry)
	}
	for _, d := range upgradeDestroyCommands {
		entries = append(entries, d.entry)
	}
	for _, w := range upgradeWarnings {
		entries = append(entries, w.entry)
	}
	return slices.DeleteFunc(entries, isDerived)
}

// announced: excerpt is in exactly one entry of this tree's CHANGELOG.md,
// in a section the release's CHANGELOG.md does not have (Unreleased, or a
// release since), and in none of the release's entries: a change since the
// release, filed where a user upgrading from it reads.
func (u *releaseUpgrade) announced(excerpt string) error {
	ours, err := cachedChangelog(filepath.Join("..", "..", "CHANGELOG.md"))
	if err != nil {
		return err
	}
	theirs, err := cachedChangelog(filepath.Join(filepath.Dir(u.examples), "CHANGELOG.md"))
	if err != nil {
		return err
	}
	var found []changelogEntry
	for _, e := range ours {
		if strings.Contains(e.text, excerpt) {
			found = append(found, e)
		}
	}
	switch {
	case len(found) == 0:
		return fmt.Errorf("no CHANGELOG.md entry has %q", excerpt)
	case len(found) > 1:
		return fmt.Errorf("%d CHANGELOG.md entries have %q: quote one alone", len(found), excerpt)
	}
	for _, e := range theirs {
		if strings.Contains(e.text, excerpt) {
			return fmt.Errorf("CHANGELOG.md's %q is %s's own, not a change since", excerpt, u.from)
		}
	}
	for _, e := range theirs {
		if e.section == found[0].section {
			return fmt.Errorf("CHANGELOG.md files %q under [%s], which %s's own CHANGELOG.md has: it is a change since %s, "+
				"for Unreleased", excerpt, found[0].section, u.from, u.from)
		}
	}
	return nil
}

// sortedKeys are a map's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
