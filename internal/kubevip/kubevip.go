// Package kubevip renders kube-vip's static pod for the control-plane VIP:
// ARP (or NDP) with leader election, or BGP, with the environment that
// kubespray's kube-vip manifest sets.
package kubevip

import (
	"fmt"
	"net/netip"
	"path"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
	"github.com/kha/terraform-provider-kha/internal/problem"
)

// Mode is how the VIP reaches the network.
type Mode string

const (
	// ARP: one control-plane node holds the VIP, elected through a Lease,
	// and announces it with gratuitous ARP (NDP for IPv6).
	ARP Mode = "arp"
	// BGP: every control-plane node advertises the VIP to its BGP peers.
	BGP Mode = "bgp"
)

// Defaults, as kubespray has them but for the Lease's timings.
const (
	DefaultImage         = "ghcr.io/kube-vip/kube-vip:v1.0.3"
	DefaultIPTablesImage = "ghcr.io/kube-vip/kube-vip-iptables:v1.0.3"
	DefaultLeaseName     = "plndr-cp-lock"
	// The Lease's timings (seconds) are client-go's, which kube-vip took
	// in 1.1 (kube-vip#1429) and the control plane's own leader elections
	// use: kubespray's 5, 3 and 1 gave the VIP up when etcd was slow.
	DefaultLeaseDuration    = 15
	DefaultRenewDeadline    = 10
	DefaultRetryPeriod      = 2
	DefaultBGPAS            = 65000
	DefaultDNSMode          = "first"
	DefaultForwardingMethod = "local"
	// KubeconfigInPod is where kube-vip reads its kubeconfig; the host file
	// is mounted there.
	KubeconfigInPod = "/etc/kubernetes/admin.conf"
	// DefaultLocalAPIServer is where kube-vip reaches the node's own
	// apiserver: loopback, where an apiserver bound to every address answers.
	DefaultLocalAPIServer = "127.0.0.1"
)

// ForwardingMethods are kube-vip's IPVS forwarding methods.
var ForwardingMethods = []string{"local", "masquerade", "tunnel", "direct", "bypass"}

// DNSModes are kube-vip's ways of resolving a DNS name given as address.
var DNSModes = []string{"first", "ipv4", "ipv6", "dual"}

// Peer is a BGP neighbour.
type Peer struct {
	Address  string
	AS       int64
	Multihop bool
}

// Spec is one control-plane node's kube-vip.
type Spec struct {
	// NodeName is the node's Kubernetes name (vip_nodename).
	NodeName string
	// Address is the VIP: an IP, or a DNS name kube-vip resolves.
	Address string
	// Port is kube-apiserver's port, which kube-vip's VIP serves.
	Port int
	// Interface carries the VIP; "" lets kube-vip take the default route's.
	Interface string
	// Subnet is the VIP's prefix length; 0 means 32 (128 for IPv6).
	Subnet int
	Mode   Mode
	// LeaseName and the lease timings (seconds) drive ARP's leader election.
	LeaseName                                 string
	LeaseDuration, RenewDeadline, RetryPeriod int
	// BGP settings, for Mode BGP.
	BGPRouterID string
	BGPAS       int64
	BGPPeers    []Peer
	// ServicesEnabled makes kube-vip serve LoadBalancer Services too.
	ServicesEnabled bool
	// LoadBalancer balances the VIP over every apiserver with IPVS.
	LoadBalancer     bool
	ForwardingMethod string
	DNSMode          string
	DDNS             bool
	Image            string
	// Kubeconfig is the host file mounted as the pod's kubeconfig.
	Kubeconfig string
	// LocalAPIServer is where kube-vip reaches this node's own apiserver,
	// through which it renews its Lease; empty means 127.0.0.1.
	LocalAPIServer string
}

func (s Spec) withDefaults() Spec {
	if s.Mode == "" {
		s.Mode = ARP
	}
	if s.Port == 0 {
		s.Port = 6443
	}
	if s.Subnet == 0 {
		s.Subnet = 32
		if a, err := netip.ParseAddr(s.Address); err == nil && a.Is6() {
			s.Subnet = 128
		}
	}
	if s.LeaseName == "" {
		s.LeaseName = DefaultLeaseName
	}
	if s.LeaseDuration == 0 {
		s.LeaseDuration = DefaultLeaseDuration
	}
	if s.RenewDeadline == 0 {
		s.RenewDeadline = DefaultRenewDeadline
	}
	if s.RetryPeriod == 0 {
		s.RetryPeriod = DefaultRetryPeriod
	}
	if s.BGPAS == 0 {
		s.BGPAS = DefaultBGPAS
	}
	if s.ForwardingMethod == "" {
		s.ForwardingMethod = DefaultForwardingMethod
	}
	if s.DNSMode == "" {
		s.DNSMode = DefaultDNSMode
	}
	if s.Image == "" {
		s.Image = DefaultImage
		if s.LoadBalancer && s.ForwardingMethod == "masquerade" {
			s.Image = DefaultIPTablesImage
		}
	}
	if s.Kubeconfig == "" {
		s.Kubeconfig = KubeconfigInPod
	}
	if s.LocalAPIServer == "" {
		s.LocalAPIServer = DefaultLocalAPIServer
	}
	return s
}

// LinkUnchecked says why the VIP cannot be looked for on the node's link,
// or "" when it can: only an address in arp mode is announced there.
func (s Spec) LinkUnchecked() string {
	s = s.withDefaults()
	switch _, err := netip.ParseAddr(s.Address); {
	case s.Mode == BGP:
		return "in bgp mode the VIP is routed to the nodes, not announced on their link"
	case s.DDNS:
		return "with ddns the VIP is leased by DHCP, not known before kube-vip asks for it"
	case err != nil:
		return "address is a DNS name, which kube-vip resolves"
	}
	return ""
}

// SplitCause says why two nodes may hold the VIP at once, and where to
// look: kube-vip gives the VIP to its Lease's holder alone.
func (s Spec) SplitCause() string {
	s = s.withDefaults()
	return fmt.Sprintf("kube-vip gives the VIP to the holder of the Lease %s alone: another holder is a node whose kube-vip "+
		"kept the address after it lost the Lease (kube-vip#1418), or a host that is not kube-vip. See who holds the Lease "+
		"(`kubectl -n kube-system get lease %s`), and restart kube-vip on the other nodes that hold the VIP.", s.LeaseName, s.LeaseName)
}

// Validate reports every problem of s, addressed to the resource's
// attribute names.
func (s Spec) Validate() problem.Problems {
	s = s.withDefaults()
	var ps problem.Problems
	if !endpoints.IsNodeName(s.NodeName) {
		ps.Errorf(problem.Root("node_name"), "Invalid node name", "%q is not a Kubernetes node name (lower-case letters, digits, '-' and '.').", s.NodeName)
	}
	vip, err := netip.ParseAddr(s.Address)
	switch {
	case err == nil && !problem.IsServiceAddress(vip):
		ps.Errorf(problem.Root("address"), "Invalid VIP", "%q is not an address a VIP can have.", s.Address)
	case err != nil && !endpoints.IsNodeName(s.Address):
		ps.Errorf(problem.Root("address"), "Invalid VIP", "%q is neither an IP address nor a DNS name.", s.Address)
	}
	if !problem.ValidPort(s.Port) {
		ps.SchemaErrorf(problem.Root("port"), "Invalid port", "port is %d; use kube-apiserver's port.", s.Port)
	}
	if s.Interface != "" && !problem.IsIdentifier(s.Interface) {
		ps.Errorf(problem.Root("interface"), "Invalid interface", "%q is not a network interface name.", s.Interface)
	}
	maxPrefix := 32
	if vip.Is6() {
		maxPrefix = 128
	}
	if s.Subnet < 1 || s.Subnet > maxPrefix {
		ps.Errorf(problem.Root("subnet"), "Invalid prefix length", "subnet is %d; use 1 to %d.", s.Subnet, maxPrefix)
	}
	if !problem.IsIdentifier(s.LeaseName) {
		ps.Errorf(problem.Root("leader_election").At("lease_name"), "Invalid lease name", "%q is not a Lease name.", s.LeaseName)
	}
	switch le := problem.Root("leader_election"); {
	case !(s.RetryPeriod < s.RenewDeadline && s.RenewDeadline < s.LeaseDuration):
		ps.Errorf(le, "Inconsistent lease timings",
			"need retry_period < renew_deadline < lease_duration (the defaults: %d, %d, %d seconds); got %d, %d, %d.",
			DefaultRetryPeriod, DefaultRenewDeadline, DefaultLeaseDuration, s.RetryPeriod, s.RenewDeadline, s.LeaseDuration)
	case 5*s.RenewDeadline <= 6*s.RetryPeriod:
		// client-go's leader election refuses these, and kube-vip exits.
		ps.Errorf(le.At("renew_deadline"), "Inconsistent lease timings",
			"renew_deadline is %d s, which client-go needs above 1.2 × retry_period (%d s, with its jitter): kube-vip would "+
				"exit at every start. Raise renew_deadline or lower retry_period.", s.RenewDeadline, s.RetryPeriod)
	case s.Mode == ARP && s.RenewDeadline < DefaultRenewDeadline:
		// The default held the VIP through every stall of etcd the
		// end-to-end test made; kubespray's shorter one did not.
		ps.Warnf(le.At("renew_deadline"), "Lease timings that move the VIP when etcd is slow",
			"renew_deadline is %d s: kube-vip gives the VIP up whenever one renewal of its Lease takes that long, and a slow "+
				"etcd (a slow disk, a defragmentation, an election) makes a write take seconds. kha's end-to-end test measured "+
				"it: with etcd's leader stalling 2 s at a time, kubespray's 5, 3 and 1 s let the VIP go once in 40 s (no node "+
				"held it for about 2 s), and the defaults (%d, %d, %d s, client-go's, which the control plane's own leader elections use) "+
				"held it. Shorter timings move the VIP sooner when its holder dies (7 to 9 s at 5, 3 and 1 s, against 16 to "+
				"22 s at the defaults): keep them only where etcd never stalls, or remove leader_election.",
			s.RenewDeadline, DefaultLeaseDuration, DefaultRenewDeadline, DefaultRetryPeriod)
	}
	switch s.Mode {
	case ARP:
		if len(s.BGPPeers) > 0 || s.BGPRouterID != "" {
			ps.Errorf(problem.Root("bgp"), "BGP settings in ARP mode", "set mode = \"bgp\" to use them, or remove bgp.")
		}
	case BGP:
		if a, err := netip.ParseAddr(s.BGPRouterID); err != nil || !a.Is4() {
			ps.Errorf(problem.Root("bgp").At("router_id"), "Invalid router ID", "%q is not an IPv4 address; BGP router IDs are (use the node's IPv4 address).", s.BGPRouterID)
		}
		if !validAS(s.BGPAS) {
			ps.Errorf(problem.Root("bgp").At("as"), "Invalid AS number", "%d is not a 32-bit AS number.", s.BGPAS)
		}
		if len(s.BGPPeers) == 0 {
			ps.Errorf(problem.Root("bgp").At("peers"), "No BGP peers", "mode \"bgp\" needs at least one peer to advertise the VIP to.")
		}
		for i, p := range s.BGPPeers {
			at := problem.Root("bgp").At("peers").Index(i)
			if a, err := netip.ParseAddr(p.Address); err != nil || a.Zone() != "" {
				ps.Errorf(at.At("address"), "Invalid peer address", "%q is not an IP address.", p.Address)
			}
			if !validAS(p.AS) {
				ps.Errorf(at.At("as"), "Invalid AS number", "%d is not a 32-bit AS number.", p.AS)
			}
		}
	default:
		ps.SchemaErrorf(problem.Root("mode"), "Invalid mode", "mode %q is not \"arp\" or \"bgp\".", s.Mode)
	}
	if !oneOf(s.ForwardingMethod, ForwardingMethods) {
		ps.SchemaErrorf(problem.Root("load_balancer").At("forwarding_method"), "Invalid forwarding method", "%q is not one of %s.", s.ForwardingMethod, strings.Join(ForwardingMethods, ", "))
	}
	if !oneOf(s.DNSMode, DNSModes) {
		ps.SchemaErrorf(problem.Root("dns_mode"), "Invalid DNS mode", "%q is not one of %s.", s.DNSMode, strings.Join(DNSModes, ", "))
	}
	switch local, err := netip.ParseAddr(s.LocalAPIServer); {
	case err != nil || local.Zone() != "" || local.IsUnspecified():
		ps.Errorf(problem.Root("local_apiserver_address"), "Invalid apiserver address",
			"%q is not an address of this node's apiserver; use 127.0.0.1, or the node's address when its apiserver binds that alone.", s.LocalAPIServer)
	case local == vip:
		ps.Errorf(problem.Root("local_apiserver_address"), "Lease through the VIP",
			"local_apiserver_address is the VIP %s: kube-vip would renew its Lease through the address it holds, so the VIP would stay "+
				"on a node whose apiserver is down. Use 127.0.0.1, or the node's own address.", s.Address)
	}
	if why := misbehaves(s.Image, err != nil); why != "" {
		ps.Errorf(problem.Root("image"), "kube-vip release known to misbehave", "%s", why)
	}
	if !path.IsAbs(s.Kubeconfig) || path.Clean(s.Kubeconfig) != s.Kubeconfig || strings.ContainsAny(s.Kubeconfig, "\"\\\n\r\t") {
		ps.Errorf(problem.Root("kubeconfig_path"), "Invalid kubeconfig path", "%q is not a clean absolute path.", s.Kubeconfig)
	}
	return ps
}

// misbehaves says why the kube-vip release image names fails the control
// plane's VIP as kha runs it ("" for none kha knows of). dnsAddress is an
// address that is a DNS name. An image kha cannot tell the release of (a
// digest alone, another repository name) passes.
func misbehaves(image string, dnsAddress bool) string {
	ref, _, _ := strings.Cut(image, "@")
	name, tag, found := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	if !found || (name != "kube-vip" && name != "kube-vip-iptables") || !semver.IsValid(tag) {
		return ""
	}
	switch {
	case semver.Compare(tag, "v1.1.0-rc.0") >= 0 && semver.Compare(tag, "v1.2.0") <= 0:
		return fmt.Sprintf("kube-vip %s hangs on the node that wins the Lease when adding the VIP fails (kube-vip#1590): it keeps "+
			"renewing the Lease and never serves the VIP, so no other node takes it over. Use v1.2.1 or later, or v1.0.4.", tag)
	case tag == "v1.2.2" && dnsAddress:
		return "kube-vip v1.2.2 loses a VIP given as a DNS name about a minute after its election and keeps the Lease (kube-vip#1655). " +
			"Use v1.2.3 or later, or v1.2.1."
	}
	return ""
}

func validAS(as int64) bool { return as >= 1 && as <= 4294967295 }

func oneOf(s string, choices []string) bool {
	for _, c := range choices {
		if s == c {
			return true
		}
	}
	return false
}

// Env is kube-vip's environment for s, in the manifest's order: kubespray's
// variables first, then BGP and the load balancer when enabled.
func Env(s Spec) [][2]string {
	s = s.withDefaults()
	b := strconv.FormatBool
	env := [][2]string{{"vip_arp", b(s.Mode == ARP)}, {"port", strconv.Itoa(s.Port)}, {"vip_nodename", s.NodeName}}
	if s.Interface != "" {
		env = append(env, [2]string{"vip_interface", s.Interface})
	}
	env = append(env,
		[2]string{"vip_subnet", strconv.Itoa(s.Subnet)},
		[2]string{"dns_mode", s.DNSMode},
		[2]string{"cp_enable", "true"},
		[2]string{"cp_namespace", "kube-system"},
		// The apiserver kube-vip renews its Lease through, pinned to the
		// name hostAliases maps to this node's own apiserver: the address
		// kube-vip 1.0 dials by default, said outright so that a release
		// with another default (the kubeconfig's server, the VIP) keeps
		// the Lease on this node's apiserver.
		[2]string{"kubernetes_addr", "kubernetes:" + strconv.Itoa(s.Port)},
		[2]string{"vip_ddns", b(s.DDNS)},
		[2]string{"svc_enable", b(s.ServicesEnabled)})
	if s.Mode == ARP {
		env = append(env,
			[2]string{"vip_leaderelection", "true"},
			[2]string{"vip_leasename", s.LeaseName},
			[2]string{"vip_leaseduration", strconv.Itoa(s.LeaseDuration)},
			[2]string{"vip_renewdeadline", strconv.Itoa(s.RenewDeadline)},
			[2]string{"vip_retryperiod", strconv.Itoa(s.RetryPeriod)})
	} else {
		env = append(env,
			[2]string{"bgp_enable", "true"},
			[2]string{"bgp_routerid", s.BGPRouterID},
			[2]string{"bgp_as", strconv.FormatInt(s.BGPAS, 10)},
			[2]string{"bgp_peers", bgpPeers(s.BGPPeers)})
	}
	env = append(env, [2]string{"address", s.Address})
	if s.LoadBalancer {
		env = append(env,
			[2]string{"lb_enable", "true"},
			[2]string{"lb_port", strconv.Itoa(s.Port)},
			[2]string{"lb_fwdmethod", s.ForwardingMethod})
	}
	return env
}

// bgpPeers is kube-vip's peer list: address:AS:password:multihop, IPv6
// addresses in brackets, no password (it would land in the manifest).
func bgpPeers(peers []Peer) string {
	items := make([]string, len(peers))
	for i, p := range peers {
		addr := p.Address
		if a, err := netip.ParseAddr(addr); err == nil && a.Is6() {
			addr = "[" + a.String() + "]"
		}
		items[i] = fmt.Sprintf("%s:%d::%t", addr, p.AS, p.Multihop)
	}
	return strings.Join(items, ",")
}

// Render renders the static pod manifest (YAML, deterministic). It
// refuses a Spec that Validate finds errors in.
func Render(s Spec) (string, error) {
	if ps := s.Validate(); ps.HasErrors() {
		return "", fmt.Errorf("invalid kube-vip spec: %s", ps[0])
	}
	s = s.withDefaults()
	q := strconv.Quote
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Rendered by kha.")
	w("apiVersion: v1")
	w("kind: Pod")
	w("metadata:")
	w("  name: kube-vip")
	w("  namespace: kube-system")
	w("  labels:")
	w("    addonmanager.kubernetes.io/mode: Reconcile")
	w("    k8s-app: kube-vip")
	w("spec:")
	w("  hostNetwork: true")
	// kube-vip talks to the apiserver as https://kubernetes:<port>
	// (kubernetes_addr), whatever server its kubeconfig names: mapped to
	// this node's own apiserver, the Lease is renewed through it, and a
	// node whose apiserver stops answering loses the VIP (kube-vip's
	// health check is BGP-only: kube-vip#1787).
	w("  hostAliases:")
	w("    - ip: %s", s.LocalAPIServer)
	w("      hostnames:")
	w("        - kubernetes")
	w("  priority: 2000001000")
	w("  priorityClassName: system-node-critical")
	w("  containers:")
	w("    - name: kube-vip")
	w("      image: %s", q(s.Image))
	w("      imagePullPolicy: IfNotPresent")
	w("      args:")
	w("        - manager")
	w("      env:")
	for _, e := range Env(s) {
		w("        - name: %s", e[0])
		w("          value: %s", q(e[1]))
	}
	w("      resources: {}")
	w("      securityContext:")
	if s.LoadBalancer && s.ForwardingMethod == "masquerade" {
		// kube-vip writes iptables rules for masquerading.
		w("        privileged: true")
	}
	w("        capabilities:")
	w("          add:")
	w("            - NET_ADMIN")
	w("            - NET_RAW")
	w("          drop:")
	w("            - ALL")
	w("      volumeMounts:")
	w("        - name: kubeconfig")
	w("          mountPath: %s", KubeconfigInPod)
	w("          readOnly: true")
	w("  volumes:")
	w("    - name: kubeconfig")
	w("      hostPath:")
	w("        path: %s", q(s.Kubeconfig))
	w("        type: File")
	return b.String(), nil
}
