package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
	"github.com/kha/terraform-provider-kha/internal/problem"
)

// quorumGuardDoc ends the description of a list of etcd members: what
// their plans check.
const quorumGuardDoc = "an even number is a warning, and a plan that drains or removes members so that fewer than a " +
	"majority of today's members stay, or fewer than three serve where three did, is an error unless `allow_quorum_risk` " +
	"is set. Unlike kubespray, which refuses an even number of etcd hosts outright, kha only warns: the apply between " +
	"adding a replacement and removing the member it replaces has one."

// allowQuorumRiskAttribute lets a plan that weakens etcd go ahead.
func allowQuorumRiskAttribute(noun, list string) schema.BoolAttribute {
	return schema.BoolAttribute{
		Optional: true,
		MarkdownDescription: fmt.Sprintf("Lets a plan that takes %ss away from `%s` go ahead although etcd would keep "+
			"fewer than a majority of the members it has now, or fewer than three where three served; the plan then warns "+
			"instead of failing. Set it when the members leaving are already out of etcd (`etcdctl member remove`), or for a "+
			"cluster you accept to lose; the safe way is one member per apply, with its replacement added in an apply "+
			"before. Default `false`.", noun, list),
	}
}

// quorumProblems guards etcd's quorum in a plan that changes the members
// held by the attribute list from prior (nil on create) to planned.
func quorumProblems(list, noun string, prior, planned []endpoints.QuorumMember, allowed bool) problem.Problems {
	return endpoints.QuorumChange{At: problem.Root(list), AllowAt: problem.Root("allow_quorum_risk"), Noun: noun,
		Prior: prior, Planned: planned, Allowed: allowed}.Problems()
}

// controlPlaneMembers are the etcd members of stacked etcd: each
// control-plane node runs one, and a draining one is leaving; nil for nil.
func controlPlaneMembers(nodes []nodeModel) []endpoints.QuorumMember {
	if nodes == nil {
		return nil
	}
	ms := make([]endpoints.QuorumMember, len(nodes))
	for i, n := range nodes {
		ms[i] = endpoints.QuorumMember{Name: n.Name.ValueString(), Leaving: n.Draining.ValueBool()}
	}
	return ms
}

// etcdMembers are kha_etcd_access' members; nil for nil.
func etcdMembers(list []etcdMemberModel) []endpoints.QuorumMember {
	if list == nil {
		return nil
	}
	ms := make([]endpoints.QuorumMember, len(list))
	for i, mb := range list {
		ms[i] = endpoints.QuorumMember{Name: mb.Name.ValueString()}
	}
	return ms
}
