package hostres

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"golang.org/x/crypto/ssh"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// The lifecycle end to end: kha_lab (lab_test.go) through the framework's
// server, on hosts in memory (memhost_test.go).

const (
	pathA   = "/etc/lab/a.conf"
	pathB   = "/etc/lab/b.conf"
	labHost = "192.0.2.10"
	labID   = labHost + ":22:" + pathA
)

// before is a file the host had before kha: not kha's mode or owner.
var before = memFile{content: "before\n", mode: 0o600, owner: "nobody", group: "nogroup"}

// twoFiles is kha_lab with a and b on labHost.
func twoFiles(a, b string) *labConfig {
	return &labConfig{SSH: on(labHost), Files: []labFileConfig{{Path: pathA, Content: a}, {Path: pathB, Content: b}}}
}

// kha is what kha writes: mode 0644, the connecting user's.
func kha(content string) memFile {
	return memFile{content: content, mode: 0o644, owner: "root", group: "root"}
}

// digestOf is the digest of what kha writes of a and b, as sha256 has it.
func digestOf(a, b string) string {
	return DesiredDigest([]remote.Item{remote.File{Path: pathA, Content: []byte(a)}, remote.File{Path: pathB, Content: []byte(b)}})
}

// actions is destroy_actions of a and b.
func actions(a, b string) types.Map {
	return types.MapValueMust(types.StringType, map[string]attr.Value{pathA: types.StringValue(a), pathB: types.StringValue(b)})
}

// A create plans every digest before any host is read, then puts the
// files, saving the one the host had, and records the host's key (trust
// on first use); the next plan changes nothing.
func TestLifecycle_create(t *testing.T) {
	l := newLab(t)
	h := l.host(labHost)
	h.files[pathA] = before
	in := l.instance()
	config := twoFiles("a1\n", "b1\n")

	p := l.walk().plan(in, config)
	noErrors(t, p.diags)
	plan := l.model(p.state)
	if plan.SHA256.ValueString() != digestOf("a1\n", "b1\n") || plan.ID.ValueString() != labID {
		t.Errorf("planned sha256 %s and id %s, want what the configuration renders", plan.SHA256, plan.ID)
	}
	if !plan.DestroyActions.IsUnknown() || !plan.TrustedHostKey.IsUnknown() || !plan.Address.IsUnknown() {
		t.Errorf("planned before the host was reached: destroy_actions %s, trusted_host_key %s, address %s",
			plan.DestroyActions, plan.TrustedHostKey, plan.Address)
	}
	if len(l.dialled) != 0 {
		t.Errorf("the plan of a create connected to %d hosts", len(l.dialled))
	}

	noErrors(t, l.walk().apply(in, config, p))
	if h.files[pathA] != kha("a1\n") || h.files[pathB] != kha("b1\n") {
		t.Errorf("the host has %+v", h.files)
	}
	own := recordOf(t, in).Ownership
	if rec := h.records[pathA]; rec.claim != own.ID || rec.original == nil || *rec.original != before {
		t.Errorf("the record of %s: %+v, want the resource's claim and the file that was there", pathA, rec)
	}
	if rec := h.records[pathB]; rec.claim != own.ID || rec.original != nil {
		t.Errorf("the record of %s: %+v, want the claim and nothing saved", pathB, rec)
	}
	if !own.Saved[pathA] || own.Saved[pathB] {
		t.Errorf("the private record says saved %v", own.Saved)
	}
	state := l.model(in.state)
	if want := actions(OnDestroyRestore, OnDestroyDelete); !state.DestroyActions.Equal(want) {
		t.Errorf("destroy_actions %s, want %s", state.DestroyActions, want)
	}
	if want := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(h.key))); state.TrustedHostKey.ValueString() != want {
		t.Errorf("trusted_host_key %s, want the host's %q", state.TrustedHostKey, want)
	}
	if !state.RemoteSHA256.Equal(state.SHA256) || state.Address.ValueString() != h.address {
		t.Errorf("remote_sha256 %s (sha256 %s), address %s (WatchApplied's)", state.RemoteSHA256, state.SHA256, state.Address)
	}

	w := l.walk()
	noErrors(t, w.refresh(in))
	if trusted := l.dialled[len(l.dialled)-1].TrustedHostKey; trusted != state.TrustedHostKey.ValueString() {
		t.Errorf("the refresh connected trusting %q, not the recorded key", trusted)
	}
	if again := w.plan(in, config); !again.state.Equal(in.state) {
		t.Errorf("the plan after the create is not empty:\n%v", again.state)
	}
}

// A refresh that finds the files changed by hand keeps the host's digest
// and what changed (a file's changed lines, a mode); the plan warns and
// plans the configuration's digest back, and the apply puts it there.
// TestLifecycle_upgradeIsNotDrift: a build that renders the same state
// otherwise (an upgrade: HAProxy's user lines, a manifest's label) finds
// the host with exactly what the earlier build put there. Its refresh
// reports no change made by hand; the plan updates the files to the new
// render, and the apply puts them. A hand edit after that is drift again.
func TestLifecycle_upgradeIsNotDrift(t *testing.T) {
	l := newLab(t)
	h := l.host(labHost)
	in := l.instance()
	config := twoFiles("a1\n", "b1\n")
	noErrors(t, l.apply(in, config))

	labUpgrade = func(content string) string { return content + "new in this build\n" }
	t.Cleanup(func() { labUpgrade = nil })
	w := l.walk()
	noErrors(t, w.refresh(in))
	if drift := recordOf(t, in).Drift; len(drift) > 0 {
		t.Errorf("the refresh after the upgrade took the earlier build's files for a change by hand: %q", drift)
	}
	if state := l.model(in.state); !state.RemoteSHA256.Equal(state.SHA256) {
		t.Errorf("remote_sha256 %s, want %s: the host has what was applied", state.RemoteSHA256, state.SHA256)
	}
	p := w.plan(in, config)
	if warning := p.diags.find(tfprotov6.DiagnosticSeverityWarning, "Changed Outside Terraform: "+labID); warning != nil {
		t.Errorf("the plan after the upgrade warns: %s", warning.Detail)
	}
	if got := l.model(p.state).SHA256.ValueString(); got != digestOf("a1\nnew in this build\n", "b1\nnew in this build\n") {
		t.Errorf("planned sha256 %s, want the new render's", got)
	}
	noErrors(t, l.walk().apply(in, config, p))
	if h.files[pathA] != kha("a1\nnew in this build\n") {
		t.Errorf("the apply left %+v", h.files[pathA])
	}

	h.files[pathA] = kha("by hand\n")
	noErrors(t, l.walk().refresh(in))
	if drift := recordOf(t, in).Drift; len(drift) != 1 || !strings.HasPrefix(drift[0], pathA+": the file's content changed") {
		t.Errorf("a hand edit after the upgrade: drift %q", drift)
	}
}

func TestLifecycle_refreshShowsDrift(t *testing.T) {
	l := newLab(t)
	h := l.host(labHost)
	in := l.instance()
	config := twoFiles("a1\n", "b1\n")
	noErrors(t, l.apply(in, config))

	h.files[pathA] = kha("a1\nby hand\n")
	changed := h.files[pathB]
	changed.mode = 0o600
	h.files[pathB] = changed
	w := l.walk()
	noErrors(t, w.refresh(in))
	if state := l.model(in.state); state.RemoteSHA256.Equal(state.SHA256) {
		t.Error("remote_sha256 did not change with the host")
	}
	drift := strings.Join(recordOf(t, in).Drift, "\n")
	for _, want := range []string{pathA + ": the file's content changed:\n    + by hand", pathB + ": mode is 0600, want 0644"} {
		if !strings.Contains(drift, want) {
			t.Errorf("the drift recorded %q lacks %q", drift, want)
		}
	}

	p := w.plan(in, config)
	warning := p.diags.find(tfprotov6.DiagnosticSeverityWarning, "Changed Outside Terraform: "+labID)
	if warning == nil || !strings.Contains(warning.Detail, "+ by hand") {
		t.Fatalf("the plan does not warn of the drift:%s", p.diags)
	}
	if got := l.model(p.state).RemoteSHA256.ValueString(); got != digestOf("a1\n", "b1\n") {
		t.Errorf("planned remote_sha256 %s, want the configuration's digest", got)
	}
	noErrors(t, l.walk().apply(in, config, p))
	if h.files[pathA] != kha("a1\n") || h.files[pathB] != kha("b1\n") {
		t.Errorf("the apply left %+v", h.files)
	}
	noErrors(t, l.walk().refresh(in))
	if state := l.model(in.state); len(recordOf(t, in).Drift) > 0 || !state.RemoteSHA256.Equal(state.SHA256) {
		t.Errorf("drift after the apply: %q", recordOf(t, in).Drift)
	}

	delete(h.files, pathA)
	noErrors(t, l.walk().refresh(in))
	if drift := recordOf(t, in).Drift; len(drift) != 1 || drift[0] != pathA+": the file is missing" {
		t.Errorf("a missing file: drift %q", drift)
	}
}

// A host that does not answer a refresh is a warning, and the state stays;
// its destroy then fails at plan time, unless on_destroy = "keep", which
// a change of the state alone sets and which never contacts the host.
func TestLifecycle_hostThatDoesNotAnswer(t *testing.T) {
	l := newLab(t)
	h := l.host(labHost)
	in := l.instance()
	config := twoFiles("a1\n", "b1\n")
	noErrors(t, l.apply(in, config))
	applied := in.state

	h.down = true
	w := l.walk()
	diags := w.refresh(in)
	noErrors(t, diags)
	if diags.find(tfprotov6.DiagnosticSeverityWarning, "Host Unreachable: "+h.address) == nil {
		t.Errorf("no warning of the host:%s", diags)
	}
	if !in.state.Equal(applied) || recordOf(t, in).Unreachable == "" {
		t.Errorf("the refresh changed the state, or did not record the host gone")
	}
	destroy := w.plan(in, nil)
	if e := destroy.diags.find(tfprotov6.DiagnosticSeverityError, "SSH Connection Failed"); e == nil ||
		!strings.Contains(e.Detail, `set on_destroy = "keep" on it`) {
		t.Errorf("the plan to destroy does not fail with the way out:%s", destroy.diags)
	}
	diags = l.apply(in, twoFiles("a2\n", "b2\n"))
	if e := diags.find(tfprotov6.DiagnosticSeverityError, "SSH Connection Failed"); e == nil || !in.state.Equal(applied) {
		t.Errorf("a change of the host that does not answer: state %v:%s", in.state, diags)
	}

	dialled := len(l.dialled)
	config.OnDestroy = OnDestroyKeep
	noErrors(t, l.apply(in, config))
	if state := l.model(in.state); !state.DestroyActions.Equal(actions(OnDestroyKeep, OnDestroyKeep)) {
		t.Errorf("destroy_actions %s, want keep", state.DestroyActions)
	}
	noErrors(t, l.apply(in, nil))
	if !in.state.IsNull() || len(h.files) != 2 || len(h.records) != 2 {
		t.Errorf("the destroy kept a state, or changed the host: %+v", h.files)
	}
	// Only the two refreshes tried the host.
	if len(l.dialled)-dialled != 2 {
		t.Errorf("%d connections after the host went, want the refreshes' 2", len(l.dialled)-dialled)
	}
}

// A create whose second file the host rejects (its validate command
// fails) stops there: the first file is in place, the second as it was,
// with no record of kha's.
func TestLifecycle_createStopsAtARejectedFile(t *testing.T) {
	l := newLab(t)
	h := l.host(labHost)
	h.files[pathB] = before
	h.commands["lab-check b"] = exits1
	in := l.instance()
	config := twoFiles("a1\n", "b1\n")
	config.Files[1].ValidateCommand = "lab-check b"

	diags := l.apply(in, config)
	if e := diags.find(tfprotov6.DiagnosticSeverityError, "Applying File Failed"); e == nil || !strings.Contains(e.Detail, "validate of "+pathB) {
		t.Fatalf("want the validate's failure:%s", diags)
	}
	if h.files[pathA] != kha("a1\n") || h.files[pathB] != before {
		t.Errorf("the host has %+v, want the first file and the second as it was", h.files)
	}
	if _, ok := h.records[pathB]; ok || h.records[pathA].claim != recordOf(t, in).Ownership.ID {
		t.Errorf("records %+v, want the first file's alone, with the resource's claim", h.records)
	}
}

// An update whose second file cannot be written keeps the prior state:
// whole files are not rolled back, so the first one is the plan's, which
// the next refresh reports and the next apply completes.
func TestLifecycle_failedUpdateKeepsThePriorState(t *testing.T) {
	l := newLab(t)
	h := l.host(labHost)
	in := l.instance()
	noErrors(t, l.apply(in, twoFiles("a1\n", "b1\n")))
	prior := in.state

	h.unwritable[pathB] = true
	diags := l.apply(in, twoFiles("a2\n", "b2\n"))
	if diags.find(tfprotov6.DiagnosticSeverityError, "Applying File Failed") == nil {
		t.Fatalf("want the write's failure:%s", diags)
	}
	if !in.state.Equal(prior) || h.files[pathA] != kha("a2\n") || h.files[pathB] != kha("b1\n") {
		t.Errorf("state changed, or the host has %+v", h.files)
	}
	h.unwritable[pathB] = false
	noErrors(t, l.walk().refresh(in))
	if drift := recordOf(t, in).Drift; len(drift) != 1 || !strings.HasPrefix(drift[0], pathA+": the file's content changed") {
		t.Errorf("drift %q, want the first file's", drift)
	}
	noErrors(t, l.apply(in, twoFiles("a2\n", "b2\n")))
	if h.files[pathB] != kha("b2\n") {
		t.Errorf("the next apply left %+v", h.files)
	}
}

// A model that says how to undo its changes (Rendered.Rollback, here
// edits of files kha does not own) gets the files before a failed one
// put back, over a connection of their own, and, where the failed file's
// reload ran, that reload again once they are: the host is as it was, and
// a create leaves no state.
func TestLifecycle_rollsBackTheFilesBeforeAFailedOne(t *testing.T) {
	l := newLab(t)
	h := l.host(labHost)
	h.files[pathA], h.files[pathB] = before, kha("b0\n")
	h.commands["lab-reload"] = func() error {
		if h.files[pathB].content == "b1\n" {
			return errors.New("b1 does not serve")
		}
		return nil
	}
	in := l.instance()
	config := twoFiles("a1\n", "b1\n")
	config.Files[0].Edit, config.Files[1].Edit, config.Files[1].ReloadCommand = true, true, "lab-reload"

	dialled := len(l.dialled)
	diags := l.apply(in, config)
	if e := diags.find(tfprotov6.DiagnosticSeverityError, "Applying File Failed"); e == nil || !strings.Contains(e.Detail, "b1 does not serve") ||
		diags.find(tfprotov6.DiagnosticSeverityError, "Rolling Back") != nil {
		t.Fatalf("want the reload's failure, and the rollback done:%s", diags)
	}
	if h.files[pathA] != before || h.files[pathB] != kha("b0\n") {
		t.Errorf("the host has %+v, want what it had", h.files)
	}
	// b's reload failed, ran again with b put back, and once more after a.
	if want := []string{"lab-reload", "lab-reload", "lab-reload"}; !slices.Equal(h.ran, want) {
		t.Errorf("ran %q, want %q", h.ran, want)
	}
	if !in.state.IsNull() || len(l.dialled)-dialled != 2 {
		t.Errorf("state %v after a create undone; %d connections, want the apply's and the rollback's", in.state, len(l.dialled)-dialled)
	}
}

// Destroy gives back or deletes each file as on_destroy says, or with
// keep leaves them and drops only kha's records of them, so that another
// resource may write them without adopt.
func TestLifecycle_destroy(t *testing.T) {
	for _, c := range []struct {
		onDestroy string
		a, b      *memFile // what the host has after the destroy; nil: nothing
		ran       []string // the commands the destroy ran
	}{
		{onDestroy: OnDestroyRestore, a: &before, ran: []string{"lab-stop"}},
		{onDestroy: OnDestroyDelete, ran: []string{"lab-stop"}},
		{onDestroy: OnDestroyKeep, a: &memFile{"a1\n", 0o644, "root", "root"}, b: &memFile{"b1\n", 0o644, "root", "root"}},
	} {
		t.Run(c.onDestroy, func(t *testing.T) {
			l := newLab(t)
			h := l.host(labHost)
			h.files[pathA] = before
			in := l.instance()
			config := twoFiles("a1\n", "b1\n")
			config.RemoveCommand, config.OnDestroy = "lab-stop", c.onDestroy
			noErrors(t, l.apply(in, config))

			noErrors(t, l.apply(in, nil))
			if !slices.Equal(h.ran, c.ran) {
				t.Errorf("ran %q, want %q", h.ran, c.ran)
			}
			for path, want := range map[string]*memFile{pathA: c.a, pathB: c.b} {
				if got, ok := h.files[path]; ok != (want != nil) || ok && got != *want {
					t.Errorf("%s: %+v (there: %t), want %+v", path, got, ok, want)
				}
			}
			if len(h.records) > 0 || !in.state.IsNull() {
				t.Errorf("records %+v, state %v left", h.records, in.state)
			}
		})
	}
}

// An update that drops a file takes it off the host, after the files it
// keeps are in place: deleted when kha made it, given back when kha saved
// what was there.
func TestLifecycle_updateRemovesWhatItNoLongerHas(t *testing.T) {
	l := newLab(t)
	h := l.host(labHost)
	h.files[pathA] = before
	in := l.instance()
	noErrors(t, l.apply(in, twoFiles("a1\n", "b1\n")))

	noErrors(t, l.apply(in, &labConfig{SSH: on(labHost), Files: []labFileConfig{{Path: pathB, Content: "b2\n"}}}))
	if h.files[pathA] != before || h.files[pathB] != kha("b2\n") {
		t.Errorf("the host has %+v, want a given back and b updated", h.files)
	}
	if _, ok := h.records[pathA]; ok {
		t.Errorf("the record of %s stays", pathA)
	}
	if id := l.model(in.state).ID.ValueString(); id != labHost+":22:"+pathB {
		t.Errorf("id %s, want the first file's", id)
	}
}

// A resource that moves to another host is replaced: destroy cleans the
// old host, and what the new one saves is not known until its create.
func TestLifecycle_planOfAMoveReplaces(t *testing.T) {
	l := newLab(t)
	l.host(labHost)
	in := l.instance()
	noErrors(t, l.apply(in, twoFiles("a1\n", "b1\n")))

	moved := twoFiles("a1\n", "b1\n")
	moved.SSH = on("192.0.2.11")
	p := l.walk().plan(in, moved)
	noErrors(t, p.diags)
	plan := l.model(p.state)
	if !p.replace || plan.ID.ValueString() != "192.0.2.11:22:"+pathA || !plan.DestroyActions.IsUnknown() || !plan.TrustedHostKey.IsUnknown() {
		t.Errorf("replace %t, id %s, destroy_actions %s, trusted_host_key %s", p.replace, plan.ID, plan.DestroyActions, plan.TrustedHostKey)
	}
}

// A file another resource claimed on its host (another configuration,
// or one destroyed with on_destroy = "keep") is refused before anything
// changes, unless adopt takes it over: the first resource's destroy then
// leaves it to its new owner.
func TestLifecycle_fileAnotherResourceClaims(t *testing.T) {
	l := newLab(t)
	h := l.host(labHost)
	first := l.instance()
	noErrors(t, l.apply(first, twoFiles("a1\n", "b1\n")))

	other := l.instance()
	config := &labConfig{SSH: on(labHost), Files: []labFileConfig{{Path: pathB, Content: "mine\n"}}}
	diags := l.apply(other, config)
	if e := diags.find(tfprotov6.DiagnosticSeverityError, "Applying File Failed"); e == nil || !strings.Contains(e.Detail, "managed by another kha resource: kha_lab applied from") {
		t.Fatalf("want the claim's refusal, naming the owner:%s", diags)
	}
	if h.files[pathB] != kha("b1\n") || !other.state.IsNull() {
		t.Errorf("the host has %+v, state %v", h.files, other.state)
	}

	config.Adopt = true
	noErrors(t, l.apply(other, config))
	diags = l.apply(first, nil)
	noErrors(t, diags)
	if diags.find(tfprotov6.DiagnosticSeverityWarning, "File Left to Its New Owner") == nil || h.files[pathB] != kha("mine\n") {
		t.Errorf("the first resource's destroy: %+v:%s", h.files, diags)
	}
	if _, ok := h.files[pathA]; ok || h.records[pathB].claim != recordOf(t, other).Ownership.ID {
		t.Errorf("the host has %+v, records %+v", h.files, h.records)
	}
}

// Destroy leaves a file whose record is gone (kha cannot vouch that it is
// the file kha wrote), and stops at one whose saved original is gone,
// keeping the state.
func TestLifecycle_destroyOnlyWhatKhaCanVouchFor(t *testing.T) {
	l := newLab(t)
	h := l.host(labHost)
	h.files[pathA] = before
	in := l.instance()
	noErrors(t, l.apply(in, twoFiles("a1\n", "b1\n")))
	applied := in.state

	delete(h.records, pathB)
	h.records[pathA] = memRecord{claim: h.records[pathA].claim}
	diags := l.apply(in, nil)
	if diags.find(tfprotov6.DiagnosticSeverityWarning, "File Left on the Host") == nil {
		t.Errorf("no warning of the file left:%s", diags)
	}
	if e := diags.find(tfprotov6.DiagnosticSeverityError, "Removing File Failed"); e == nil || !strings.Contains(e.Detail, "the saved copy is gone") {
		t.Errorf("want the missing original's error:%s", diags)
	}
	if h.files[pathA] != kha("a1\n") || h.files[pathB] != kha("b1\n") || !in.state.Equal(applied) {
		t.Errorf("the host has %+v; state %v", h.files, in.state)
	}
}

// Import records the file found, by its digest, for on_destroy = "keep";
// the first apply with the configuration adopts the file, saving it, and
// a destroy with restore gives it back.
func TestLifecycle_import(t *testing.T) {
	l := newLab(t)
	h := l.host(labHost)
	h.files[pathA] = before

	in, diags := l.walk().importID(labID)
	noErrors(t, diags)
	state := l.model(in.state)
	if want := remote.SHA256([]byte(before.content)); state.SHA256.ValueString() != want {
		t.Errorf("sha256 %s: want the found file's %s", state.SHA256, want)
	}
	// The read after the import compares the file with what the resource
	// keeps: its content, and the mode it gives the file.
	if drift := recordOf(t, in).Drift; len(drift) != 1 || drift[0] != pathA+": mode is 0600, want 0644" {
		t.Errorf("drift %q, want the mode's", drift)
	}
	if state.ID.ValueString() != labID || state.OnDestroy.ValueString() != OnDestroyKeep || !recordOf(t, in).Ownership.Imported {
		t.Errorf("id %s, on_destroy %s, record %+v", state.ID, state.OnDestroy, recordOf(t, in))
	}
	if state.TrustedHostKey.IsNull() || state.Address.ValueString() != h.address {
		t.Errorf("the read after the import: trusted_host_key %s, address %s", state.TrustedHostKey, state.Address)
	}

	config := &labConfig{SSH: on(labHost), Files: []labFileConfig{{Path: pathA, Content: "a1\n"}}, OnDestroy: OnDestroyRestore}
	noErrors(t, l.apply(in, config))
	if h.files[pathA] != kha("a1\n") || h.records[pathA].original == nil || recordOf(t, in).Ownership.Imported {
		t.Errorf("the first apply: %+v, records %+v", h.files, h.records)
	}
	noErrors(t, l.apply(in, nil))
	if h.files[pathA] != before {
		t.Errorf("the destroy left %+v, want the file import found", h.files[pathA])
	}

	for id, want := range map[string]string{
		labHost + ":22:/etc/lab/none": "192.0.2.10:22 has no file at /etc/lab/none to import",
		labHost + ":22:/etc/../lab":   `"/etc/../lab" in "192.0.2.10:22:/etc/../lab" is not an absolute path to a file`,
		labHost + ":/etc/lab/a.conf":  `is not host:port:path`,
	} {
		if _, diags := l.walk().importID(id); len(diags) == 0 || !strings.Contains(diags[0].Detail, want) {
			t.Errorf("import %s:%s\nwant %q", id, diags, want)
		}
	}
}

// With a rollout, the canary of a group applies first: when it fails,
// the others of its group fail without contacting their hosts, naming
// the canary and its error.
func TestLifecycle_failedCanaryStopsItsGroup(t *testing.T) {
	l := newLab(t)
	l.provider = `{"default_ssh": {"password": "secret", "insecure_trust_on_first_use": true}, "rollout": {"canary": 1}}`
	canaryHost, otherHost := l.host("192.0.2.11"), l.host("192.0.2.12")
	canaryHost.commands["lab-check"] = exits1
	configs := []*labConfig{
		{SSH: on("192.0.2.11"), Files: []labFileConfig{{Path: pathA, Content: "a1\n", ValidateCommand: "lab-check"}}},
		{SSH: on("192.0.2.12"), Files: []labFileConfig{{Path: pathA, Content: "a1\n", ValidateCommand: "lab-check"}}},
	}
	canary, other := l.instance(), l.instance()
	plan := l.walk()
	plans := []planned{plan.plan(canary, configs[0]), plan.plan(other, configs[1])}

	apply := l.walk()
	if diags := apply.apply(canary, configs[0], plans[0]); diags.find(tfprotov6.DiagnosticSeverityError, "Applying File Failed") == nil {
		t.Fatalf("the canary did not fail:%s", diags)
	}
	diags := apply.apply(other, configs[1], plans[1])
	e := diags.find(tfprotov6.DiagnosticSeverityError, "Rollout Stopped")
	if e == nil || !strings.Contains(e.Detail, "not attempted: canary 192.0.2.11:22:"+pathA+" failed: Applying File Failed: 192.0.2.11:22: validate") {
		t.Fatalf("want the group stopped by its canary:%s", diags)
	}
	if len(otherHost.ran) > 0 || len(otherHost.files) > 0 || !other.state.IsNull() {
		t.Errorf("the host after the canary ran %q and has %+v", otherHost.ran, otherHost.files)
	}
	for _, cfg := range l.dialled {
		if cfg.Address() == otherHost.address {
			t.Error("connected to the host after the failed canary")
		}
	}
}

// A configuration's ssh is checked before any plan: a secret given twice
// and a setting that does not parse are errors at their attributes.
func TestLifecycle_validateChecksTheSSHSettings(t *testing.T) {
	l := newLab(t)
	config := twoFiles("a1\n", "b1\n")
	config.SSH = map[string]string{"host": labHost, "password": "one", "password_wo": "two", "host_key": "ssh-ed25519 nonsense",
		"timeout": "soon"}
	p := l.walk().plan(l.instance(), config)
	for summary, attr := range map[string]string{"Secret Given Twice": "password_wo", "Invalid SSH Setting": "host_key"} {
		d := p.diags.find(tfprotov6.DiagnosticSeverityError, summary)
		if d == nil || d.Attribute == nil || !d.Attribute.Equal(tftypes.NewAttributePath().WithAttributeName("ssh").WithAttributeName(attr)) {
			t.Errorf("no %q at ssh.%s:%s", summary, attr, p.diags)
		}
	}
	if !strings.Contains(p.diags.String(), `ssh.timeout "soon" is not a positive duration`) {
		t.Errorf("the timeout passes:%s", p.diags)
	}
}

// With write-only credentials alone, a refresh cannot reach the host
// (they are in no state): it marks the state unobserved, and the plan
// looks with the configuration's credentials, planning remote_sha256
// unknown where the host differs. Destroy, which has no configuration,
// says where credentials must be.
func TestLifecycle_writeOnlyCredentials(t *testing.T) {
	l := newLab(t)
	l.provider = `{"default_ssh": {"insecure_trust_on_first_use": true}}`
	h := l.host(labHost)
	in := l.instance()
	config := twoFiles("a1\n", "b1\n")
	config.SSH["password_wo"] = "secret"
	noErrors(t, l.apply(in, config))

	dialled := len(l.dialled)
	w := l.walk()
	noErrors(t, w.refresh(in))
	if !recordOf(t, in).Unobserved || len(l.dialled) != dialled {
		t.Fatalf("the refresh without credentials: record %+v, %d connections", recordOf(t, in), len(l.dialled)-dialled)
	}
	if p := w.plan(in, config); !p.state.Equal(in.state) || len(l.dialled) != dialled+1 {
		t.Errorf("the plan of a host as it should be: %d connections, a change: %v", len(l.dialled)-dialled, p.state)
	}
	h.files[pathA] = kha("by hand\n")
	if p := w.plan(in, config); !l.model(p.state).RemoteSHA256.IsUnknown() {
		t.Errorf("planned remote_sha256 %s for a host that differs, want unknown", l.model(p.state).RemoteSHA256)
	}

	diags := l.apply(in, nil)
	if e := diags.find(tfprotov6.DiagnosticSeverityError, "No Credentials to Remove Files"); e == nil || !strings.Contains(e.Detail, "default_ssh") {
		t.Errorf("the destroy without credentials:%s", diags)
	}
	if len(h.files) != 2 {
		t.Errorf("the destroy changed the host: %+v", h.files)
	}
}

// A state written before schema versions carries over attribute by
// attribute: what the schema no longer has is dropped, what it added is
// null.
func TestLifecycle_upgradesAnUnversionedState(t *testing.T) {
	l := newLab(t)
	resp, err := l.walk().UpgradeResourceState(t.Context(), &tfprotov6.UpgradeResourceStateRequest{TypeName: "kha_lab", Version: 0,
		RawState: &tfprotov6.RawState{JSON: []byte(`{"id": "` + labID + `", "files": [{"path": "` + pathA + `", "content": "a1\n"}], "gone": true}`)}})
	if err != nil {
		t.Fatal(err)
	}
	noErrors(t, resp.Diagnostics)
	state, err := resp.UpgradedState.Unmarshal(l.typ)
	if err != nil {
		t.Fatal(err)
	}
	m := l.model(state)
	if m.ID.ValueString() != labID || len(m.Files) != 1 || m.Files[0].Content.ValueString() != "a1\n" || !m.SHA256.IsNull() {
		t.Errorf("upgraded to %v", state)
	}
}

// A create that put some of its files before another failed keeps a
// (tainted) state of them, with the claim they carry on the host, so that
// Terraform replaces the resource at the next apply (destroy, then
// create). For a model that watches what it applied (AppliedWatcher:
// kha_haproxy_config, kha_nginx_config, kha_keepalived_config), setPlanned
// returns before it sets the state whenever the apply's diagnostics hold
// an error already, which after a failed file they always do: no state is
// kept, and the next create, with a new claim, is refused the files the
// lost one claimed ("managed by another kha resource").
func TestLifecycle_failedCreateKeepsAStateOfWhatItPut(t *testing.T) {
	l := newLab(t)
	h := l.host(labHost)
	h.commands["lab-check b"] = exits1
	in := l.instance()
	config := twoFiles("a1\n", "b1\n")
	config.Files[1].ValidateCommand = "lab-check b"
	if diags := l.apply(in, config); diags.find(tfprotov6.DiagnosticSeverityError, "Applying File Failed") == nil {
		t.Fatalf("want the validate's failure:%s", diags)
	}
	if in.state.IsNull() {
		t.Errorf("no state of %s, which the host has with the resource's claim %q", pathA, h.records[pathA].claim)
	} else {
		noErrors(t, l.apply(in, nil)) // the replacement's destroy
	}
	delete(h.commands, "lab-check b")
	noErrors(t, l.apply(in, config))
}
