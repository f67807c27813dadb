// Package keepalived renders keepalived configurations that hold a VIP for
// an external apiserver load balancer: one VRRP instance over unicast
// between the load balancer nodes, with a track script that follows the
// local load balancer's health, so the VIP leaves a node whose load
// balancer is down and not only a node that is down.
package keepalived

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// Node is one load balancer node that may hold the VIP.
type Node struct {
	Name     string
	IP       string // unicast source and peer address
	Priority int    // 1-254; the highest live node holds the VIP
}

// Spec is everything a node's keepalived.conf depends on.
type Spec struct {
	// Node names the node this configuration is for.
	Node  string
	Nodes []Node
	// VIP with its prefix length (default 32 for IPv4, 128 for IPv6).
	VIP       string
	VIPPrefix int
	Interface string
	// VirtualRouterID must be unique among VRRP instances on the segment.
	VirtualRouterID int
	// TrackCommand is run every second; one failure puts the instance
	// into FAULT, which releases the VIP to a healthy peer at once, and two
	// successes end the FAULT. Arguments need absolute paths.
	TrackCommand string
	// AdvertInterval is the VRRPv3 advertisement interval: a peer takes
	// the VIP over about three of them after the holder goes silent.
	// Default 250ms; 10ms steps from 10ms to 40s.
	AdvertInterval time.Duration
	// PreemptDelay holds a recovered higher-priority node back this long
	// before it takes the VIP back. Default 2s.
	PreemptDelay time.Duration
	// NoPreempt keeps the VIP where it is when a higher-priority node
	// comes back, avoiding a second failover.
	NoPreempt bool
	// PreviousVIPs ("address/prefix") are held beside VIP while clients
	// move away from them (a handover); they stay the ones the adverts
	// carry until they go.
	PreviousVIPs []string
}

// Defaults.
const (
	DefaultAdvertInterval = 250 * time.Millisecond
	DefaultPreemptDelay   = 2 * time.Second
)

func (s Spec) withDefaults() Spec {
	if s.AdvertInterval == 0 {
		s.AdvertInterval = DefaultAdvertInterval
	}
	if s.PreemptDelay == 0 {
		s.PreemptDelay = DefaultPreemptDelay
	}
	return s
}

// Validate reports every problem with the attribute paths of the resource.
func (s Spec) Validate() problem.Problems {
	s = s.withDefaults()
	var ps problem.Problems
	if a := s.AdvertInterval; a < 10*time.Millisecond || a > 40*time.Second || a%(10*time.Millisecond) != 0 {
		ps.Errorf(problem.Root("advert_interval"), "Invalid advertisement interval",
			"advert_interval %s must be a multiple of 10ms from 10ms to 40s (VRRPv3 counts centiseconds).", a)
	}
	if d := s.PreemptDelay; d < 0 || d > 1000*time.Second || d%(10*time.Millisecond) != 0 {
		ps.Errorf(problem.Root("preempt_delay"), "Invalid preempt delay", "preempt_delay %s must be a multiple of 10ms from 0 to 1000s.", d)
	}
	vip, err := netip.ParseAddr(s.VIP)
	if err != nil || !problem.IsServiceAddress(vip) {
		ps.Errorf(problem.Root("vip"), "Invalid VIP", "%q is not an address a VIP can have.", s.VIP)
	}
	maxPrefix := 32
	if vip.Is6() {
		maxPrefix = 128
	}
	if s.VIPPrefix < 0 || s.VIPPrefix > maxPrefix {
		ps.Errorf(problem.Root("vip_prefix"), "Invalid prefix length", "vip_prefix is %d; use 1 to %d.", s.VIPPrefix, maxPrefix)
	}
	for _, p := range s.PreviousVIPs {
		if prefix, err := netip.ParsePrefix(p); err != nil || prefix.Addr().Is6() != vip.Is6() {
			ps.Errorf(problem.Root("vip"), "Invalid previous VIP", "%q is not an address/prefix of the VIP's family to hold "+
				"while clients move away from it: move the VIP within its family.", p)
		}
	}
	if !problem.IsIdentifier(s.Interface) {
		ps.Errorf(problem.Root("interface"), "Invalid interface", "%q is not a network interface name.", s.Interface)
	}
	if s.VirtualRouterID < 1 || s.VirtualRouterID > 255 {
		ps.SchemaErrorf(problem.Root("virtual_router_id"), "Invalid virtual router ID", "virtual_router_id is %d; use 1 to 255, unique on the network segment.", s.VirtualRouterID)
	}
	if len(s.Nodes) < 2 {
		ps.SchemaErrorf(problem.Root("nodes"), "Too few nodes", "a VIP needs at least two nodes to move between.")
	}
	names, ips, priorities := map[string]bool{}, map[netip.Addr]bool{}, map[int]string{}
	for i, n := range s.Nodes {
		at := problem.Root("nodes").Index(i)
		if !problem.IsIdentifier(n.Name) || names[n.Name] {
			ps.Errorf(at.At("name"), "Invalid node name", "%q must be unique and made of letters, digits, '.', '-' or '_'.", n.Name)
		}
		names[n.Name] = true
		a, err := netip.ParseAddr(n.IP)
		switch {
		case err != nil || a.Zone() != "":
			ps.Errorf(at.At("ip"), "Invalid address", "%q is not an IP address.", n.IP)
		case a.Is6() != vip.Is6():
			ps.Errorf(at.At("ip"), "Address family mismatch", "%s and the VIP %s must be of one family: VRRP runs per family.", a, s.VIP)
		case ips[a] || a == vip:
			ps.Errorf(at.At("ip"), "Duplicate address", "%s is used twice (or is the VIP).", a)
		}
		ips[a] = true
		if n.Priority < 1 || n.Priority > 254 {
			ps.SchemaErrorf(at.At("priority"), "Invalid priority", "priority is %d; use 1 to 254.", n.Priority)
		} else if other, ok := priorities[n.Priority]; ok {
			ps.Errorf(at.At("priority"), "Equal priorities", "%s has the priority of %s; give each node its own so the VIP's home is predictable.", n.Name, other)
		}
		priorities[n.Priority] = n.Name
	}
	if !names[s.Node] {
		ps.Errorf(problem.Root("node"), "Unknown node", "node %q is not one of nodes.", s.Node)
	}
	if strings.ContainsAny(s.TrackCommand, "\"\n\\") || (s.TrackCommand != "" && !strings.HasPrefix(s.TrackCommand, "/")) {
		ps.Errorf(problem.Root("track_command"), "Invalid track command",
			"track_command must start with an absolute path and contain no double quotes, backslashes or newlines, e.g. \"/usr/bin/curl -sf http://127.0.0.1:8081/healthz\".")
	}
	return ps
}

// VIPWithPrefix is the VIP as "address/prefix", the prefix length's
// default (32, 128 for IPv6) filled in.
func (s Spec) VIPWithPrefix() string {
	prefix := s.VIPPrefix
	if a, err := netip.ParseAddr(s.VIP); prefix == 0 && err == nil {
		prefix = 32
		if a.Is6() {
			prefix = 128
		}
	}
	return fmt.Sprintf("%s/%d", s.VIP, prefix)
}

// Render returns keepalived.conf for s.Node.
func Render(s Spec) (string, error) {
	if ps := s.Validate(); ps.HasErrors() {
		return "", fmt.Errorf("invalid keepalived spec: %v", ps[0])
	}
	s = s.withDefaults()
	var self Node
	var peers []string
	for _, n := range s.Nodes {
		if n.Name == s.Node {
			self = n
		} else {
			peers = append(peers, n.IP)
		}
	}
	sort.Strings(peers)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Rendered by kha for %s. Changes made here are reverted by the next apply.", s.Node)
	w("global_defs {")
	w("    router_id %s", s.Node)
	w("    enable_script_security")
	w("    script_user root")
	w("    vrrp_version 3")
	// A node drops adverts whose addresses differ from its own, unless they
	// come from the master it knows: without this, a pair whose nodes
	// reload a new VIP one after the other would both hold it meanwhile.
	w("    vrrp_skip_check_adv_addr")
	w("    vrrp_garp_master_delay 1")
	w("}")
	if s.TrackCommand != "" {
		w("")
		w("vrrp_script kha_track_lb {")
		w("    script \"%s\"", s.TrackCommand)
		w("    interval 1")
		w("    timeout %d", trackTimeout)
		w("    fall 1")
		w("    rise 2")
		w("}")
	}
	w("")
	w("vrrp_instance kha_vip_%d {", s.VirtualRouterID)
	w("    state BACKUP")
	w("    interface %s", s.Interface)
	w("    virtual_router_id %d", s.VirtualRouterID)
	w("    priority %d", self.Priority)
	w("    advert_int %s", seconds(s.AdvertInterval))
	if s.NoPreempt {
		w("    nopreempt")
	} else {
		w("    preempt_delay %s", seconds(s.PreemptDelay))
	}
	w("    unicast_src_ip %s", self.IP)
	w("    unicast_peer {")
	for _, p := range peers {
		w("        %s", p)
	}
	w("    }")
	// While previous VIPs are held they stay the advertised ones and the
	// new VIP is held unadvertised: a node drops adverts whose addresses
	// differ from its own, so a pair whose nodes reload one after the other
	// would each take the other for gone and both hold the VIP.
	advertised, unadvertised := []string{s.VIPWithPrefix()}, []string(nil)
	if len(s.PreviousVIPs) > 0 {
		advertised, unadvertised = s.PreviousVIPs, advertised
	}
	w("    virtual_ipaddress {")
	for _, a := range advertised {
		w("        %s dev %s", a, s.Interface)
	}
	w("    }")
	if len(unadvertised) > 0 {
		w("    virtual_ipaddress_excluded {")
		for _, a := range unadvertised {
			w("        %s dev %s", a, s.Interface)
		}
		w("    }")
	}
	if s.TrackCommand != "" {
		w("    track_script {")
		w("        kha_track_lb")
		w("    }")
	}
	w("}")
	return b.String(), nil
}

// seconds renders d as keepalived's decimal seconds.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// trackTimeout (seconds) bounds a track script's run. The script bounds
// itself (four checks of at most 0.5 s each, three pauses of 0.2 s), so a
// dead or hung load balancer fails a run in under 3 s whatever this is;
// only a starved node's run outlasts that, and keepalived counts a run
// that outlasts the bound as a failure. Measured on a pair whose nodes
// were both starved (load average 24 on two cores) while their load
// balancers served: 580 runs, 90 longer than 3 s, the longest 11.6 s.
// With 10 s both nodes dropped the VIP at once.
const trackTimeout = 30

// TrackScript is a track command that polls a load balancer's health URL
// every 200ms for most of keepalived's one-second script interval.
// It exits 1 at once when the load balancer refuses a check or answers
// unhealthy: keepalived learns of a dead load balancer, or an HAProxy that
// lost every apiserver, within about 200ms. A check that gets no answer
// within 500ms is a failure only when no check of the run is answered (a
// hung load balancer, about 2.6 s): on a busy node one slow answer is
// not a dead load balancer.
func TrackScript(healthURL string) string {
	return `#!/bin/sh
# Rendered by kha: keepalived's track script. Exits 1 as soon as the load
# balancer refuses a check or answers unhealthy, or when none of four checks
# 200ms apart is answered within 500ms (a hung load balancer); else 0.
answered=0 i=0
while [ "$i" -lt 4 ]; do
  /usr/bin/curl -sf -o /dev/null --max-time 0.5 ` + healthURL + `
  case $? in
  0) answered=1 ;;
  28) ;; # no answer in time: hung, or a busy node; the run decides
  *) exit 1 ;;
  esac
  i=$((i + 1))
  [ "$i" = 4 ] || sleep 0.2
done
[ "$answered" = 1 ]
`
}
