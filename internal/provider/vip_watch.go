package provider

import (
	"context"
	"errors"
	"io/fs"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/problem"
	"github.com/kha/terraform-provider-kha/internal/vipcheck"
)

// vipWatch is what a model that claims a VIP on its node's link keeps of
// it (kha_keepalived_config, kha_kube_vip): check_vip, vip_holders, and
// what the node saw before an apply. The model says what to check
// (vipcheck.Check) and whether to; vipWatch asks the node.
type vipWatch struct {
	CheckVIP   types.Bool `tfsdk:"check_vip"`
	VIPHolders types.List `tfsdk:"vip_holders"`
	// sight is what the node saw of the VIP before an apply (readVIP).
	sight *vipcheck.Sight
	// claimed is the file that claims the VIP as the node had it before an
	// apply, read when another host answers for the VIP (nil when missing
	// or not read).
	claimed []byte
}

// vipClaimer is a model that claims a VIP on its node's link, and says
// what to check of it and whether to.
type vipClaimer interface {
	vipCheck() vipcheck.Check
	checksVIP() bool
	watched() *vipWatch
	// claimPath is the file that claims the VIP on the node.
	claimPath() string
}

// readVIP is a vipClaimer's HostReader: before an apply puts in place what
// claims the VIP, it asks the node who answers for it (check_vip), and,
// where another host does, reads the file that claims it;
// vipWatch.problems then reads the answer.
func readVIP(ctx context.Context, c hostres.Host, destroying bool, m vipClaimer) error {
	if destroying || !m.checksVIP() {
		return nil
	}
	check := m.vipCheck()
	s, err := see(ctx, c, check)
	if err != nil {
		return err
	}
	w := m.watched()
	w.sight = &s
	if check.InUse(s) {
		if w.claimed, err = c.ReadFile(ctx, m.claimPath()); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	return err
}

// watchVIP is a vipClaimer's HostWatcher: at every refresh it asks the
// node who holds the VIP (vip_holders), and warns unless one node does.
func watchVIP(ctx context.Context, c hostres.Host, id string, m vipClaimer) diag.Diagnostics {
	var diags diag.Diagnostics
	w := m.watched()
	w.VIPHolders = types.ListNull(types.StringType)
	if !m.checksVIP() {
		return diags
	}
	check := m.vipCheck()
	s, err := see(ctx, c, check)
	if err != nil {
		diags.AddAttributeWarning(attributePath(check.VIPAttr), "VIP Not Checked: "+id, err.Error())
		return diags
	}
	if s.Unprobed == "" {
		// Nobody is an empty list, not null: null says nobody looked, and
		// would plan no change.
		holders := append([]string{}, check.Holders(s)...)
		var d diag.Diagnostics
		w.VIPHolders, d = types.ListValueFrom(ctx, types.StringType, holders)
		diags.Append(d...)
	}
	for _, p := range check.HolderProblems(s) {
		// The ID in the summary keeps Terraform from folding the nodes'
		// warnings into one.
		diags.AddAttributeWarning(attributePath(p.Path), p.Summary+": "+id, p.Detail)
	}
	return diags
}

// watched is the model's vipWatch, through its embedding.
func (w *vipWatch) watched() *vipWatch { return w }

// checkOn says whether check_vip is on: unset is on.
func (w *vipWatch) checkOn() bool { return w.CheckVIP.IsNull() || w.CheckVIP.ValueBool() }

// see asks the node what it sees of the VIP.
func see(ctx context.Context, c hostres.Host, check vipcheck.Check) (vipcheck.Sight, error) {
	probed := check.Probed()
	return c.SeeVIP(ctx, probed[0], check.Interface, probed[1:])
}

// problems are what stops the claim of the VIP by the file text, once
// readVIP has asked the node: another host that answers for the VIP stops
// it only where the node does not have text already.
func (w *vipWatch) problems(check vipcheck.Check, text string) problem.Problems {
	if w.sight == nil {
		return nil
	}
	return check.Problems(*w.sight, w.claimed != nil && string(w.claimed) == text)
}

// unheld says whether the node, asked before an apply, saw nobody hold the
// VIP, itself included (vipcheck.Unheld).
func (w *vipWatch) unheld(check vipcheck.Check) bool {
	return w.sight != nil && check.Unheld(*w.sight)
}

// vipNeighbourDoc says, in check_vip's description, what a host on the
// link that answers for the VIP cannot do.
const vipNeighbourDoc = "Another host that answers for the VIP stops only an apply that puts a new or changed " +
	"configuration in place: where the node has the configuration that claims the VIP already, unchanged, it is a " +
	"warning, so that a host on the link that takes the address cannot block every apply. A node's address that more " +
	"than one MAC address answers for is a warning too: another host answers for it, and passes for that node."

// vipHoldersAttribute is vip_holders' schema; what is said of the holders
// and of a split brain, and what the apply does about them, is each
// resource's.
func vipHoldersAttribute(description, apply string) schema.ListAttribute {
	return schema.ListAttribute{Computed: true, ElementType: types.StringType, PlanModifiers: []planmodifier.List{vipHoldersPlan{}},
		MarkdownDescription: description + " This node counts on its own word alone (the VIP on its interface); another " +
			"node counts as its MAC address answers for the VIP. Exactly one node is right. Two or more, or none (an empty list), is a warning naming the " +
			"holders at every plan, and a change of this attribute to null, so the plan is not empty until a refresh after " +
			"an apply finds one holder again. That apply asks the node again before anything else, and " + apply + ". Null " +
			"until a refresh looks, and while `check_vip` is off."}
}

// vipHoldersPlan plans vip_holders: what the last refresh saw while that
// is one node of `nodes`, else null (a create, a VIP not checked, held by
// none, by several or by another host), so that a VIP not held by exactly
// one node is a change in the plan and the refresh after the apply looks
// again.
type vipHoldersPlan struct{}

func (vipHoldersPlan) Description(context.Context) string {
	return "keeps the holders while one node holds the VIP"
}

func (p vipHoldersPlan) MarkdownDescription(ctx context.Context) string { return p.Description(ctx) }

func (vipHoldersPlan) PlanModifyList(ctx context.Context, req planmodifier.ListRequest, resp *planmodifier.ListResponse) {
	resp.PlanValue = types.ListNull(types.StringType)
	var holders []string
	var nodes []types.Object
	if len(req.StateValue.Elements()) != 1 || req.StateValue.ElementsAs(ctx, &holders, false).HasError() ||
		req.Plan.GetAttribute(ctx, path.Root("nodes"), &nodes).HasError() {
		return
	}
	for _, n := range nodes {
		if name, ok := n.Attributes()["name"].(types.String); ok && name.ValueString() == holders[0] {
			resp.PlanValue = req.StateValue
		}
	}
}
