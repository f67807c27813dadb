package hostres

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

func (r *Resource[M, P]) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.apply(ctx, req.Plan, req.Config, nil, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *Resource[M, P]) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.apply(ctx, req.Plan, req.Config, &req.State, &resp.State, resp.Private, &resp.Diagnostics)
}

// applyRun is one create or update. Its steps run in the order apply
// calls them; each returns false when the run ends there (with the state
// it leaves set).
type applyRun[M any, P Model[M]] struct {
	r                   *Resource[M, P]
	plan, config, prior M
	// update is false for a create, which has no prior state.
	update bool
	h      *Common // the plan's
	rec    privateRecord
	state  *tfsdk.State
	diags  *diag.Diagnostics

	// Filled as the run goes.
	out            Rendered // what the plan renders, after the host is read
	old            Rendered // what the prior state rendered
	priorDelivered bool
	capture        bool // the put saves what it finds (claim)
	m              ResolvedSSH
	client         Host
	interim        *interimPlan
	outcomes       []remote.Outcome // of the puts that succeeded
}

// apply puts the planned files on the host, then removes from it every
// file or block the prior state had and the plan no longer has. Each whole
// file carries the resource's ownership claim (owned): a create, or the first
// apply after an import, saves on the host what it replaces.
func (r *Resource[M, P]) apply(ctx context.Context, planned tfsdk.Plan, cfg tfsdk.Config, priorState *tfsdk.State, state *tfsdk.State, private privateStore, diags *diag.Diagnostics) {
	run := &applyRun[M, P]{r: r, update: priorState != nil, state: state, diags: diags}
	if !run.load(ctx, planned, cfg, priorState, private) {
		return
	}
	if run.update && changesStateOnly(planned.Raw, priorState.Raw) {
		run.stateOnly(ctx)
		return
	}
	timeout, d := run.h.Timeouts.Create(ctx, DefaultApplyTimeout)
	if run.update {
		timeout, d = run.h.Timeouts.Update(ctx, DefaultApplyTimeout)
	}
	diags.Append(d...)
	if !run.render(ctx) {
		return
	}
	// The timeouts bound the time the resource holds its host, as
	// Terraform's own -parallelism wait is not counted: a wait for the
	// rollout's turn ends with the apply (an interrupt) or when those
	// ahead end, each within its own timeouts.
	ticket, ok := run.admit(ctx)
	if !ok {
		return
	}
	if ticket != nil {
		defer func() { ticket.done(changedHost(run.outcomes), diags.HasError(), firstError(*diags)) }()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !run.connect(ctx) || !run.readHost(ctx) {
		return
	}
	run.claim()
	if !run.planInterim(ctx) || !run.put(ctx, private) {
		return
	}
	run.finish(ctx, private)
}

// load reads the plan, configuration (configOf), prior state and private
// record.
func (run *applyRun[M, P]) load(ctx context.Context, planned tfsdk.Plan, cfg tfsdk.Config, priorState *tfsdk.State, private privateState) bool {
	if run.diags.Append(planned.Get(ctx, &run.plan)...); run.diags.HasError() {
		return false
	}
	config, d := configOf(ctx, cfg, &run.plan)
	run.diags.Append(d...)
	run.config = config
	if run.update {
		run.diags.Append(priorState.Get(ctx, &run.prior)...)
	}
	if run.diags.HasError() {
		return false
	}
	run.h = P(&run.plan).Fields()
	run.h.OnDestroy = onDestroyFor(P(&run.plan), P(&run.config).Fields().OnDestroy, P(&run.prior).Fields().OnDestroy)
	rec, d := readPrivateRecord(ctx, private)
	run.diags.Append(d...)
	run.rec = rec
	return !run.diags.HasError()
}

// stateOnly applies a change of on_destroy, keep_on_destroy or timeouts:
// nothing on the host changes, so a host that is gone for good can still
// be let go of this way.
func (run *applyRun[M, P]) stateOnly(ctx context.Context) {
	tflog.Info(ctx, "only what destroy does or timeouts changed; the host is not contacted")
	if out, d := P(&run.plan).Render(&run.config); !d.HasError() {
		run.rec.Ownership.settle(run.h, out.Files)
	}
	run.setPlanned(ctx, nil)
}

// render renders the plan, and the prior state for what the apply
// removes. A plan that delivers nothing ends the run with its state.
func (run *applyRun[M, P]) render(ctx context.Context) bool {
	out, d := P(&run.plan).Render(&run.config)
	run.diags.Append(d...)
	if run.diags.HasError() {
		return false
	}
	run.out = out
	if !delivered(out, run.h) {
		run.h.DestroyActions = types.MapNull(types.StringType)
		run.setPlanned(ctx, nil)
		return false
	}
	if run.update {
		old, d := P(&run.prior).Render(nil)
		run.old, run.priorDelivered = old, !d.HasError() && delivered(old, P(&run.prior).Fields())
	}
	return true
}

// admit resolves the connection and waits for the host's turn in its
// rollout group; a run not admitted keeps the prior state.
func (run *applyRun[M, P]) admit(ctx context.Context) (*rolloutTicket, bool) {
	m, d := run.r.sshOf(ctx, P(&run.config).Fields(), run.h.TrustedHostKey)
	run.diags.Append(d...)
	if run.diags.HasError() {
		return nil, false
	}
	run.m = m
	ticket, d := run.r.admit(ctx, run.h, hostID(m.Config, run.out.Files))
	if d.HasError() {
		run.diags.Append(d...)
		run.keepPrior(ctx) // not attempted
		return nil, false
	}
	return ticket, true
}

// connect connects to change the host, recording its key on first use.
func (run *applyRun[M, P]) connect(ctx context.Context) bool {
	client, d := run.r.connect(ctx, run.m, ToChange)
	run.diags.Append(d...)
	if run.diags.HasError() {
		return false
	}
	run.client = client
	if run.h.TrustedHostKey.IsUnknown() {
		if run.h.TrustedHostKey, d = TrustedKeyOf(client); d.HasError() {
			run.diags.Append(d...)
			return false
		}
	}
	return true
}

// readHost lets a HostReader model read the host and render again.
func (run *applyRun[M, P]) readHost(ctx context.Context) bool {
	out, d := run.r.readHost(ctx, run.client, &run.plan, &run.config, run.out)
	run.diags.Append(d...)
	run.out = out
	return !d.HasError()
}

// claim takes the resource's claim on its paths. What a create finds at
// a path was there before kha, and so is what an import found: the put
// captures it. An update of a resource that kept no claim finds its own
// files.
func (run *applyRun[M, P]) claim() {
	own := &run.rec.Ownership
	run.capture = own.Imported || (own.ID == "" && !run.priorDelivered)
	if own.ID == "" {
		*own = newOwnership(false)
	}
}

// planInterim plans a handover's interim configuration and puts its
// record on the host before it.
func (run *applyRun[M, P]) planInterim(ctx context.Context) bool {
	if run.priorDelivered {
		interim, d := planInterim(P(&run.plan), P(&run.prior), run.rec.Handover, run.out)
		run.diags.Append(d...)
		if run.diags.HasError() {
			return false
		}
		run.interim = interim
	}
	run.h.ID = types.StringValue(hostID(run.m.Config, run.out.Files))
	if run.interim != nil {
		if err := run.interim.putRecord(ctx, run.client, run.rec.Ownership.ID); err != nil {
			run.diags.AddError("Applying File Failed", err.Error())
			run.keepPrior(ctx)
			return false
		}
	}
	return true
}

// put puts the files (the interim ones during a handover) with the
// resource's claim. After a failure it sets the state the host is left
// in and records what the host saved.
func (run *applyRun[M, P]) put(ctx context.Context, private privateSetter) bool {
	toPut := run.out
	if run.interim != nil {
		toPut = run.interim.out
	}
	own := &run.rec.Ownership
	toPut.Files = run.r.owned(toPut.Files, *own, run.h, run.capture)
	toPut.Files = run.r.data.withClusterTurns(run.h.ID.ValueString(), toPut.Files)
	failed, put, outcomes := run.r.putAll(ctx, run.client, run.m, toPut, run.diags)
	run.outcomes = outcomes
	own.record(toPut.Files, outcomes)
	if !failed {
		return true
	}
	if run.interim != nil {
		if err := removeRecord(ctx, run.client, run.interim.at); err != nil {
			run.diags.AddWarning("Handover Record Left on the Host", err.Error())
		}
	}
	h := run.h
	switch {
	case !run.update && put > 0:
		// Earlier files are on the host: keep a (tainted) state so that
		// the next apply replaces the resource and cleans up.
		h.RemoteSHA256 = types.StringNull()
		own.settle(h, run.out.Files)
		run.setPlanned(ctx, nil)
	case run.update && put > 0 && editsOnly(toPut.Files) && holdsAll(toPut.Files, run.old.Files):
		// Only the state can take these changes back (what the model
		// read before them, as kha_kubeconfig_server's
		// previous_servers): it keeps the plan's, which has every path
		// of the prior state's and those this apply added; the refresh
		// shows what the host has.
		h.RemoteSHA256 = types.StringNull()
		run.setPlanned(ctx, nil)
	case run.update:
		run.keepPrior(ctx) // with the claim its files may carry now
	}
	run.diags.Append(run.rec.write(ctx, private)...)
	return false
}

// finish removes what the prior state had and the plan does not, then
// sets the state and the record of a host that has the plan.
func (run *applyRun[M, P]) finish(ctx context.Context, private privateSetter) {
	own := &run.rec.Ownership
	if run.priorDelivered {
		run.r.removeLeftovers(ctx, run.client, run.r.owned(run.old.Files, *own, run.h, false), run.out.Files, run.diags)
		if run.diags.HasError() {
			return
		}
	}
	own.Imported = false
	own.settle(run.h, run.out.Files)
	run.h.RemoteSHA256 = types.StringValue(run.h.SHA256.ValueString())
	run.setPlanned(ctx, run.client)
	run.rec.observed(nil)
	run.rec.Handover = nil
	if run.interim != nil {
		pending := run.interim.pending()
		run.rec.Handover = &pending
	}
	run.diags.Append(run.rec.write(ctx, private)...)
}

// setPlanned sets the state to the plan, with what only the apply makes
// filled in (AppliedWatcher): from the host through c after a change that
// succeeded, else (c nil) as null.
func (run *applyRun[M, P]) setPlanned(ctx context.Context, c Host) {
	if watcher, ok := any(P(&run.plan)).(AppliedWatcher); ok {
		d := watcher.WatchApplied(ctx, c)
		if run.diags.Append(d...); d.HasError() {
			return
		}
	}
	run.diags.Append(run.state.Set(ctx, &run.plan)...)
}

// keepPrior leaves the prior state in place: an update that did not
// change the host.
func (run *applyRun[M, P]) keepPrior(ctx context.Context) {
	if run.update {
		run.diags.Append(run.state.Set(ctx, &run.prior)...)
	}
}

// putAll puts out's files on the host in order. After a failure it puts
// back what the files before the failed one changed, where the model
// says how (rollback), and reports how many files the host keeps (or may
// keep: remote.LeftInPlace) of this apply: 0 when it is as it was.
// outcomes are the puts' that succeeded.
func (r *Resource[M, P]) putAll(ctx context.Context, client Host, m ResolvedSSH, out Rendered, diags *diag.Diagnostics) (failed bool, kept int, outcomes []remote.Outcome) {
	for i, f := range out.Files {
		outcome, err := client.Put(ctx, f)
		if err == nil {
			outcomes = append(outcomes, outcome)
			continue
		}
		left, detail := 0, err.Error()
		if remote.LeftInPlace(err) {
			left = 1
			detail += "\n\nThe resource stays in state with what the host had before this apply (a failed create as " +
				"tainted): the next apply, or destroy, takes the change back from there."
		}
		diags.AddError("Applying File Failed", detail)
		reload := ""
		if remote.ReloadedAfterSwap(err) {
			reload = f.Reload()
		}
		if i > 0 && len(out.Rollback) > 0 && r.rollBack(ctx, m, out.Rollback[:i], reload, diags) {
			return true, left, outcomes
		}
		return true, i + left, outcomes
	}
	return false, len(out.Files), outcomes
}

// holdsAll says whether items has every place that old has.
func holdsAll(items, old []remote.Item) bool {
	for _, o := range old {
		path, marker := o.Place()
		if !slices.ContainsFunc(items, func(it remote.Item) bool {
			p, m := it.Place()
			return p == path && m == marker
		}) {
			return false
		}
	}
	return true
}

// editsOnly says whether every item is an edit (remote.EditedFile): a
// change whose undo the state holds, with no record of it on the host.
func editsOnly(items []remote.Item) bool {
	for _, it := range items {
		switch it.(type) {
		case remote.EditedFile, *remote.EditedFile:
		default:
			return false
		}
	}
	return len(items) > 0
}

// rollBack undoes, last first, what the files before a failed one
// changed, over a fresh connection (the failure may have been a lost
// one), running reload after the last undo when the failed file's reload
// ran. It reports whether the host is back as it was; when it is not,
// the error says what is left.
func (r *Resource[M, P]) rollBack(ctx context.Context, m ResolvedSSH, undo []*remote.EditedFile, reload string, diags *diag.Diagnostics) bool {
	client, d := r.connect(ctx, m, ToChange)
	if d.HasError() {
		diags.AddError("Rolling Back Failed", "the files changed before the failure could not be put back: "+
			Summary(d)+". The next apply puts the resource right.")
		return false
	}
	first := slices.IndexFunc(undo, func(f *remote.EditedFile) bool { return f != nil })
	for i := len(undo) - 1; i >= 0; i-- {
		if undo[i] == nil {
			continue
		}
		f := *undo[i]
		if i == first {
			f.ReloadCommand = reload
		}
		tflog.Info(ctx, "rolling back a file changed before the failure", map[string]any{"path": f.Path, "reload": reload != ""})
		if err := client.Remove(ctx, f, ""); err != nil {
			diags.AddError("Rolling Back Failed", fmt.Sprintf("%s was changed before the failure and could not be put back: %v. "+
				"The next apply puts the resource right.", undo[i].Path, err))
			return false
		}
	}
	return true
}

// removeLeftovers removes the files of the prior state that the new set
// does not have (a changed path, a static pod given up for systemd),
// after the new ones are in place and reloaded.
func (r *Resource[M, P]) removeLeftovers(ctx context.Context, client Host, old, current []remote.Item, diags *diag.Diagnostics) {
	type place struct{ path, marker string }
	keep := map[place]bool{}
	for _, f := range current {
		path, marker := f.Place()
		keep[place{path, marker}] = true
	}
	for i := len(old) - 1; i >= 0; i-- {
		if path, marker := old[i].Place(); !keep[place{path, marker}] {
			if err := client.Remove(ctx, old[i], ""); !leftToItsOwner(err, diags) {
				diags.AddError("Removing Old File Failed", err.Error())
				return
			}
		}
	}
}
