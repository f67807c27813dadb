package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// BenchmarkProviderRequest measures the provider's own CPU and
// allocations for each request Terraform sends a host resource in a
// fleet's plan and apply, in process and without a host: the framework's
// decoding and kha's lifecycle, the part of a host's cost that the fleet
// bench reports as the provider's. The configurations are the fleet's
// (`ssh` set, so the plan resolves the connection and the reservations);
// for a resource that can render only, the apply and the read are of the
// same resource without `ssh`, which keeps its state without dialling (a
// kha_file always goes to a host).
func BenchmarkProviderRequest(b *testing.B) {
	ctx := context.Background()
	server := providerserver.NewProtocol6(New("bench", "bench")())()
	schemas, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		b.Fatal(err)
	}
	configure(b, server, schemas.Provider.ValueType())
	for _, c := range []struct {
		typeName, config string
		rendersOnly      bool
	}{
		{"kha_file", `{"path":"/etc/kha/a.conf","content":"hello\n","reload_command":"true",
"ssh":{"host":"127.0.0.1","port":2222,"agent":true,"host_key":"` + benchHostKey + `"}}`, false},
		{"kha_haproxy_config", `{"listen":{"address":"127.0.0.1","port":7443},"config_path":"/etc/kha/haproxy.cfg",
"backends":[{"name":"cp0","address":"10.0.0.1","port":6443},{"name":"cp1","address":"10.0.0.2","port":6443},{"name":"cp2","address":"10.0.0.3","port":6443}],
"health_check":{"type":"tcp"},"validate_command":"/usr/sbin/haproxy -c -q -f %s","reload_command":"true","destroy_command":"",
"verify_after_reload":false,"ssh":{"host":"127.0.0.1","port":2222,"agent":true,"host_key":"` + benchHostKey + `"}}`, true},
	} {
		typ := schemas.ResourceSchemas[c.typeName].ValueType()
		config := dynamicValue(b, typ, c.config, true)
		renderOnly := dynamicValue(b, typ, c.config, false)
		null := dynamicValueOf(b, typ, tftypes.NewValue(typ, nil))
		created := planned(b, server, c.typeName, null, config, config)
		b.Run(c.typeName+"/validate", func(b *testing.B) {
			for b.Loop() {
				resp, err := server.ValidateResourceConfig(ctx, &tfprotov6.ValidateResourceConfigRequest{TypeName: c.typeName, Config: config})
				if err != nil {
					b.Fatal(err)
				}
				noErrors(b, resp.Diagnostics)
			}
		})
		b.Run(c.typeName+"/plan_create", func(b *testing.B) {
			for b.Loop() {
				planned(b, server, c.typeName, null, config, config)
			}
		})
		b.Run(c.typeName+"/plan_noop", func(b *testing.B) {
			for b.Loop() {
				planned(b, server, c.typeName, created, created, config)
			}
		})
		if !c.rendersOnly {
			continue
		}
		state := applied(b, server, c.typeName, null, renderOnly)
		// apply plans too: an apply's planned state is the plan's.
		b.Run(c.typeName+"/apply", func(b *testing.B) {
			for b.Loop() {
				applied(b, server, c.typeName, null, renderOnly)
			}
		})
		b.Run(c.typeName+"/read", func(b *testing.B) {
			for b.Loop() {
				resp, err := server.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: c.typeName, CurrentState: state})
				if err != nil {
					b.Fatal(err)
				}
				noErrors(b, resp.Diagnostics)
			}
		})
	}
}

// benchHostKey pins a host key, so that planning needs no trust on first
// use (the key is never presented: nothing is dialled).
const benchHostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINYRrhOa7pDVnchbQhAPTJxyDm7mtJH/66tOC9GoTDVL"

// configure configures the provider with an empty configuration.
func configure(b *testing.B, server tfprotov6.ProviderServer, typ tftypes.Type) {
	resp, err := server.ConfigureProvider(context.Background(), &tfprotov6.ConfigureProviderRequest{
		TerraformVersion: "1.11.4", Config: dynamicValue(b, typ, "{}", true)})
	if err != nil {
		b.Fatal(err)
	}
	noErrors(b, resp.Diagnostics)
}

// planned plans a change from prior to config, with Terraform's
// proposed new state (the configuration with the prior state's computed
// values), and returns the planned state.
func planned(b *testing.B, server tfprotov6.ProviderServer, typeName string, prior, proposed, config *tfprotov6.DynamicValue) *tfprotov6.DynamicValue {
	resp, err := server.PlanResourceChange(context.Background(), &tfprotov6.PlanResourceChangeRequest{
		TypeName: typeName, PriorState: prior, ProposedNewState: proposed, Config: config})
	if err != nil {
		b.Fatal(err)
	}
	noErrors(b, resp.Diagnostics)
	return resp.PlannedState
}

// applied plans and creates a resource that renders only, and returns its
// state.
func applied(b *testing.B, server tfprotov6.ProviderServer, typeName string, null, config *tfprotov6.DynamicValue) *tfprotov6.DynamicValue {
	plan := planned(b, server, typeName, null, config, config)
	resp, err := server.ApplyResourceChange(context.Background(), &tfprotov6.ApplyResourceChangeRequest{
		TypeName: typeName, PriorState: null, PlannedState: plan, Config: config})
	if err != nil {
		b.Fatal(err)
	}
	noErrors(b, resp.Diagnostics)
	return resp.NewState
}

// dynamicValue is a configuration from JSON (absent attributes null),
// with or without its `ssh`.
func dynamicValue(b *testing.B, typ tftypes.Type, config string, withSSH bool) *tfprotov6.DynamicValue {
	value, err := (&tfprotov6.DynamicValue{JSON: []byte(config)}).Unmarshal(typ)
	if err != nil {
		b.Fatal(err)
	}
	if !withSSH {
		var attrs map[string]tftypes.Value
		if err := value.As(&attrs); err != nil {
			b.Fatal(err)
		}
		attrs["ssh"] = tftypes.NewValue(attrs["ssh"].Type(), nil)
		value = tftypes.NewValue(typ, attrs)
	}
	return dynamicValueOf(b, typ, value)
}

func dynamicValueOf(b *testing.B, typ tftypes.Type, value tftypes.Value) *tfprotov6.DynamicValue {
	v, err := tfprotov6.NewDynamicValue(typ, value)
	if err != nil {
		b.Fatal(err)
	}
	return &v
}

func noErrors(b *testing.B, diags []*tfprotov6.Diagnostic) {
	for _, d := range diags {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			b.Fatalf("%s: %s (%v)", d.Summary, d.Detail, d.Attribute)
		}
	}
}
