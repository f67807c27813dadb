package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
)

// attributePath translates a core path into a framework attribute path.
func attributePath(p endpoints.Path) path.Path {
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
// back to the whole resource block. Findings the schema's validators
// already report are left out.
func appendProblems(diags *diag.Diagnostics, problems endpoints.Problems, errorsOnly bool) {
	for _, p := range problems {
		if schemaChecked(p) {
			continue
		}
		detail := p.Path.String() + ": " + p.Detail
		switch {
		case p.Severity == endpoints.SeverityError:
			diags.AddAttributeError(attributePath(p.Path), p.Summary, detail)
		case !errorsOnly:
			diags.AddAttributeWarning(attributePath(p.Path), p.Summary, detail)
		}
	}
}
