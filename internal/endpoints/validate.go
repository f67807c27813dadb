package endpoints

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// node is a Node with its addresses parsed; invalid Addrs stand for
// "not set".
type node struct {
	Node
	path         problem.Path
	controlPlane bool
	ip, accessIP netip.Addr
	ip6          netip.Addr
	accessIP6    netip.Addr
	// bind is the apiserver bind address of a control-plane node and
	// bindPath the attribute it came from.
	bind     netip.Addr
	bindPath problem.Path
}

// cluster is the validated input with every default applied.
type cluster struct {
	family IPFamily
	port   int
	// nodes holds the control-plane nodes first, then the workers.
	nodes         []node
	controlPlanes []node // nodes[:number of control-plane nodes]
	// primary indexes the first control-plane node that is not draining:
	// the one every node reaches without a load balancer, and kubeadm's.
	primary       int
	workers       []node // the rest of nodes
	mode          Mode
	localLB       LocalLB // Type and Port defaulted
	external      *ExternalLB
	supplementary []string
	dnsDomain     string
	serviceIP     netip.Addr
	// serviceCIDRs are the service ranges, primary family first
	// (kubespray's kube_service_subnets).
	serviceCIDRs []string
	existingSANs *SANs
	// anonymousAuthOff is --anonymous-auth=false on every apiserver.
	anonymousAuthOff bool
	flags            APIServerFlags
	healthCheck      HealthCheckSpec
	idleTimeout      time.Duration
	podOverride      *PodEndpoint
	// kubeletLocalMode points a control-plane node's kubelet at its own
	// apiserver in every mode (kubeadm's ControlPlaneKubeletLocalMode);
	// kubeletLocalModeGate, when not nil, is the gate's value kubeadm
	// needs to do the same.
	kubeletLocalMode     bool
	kubeletLocalModeGate *bool
}

func (c *cluster) localLBInUse() bool {
	return c.mode == ModeLocalLB || c.mode == ModeLocalLBWithUnmanagedLB || c.mode == ModeLocalLBEveryNode
}

// lbHost is the name clients of the external LB use.
func (c *cluster) lbHost() string {
	if c.external.DomainName != "" {
		return c.external.DomainName
	}
	return c.external.Address
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// normalize validates the input, applies defaults and parses addresses.
func normalize(in Input) (*cluster, problem.Problems) {
	var ps problem.Problems
	c := &cluster{
		family:           orDefault(in.IPFamily, IPv4),
		port:             orDefault(in.APIServerPort, DefaultAPIServerPort),
		dnsDomain:        canonicalHost(orDefault(in.DNSDomain, DefaultDNSDomain)),
		existingSANs:     in.ExistingCertSANs,
		anonymousAuthOff: in.AnonymousAuthOff,
	}
	switch c.family {
	case IPv4, IPv6, DualStack:
	default:
		ps.SchemaErrorf(problem.Root("ip_family"), "Invalid IP family", "ip_family is %q; use \"ipv4\", \"ipv6\" or \"dual\".", c.family)
		return c, ps
	}
	if !problem.ValidPort(c.port) {
		ps.SchemaErrorf(problem.Root("apiserver_port"), "Invalid port", "apiserver_port is %d; a TCP port is between 1 and 65535.", c.port)
	}
	if !isDNSName(c.dnsDomain, false) {
		ps.Errorf(problem.Root("dns_domain"), "Invalid DNS domain", "dns_domain %q is not a DNS name; the default is %q.", in.DNSDomain, DefaultDNSDomain)
	}
	c.serviceIP = serviceIP(&ps, c.family, in)
	v4, v6 := orDefault(in.ServiceCIDR, DefaultServiceCIDR), orDefault(in.ServiceCIDRIPv6, DefaultServiceCIDRIPv6)
	switch c.family {
	case IPv4:
		c.serviceCIDRs = []string{v4}
	case IPv6:
		c.serviceCIDRs = []string{v6}
	case DualStack:
		c.serviceCIDRs = []string{v4, v6}
	}

	bind := orDefault(in.APIServerBindAddress, DefaultBindAddress)
	defaultBind, ok := parseIP(bind)
	if !ok {
		ps.Errorf(problem.Root("apiserver_bind_address"), "Invalid bind address",
			"apiserver_bind_address %q is not an IP address; use \"::\" or \"0.0.0.0\" to bind every address, or an address of the node.", bind)
	}

	if len(in.ControlPlaneNodes) == 0 {
		ps.SchemaErrorf(problem.Root("control_plane_nodes"), "No control-plane nodes", "control_plane_nodes must list at least one node.")
	}
	nodes := len(in.ControlPlaneNodes) + len(in.WorkerNodes) + len(in.WorkerAddresses)
	seen := make(duplicateIndex, 3*nodes)
	c.nodes = make([]node, 0, nodes)
	for i, n := range in.ControlPlaneNodes {
		c.nodes = append(c.nodes, c.parseNode(&ps, seen, n, problem.Root("control_plane_nodes").Index(i), true, defaultBind))
	}
	for i, n := range in.WorkerNodes {
		c.addWorker(&ps, seen, in.ControlPlaneNodes, n, problem.Root("worker_nodes").Index(i), defaultBind)
	}
	for _, name := range slices.Sorted(maps.Keys(in.WorkerAddresses)) {
		// A compact entry has no attributes of its own: what parseNode says
		// of its name or ip is said of the entry.
		at := problem.Root("worker_addresses").Key(name)
		var found problem.Problems
		c.addWorker(&found, seen, in.ControlPlaneNodes, Node{Name: name, IP: in.WorkerAddresses[name]}, at, defaultBind)
		for _, p := range found {
			if p.Path.Within(at) {
				p.Path = at
			}
			ps = append(ps, p)
		}
	}
	c.controlPlanes, c.workers = c.nodes[:len(in.ControlPlaneNodes)], c.nodes[len(in.ControlPlaneNodes):]
	c.primary = slices.IndexFunc(c.controlPlanes, func(n node) bool { return !n.Draining })
	if c.primary < 0 {
		c.primary = 0
		if len(c.controlPlanes) > 0 {
			ps.Errorf(problem.Root("control_plane_nodes"), "Every control-plane node draining",
				"every node of control_plane_nodes has draining = true: no apiserver would be left in the load balancers. "+
					"Drain one node at a time, and only while another one serves.")
		}
	}

	c.parseLoadBalancers(&ps, in)
	for i, s := range in.SupplementaryAddresses {
		if _, ok := parseIP(s); !ok && !isDNSName(s, true) {
			ps.Errorf(problem.Root("supplementary_addresses").Index(i), "Invalid address",
				"%q is neither an IP address nor a DNS name.", s)
			continue
		}
		c.supplementary = append(c.supplementary, canonicalHost(s))
	}
	c.parseTiming(&ps, in)
	c.parseKubeletLocalMode(&ps, in.Kubeadm)
	c.parsePodOverride(&ps, in.PodEndpointOverride)
	if in.ExistingCertSANs != nil {
		checkSANList(&ps, problem.Root("existing_cert_sans"), *in.ExistingCertSANs)
	}
	if !ps.HasErrors() {
		c.checkPortConflicts(&ps)
	}
	return c, ps
}

func serviceIP(ps *problem.Problems, family IPFamily, in Input) netip.Addr {
	v4 := orDefault(in.ServiceCIDR, DefaultServiceCIDR)
	v6 := orDefault(in.ServiceCIDRIPv6, DefaultServiceCIDRIPv6)
	p4, err4 := netip.ParsePrefix(v4)
	if err4 != nil || !p4.Addr().Is4() {
		ps.Errorf(problem.Root("service_cidr"), "Invalid service CIDR", "service_cidr %q is not an IPv4 CIDR such as %q.", v4, DefaultServiceCIDR)
	}
	p6, err6 := netip.ParsePrefix(v6)
	if err6 != nil || !p6.Addr().Is6() || p6.Addr().Is4In6() {
		ps.Errorf(problem.Root("service_cidr_ipv6"), "Invalid service CIDR", "service_cidr_ipv6 %q is not an IPv6 CIDR such as %q.", v6, DefaultServiceCIDRIPv6)
	}
	// kube-apiserver's service IP is the first address after the network
	// address of the primary family's service range.
	prefix, path := p4, problem.Root("service_cidr")
	if family == IPv6 {
		prefix, path = p6, problem.Root("service_cidr_ipv6")
	}
	if !prefix.IsValid() {
		return netip.Addr{}
	}
	ip := prefix.Masked().Addr().Next()
	if !ip.IsValid() || !prefix.Contains(ip) {
		ps.Errorf(path, "Service CIDR too small", "%s has no room for the kubernetes service IP; use a larger range.", prefix)
		return netip.Addr{}
	}
	return ip
}

// addWorker adds a worker node at path at, unless it repeats a control-plane
// node.
func (c *cluster) addWorker(ps *problem.Problems, seen duplicateIndex, controlPlanes []Node, n Node, at problem.Path, defaultBind netip.Addr) {
	if cp, both := allInOne(controlPlanes, n); both {
		// kubespray lists such a host in kube_control_plane and in
		// kube_node; it is a control-plane node for every rule here.
		if !sameNode(cp, n) {
			ps.Errorf(at, "Node listed twice with different addresses",
				"%q is in control_plane_nodes and among the workers (a control-plane node that runs workloads, as kubespray "+
					"inventories list it in kube_control_plane and kube_node); both entries must give the same ip, access_ip, "+
					"ip6 and access_ip6, or list the node in control_plane_nodes only.", n.Name)
		}
		return
	}
	c.nodes = append(c.nodes, c.parseNode(ps, seen, n, at, false, defaultBind))
}

// allInOne finds the control-plane node a worker entry names, if any.
func allInOne(cps []Node, w Node) (Node, bool) {
	for _, cp := range cps {
		if cp.Name == w.Name && w.Name != "" {
			return cp, true
		}
	}
	return Node{}, false
}

// sameNode says whether a worker entry repeats a control-plane entry: the
// addresses it gives are the control-plane entry's (unset ones inherit).
func sameNode(cp, w Node) bool {
	for _, pair := range [][2]string{{cp.IP, w.IP}, {cp.AccessIP, w.AccessIP}, {cp.IP6, w.IP6}, {cp.AccessIP6, w.AccessIP6}} {
		if pair[1] != "" && canonicalHost(pair[0]) != canonicalHost(pair[1]) {
			return false
		}
	}
	return true
}

// duplicateIndex remembers where each node name and address was first
// used.
type duplicateIndex map[string]problem.Path

func (d duplicateIndex) claim(ps *problem.Problems, kind, value string, at problem.Path) {
	key := kind + "\x00" + value
	if first, ok := d[key]; ok {
		ps.Errorf(at, "Duplicate "+kind, "%s %q is already used by %s; every node needs its own.", kind, value, first)
		return
	}
	d[key] = at
}

func (c *cluster) parseNode(ps *problem.Problems, seen duplicateIndex, n Node, at problem.Path, controlPlane bool, defaultBind netip.Addr) node {
	p := node{Node: n, path: at, controlPlane: controlPlane}
	if !IsNodeName(n.Name) {
		ps.Errorf(at.At("name"), "Invalid node name",
			"%q is not a valid Kubernetes node name: use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit.", n.Name)
	} else {
		seen.claim(ps, "node name", n.Name, at.At("name"))
	}
	primaryIs6 := c.family == IPv6
	familyWord := map[bool]string{false: "IPv4", true: "IPv6"}[primaryIs6]
	parseAddr := func(value, attr string, want6, required bool) netip.Addr {
		if value == "" {
			if required {
				ps.Errorf(at.At(attr), "Missing address", "%s must be set.", attr)
			}
			return netip.Addr{}
		}
		a, ok := parseIP(value)
		switch {
		case !ok && isDNSName(value, false):
			ps.Errorf(at.At(attr), "Host name instead of an IP address",
				"%s is %q, a host name: %s takes an IP address only, as kubespray's does. Give the node's address here; names "+
					"clients use for the apiservers go to supplementary_addresses, the host's own names to hostname and fqdn.", attr, value, attr)
		case !ok:
			ps.Errorf(at.At(attr), "Invalid IP address", "%s %q is not an IP address.", attr, value)
		case a.Is6() != want6 && !isIPv6Attr(attr):
			hint := "set ip_family = \"dual\" and put IPv6 addresses in ip6/access_ip6"
			if primaryIs6 {
				hint = "an IPv6-only cluster (ip_family = \"ipv6\") takes IPv6 addresses, in ip6/access_ip6 as kubespray inventories give them, or in ip/access_ip"
			}
			ps.Errorf(at.At(attr), "Address family mismatch", "%s %s is not an %s address, but ip_family is %q: %s.", attr, value, familyWord, c.family, hint)
		case a.Is6() != want6:
			ps.Errorf(at.At(attr), "Address family mismatch", "%s must be an IPv6 address, got %s.", attr, value)
		case notAHostAddress(a) != "":
			ps.Errorf(at.At(attr), "Invalid node address", "%s %s is %s, so it cannot be a node's address. Give the address other "+
				"hosts reach the node at; the node-local load balancer's loopback address is kha's to set (local_lb).", attr, value, notAHostAddress(a))
		default:
			return a
		}
		return netip.Addr{}
	}
	// ipAttr names the attribute the primary address came from.
	ipAttr := "ip"
	switch c.family {
	case IPv4:
		p.ip = parseAddr(n.IP, "ip", false, true)
		p.accessIP = parseAddr(n.AccessIP, "access_ip", false, false)
		for attr, v := range problem.Sorted(map[string]string{"ip6": n.IP6, "access_ip6": n.AccessIP6}) {
			if v != "" {
				ps.Warnf(at.At(attr), "IPv6 address ignored",
					"%s is set but ip_family is \"ipv4\", so it is not used (kubespray ignores it too without ipv6_stack); set ip_family = \"dual\" to use it.", attr)
			}
		}
	case DualStack:
		p.ip = parseAddr(n.IP, "ip", false, true)
		p.accessIP = parseAddr(n.AccessIP, "access_ip", false, false)
		p.ip6 = parseAddr(n.IP6, "ip6", true, false)
		p.accessIP6 = parseAddr(n.AccessIP6, "access_ip6", true, false)
	case IPv6:
		// kubespray's IPv6-only inventories give the address in ip6
		// (main_ip is ip6 without ipv4_stack); ip works too.
		if n.IP6 == "" {
			p.ip = parseAddr(n.IP, "ip", true, true)
			p.accessIP = parseAddr(n.AccessIP, "access_ip", true, false)
			break
		}
		ipAttr = "ip6"
		p.ip = parseAddr(n.IP6, "ip6", true, true)
		p.accessIP = parseAddr(n.AccessIP6, "access_ip6", true, false)
		for _, pair := range [][3]string{{"ip", n.IP, n.IP6}, {"access_ip", n.AccessIP, n.AccessIP6}} {
			attr, v, v6 := pair[0], pair[1], pair[2]
			a, ok := parseIP(v)
			switch {
			case v == "":
			case ok && a.Is4():
				ps.Warnf(at.At(attr), "IPv4 address ignored",
					"%s is %s, but ip_family is \"ipv6\": the node's address is %s6, as kubespray uses it without ipv4_stack.", attr, v, attr)
			case !ok || canonicalHost(v) != canonicalHost(v6):
				ps.Errorf(at.At(attr), "Two different addresses",
					"%s is %q and %s6 is %q; in an IPv6-only cluster give the address once, in %s6.", attr, v, attr, v6, attr)
			}
		}
	}
	if n.Hostname != "" && !isDNSName(n.Hostname, false) {
		ps.Errorf(at.At("hostname"), "Invalid host name", "hostname %q is not a DNS name.", n.Hostname)
	}
	if n.FQDN != "" && !isDNSName(n.FQDN, false) {
		ps.Errorf(at.At("fqdn"), "Invalid host name", "fqdn %q is not a DNS name.", n.FQDN)
	}
	if !p.accessIP.IsValid() {
		p.accessIP = p.ip
	}
	if !p.accessIP6.IsValid() {
		p.accessIP6 = p.ip6
	}
	if p.ip.IsValid() {
		seen.claim(ps, "address", p.ip.String(), at.At(ipAttr))
	}
	if p.ip6.IsValid() {
		seen.claim(ps, "address", p.ip6.String(), at.At("ip6"))
	}
	if p.accessIP.IsValid() && p.accessIP != p.ip {
		seen.claim(ps, "address", p.accessIP.String(), at.At("access_"+ipAttr))
	}

	if !controlPlane {
		if n.BindAddress != "" {
			ps.Errorf(at.At("bind_address"), "Bind address on a worker",
				"bind_address is the kube-apiserver bind address of a control-plane node; worker nodes run no apiserver. Remove it.")
		}
		if n.Draining {
			ps.Errorf(at.At("draining"), "Draining a worker",
				"draining takes a control-plane node out of the load balancers in front of the apiservers; worker nodes are in none. Remove it.")
		}
		return p
	}
	p.bind, p.bindPath = defaultBind, problem.Root("apiserver_bind_address")
	if n.BindAddress != "" {
		p.bindPath = at.At("bind_address")
		a, ok := parseIP(n.BindAddress)
		if !ok {
			ps.Errorf(p.bindPath, "Invalid bind address", "%q is not an IP address.", n.BindAddress)
			return p
		}
		p.bind = a
	}
	if p.bind.IsValid() && !isWildcardIP(p.bind) && p.bind != p.ip && p.bind != p.ip6 {
		what := "is not an address of this node"
		if p.bind.IsLoopback() {
			what = "is a loopback address: load balancers and other nodes could not reach kube-apiserver there"
		}
		ps.Errorf(p.bindPath, "Unusable bind address",
			"kube-apiserver on control-plane node %q would bind %s, which %s (its ip is %s). Use \"::\" to bind every address, or the node's ip; set bind_address per node when nodes differ.",
			n.Name, p.bind, what, orDefault(n.IP, "unset"))
	}
	return p
}

// isIPv6Attr tells the dual-stack IPv6 attributes from the primary ones.
func isIPv6Attr(attr string) bool { return attr == "ip6" || attr == "access_ip6" }

func (c *cluster) parseLoadBalancers(ps *problem.Problems, in Input) {
	c.localLB = in.LocalLB
	c.localLB.Type = orDefault(c.localLB.Type, DefaultLocalLBType)
	if c.localLB.Type != LBTypeNginx && c.localLB.Type != LBTypeHAProxy {
		ps.SchemaErrorf(problem.Root("local_lb").At("type"), "Invalid load balancer type", "local_lb.type is %q; use \"nginx\" or \"haproxy\".", c.localLB.Type)
	}
	c.localLB.Port = orDefault(c.localLB.Port, c.port)
	if !problem.ValidPort(c.localLB.Port) {
		ps.SchemaErrorf(problem.Root("local_lb").At("port"), "Invalid port", "local_lb.port is %d; a TCP port is between 1 and 65535.", c.localLB.Port)
	}
	if hp := c.localLB.HealthcheckPort; hp != 0 && !problem.ValidPort(hp) {
		ps.SchemaErrorf(problem.Root("local_lb").At("healthcheck_port"), "Invalid port", "local_lb.healthcheck_port is %d; a TCP port is between 1 and 65535.", hp)
	}

	enabled := in.LocalLB.Enabled
	switch {
	case in.LocalLB.EveryNode && enabled != nil && !*enabled:
		ps.Errorf(problem.Root("local_lb").At("every_node"), "Every node, but disabled",
			"local_lb.every_node = true runs the node-local load balancer on every node, but local_lb.enabled is false; remove one of them.")
	case in.LocalLB.EveryNode:
		c.mode = ModeLocalLBEveryNode
	case in.ExternalLB == nil && enabled != nil && !*enabled:
		c.mode = ModeDirect
	case in.ExternalLB == nil:
		c.mode = ModeLocalLB
	case in.ExternalLB.MetalLB != nil && enabled != nil && !*enabled:
		ps.Errorf(problem.Root("external_lb").At("metallb"), "MetalLB VIP without node-local load balancers",
			"a MetalLB VIP is a Service of the cluster itself: the nodes cannot reach the apiservers through it before the "+
				"cluster runs (and lose it when the cluster has trouble). Keep the node-local load balancer (remove "+
				"local_lb.enabled = false); the VIP then serves clients outside the cluster.")
	case in.ExternalLB.MetalLB != nil, enabled != nil && *enabled:
		c.mode = ModeLocalLBWithUnmanagedLB
	default:
		c.mode = ModeExternalLB
	}
	c.warnIgnoredLocalLB(ps, in.LocalLB)
	if in.ExternalLB == nil {
		return
	}
	ext := *in.ExternalLB
	at := problem.Root("external_lb")
	ext.Port = orDefault(ext.Port, c.port)
	if !problem.ValidPort(ext.Port) {
		ps.SchemaErrorf(at.At("port"), "Invalid port", "external_lb.port is %d; a TCP port is between 1 and 65535.", ext.Port)
	}
	a, isIP := parseIP(ext.Address)
	if (isIP && a.IsLoopback()) || strings.EqualFold(strings.TrimSuffix(ext.Address, "."), localhostName) ||
		strings.HasSuffix(strings.ToLower(strings.TrimSuffix(ext.Address, ".")), ".localhost") {
		ps.Errorf(at.At("address"), "Loopback load balancer address",
			"external_lb.address %q is this host's loopback: outside clients would be sent to themselves. For a load "+
				"balancer on every node that the whole cluster reaches on localhost (Epiphany's design, Talos KubePrism), "+
				"set local_lb = { every_node = true, port = ... } instead; external_lb is then optional and names the "+
				"address outside clients use.", ext.Address)
	} else if isIP {
		if a.IsUnspecified() || a.IsMulticast() {
			ps.Errorf(at.At("address"), "Invalid load balancer address", "%s cannot be reached from other hosts; give the VIP or the load balancer's address.", a)
		}
		if c.family != DualStack && a.Is6() != (c.family == IPv6) {
			ps.Warnf(at.At("address"), "Address family differs from the cluster's",
				"external_lb.address %s is not of the cluster's family %q; the load balancer must translate between families.", a, c.family)
		}
	} else if !isDNSName(ext.Address, false) {
		ps.Errorf(at.At("address"), "Invalid load balancer address", "%q is neither an IP address nor a DNS name.", ext.Address)
	}
	ext.Address = canonicalHost(ext.Address)
	if ext.DomainName != "" {
		if _, ok := parseIP(ext.DomainName); !ok && !isDNSName(ext.DomainName, false) {
			ps.Errorf(at.At("domain_name"), "Invalid domain name", "%q is not a DNS name.", ext.DomainName)
		}
		ext.DomainName = canonicalHost(ext.DomainName)
	}
	if ext.MetalLB != nil {
		if ext.ControlPlaneEndpoint {
			ps.Errorf(at.At("control_plane_endpoint"), "MetalLB VIP as the control-plane endpoint",
				"a MetalLB VIP is a Service of the cluster itself: kubeadm init and join cannot reach it before the cluster "+
					"runs MetalLB. Leave control_plane_endpoint unset (kubeadm gets the first control-plane node's address), "+
					"or give a load balancer that exists before the cluster.")
		}
		if !isIP {
			ps.Errorf(at.At("address"), "MetalLB VIP is not an IP address",
				"external_lb.address %q must be the VIP MetalLB announces (an IP address of one of its pools); give a DNS name in domain_name.", ext.Address)
		}
		if p := ext.MetalLB.AddressPool; p != "" && !IsNodeName(p) {
			ps.Errorf(at.At("metallb").At("address_pool"), "Invalid address pool", "%q is not a Kubernetes object name.", p)
		}
	}
	known := map[string]bool{}
	for _, n := range c.nodes {
		known[n.Name] = true
	}
	for i, name := range ext.Nodes {
		if !known[name] {
			ps.Errorf(at.At("nodes").Index(i), "Unknown node", "external_lb.nodes names %q, which is not in control_plane_nodes or worker_nodes.", name)
		}
	}
	c.external = &ext
}

// warnIgnoredLocalLB warns when local_lb carries settings that no node
// uses because the node-local load balancer is off: set to false, or off
// by default because external_lb is set. The load balancer resources that
// read local_lb_listen and local_lb_type then have nothing to render.
func (c *cluster) warnIgnoredLocalLB(ps *problem.Problems, lb LocalLB) {
	if c.mode != ModeExternalLB && c.mode != ModeDirect {
		return
	}
	var set []string
	for attr, on := range problem.Sorted(map[string]bool{"healthcheck_port": lb.HealthcheckPort != 0, "port": lb.Port != 0, "type": lb.Type != ""}) {
		if on {
			set = append(set, "local_lb."+attr)
		}
	}
	if len(set) == 0 {
		return
	}
	why, fix := "local_lb.enabled is false", "remove "+strings.Join(set, ", ")+" (or set local_lb.enabled = true to keep them)"
	if lb.Enabled == nil {
		why = "local_lb.enabled is not set and external_lb is, which turns the node-local load balancer off (mode \"external_lb\")"
		fix = "set local_lb.enabled = true to run it beside the external load balancer (mode \"local_lb_with_unmanaged_lb\"), or remove " + strings.Join(set, ", ")
	}
	ps.Warnf(problem.Root("local_lb").At("enabled"), "Node-local load balancer settings ignored",
		"%s is set, but %s: no node runs a node-local load balancer, local_lb_listen and local_lb_type are null, and a "+
			"kha_haproxy_config or kha_nginx_config that reads them has nothing to listen on. To fix it, %s.",
		strings.Join(set, ", "), why, fix)
}

func checkSANList(ps *problem.Problems, at problem.Path, s SANs) {
	for i, v := range s.IPAddresses {
		if _, ok := parseIP(v); !ok {
			ps.Errorf(at.At("ip_addresses").Index(i), "Invalid IP SAN", "%q is not an IP address.", v)
		}
	}
	for i, v := range s.DNSNames {
		if !isDNSName(v, true) {
			ps.Errorf(at.At("dns_names").Index(i), "Invalid DNS SAN", "%q is not a DNS name.", v)
		}
	}
}

// binding is one listening socket a node would open.
type binding struct {
	addr  netip.Addr // invalid for a host name (hostname set)
	host  string
	port  int
	owner string
	path  problem.Path // the attribute to change to resolve a conflict
}

func (b binding) String() string {
	host := b.host
	if b.addr.IsValid() {
		host = b.addr.String()
	}
	return fmt.Sprintf("%s on %s", b.owner, HostPort(host, b.port))
}

// overlaps reports whether two sockets cannot both be bound: same port
// and either the same address or a wildcard that covers the other (":" on
// Linux also takes IPv4 unless bindv6only is set).
func (b binding) overlaps(o binding) bool {
	if b.port != o.port {
		return false
	}
	covers := func(w, x binding) bool {
		if !w.addr.IsValid() || !w.addr.IsUnspecified() {
			return false
		}
		return w.addr.Is6() || x.addr.Is4() || !x.addr.IsValid()
	}
	if covers(b, o) || covers(o, b) {
		return true
	}
	if b.addr.IsValid() && o.addr.IsValid() {
		return b.addr == o.addr
	}
	return b.host != "" && b.host == o.host
}

func (c *cluster) nodeBindings(n *node) []binding {
	var bs []binding
	if n.controlPlane {
		bs = append(bs, binding{addr: n.bind, port: c.port, owner: "kube-apiserver", path: n.bindPath})
	}
	if c.runsLocalLB(n) {
		lb := problem.Root("local_lb")
		bs = append(bs, binding{addr: netip.MustParseAddr(loopbackIPv4), port: c.localLB.Port, owner: "the node-local load balancer", path: lb.At("port")})
		if c.family != IPv4 {
			bs = append(bs, binding{addr: netip.MustParseAddr(loopbackIPv6), port: c.localLB.Port, owner: "the node-local load balancer", path: lb.At("port")})
		}
		if hp := c.localLB.HealthcheckPort; hp != 0 {
			bs = append(bs, binding{addr: netip.IPv6Unspecified(), port: hp, owner: "the node-local load balancer's health check", path: lb.At("healthcheck_port")})
		}
	}
	if c.external != nil && c.external.MetalLB == nil && (n.controlPlane && c.external.RunsOnControlPlane || slices.Contains(c.external.Nodes, n.Name)) {
		b := binding{port: c.external.Port, owner: "the external load balancer", path: problem.Root("external_lb").At("port")}
		if a, ok := parseIP(c.external.Address); ok {
			b.addr = a
		} else {
			b.host = c.external.Address
		}
		bs = append(bs, b)
	}
	return bs
}

// checkPortConflicts finds sockets that two services on one node would
// both bind (kubespray's documented VIP-port trap among them), and warns
// when the trap may be there but kha cannot tell.
func (c *cluster) checkPortConflicts(ps *problem.Problems) {
	if e := c.external; e != nil && e.MetalLB == nil && e.Nodes == nil && !e.RunsOnControlPlane && e.Port == c.port {
		for _, n := range c.controlPlanes {
			if isWildcardIP(n.bind) {
				ps.Warnf(problem.Root("external_lb").At("port"), "Possible port conflict on control-plane nodes",
					"external_lb.port is the apiserver port %d and kube-apiserver binds every address on %q: a load balancer "+
						"or VIP on a control-plane node could not bind %s (kubespray's VIP port trap). Set external_lb.nodes to "+
						"the nodes that run the load balancer or hold the VIP ([] when none of them does) so the plan can check, "+
						"or give the load balancer another port.", c.port, n.Name, HostPort(e.Address, e.Port))
				break
			}
		}
	}
	reported := map[string]bool{}
	for i := range c.nodes {
		n := &c.nodes[i]
		bs := c.nodeBindings(n)
		for i := range bs {
			for j := i + 1; j < len(bs); j++ {
				if !bs[i].overlaps(bs[j]) {
					continue
				}
				key := bs[i].String() + "|" + bs[j].String()
				if reported[key] {
					continue
				}
				reported[key] = true
				ps.Errorf(bs[j].path, "Port conflict",
					"on node %q, %s and %s would bind the same socket. Choose another %s, or bind kube-apiserver to the node address instead of every address.",
					n.Name, bs[i], bs[j], bs[j].path)
			}
		}
	}
}

// runsLocalLB says whether a node runs the node-local load balancer:
// nodes without an apiserver, and control-plane nodes whose apiserver does
// not listen on loopback. kubespray installs it on control-plane nodes for
// any bind address other than "::", including "0.0.0.0", where the
// apiserver already answers on 127.0.0.1; kha treats both wildcards alike.
func (c *cluster) runsLocalLB(n *node) bool {
	if !c.localLBInUse() {
		return false
	}
	return c.mode == ModeLocalLBEveryNode || !n.controlPlane || !isWildcardIP(n.bind)
}
