package remote

import (
	_ "embed"

	"context"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/kha/terraform-provider-kha/internal/vipcheck"
)

// vipScript says what the host sees of a VIP on an interface (the default
// route's when none is given): the first line of `ip route get`, the
// interface and its MAC address, whether the interface has the VIP, and every
// link-layer address that answers for the VIP and for each other address
// (ARP through arping for IPv4; NDP, the kernel's, for IPv6). It changes
// nothing but the host's neighbour entries of the addresses it asks
// about (IPv6), which the kernel makes again as it needs them.
var vipScript = newScript[vipArgs](vipBody)

//go:embed scripts/vip.sh
var vipBody string

// vipArgs are vipScript's parameters.
type vipArgs struct {
	VIP       string `sh:"vip"`
	Interface string `sh:"iface"`  // "" for the default route's
	Others    string `sh:"others"` // addresses, space-separated
}

// SeeVIP asks the host what it sees of vip on iface (the default route's
// interface when iface is ""), and who answers for vip and for each of
// others (the other nodes that may hold it).
func (c *Client) SeeVIP(ctx context.Context, vip, iface string, others []string) (vipcheck.Sight, error) {
	c.log(ctx, LevelDebug, "looking for the VIP's holders", map[string]any{"vip": vip, "interface": iface})
	stdout, stderr, exit, err := c.script(ctx, vipScript.with(vipArgs{VIP: vip, Interface: iface, Others: strings.Join(others, " ")}), nil)
	if err == nil && exit != exitOK {
		err = c.sudoHint(string(stderr), exit)
	}
	if err != nil {
		return vipcheck.Sight{}, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: "the VIP " + vip, Output: trimOutput(stderr), Err: err}
	}
	return parseVIPSight(string(stdout)), nil
}

// linkAddress is a MAC address in a probe's line: iputils' arping writes
// "Unicast reply from 10.0.0.5 [AA:BB:...]", Habets' the address alone,
// `ip neigh` "... lladdr aa:bb:... REACHABLE".
var linkAddress = regexp.MustCompile(`(?i)\b[0-9a-f]{2}(:[0-9a-f]{2}){5}\b`)

// parseVIPSight reads vipScript's output. It is the host's text: only an
// address and a MAC address are taken from an answer, and lines of any
// other shape are passed over.
func parseVIPSight(out string) vipcheck.Sight {
	s := vipcheck.Sight{Answers: map[string][]string{}}
	for line := range strings.Lines(out) {
		word, rest, _ := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
		switch word {
		case wordRoute:
			s.Route = rest
		case wordInterface:
			s.Interface, _, _ = strings.Cut(rest, " ")
		case wordLink:
			_, ether, _ := strings.Cut(rest, "link/ether ")
			s.Link = strings.ToLower(linkAddress.FindString(ether))
		case wordLocal:
			s.Local = rest == "1"
		case wordUnprobed:
			s.Unprobed = rest
		case wordAnswer:
			address, text, _ := strings.Cut(rest, " ")
			a, err := netip.ParseAddr(address)
			mac := strings.ToLower(linkAddress.FindString(text))
			if err != nil || mac == "" {
				continue
			}
			if key := a.String(); !slices.Contains(s.Answers[key], mac) {
				s.Answers[key] = append(s.Answers[key], mac)
			}
		}
	}
	return s
}
