package provider

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// TestRenamesReachTheSchema: every path a resource moves a core
// package's findings to is an attribute of its schema, so the finding
// points at the configuration.
func TestRenamesReachTheSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		resource func() resource.Resource
		renames  problem.Renames
	}{
		{NewHAProxyConfigResource, lbRenames},
		{NewNginxConfigResource, lbRenames},
		{NewEtcdAccessResource, etcdProxyRenames},
	} {
		var resp resource.SchemaResponse
		tc.resource().Schema(ctx, resource.SchemaRequest{}, &resp)
		for _, rename := range tc.renames {
			if _, diags := resp.Schema.AttributeAtPath(ctx, attributePath(rename.To)); diags.HasError() {
				t.Errorf("%T: %s moves to %s, which the schema does not have", tc.resource(), rename.From, rename.To)
			}
		}
	}
}

// TestAppendProblems: findings become attribute diagnostics with the path
// in front of the detail; warnings wait when errorsOnly; what the schema
// checks too shows once, but never turns an error into success.
func TestAppendProblems(t *testing.T) {
	t.Parallel()
	port := problem.Root("listen").At("port")
	node := problem.Root("worker_nodes").Index(2).At("ip6")
	var schemaError, plainError, warning problem.Problems
	schemaError.SchemaErrorf(port, "Invalid port", "port is 0")
	plainError.Errorf(port, "Port conflict", "port is taken")
	warning.Warnf(node, "IPv6 address ignored", "ip6 is set")
	join := func(pss ...problem.Problems) problem.Problems {
		var out problem.Problems
		for _, ps := range pss {
			out = append(out, ps...)
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		problems   problem.Problems
		errorsOnly bool
		want       []string // severity, attribute path and detail of each diagnostic
	}{
		{"an error", plainError, false, []string{"error listen.port listen.port: port is taken"}},
		{"a warning", warning, false, []string{"warning worker_nodes[2].ip6 worker_nodes[2].ip6: ip6 is set"}},
		{"a warning waits for the plan", warning, true, nil},
		{"what the schema reports too shows once", join(schemaError, plainError), false, []string{"error listen.port listen.port: port is taken"}},
		{"a schema-checked error alone still fails", schemaError, true, []string{"error listen.port listen.port: port is 0"}},
		{"a warning does not count as the error reported", join(schemaError, warning), false,
			[]string{"warning worker_nodes[2].ip6 worker_nodes[2].ip6: ip6 is set", "error listen.port listen.port: port is 0"}},
		{"nothing", nil, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var diags diag.Diagnostics
			appendProblems(&diags, tc.problems, tc.errorsOnly)
			var got []string
			for _, d := range diags {
				withPath, ok := d.(diag.DiagnosticWithPath)
				if !ok {
					t.Fatalf("%q has no attribute path", d.Summary())
				}
				got = append(got, strings.ToLower(d.Severity().String())+" "+withPath.Path().String()+" "+d.Detail())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestAttributePath(t *testing.T) {
	t.Parallel()
	p := problem.Root("worker_addresses").Key("w1")
	if got := attributePath(p).String(); got != `worker_addresses["w1"]` {
		t.Errorf("%s became %s", p, got)
	}
	p = problem.Root("external_lb").At("nodes").Index(1)
	if got := attributePath(p).String(); got != "external_lb.nodes[1]" {
		t.Errorf("%s became %s", p, got)
	}
}
