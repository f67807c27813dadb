package hostres

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// embeddedModel embeds its attributes, as the load balancers' models do.
type embeddedModel struct {
	Common
	Plain types.String `tfsdk:"plain"`
}

type writeOnlyModel struct {
	embeddedModel
	Secret types.String `tfsdk:"secret"`
}

// configOf gives the plan's values with the configuration's `ssh`,
// on_destroy and write-only attributes, from an embedded struct too.
func TestConfigOfTakesWhatOnlyTheConfigurationHas(t *testing.T) {
	ctx := context.Background()
	s := schema.Schema{Attributes: WithHostAttributes(ctx, map[string]schema.Attribute{
		"plain":  schema.StringAttribute{Optional: true},
		"secret": schema.StringAttribute{Optional: true, WriteOnly: true},
	}, "id", "sha256")}
	typ := s.Type().TerraformType(ctx).(tftypes.Object) //nolint:forcetypeassert // a schema's type is an object
	attrs := nullAttributes(typ)
	sshType := typ.AttributeTypes["ssh"].(tftypes.Object) //nolint:forcetypeassert // ssh is an object
	ssh := nullAttributes(sshType)
	ssh["host"], ssh["password_wo"] = tftypes.NewValue(tftypes.String, "10.0.0.1"), tftypes.NewValue(tftypes.String, "hunter2")
	attrs["ssh"] = tftypes.NewValue(sshType, ssh)
	attrs["secret"], attrs["plain"] = tftypes.NewValue(tftypes.String, "s3cret"), tftypes.NewValue(tftypes.String, "config")
	cfg := tfsdk.Config{Schema: s, Raw: tftypes.NewValue(typ, attrs)}

	var plan writeOnlyModel
	plan.Plain, plan.OnDestroy, plan.ID = types.StringValue("plan"), types.StringValue(OnDestroyRestore), types.StringUnknown()
	config, diags := configOf(ctx, cfg, &plan)
	if diags.HasError() {
		t.Fatal(diags)
	}
	if config.Secret.ValueString() != "s3cret" || !config.OnDestroy.IsNull() {
		t.Errorf("secret %s, on_destroy %s: want the configuration's", config.Secret, config.OnDestroy)
	}
	password := config.SSH.Attributes()["password_wo"]
	if password == nil || password.(types.String).ValueString() != "hunter2" { //nolint:forcetypeassert // a string attribute
		t.Errorf("ssh %s: want the configuration's, with its write-only password", config.SSH)
	}
	if config.Plain.ValueString() != "plan" || !config.ID.IsUnknown() {
		t.Errorf("plain %s, id %s: want the plan's", config.Plain, config.ID)
	}
	if !plan.Secret.IsNull() || !plan.SSH.IsNull() {
		t.Errorf("the plan changed: secret %s, ssh %s", plan.Secret, plan.SSH)
	}
}

// nullAttributes are an object's attributes, all null.
func nullAttributes(typ tftypes.Object) map[string]tftypes.Value {
	attrs := map[string]tftypes.Value{}
	for name, at := range typ.AttributeTypes {
		attrs[name] = tftypes.NewValue(at, nil)
	}
	return attrs
}
