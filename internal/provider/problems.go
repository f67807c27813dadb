package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// attributePath translates a core path into a framework attribute path.
func attributePath(p problem.Path) path.Path {
	var out path.Path
	for i, step := range p {
		switch s := step.(type) {
		case int:
			out = out.AtListIndex(s)
		case problem.Key:
			out = out.AtMapKey(string(s))
		case string:
			if i == 0 {
				out = path.Root(s)
			} else {
				out = out.AtName(s)
			}
		}
	}
	return out
}

// appendProblems reports core findings as attribute diagnostics. With
// errorsOnly, warnings are left for a later phase so they show once. The
// detail starts with the attribute path because Terraform cannot point at
// an element of a nested attribute list in the configuration and falls
// back to the whole resource block.
//
// Findings the schema's validators report too are left out, unless that
// would leave no error at all: a filtered finding never turns an error
// into success.
func appendProblems(diags *diag.Diagnostics, problems problem.Problems, errorsOnly bool) {
	reported := false
	add := func(p problem.Problem) {
		detail := p.Path.String() + ": " + p.Detail
		switch {
		case p.Severity == problem.Error:
			diags.AddAttributeError(attributePath(p.Path), p.Summary, detail)
			reported = true
		case !errorsOnly:
			diags.AddAttributeWarning(attributePath(p.Path), p.Summary, detail)
		}
	}
	for _, p := range problems {
		if !p.SchemaChecked {
			add(p)
		}
	}
	if problems.HasErrors() && !reported {
		for _, p := range problems {
			if p.Severity == problem.Error {
				add(p)
			}
		}
	}
}

// problemDiagnostics are a plan's findings, warnings and errors, as a
// hostres.PlanChecker gives them.
func problemDiagnostics(problems problem.Problems) diag.Diagnostics {
	var diags diag.Diagnostics
	appendProblems(&diags, problems, false)
	return diags
}

// validateConfig reports a resource's core findings once its configuration
// is fully known; problems reads them off the decoded model.
func validateConfig[M any](ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse, problems func(*M) problem.Problems) {
	if !req.Config.Raw.IsFullyKnown() {
		return
	}
	var m M
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if !resp.Diagnostics.HasError() {
		appendProblems(&resp.Diagnostics, problems(&m), true)
	}
}
