package hostres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// rolloutPolicy is how the changes of one rollout group reach their hosts.
type rolloutPolicy struct {
	// canary resources apply (and verify) before any other of the group
	// is admitted.
	canary int
	// batch bounds how many resources of the group change their hosts at
	// once after the canaries; 0 is no bound (Terraform's parallelism).
	batch int
	// stopOnFailure admits no further resource of the group after one
	// failed.
	stopOnFailure bool
}

// rollout admits the changes of one provider instance's apply walk to
// their hosts, group by group: canaries first, then batches, and nothing
// after a failure. A nil rollout (no `rollout` configured) admits every
// change at once, taking no lock.
type rollout struct {
	defaults rolloutPolicy
	policies map[string]rolloutPolicy // by group, from rollout.groups

	mu     sync.Mutex
	groups map[string]*rolloutGroup
}

func newRollout(defaults rolloutPolicy, policies map[string]rolloutPolicy) *rollout {
	return &rollout{defaults: defaults, policies: policies, groups: map[string]*rolloutGroup{}}
}

// rolloutGroup is the progress of one group's rollout. Resources arrive
// in the order Terraform starts them: the first `canary` to arrive are
// the canaries, and the others wait until every canary has finished.
// The canary phase is over then, for the resources waiting and for every
// one Terraform starts later alike, so no resource needs to know how many
// others the group has.
type rolloutGroup struct {
	policy rolloutPolicy
	// canaries is how many canary places are taken, by resources running
	// or done; a canary that found its host as the plan wants (nothing
	// written) gives its place to the next to arrive.
	canaries, canariesDone int
	running                int
	// failure is the first failure, which stops the group with
	// stopOnFailure.
	failure *rolloutFailure
	// changed is closed and replaced whenever the group's state changes:
	// what the resources waiting for admission select on.
	changed chan struct{}
}

// rolloutFailure is a group's first failure: the resource's ID, why, and
// whether it was a canary.
type rolloutFailure struct {
	id     string
	canary bool
	// cause is the failure's first error, in one line: Terraform prints
	// the errors of a run in no fixed order, so each resource it stops
	// says why itself, whatever comes first.
	cause string
}

// notAttemptedError is why a resource was not admitted: another resource
// of its group failed before it (with stop_on_failure), so its host was
// not contacted.
type notAttemptedError struct{ rolloutFailure }

func (e notAttemptedError) Error() string {
	who := e.id
	if e.canary {
		who = "canary " + e.id
	}
	if e.cause == "" {
		return fmt.Sprintf("not attempted: %s failed (its error is among this run's)", who)
	}
	return fmt.Sprintf("not attempted: %s failed: %s", who, e.cause)
}

// rolloutTicket is one admitted change; done reports how it went. A nil
// ticket (no rollout) does nothing.
type rolloutTicket struct {
	group  *rolloutGroup
	r      *rollout
	id     string
	canary bool
}

// policy is the group's policy: its entry in rollout.groups, else the
// rollout's own values.
func (r *rollout) policy(group string) rolloutPolicy {
	if p, ok := r.policies[group]; ok {
		return p
	}
	return r.defaults
}

// admit waits until the change of resource id (host:port:path) of group
// may touch its host, and returns its ticket. It fails with a
// notAttemptedError when the group stopped, and with ctx's error when ctx
// ends first (timeouts, an interrupted apply).
func (r *rollout) admit(ctx context.Context, group, id string) (*rolloutTicket, error) {
	if r == nil {
		return nil, nil
	}
	r.mu.Lock()
	g := r.groups[group]
	if g == nil {
		g = &rolloutGroup{policy: r.policy(group), changed: make(chan struct{})}
		r.groups[group] = g
	}
	for {
		p := g.policy
		switch {
		case g.failure != nil && p.stopOnFailure:
			err := notAttemptedError{*g.failure}
			r.mu.Unlock()
			return nil, err
		case g.canaries < p.canary:
			g.canaries++
			g.running++
			r.mu.Unlock()
			return &rolloutTicket{group: g, r: r, id: id, canary: true}, nil
		case g.canariesDone >= p.canary && (p.batch == 0 || g.running < p.batch):
			g.running++
			r.mu.Unlock()
			return &rolloutTicket{group: g, r: r, id: id}, nil
		}
		wait := g.changed
		r.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		r.mu.Lock()
	}
}

// done reports the end of an admitted change: whether it failed, and
// whether it changed the host. Only a change that touched the host counts
// as a canary.
func (t *rolloutTicket) done(changed, failed bool, cause string) {
	if t == nil {
		return
	}
	r, g := t.r, t.group
	r.mu.Lock()
	defer r.mu.Unlock()
	g.running--
	switch {
	case failed:
		if g.failure == nil {
			g.failure = &rolloutFailure{id: t.id, canary: t.canary, cause: cause}
		}
		if t.canary {
			g.canariesDone++
		}
	case t.canary && !changed:
		g.canaries-- // proved nothing: the next to arrive is a canary
	case t.canary:
		g.canariesDone++
	}
	close(g.changed)
	g.changed = make(chan struct{})
}

// rolloutGroupModel is an entry of the provider's `rollout.groups`.
type rolloutGroupModel struct {
	Canary        types.Int64 `tfsdk:"canary"`
	Batch         types.Int64 `tfsdk:"batch"`
	StopOnFailure types.Bool  `tfsdk:"stop_on_failure"`
}

// rolloutModel is the provider's `rollout`: a group's values, the
// default of every group, and the groups.
type rolloutModel struct {
	rolloutGroupModel
	Groups types.Map `tfsdk:"groups"`
}

// Defaults of the policy's values.
const (
	defaultCanary        = 1
	defaultStopOnFailure = true
)

// policy is a group's policy: its values where set, else base's.
func (m rolloutGroupModel) policy(base rolloutPolicy) rolloutPolicy {
	p := base
	if known(m.Canary) {
		p.canary = int(m.Canary.ValueInt64())
	}
	if known(m.Batch) {
		p.batch = int(m.Batch.ValueInt64())
	}
	if known(m.StopOnFailure) {
		p.stopOnFailure = m.StopOnFailure.ValueBool()
	}
	return p
}

// rolloutFrom is the coordinator of a provider's `rollout`; nil when it
// is not set.
func rolloutFrom(ctx context.Context, obj types.Object) (*rollout, diag.Diagnostics) {
	var diags diag.Diagnostics
	if obj.IsNull() || obj.IsUnknown() {
		return nil, diags
	}
	var m rolloutModel
	diags.Append(obj.As(ctx, &m, basetypes.ObjectAsOptions{})...)
	if diags.HasError() {
		return nil, diags
	}
	defaults := m.policy(rolloutPolicy{canary: defaultCanary, stopOnFailure: defaultStopOnFailure})
	groups := map[string]rolloutGroupModel{}
	if known(m.Groups) {
		diags.Append(m.Groups.ElementsAs(ctx, &groups, false)...)
	}
	policies := make(map[string]rolloutPolicy, len(groups))
	for name, g := range groups {
		policies[name] = g.policy(defaults)
	}
	return newRollout(defaults, policies), diags
}

// rolloutPolicyAttributes are the values of `rollout` that each group may
// set again; what is left out, the group takes from `rollout`.
func rolloutPolicyAttributes(inherit string) map[string]providerschema.Attribute {
	return map[string]providerschema.Attribute{
		"canary": providerschema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(0)},
			MarkdownDescription: "How many resources of the group change their hosts first, alone: the others wait until " +
				"these have applied and verified (validate, preflight, reload, verify) and fail without being attempted when " +
				"one of them failed (with `stop_on_failure`). The canaries are the first resources of the group that " +
				"Terraform starts in the apply. `0` starts with the batches. " + inherit + "`1`."},
		"batch": providerschema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(1)},
			MarkdownDescription: "How many resources of the group may change their hosts at once after the canaries. " +
				inherit + "no bound beyond Terraform's `-parallelism` (10 by default)."},
		"stop_on_failure": providerschema.BoolAttribute{Optional: true,
			MarkdownDescription: "After a resource of the group fails, touch no further host of the group: every resource " +
				"of the group not yet started fails with one line that names the failure and its first error, `not attempted: " +
				"canary <id> failed: <its error>` (or `not attempted: <id> failed: …` after the canaries), since Terraform prints a " +
				"run's errors in no fixed order, and keeps its state, so the next apply tries it again. Changes " +
				"already running finish (each rolls back its own host on failure). With `false`, a failed canary does not " +
				"hold the others back. " + inherit + "`true`."},
	}
}

// RolloutAttribute is the provider's `rollout`.
func RolloutAttribute() providerschema.SingleNestedAttribute {
	attrs := rolloutPolicyAttributes("Default: ")
	attrs["groups"] = providerschema.MapNestedAttribute{Optional: true,
		Validators: []validator.Map{mapvalidator.KeysAre(stringvalidator.LengthAtLeast(1))},
		NestedObject: providerschema.NestedAttributeObject{
			Attributes: rolloutPolicyAttributes("Default: the value of `rollout` itself, whose default is "),
		},
		MarkdownDescription: "Policies of single rollout groups, by group name (a resource's `rollout_group`, by default " +
			"its type, such as `kha_haproxy_config`). A value a group leaves out is `rollout`'s."}
	return providerschema.SingleNestedAttribute{Optional: true, Attributes: attrs,
		MarkdownDescription: "Roll changes out to hosts gradually, enforced by the provider within one apply: canaries " +
			"first, then batches, and with `stop_on_failure` no further host after a failure. Each rollout group " +
			"(`rollout_group` of the resources, by default their type) rolls out on its own. Only creates and updates " +
			"that change a host take part: a resource whose update changes only its state, and destroys, do not. Unset, " +
			"every change runs as soon as Terraform starts it. See the guide \"Rolling out changes\"."}
}

// admit waits until the provider's rollout lets the change of resource id
// touch its host. Its error is the resource's: not attempted, its host
// not contacted. Without `rollout` it returns at once, with no ticket.
func (r *Resource[M, P]) admit(ctx context.Context, h *Common, id string) (*rolloutTicket, diag.Diagnostics) {
	var diags diag.Diagnostics
	if r.data == nil || r.data.rollout == nil {
		return nil, diags
	}
	group := "kha_" + r.Name
	if known(h.RolloutGroup) {
		group = h.RolloutGroup.ValueString()
	}
	start := time.Now()
	ticket, err := r.data.rollout.admit(ctx, group, id)
	var stopped notAttemptedError
	switch {
	case errors.As(err, &stopped):
		// One line: the failure's own error says why, once.
		diags.AddError("Rollout Stopped", fmt.Sprintf("%v; group %q stops at its first failure (rollout.stop_on_failure), so "+
			"%s was not contacted and its state is unchanged: fix that and apply again.", err, group, id))
	case err != nil:
		diags.AddError("Rollout Stopped", fmt.Sprintf("not attempted: %s waited %s for its turn in the rollout of group %q "+
			"and the apply was interrupted first (%v): the host was not contacted and the state is unchanged.", id,
			time.Since(start).Round(time.Second), group, err))
	case ticket.canary:
		tflog.Info(ctx, "rollout: canary of its group", map[string]any{"group": group})
	}
	return ticket, diags
}

// firstError is the first error of diags in one line, for the resources
// of its rollout group that it stops.
func firstError(diags diag.Diagnostics) string {
	for _, d := range diags.Errors() {
		line, _, _ := strings.Cut(strings.TrimSpace(d.Detail()), "\n")
		if cause := d.Summary() + ": " + line; len(cause) <= 300 {
			return cause
		} else {
			return cause[:297] + "..."
		}
	}
	return ""
}

// changedHost says whether an apply's puts changed the host.
func changedHost(outcomes []remote.Outcome) bool {
	return slices.ContainsFunc(outcomes, func(o remote.Outcome) bool { return !o.Unchanged })
}

// clusterPolicy is how the certificate changes of one cluster reach their
// nodes, whatever `rollout` says: one at a time, and none after one
// failed, so that two apiservers never serve without a proven certificate
// at once.
var clusterPolicy = rolloutPolicy{batch: 1, stopOnFailure: true}

// clusterTurn is the turn of resource id's certificate changes
// (remote.Coordinated): a rollout group per cluster, which the CA's digest
// names. Without a provider configuration (no walk) a change runs at once.
func (d *ProviderData) clusterTurn(id string) remote.Turn {
	if d == nil || d.clusters == nil {
		return nil
	}
	return func(ctx context.Context, cluster string) (func(failed bool), error) {
		ticket, err := d.clusters.admit(ctx, "cluster "+cluster, id)
		var stopped notAttemptedError
		if errors.As(err, &stopped) {
			return nil, fmt.Errorf("%w: no other node of the cluster changes its certificate after a failure in this "+
				"run, so this one keeps its previous certificate; fix the cause and apply again", err)
		}
		if err != nil {
			return nil, err
		}
		return func(failed bool) { ticket.done(true, failed, "") }, nil
	}
}

// withClusterTurns gives each item that waits its turn among its
// cluster's changes (remote.Coordinated) resource id's turn.
func (d *ProviderData) withClusterTurns(id string, items []remote.Item) []remote.Item {
	turn := d.clusterTurn(id)
	if turn == nil {
		return items
	}
	out := slices.Clone(items)
	for i, it := range out {
		if c, ok := it.(remote.Coordinated); ok {
			out[i] = c.WithTurn(turn)
		}
	}
	return out
}
