package provider

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// valueOf converts a Go value shaped like HCL (strings, ints, bools,
// []any, map[string]any for objects and maps) to a value of typ; an
// object's attributes that v does not name are null.
func valueOf(typ tftypes.Type, v any) tftypes.Value {
	if v == nil {
		return tftypes.NewValue(typ, nil)
	}
	switch typ := typ.(type) {
	case tftypes.Object:
		given := v.(map[string]any)
		attrs := map[string]tftypes.Value{}
		for name, at := range typ.AttributeTypes {
			attrs[name] = valueOf(at, given[name])
		}
		for name := range given {
			if _, ok := typ.AttributeTypes[name]; !ok {
				panic(fmt.Sprintf("no attribute %q in %s", name, typ))
			}
		}
		return tftypes.NewValue(typ, attrs)
	case tftypes.List:
		var elems []tftypes.Value
		for _, e := range v.([]any) {
			elems = append(elems, valueOf(typ.ElementType, e))
		}
		return tftypes.NewValue(typ, elems)
	case tftypes.Map:
		elems := map[string]tftypes.Value{}
		for k, e := range v.(map[string]any) {
			elems[k] = valueOf(typ.ElementType, e)
		}
		return tftypes.NewValue(typ, elems)
	}
	if i, ok := v.(int); ok {
		return tftypes.NewValue(typ, big.NewFloat(float64(i)))
	}
	return tftypes.NewValue(typ, v)
}

// planDiagnostics runs what a plan runs of r for config before it calls
// the provider's plan modification: the config validators and
// ValidateConfig, then ModifyPlan with the configuration as the plan
// (config sets every attribute that has a default).
func planDiagnostics(t *testing.T, r resource.Resource, config map[string]any) diag.Diagnostics {
	t.Helper()
	ctx := context.Background()
	var schemaResp resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &schemaResp)
	raw := valueOf(schemaResp.Schema.Type().TerraformType(ctx), config)
	cfg := tfsdk.Config{Schema: schemaResp.Schema, Raw: raw}
	var diags diag.Diagnostics
	validate := resource.ValidateConfigRequest{Config: cfg}
	if rv, ok := r.(resource.ResourceWithConfigValidators); ok {
		for _, v := range rv.ConfigValidators(ctx) {
			var resp resource.ValidateConfigResponse
			v.ValidateResource(ctx, validate, &resp)
			diags.Append(resp.Diagnostics...)
		}
	}
	if rv, ok := r.(resource.ResourceWithValidateConfig); ok {
		var resp resource.ValidateConfigResponse
		rv.ValidateConfig(ctx, validate, &resp)
		diags.Append(resp.Diagnostics...)
	}
	if rm, ok := r.(resource.ResourceWithModifyPlan); ok && !diags.HasError() {
		plan := tfsdk.Plan{Schema: schemaResp.Schema, Raw: raw}
		resp := resource.ModifyPlanResponse{Plan: plan}
		rm.ModifyPlan(ctx, resource.ModifyPlanRequest{Config: cfg, Plan: plan,
			State: tfsdk.State{Schema: schemaResp.Schema, Raw: tftypes.NewValue(raw.Type(), nil)}}, &resp)
		diags.Append(resp.Diagnostics...)
	}
	return diags
}

// TestDiagnosticsComeInTheSameOrder plans configurations with several
// findings of one check again and again: the diagnostics come out in the
// same order every time, so two identical plans print the same.
func TestDiagnosticsComeInTheSameOrder(t *testing.T) {
	t.Parallel()
	listen := map[string]any{"address": "127.0.0.1", "port": 6443}
	backends := []any{map[string]any{"name": "cp1", "address": "10.0.0.11", "port": 6443}}
	for name, tc := range map[string]struct {
		resource func() resource.Resource
		config   map[string]any
		findings int
	}{
		"ssh secrets and keys": {NewFileResource, map[string]any{
			"path": "/etc/x", "content": "x",
			"ssh": map[string]any{"host": "h", "password": "a", "password_wo": "b", "private_key": "bad", "private_key_wo": "bad",
				"bastion_private_key": "bad", "bastion_private_key_wo": "bad", "host_key": "bad", "bastion_host_key": "bad"},
		}, 9},
		"load balancer timeouts": {NewHAProxyConfigResource, map[string]any{
			"listen": listen, "backends": backends, "proxy_timeouts": map[string]any{"client": "48h", "server": "48h"},
		}, 2},
		"ignored IPv6 addresses": {NewClusterEndpointsResource, map[string]any{
			"control_plane_nodes": []any{map[string]any{"name": "cp1", "ip": "10.0.0.11", "ip6": "fd00::11", "access_ip6": "fd00::12"}},
			"apiserver_port":      6443, "apiserver_bind_address": "::", "apiserver_anonymous_auth": true, "dns_domain": "cluster.local",
			"service_cidr": "10.233.0.0/18", "service_cidr_ipv6": "fd85:ee78:d8a6:8607::1000/116", "ip_family": "ipv4",
		}, 2},
	} {
		t.Run(name, func(t *testing.T) {
			first := planDiagnostics(t, tc.resource(), tc.config)
			if len(first) < tc.findings {
				t.Fatalf("%d diagnostics, want at least %d: %v", len(first), tc.findings, first)
			}
			for range 20 {
				if again := planDiagnostics(t, tc.resource(), tc.config); !slices.EqualFunc(first, again, diag.Diagnostic.Equal) {
					t.Fatalf("the diagnostics came in another order:\n%v\nthen:\n%v", first, again)
				}
			}
		})
	}
}
