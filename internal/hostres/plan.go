package hostres

import (
	"context"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// renderInputsKnown says whether every attribute but `ssh` and
// the timeouts is known, which is all rendering needs.
func renderInputsKnown(raw tftypes.Value) bool {
	var attrs map[string]tftypes.Value
	if err := raw.As(&attrs); err != nil {
		return false
	}
	for name, v := range attrs {
		if name != "ssh" && name != "timeouts" && !v.IsFullyKnown() {
			return false
		}
	}
	return true
}

// planRun is one plan of a create or update. Its steps fill the plan's
// computed attributes in the order ModifyPlan calls them; a step that
// returns false ends the plan.
type planRun[M any, P Model[M]] struct {
	r      *Resource[M, P]
	rec    privateRecord
	plan   M
	config M       // configOf's
	h      *Common // the plan's
	prior  *Common // the prior state's priorFields
	resp   *resource.ModifyPlanResponse

	out     Rendered
	desired string // the digest of out's files
	m       ResolvedSSH
	// sameHost: the prior state delivered to the host the plan delivers
	// to, whose record of the files stands.
	sameHost bool
}

func (r *Resource[M, P]) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	rec, diags := readPrivateRecord(ctx, req.Private)
	if resp.Diagnostics.Append(diags...); diags.HasError() {
		return
	}
	if req.Plan.Raw.IsNull() {
		resp.Diagnostics.Append(planDestroy(ctx, "kha_"+r.Name, req.State, rec)...)
		return
	}
	if !renderInputsKnown(req.Config.Raw) {
		return // inputs still unknown: computed values stay unknown
	}
	run := &planRun[M, P]{r: r, rec: rec, resp: resp}
	if !run.render(ctx, req) {
		return
	}
	wasDelivered := !req.State.Raw.IsNull() && AddressOfID(run.prior.ID.ValueString()) != ""
	if !delivered(run.out, run.h) {
		run.h.ID, run.h.RemoteSHA256, run.h.TrustedHostKey = types.StringValue(run.desired), types.StringNull(), types.StringNull()
		run.h.DestroyActions = types.MapNull(types.StringType)
		if wasDelivered {
			resp.RequiresReplace = append(resp.RequiresReplace, path.Root("ssh")) // destroy cleans the old host
		}
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &run.plan)...)
		return
	}
	if !run.connection(ctx, wasDelivered) {
		return
	}
	run.destroyActions()
	run.trustedHostKey()
	if run.sameHost {
		var d diag.Diagnostics
		id := run.prior.ID.ValueString()
		run.h.RemoteSHA256, d = r.planRemote(ctx, rec, run.m, id, run.out.Files, run.desired, run.h.TrustedHostKey)
		resp.Diagnostics.Append(d...)
		resp.Diagnostics.Append(warnPendingHandover(rec.Handover, id)...)
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &run.plan)...)
}

// render reads the plan, configuration and prior state, renders the
// files and fills what rendering decides: sha256, handover_sha256 and
// on_destroy, with the model's plan warnings.
func (run *planRun[M, P]) render(ctx context.Context, req resource.ModifyPlanRequest) bool {
	diags := &run.resp.Diagnostics
	diags.Append(req.Plan.Get(ctx, &run.plan)...)
	if diags.HasError() {
		return false
	}
	var d diag.Diagnostics
	run.config, d = configOf(ctx, req.Config, &run.plan)
	diags.Append(d...)
	run.prior, d = priorFields(ctx, req.State)
	diags.Append(d...)
	if diags.HasError() {
		return false
	}
	out, d := P(&run.plan).Render(&run.config)
	diags.Append(d...)
	if diags.HasError() {
		return false
	}
	if c, ok := any(P(&run.plan)).(PlanChecker); ok {
		diags.Append(c.CheckPlan()...)
	}
	if c, ok := any(P(&run.plan)).(ChangeChecker[M]); ok {
		var prior *M
		if !req.State.Raw.IsNull() {
			prior = new(M)
			if diags.Append(req.State.Get(ctx, prior)...); diags.HasError() {
				return false
			}
		}
		diags.Append(c.CheckChange(prior)...)
	}
	run.out, run.desired = out, DesiredDigest(out.Files)
	run.h = P(&run.plan).Fields()
	run.h.SHA256 = types.StringValue(run.desired)
	diags.Append(planHandoverSHA256(P(&run.plan), out)...)
	run.h.OnDestroy = onDestroyFor(P(&run.plan), P(&run.config).Fields().OnDestroy, run.prior.OnDestroy)
	return !diags.HasError()
}

// priorFields are the attributes of the prior state (nil on create) that
// a plan reads, each read alone: id, keep_on_destroy, on_destroy and
// trusted_host_key.
func priorFields(ctx context.Context, state tfsdk.State) (*Common, diag.Diagnostics) {
	var h Common
	var diags diag.Diagnostics
	if state.Raw.IsNull() {
		return &h, diags
	}
	diags.Append(state.GetAttribute(ctx, path.Root("id"), &h.ID)...)
	diags.Append(state.GetAttribute(ctx, path.Root("keep_on_destroy"), &h.KeepOnDestroy)...)
	diags.Append(state.GetAttribute(ctx, path.Root("on_destroy"), &h.OnDestroy)...)
	diags.Append(state.GetAttribute(ctx, path.Root("trusted_host_key"), &h.TrustedHostKey)...)
	return &h, diags
}

// connection resolves the plan's connection: the id, the reservations of the
// host's paths, and whether the resource moves to another host (a
// replacement: destroy cleans the old one, create fills the new).
func (run *planRun[M, P]) connection(ctx context.Context, wasDelivered bool) bool {
	diags := &run.resp.Diagnostics
	m, d := run.r.sshOf(ctx, P(&run.config).Fields(), run.prior.TrustedHostKey)
	diags.Append(d...)
	if diags.HasError() {
		return false
	}
	run.m = m
	run.h.RemoteSHA256 = types.StringValue(run.desired)
	run.h.ID = types.StringUnknown()
	if m.addressKnown() {
		if m.Config.Host == "" {
			diags.AddAttributeError(path.Root("ssh").AtName("host"), "Missing Host",
				"ssh.host is not set here or on the provider's default_ssh: set the host's address.")
			return false
		}
		run.h.ID = types.StringValue(hostID(m.Config, run.out.Files))
		diags.Append(run.r.data.reserve(m, P(&run.plan), run.desired, run.out.Files)...)
	}
	if len(m.Unknown) == 0 {
		if err := m.Config.Validate(); err != nil {
			diags.AddAttributeError(path.Root("ssh"), "Invalid Connection", err.Error())
			return false
		}
	}
	moved := wasDelivered && (!m.addressKnown() || AddressOfID(run.prior.ID.ValueString()) != m.Config.Address())
	if moved {
		run.resp.RequiresReplace = append(run.resp.RequiresReplace, path.Root("ssh"))
	}
	run.sameHost = wasDelivered && !moved
	return true
}

// destroyActions plans destroy_actions. What the host saved is known of
// the files this resource put on the same host before; a replacement
// starts afresh.
func (run *planRun[M, P]) destroyActions() {
	var own ownership
	if run.sameHost {
		own = run.rec.Ownership
	}
	run.h.DestroyActions = DestroyActions(run.out.Files, run.h,
		func(p string) (bool, bool) { return own.savedKnown(p, run.sameHost) }, false)
}

// trustedHostKey plans trusted_host_key: unknown until the first
// connection records it on first use, then the recorded key while the
// host stays the same.
func (run *planRun[M, P]) trustedHostKey() {
	m, h := run.m, run.h
	h.TrustedHostKey = types.StringNull()
	verificationUnknown := slices.Contains(m.Unknown, "host_key") || slices.Contains(m.Unknown, "known_hosts") ||
		slices.Contains(m.Unknown, "insecure_trust_on_first_use")
	if m.Config.TrustsOnFirstUse() || verificationUnknown {
		h.TrustedHostKey = types.StringUnknown()
		if run.sameHost && known(run.prior.TrustedHostKey) && m.Config.TrustsOnFirstUse() {
			h.TrustedHostKey = run.prior.TrustedHostKey
		}
	}
}

// planDestroy fails the plan to destroy a resource whose host did not
// answer the refresh, unless on_destroy = "keep" spares the host: destroy
// would fail on it after ssh.timeout, and by then the plan's other
// destroys would have changed the other hosts.
func planDestroy(ctx context.Context, typeName string, state tfsdk.State, rec privateRecord) diag.Diagnostics {
	var diags diag.Diagnostics
	if state.Raw.IsNull() {
		return diags
	}
	h, d := priorFields(ctx, state)
	diags.Append(d...)
	if diags.HasError() || h.keeps() || rec.Unreachable == "" {
		return diags
	}
	detail := rec.Unreachable + "\n\nDestroying removes the resource's files from the host, which did not answer the refresh; " +
		"nothing is destroyed on any host while it fails."
	diags.AddAttributeError(path.Root("ssh"), "SSH Connection Failed",
		detail+hostGoneHint(detail)+destroyWayOut(typeName, h.ID.ValueString()))
	return diags
}

// planRemote plans `remote_sha256` for an update: back to the desired
// digest, so drift shows as "<observed>" -> "<desired>", with a warning
// that says what changed. When refresh could not look (write-only
// credentials), the plan looks with the configuration's credentials and
// leaves the value unknown if the host differs.
func (r *Resource[M, P]) planRemote(ctx context.Context, rec privateRecord, m ResolvedSSH, id string, files []remote.Item, desired string, trusted types.String) (types.String, diag.Diagnostics) {
	var diags diag.Diagnostics
	if drift := rec.Drift; len(drift) > 0 {
		// The ID (host:port:path) in the summary keeps Terraform from
		// folding the warnings of several hosts into one.
		diags.AddWarning("Changed Outside Terraform: "+id, "The host no longer has what this resource put there; apply puts it back:\n  "+
			strings.Join(drift, "\n  "))
	}
	if !rec.Unobserved || len(m.Unknown) > 0 {
		return types.StringValue(desired), diags
	}
	m.Config.TrustedHostKey = trusted.ValueString()
	o, d := r.observe(ctx, m, id, files, "", false)
	diags.Append(d...)
	if o.unreachable == nil && o.digest.ValueString() != desired {
		return types.StringUnknown(), diags
	}
	return types.StringValue(desired), diags
}
