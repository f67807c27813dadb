package hostres

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Every resource's schema is at version 1. Version 0 is a state written
// before schemas had versions; it carries over attribute by attribute:
// attributes added since start null (what a resource computes is computed
// again at the next plan), and attributes since removed are dropped.
var unversionedStateUpgrader = map[int64]resource.StateUpgrader{0: {StateUpgrader: UpgradeUnversionedState}}

func UpgradeUnversionedState(ctx context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	typ := resp.State.Schema.Type().TerraformType(ctx)
	value, err := req.RawState.UnmarshalWithOpts(typ, tfprotov6.UnmarshalOpts{
		ValueFromJSONOpts: tftypes.ValueFromJSONOpts{IgnoreUndefinedAttributes: true},
	})
	if err != nil {
		resp.Diagnostics.AddError("Unable to Upgrade Resource State",
			"The state written by an earlier version of the provider could not be read: "+err.Error()+
				". Remove the resource from state (terraform state rm) and import or apply it again.")
		return
	}
	resp.State.Raw = value
}

func (r *Resource[M, P]) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return unversionedStateUpgrader
}
