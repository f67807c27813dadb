package provider

import (
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
)

// TestQuorumGuard walks a control plane through the plans that weaken
// etcd and the ones that replace a member safely, for stacked etcd
// (kha_cluster_endpoints) and etcd of its own (kha_etcd_access).
func TestQuorumGuard(t *testing.T) {
	t.Parallel()
	recorder := &planRecorder{}
	// quorumDiagnostics expects, from both resources, the plan's quorum
	// diagnostics: summary → severity, at the members' list.
	quorumDiagnostics := func(want map[string]tfprotov6.DiagnosticSeverity) plancheck.PlanCheck {
		return planCheckFunc(func() error {
			got := map[string][]string{}
			for _, d := range recorder.take() {
				if !regexp.MustCompile(`(?i)etcd`).MatchString(d.Summary) {
					continue
				}
				if want[d.Summary] != d.Severity {
					return fmt.Errorf("%s (severity %v): %s", d.Summary, d.Severity, d.Detail)
				}
				at := d.Attribute.String()
				if !slices.Contains(got[d.Summary], at) {
					got[d.Summary] = append(got[d.Summary], at)
				}
			}
			for summary := range want {
				slices.Sort(got[summary])
				if fmt.Sprint(got[summary]) != `[AttributeName("control_plane_nodes") AttributeName("members")]` {
					return fmt.Errorf("%q at %v, want at control_plane_nodes and members", summary, got[summary])
				}
			}
			if len(got) != len(want) {
				return fmt.Errorf("quorum diagnostics %v, want %v", got, want)
			}
			return nil
		})
	}
	step := func(nodes, draining []string, allow bool) resource.TestStep {
		vars := config.Variables{"nodes": stringListVariable(nodes), "draining": stringListVariable(draining), "allow": config.BoolVariable(allow)}
		return resource.TestStep{ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars, PreConfig: recorder.reset}
	}
	checked := func(s resource.TestStep, want map[string]tfprotov6.DiagnosticSeverity) resource.TestStep {
		s.ConfigPlanChecks = resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{quorumDiagnostics(want)}}
		return s
	}
	refused := func(s resource.TestStep, summary string) resource.TestStep {
		s.ExpectError = regexp.MustCompile(`(?s)` + summary + `.*` + summary)
		return s
	}
	three, four := []string{"cp1", "cp2", "cp3"}, []string{"cp1", "cp2", "cp3", "cp4"}
	warning, even := tfprotov6.DiagnosticSeverityWarning, "Even Number of etcd Members"
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		Steps: []resource.TestStep{
			checked(step(three, nil, false), nil),
			refused(step(three, []string{"cp3"}, false), "Fewer Than Three etcd Members"),
			refused(step([]string{"cp1"}, nil, false), "etcd Would Lose Its Quorum"),
			refused(step([]string{"cp1", "cp4", "cp5"}, nil, false), "etcd Would Lose Its Quorum"),
			// The safe replacement: add cp4, drain cp1, remove it.
			checked(step(four, nil, false), map[string]tfprotov6.DiagnosticSeverity{even: warning}),
			checked(step(four, []string{"cp1"}, false), nil),
			checked(step(four[1:], nil, false), nil),
			// Going down to two, allowed: warnings only.
			checked(step(four[1:], []string{"cp4"}, true), map[string]tfprotov6.DiagnosticSeverity{even: warning, "Fewer Than Three etcd Members": warning}),
		},
	})
}

func stringListVariable(values []string) config.Variable {
	vs := make([]config.Variable, len(values))
	for i, v := range values {
		vs[i] = config.StringVariable(v)
	}
	return config.ListVariable(vs...)
}
