// Package vipcheck decides, from what one node sees on its link, whether
// a VIP may be claimed there: the VIP must be on-link for the interface
// that will carry it, and nobody but the nodes that share it may answer
// for it yet. It has no Terraform or SSH types: what the host saw comes in
// as a Sight, the findings go out as problems.
package vipcheck

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// Sight is what one node saw of a VIP.
type Sight struct {
	Route string // `ip route get <vip>`'s first line
	// Interface is the interface the node looked on: the Check's, or, where
	// that is unset, the default route's ("" when there is none).
	Interface string
	// Link is the interface's own link-layer address, lowercase: a node
	// that holds the VIP announces it with this address, and a probe on
	// the interface may hear those announcements.
	Link  string
	Local bool // the interface has the VIP
	// Answers are, per address probed (the VIP and each other node's
	// address, in canonical form), the link-layer addresses that answered
	// for it, lowercase.
	Answers map[string][]string
	// Unprobed says why the node could not ask who answers ("" when it
	// asked).
	Unprobed string
}

// Node is a node that may hold the VIP: its name and the address the
// others reach it at on the VIP's link.
type Node struct{ Name, IP string }

// Check is a claim about to be made: Self is the node it is made on.
type Check struct {
	VIP string
	// Interface carries the VIP; "" leaves it to the holder, which takes
	// the default route's interface (as kube-vip does).
	Interface string
	Self      string
	Nodes     []Node
	// Noun names what holds the VIP in messages, e.g. "the pair's nodes".
	Noun string
	// SplitCause says, in a sentence, why two nodes may both hold the VIP
	// and where to look.
	SplitCause string
	// VIPAttr, InterfaceAttr and NodesAttr are where the findings point.
	VIPAttr, InterfaceAttr, NodesAttr problem.Path
}

// Validate checks the nodes: Self among them, each name once, and each
// address one of the VIP's family, which is asked about on the VIP's link.
func (c Check) Validate() problem.Problems {
	var ps problem.Problems
	vip, vipErr := netip.ParseAddr(c.VIP)
	seen := map[string]bool{}
	for i, n := range c.Nodes {
		at := c.NodesAttr.Index(i)
		if seen[n.Name] {
			ps = append(ps, problem.Problem{Severity: problem.Error, Path: at.At("name"), Summary: "Node Listed Twice",
				Detail: fmt.Sprintf("%q is in the list twice; list each node once.", n.Name)})
		}
		seen[n.Name] = true
		switch a, err := netip.ParseAddr(n.IP); {
		case err != nil:
			ps = append(ps, problem.Problem{Severity: problem.Error, Path: at.At("ip"), Summary: "Invalid Node Address",
				Detail: fmt.Sprintf("%q is not an IP address: give %s's address on the VIP's link.", n.IP, n.Name)})
		case vipErr == nil && a.Is4() != vip.Is4():
			ps = append(ps, problem.Problem{Severity: problem.Error, Path: at.At("ip"), Summary: "Node Address of Another Family",
				Detail: fmt.Sprintf("%s is not of %s's family: the nodes are asked about on the VIP's link (ARP for IPv4, NDP for "+
					"IPv6), so give %s's address of the VIP's family.", n.IP, c.VIP, n.Name)})
		}
	}
	if len(c.Nodes) > 0 && !seen[c.Self] {
		ps = append(ps, problem.Problem{Severity: problem.Error, Path: c.NodesAttr, Summary: "Node Not Listed",
			Detail: fmt.Sprintf("%q is not in the list: it holds the VIP too, so list every node that may, this one included.", c.Self)})
	}
	return ps
}

// Problems are what stops the claim (errors) and what the node should
// know of (warnings). claimed says that the node has already, unchanged,
// the configuration about to claim the VIP: another host that answers for
// it then cannot stop the apply (a neighbour that adds the VIP to its
// interface must not block every apply of the pair), and is a warning.
func (c Check) Problems(s Sight, claimed bool) problem.Problems {
	var ps problem.Problems
	switch {
	case s.Interface == "":
		ps = append(ps, problem.Problem{Severity: problem.Error, Path: c.InterfaceAttr, Summary: "No Interface for the VIP",
			Detail: fmt.Sprintf("%s has no default route, whose interface would carry %s while interface is unset. Set "+
				"interface to the one whose subnet %s lies in.", c.Self, c.VIP, c.VIP)})
	case !s.Local:
		if why := c.offLink(s); why != "" {
			ps = append(ps, problem.Problem{Severity: problem.Error, Path: c.InterfaceAttr, Summary: "VIP Not On-Link",
				Detail: fmt.Sprintf("on %s, %s: %s. A VIP is announced by ARP (NDP for IPv6) on %s, so it must lie in a subnet "+
					"%q already has an address in; pick an address there, or %s.",
					c.Self, c.VIP, why, c.interfaceName(s), s.Interface, c.interfaceFix())})
		}
	}
	if s.Unprobed != "" {
		return append(ps, c.unprobed(s))
	}
	if strangers := c.strangers(s); len(strangers) > 0 {
		p := problem.Problem{Severity: problem.Error, Path: c.VIPAttr, Summary: "VIP Already in Use",
			Detail: fmt.Sprintf("on %s, %s is answered by %s, which is none of %s%s. Another host holds the address: with "+
				"this node claiming it too, both answer for it and clients reach either. ",
				c.Self, c.VIP, c.macs(s, strangers), c.Noun, c.knownNodes(s))}
		if claimed {
			p.Severity = problem.Warning
			p.Detail += "This node has the configuration that claims it already, and the apply leaves it as it is, so it goes " +
				"on. Take the address off that host; where it answers for the VIP on purpose (a router's proxy ARP), set " +
				"check_vip = false."
		} else {
			p.Detail += "Pick a free address, or take it off that host first; nothing was changed on this node. Where that " +
				"host answers for the VIP on purpose (a router's proxy ARP), set check_vip = false."
		}
		ps = append(ps, p)
	}
	return append(ps, c.doubled(s)...)
}

// unprobed is the warning that the node could not ask who answers.
func (c Check) unprobed(s Sight) problem.Problem {
	return problem.Problem{Severity: problem.Warning, Path: c.VIPAttr, Summary: "VIP Not Checked for Other Holders",
		Detail: fmt.Sprintf("on %s: %q, so kha could not ask who answers for %s. Install arping (Debian's arping or "+
			"iputils-arping) for the check, or set check_vip = false.", c.Self, s.Unprobed, c.VIP)}
}

// doubled warns of each other node whose address more than one
// link-layer address answers for: a host that answers for the nodes'
// addresses as well as the VIP passes for one of the nodes.
func (c Check) doubled(s Sight) problem.Problems {
	var ps problem.Problems
	for i, n := range c.Nodes {
		macs := s.Answers[canonical(n.IP)]
		if n.Name == c.Self || len(macs) < 2 {
			continue
		}
		ps = append(ps, problem.Problem{Severity: problem.Warning, Path: c.NodesAttr.Index(i).At("ip"),
			Summary: "Node Address Answered by More Than One Host",
			Detail: fmt.Sprintf("on %s, %s's address %s is answered by %s: another host answers for it too, so kha cannot tell "+
				"%s's answers for %s from that host's, and takes each of them for %s's. Find the host that is not %s (`ip neigh` "+
				"on the link, the switch's MAC address table) and take the address off it; where it answers for the address on "+
				"purpose (a router's proxy ARP), set check_vip = false.", c.Self, n.Name, n.IP, c.macs(s, macs), n.Name, c.VIP, n.Name, n.Name)})
	}
	return ps
}

// macs lists link-layer addresses the node heard, quoted, for a message.
func (c Check) macs(s Sight, macs []string) string {
	quoted := make([]string, len(macs))
	for i, mac := range macs {
		quoted[i] = strconv.Quote(mac)
		if mac != "" && mac == s.Link {
			quoted[i] += " (this node's own MAC address)"
		}
	}
	return strings.Join(quoted, " and ")
}

// interfaceName names the interface that carries the VIP, for a message.
func (c Check) interfaceName(s Sight) string {
	if c.Interface == "" {
		return strconv.Quote(s.Interface) + " (the default route's, taken while interface is unset)"
	}
	return strconv.Quote(s.Interface)
}

// interfaceFix is how to carry the VIP on the interface that has its
// subnet, for a message.
func (c Check) interfaceFix() string {
	if c.Interface == "" {
		return "set interface to the one that has that subnet"
	}
	return "the interface that has that subnet"
}

// offLink says why the Sight's route does not reach the VIP directly over
// its interface, or "" when it does.
func (c Check) offLink(s Sight) string {
	route := s.Route
	fields := strings.Fields(route)
	dev := ""
	for i, f := range fields {
		if f == "dev" && i+1 < len(fields) {
			dev = fields[i+1]
		}
		if f == "via" {
			return fmt.Sprintf("`ip route get` says %q: it goes through a router", route)
		}
	}
	switch {
	case dev == "":
		return fmt.Sprintf("`ip route get` says %q: no route", route)
	case dev != s.Interface:
		return fmt.Sprintf("`ip route get` says %q: it is on-link for %q, not %q", route, dev, s.Interface)
	}
	return ""
}

// strangers are the link-layer addresses that answer for the VIP and are
// neither the node's own, while it has the VIP, nor any other node's. A
// node that does not have the VIP holds it on nobody's word: another host
// answers with its MAC address.
func (c Check) strangers(s Sight) []string {
	ours := map[string]bool{}
	if s.Local {
		ours[s.Link] = true // a holder hears its own announcements
	}
	for _, n := range c.Nodes {
		for _, mac := range s.Answers[canonical(n.IP)] {
			ours[mac] = true
		}
	}
	var out []string
	for _, mac := range s.Answers[canonical(c.VIP)] {
		if !ours[mac] {
			out = append(out, mac)
		}
	}
	return out
}

// InUse says whether a host that is none of the nodes answers for the VIP.
func (c Check) InUse(s Sight) bool { return len(c.strangers(s)) > 0 }

// knownNodes lists the other nodes' link-layer addresses as the probe
// found them, for the message.
func (c Check) knownNodes(s Sight) string {
	var parts []string
	for _, n := range c.Nodes {
		if n.Name == c.Self {
			continue
		}
		macs := s.Answers[canonical(n.IP)]
		if len(macs) == 0 {
			parts = append(parts, fmt.Sprintf("%s (%s) did not answer", n.Name, n.IP))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s is %s", n.Name, c.macs(s, macs)))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// Probed are the addresses the host asks about: the VIP, then every other
// node's.
func (c Check) Probed() []string {
	out := []string{canonical(c.VIP)}
	for _, n := range c.Nodes {
		if n.Name != c.Self && !slices.Contains(out, canonical(n.IP)) {
			out = append(out, canonical(n.IP))
		}
	}
	return out
}

// canonical is an address's usual spelling, as a Sight keys answers.
func canonical(address string) string {
	if a, err := netip.ParseAddr(address); err == nil {
		return a.String()
	}
	return address
}

// Holders are who holds the VIP as the node sees it: the nodes by name, in
// the order of Nodes (the node itself on its own word alone, when it has
// the VIP; another when its link-layer address answers for the VIP), then
// any other host by its link-layer address (strangers).
func (c Check) Holders(s Sight) []string {
	vipMACs := s.Answers[canonical(c.VIP)]
	var out []string
	for _, n := range c.Nodes {
		answers := slices.ContainsFunc(s.Answers[canonical(n.IP)], func(mac string) bool { return slices.Contains(vipMACs, mac) })
		if n.Name == c.Self && s.Local || n.Name != c.Self && answers {
			out = append(out, n.Name)
		}
	}
	return append(out, c.strangers(s)...)
}

// Unheld says that, on the node's own word, nobody holds the VIP: the node
// does not have it, and nobody answers for it. Of what a node sees, only
// this calls for starting the VIP's holder again: another node heard
// holding it beside this one may be a host on the link that answers with
// that node's MAC address, and must not make the holder reload.
func (c Check) Unheld(s Sight) bool {
	return s.Unprobed == "" && !s.Local && len(s.Answers[canonical(c.VIP)]) == 0
}

// HolderProblems warn unless exactly one node holds the VIP, or that the
// node could not ask, and of a node's address that more than one host
// answers for.
func (c Check) HolderProblems(s Sight) problem.Problems {
	if s.Unprobed != "" {
		return problem.Problems{c.unprobed(s)}
	}
	return append(c.holderProblems(s), c.doubled(s)...)
}

// holderProblems warn unless exactly one node holds the VIP.
func (c Check) holderProblems(s Sight) problem.Problems {
	holders := c.Holders(s)
	var nodes, others []string
	for _, h := range holders {
		if slices.ContainsFunc(c.Nodes, func(n Node) bool { return n.Name == h }) {
			nodes = append(nodes, h)
		} else {
			others = append(others, h)
		}
	}
	switch {
	case len(holders) == 1 && len(nodes) == 1:
		return nil
	case len(holders) == 1:
		return problem.Problems{{Severity: problem.Warning, Path: c.VIPAttr, Summary: "VIP Held by Another Host",
			Detail: fmt.Sprintf("on %s, %s is held by %s alone, which is none of %s: its clients reach that host. Take the "+
				"address off it, or pick another VIP.", c.Self, c.VIP, c.macs(s, others), c.Noun)}}
	case len(holders) == 0:
		return problem.Problems{{Severity: problem.Warning, Path: c.VIPAttr, Summary: "VIP Held by No Node",
			Detail: fmt.Sprintf("on %s, nobody answers for %s and %s does not hold it: its clients reach nothing. Is the "+
				"service that holds it running on %s, and do its health checks pass?", c.Self, c.VIP, c.Self, c.Noun)}}
	}
	if len(others) > 0 {
		nodes = append(nodes, c.macs(s, others))
	}
	return problem.Problems{{Severity: problem.Warning, Path: c.VIPAttr, Summary: "VIP Held by More Than One Host",
		Detail: fmt.Sprintf("on %s, %s is held by %s: its clients reach any of them (split brain). %s Another node is "+
			"counted as this node hears it: a host on the link that answers with that node's MAC address looks the same.", c.Self, c.VIP, strings.Join(nodes, " and "), c.SplitCause)}}
}
