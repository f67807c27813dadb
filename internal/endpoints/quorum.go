package endpoints

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// QuorumMember is one etcd member as a plan lists it: by name, and
// whether it is on its way out (a draining control-plane node keeps its
// member until a later apply removes the node).
type QuorumMember struct {
	Name    string
	Leaving bool
}

// QuorumChange is a plan's change to etcd's members.
type QuorumChange struct {
	// At is the list attribute that holds the members; AllowAt the
	// attribute that lets a risky change go ahead (Allowed).
	At, AllowAt problem.Path
	// Noun names a member in the messages, e.g. "etcd member".
	Noun string
	// Prior are the members before the plan, nil on create.
	Prior   []QuorumMember
	Planned []QuorumMember
	Allowed bool
}

// Problems warns of an even number of members, and refuses (unless
// Allowed) a change that leaves etcd without a majority of the members it
// has now, or with fewer than three where three served. etcd writes only
// while a majority of its members agree: n members tolerate the failure
// of (n-1)/2 of them.
func (q QuorumChange) Problems() problem.Problems {
	var ps problem.Problems
	staying := serving(q.Planned)
	if n := len(staying); n > 0 && n%2 == 0 {
		ps.Warnf(q.At, "Even Number of etcd Members",
			"%d %ss serve etcd after this plan. They tolerate the failure of %d, as %d would: etcd "+
				"writes only while a majority (%d of %d) agree, so the %s adds a node that can fail without adding tolerance%s. "+
				"Use an odd number; an even number is expected only for the apply between adding a replacement and removing the "+
				"node it replaces.",
			n, q.Noun, (n-1)/2, n-1, n/2+1, n, ordinal(n), twoMembersWarning(n))
	}
	if q.Prior == nil {
		return ps
	}
	report := ps.Errorf
	if q.Allowed {
		report = ps.Warnf
	}
	before := make(map[string]bool, len(q.Prior))
	for _, m := range q.Prior {
		before[m.Name] = true
	}
	var survivors int
	for _, name := range staying {
		if before[name] {
			survivors++
		}
	}
	var leaving []string
	for _, m := range q.Prior {
		if !m.Leaving && !slices.Contains(staying, m.Name) {
			leaving = append(leaving, m.Name)
		}
	}
	way := fmt.Sprintf("Take one %s away per apply, and add its replacement in an apply before (an even number in between is expected).", q.Noun)
	override := fmt.Sprintf("If the %s are already out of etcd (`etcdctl member remove`) or you accept the risk, set %s = true.",
		q.Noun+"s leaving", q.AllowAt)
	if need := len(q.Prior)/2 + 1; survivors < need && len(leaving) > 0 {
		report(q.At, "etcd Would Lose Its Quorum",
			"this plan takes away %s: of the %d members etcd has now, %d remain (%s new in this plan do not count until they have "+
				"joined), and etcd needs %d to write. The apiservers stop serving writes, and so does every node's path to them. %s %s",
			quoted(leaving), len(q.Prior), survivors, q.Noun+"s", need, way, override)
		return ps
	}
	if priorServing := len(serving(q.Prior)); priorServing >= 3 && len(staying) < 3 && len(leaving) > 0 {
		report(q.At, "Fewer Than Three etcd Members",
			"this plan takes away %s: %d %ss serve etcd after it, where %d did, and %d tolerate no failure: one more %s lost stops "+
				"etcd and the apiservers. %s %s",
			quoted(leaving), len(staying), q.Noun, priorServing, len(staying), q.Noun, way, override)
	}
	return ps
}

// serving are the names of the members not leaving.
func serving(ms []QuorumMember) []string {
	var names []string
	for _, m := range ms {
		if !m.Leaving {
			names = append(names, m.Name)
		}
	}
	return names
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// ordinal is n's English ordinal for an even n.
func ordinal(n int) string {
	if n%10 == 2 && n%100 != 12 {
		return fmt.Sprintf("%dnd", n)
	}
	return fmt.Sprintf("%dth", n)
}

func twoMembersWarning(n int) string {
	if n == 2 {
		return ": with two, losing either one stops etcd, and with it the apiservers and any VIP elected through them"
	}
	return ""
}
