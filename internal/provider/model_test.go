package provider

import (
	"context"
	"fmt"
	"math/big"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/kha/terraform-provider-kha/internal/hostres"
)

// servedSchema is one schema the provider serves and the model it
// decodes into.
type servedSchema struct {
	name   string
	schema tfsdk.State // a State only to reach Get for every kind of schema
	model  func() any
}

// servedSchemas are every resource's, the data source's and the
// provider's schema, taken from the provider's own lists so that a new
// resource cannot go unchecked.
func servedSchemas(t *testing.T) []servedSchema {
	t.Helper()
	ctx := context.Background()
	p := New("test", "")().(*khaProvider)
	var out []servedSchema
	for _, newResource := range p.Resources(ctx) {
		r := newResource()
		var meta resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "kha"}, &meta)
		var resp resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &resp)
		s := servedSchema{name: meta.TypeName, schema: tfsdk.State{Schema: resp.Schema}}
		switch r := r.(type) {
		case interface{ NewModel() any }:
			s.model = r.NewModel
		case *clusterEndpointsResource:
			s.model = func() any { return new(clusterEndpointsModel) }
		case *endpointConfigMapsResource:
			s.model = func() any { return new(endpointConfigMapsModel) }
		default:
			t.Fatalf("%s: no model known for %T", meta.TypeName, r)
		}
		out = append(out, s)
	}
	for _, newDataSource := range p.DataSources(ctx) {
		d := newDataSource()
		var meta datasource.MetadataResponse
		d.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "kha"}, &meta)
		if _, ok := d.(*apiserverCertificateDataSource); !ok {
			t.Fatalf("data source %s: no model known for %T", meta.TypeName, d)
		}
		var resp datasource.SchemaResponse
		d.Schema(ctx, datasource.SchemaRequest{}, &resp)
		out = append(out, servedSchema{name: "data." + meta.TypeName, schema: tfsdk.State{Schema: resp.Schema},
			model: func() any { return new(apiserverCertificateModel) }})
	}
	var resp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &resp)
	return append(out, servedSchema{name: "provider", schema: tfsdk.State{Schema: resp.Schema},
		model: func() any { return new(providerModel) }})
}

// filled is a value of typ with every attribute, element and leaf set,
// so that decoding it reaches every field of every nested model.
func filled(typ tftypes.Type) tftypes.Value {
	switch typ := typ.(type) {
	case tftypes.Object:
		attrs := map[string]tftypes.Value{}
		for name, at := range typ.AttributeTypes {
			attrs[name] = filled(at)
		}
		return tftypes.NewValue(typ, attrs)
	case tftypes.List:
		return tftypes.NewValue(typ, []tftypes.Value{filled(typ.ElementType)})
	case tftypes.Set:
		return tftypes.NewValue(typ, []tftypes.Value{filled(typ.ElementType)})
	case tftypes.Map:
		return tftypes.NewValue(typ, map[string]tftypes.Value{"k": filled(typ.ElementType)})
	}
	switch {
	case typ.Is(tftypes.String):
		return tftypes.NewValue(typ, "x")
	case typ.Is(tftypes.Number):
		return tftypes.NewValue(typ, big.NewFloat(22))
	case typ.Is(tftypes.Bool):
		return tftypes.NewValue(typ, true)
	}
	panic(fmt.Sprintf("no filled value for %s", typ))
}

// nullAttributes is an object of typ whose attributes are all null: a
// state or configuration that sets nothing.
func nullAttributes(typ tftypes.Object) tftypes.Value {
	attrs := map[string]tftypes.Value{}
	for name, at := range typ.AttributeTypes {
		attrs[name] = tftypes.NewValue(at, nil)
	}
	return tftypes.NewValue(typ, attrs)
}

// TestModelsMatchSchemas decodes every schema the provider serves, with
// nothing set and with everything set, into its model: a field missing
// from a model, or one the schema no longer has, fails here instead of
// in a real refresh.
func TestModelsMatchSchemas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, s := range servedSchemas(t) {
		typ := s.schema.Schema.Type().TerraformType(ctx).(tftypes.Object)
		for value, raw := range map[string]tftypes.Value{"null": nullAttributes(typ), "filled": filled(typ)} {
			s.schema.Raw = raw
			if diags := s.schema.Get(ctx, s.model()); diags.HasError() {
				t.Errorf("%s, %s: %v", s.name, value, diags)
			}
		}
	}
}

// TestSSHDecodesInEveryShape decodes the `ssh` of every schema that has
// one (every host resource's, the data source's, the provider's
// default_ssh) into the one sshModel: null gives an empty model, and with
// every attribute set exactly the fields of that shape are set.
func TestSSHDecodesInEveryShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	shapes := 0
	for _, s := range servedSchemas(t) {
		name := "ssh"
		if s.name == "provider" {
			name = "default_ssh"
		}
		attribute, ok := s.schema.Schema.GetAttributes()[name]
		if !ok {
			continue
		}
		shapes++
		typ := attribute.GetType()
		for value, raw := range map[string]tftypes.Value{"null": tftypes.NewValue(typ.TerraformType(ctx), nil), "filled": filled(typ.TerraformType(ctx))} {
			v, err := typ.ValueFromTerraform(ctx, raw)
			if err != nil {
				t.Fatalf("%s.%s: %v", s.name, name, err)
			}
			m, diags := hostres.SSHFrom(ctx, v.(types.Object))
			if diags.HasError() {
				t.Errorf("%s.%s, %s: %v", s.name, name, value, diags)
				continue
			}
			given := v.(types.Object).AttributeTypes(ctx)
			fields := reflect.ValueOf(m)
			for i := range fields.NumField() {
				tag := fields.Type().Field(i).Tag.Get("tfsdk")
				_, has := given[tag]
				if isNull := fields.Field(i).Interface().(interface{ IsNull() bool }).IsNull(); isNull == (has && value == "filled") {
					t.Errorf("%s.%s, %s: field %s null = %v", s.name, name, value, tag, isNull)
				}
			}
		}
	}
	if shapes < 3 {
		t.Errorf("only %d schemas have an ssh attribute", shapes)
	}
}
