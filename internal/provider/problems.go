package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// attributePath translates a core path into a framework attribute path.
func attributePath(p problem.Path) path.Path {
	var out path.Path
	for i, step := range p {
		switch s := step.(type) {
		case int:
			out = out.AtListIndex(s)
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
