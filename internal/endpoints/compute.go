package endpoints

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// Compute validates the input and computes the access matrix. When the
// returned problems contain an error, the Result is not meaningful.
func Compute(in Input) (Result, problem.Problems) {
	c, problems := normalize(in)
	if problems.HasErrors() {
		return Result{}, problems
	}
	r := c.result()
	r.KubeadmClusterConfiguration = c.kubeadmConfiguration(r, in.Kubeadm)
	if c.external != nil && c.external.MetalLB != nil {
		r.MetalLBManifests = c.metalLBManifests()
	}
	problems = append(problems, c.checkCoverage(r)...)
	problems = append(problems, c.checkKubeProxy()...)
	problems = append(problems, c.checkPodEndpoint(r.PodEndpoint)...)
	problems = append(problems, c.checkShutdownTiming()...)
	problems = append(problems, c.checkIdleTimeout()...)
	problems = append(problems, c.drainingReferences(r, in)...)
	return r, problems
}

func (c *cluster) result() Result {
	m0 := c.controlPlanes[c.primary]
	r := Result{
		Mode:               c.mode,
		APIServerServiceIP: c.serviceIP.String(),
		// kubeadm init runs on the first control-plane node; without an
		// LB that every node uses, its own address is the endpoint. A
		// draining first node hands that role to the next one.
		KubeadmControlPlaneEndpoint: HostPort(m0.ip.String(), c.port),
		KubeconfigServer:            URL(m0.accessIP.String(), c.port),
	}
	direct := URL(m0.accessIP.String(), c.port)
	viaLocalLB := URL(localhostName, c.localLB.Port)
	switch c.mode {
	case ModeExternalLB:
		lb := URL(c.lbHost(), c.external.Port)
		r.LBDomainName = c.lbHost()
		r.Endpoints = Endpoints{Worker: lb, Global: lb, External: lb}
		// Unlike kubespray's, this endpoint brackets IPv6 literals.
		r.KubeadmControlPlaneEndpoint = HostPort(c.lbHost(), c.external.Port)
		r.KubeconfigServer = URL(c.external.Address, c.external.Port)
	case ModeLocalLBWithUnmanagedLB:
		r.LBDomainName = localhostName
		r.Endpoints = Endpoints{Worker: viaLocalLB, Global: viaLocalLB, External: URL(c.lbHost(), c.external.Port)}
		r.KubeconfigServer = URL(c.external.Address, c.external.Port)
	case ModeLocalLB:
		r.LBDomainName = localhostName
		r.Endpoints = Endpoints{Worker: viaLocalLB, Global: viaLocalLB, External: direct}
	case ModeLocalLBEveryNode:
		r.LBDomainName = localhostName
		r.Endpoints = Endpoints{Worker: viaLocalLB, Global: viaLocalLB, External: direct}
		r.KubeadmControlPlaneEndpoint = HostPort(localhostName, c.localLB.Port)
		if c.external != nil {
			r.Endpoints.External = URL(c.lbHost(), c.external.Port)
			r.KubeconfigServer = URL(c.external.Address, c.external.Port)
		}
	case ModeDirect:
		r.Endpoints = Endpoints{Worker: direct, Global: direct, External: direct}
	}
	if c.lbIsControlPlaneEndpoint() {
		r.KubeadmControlPlaneEndpoint = HostPort(c.lbHost(), c.external.Port)
	}
	r.NodeEndpoints = make([]NodeEndpoint, 0, len(c.nodes))
	for i := range c.controlPlanes {
		n := &c.controlPlanes[i]
		r.NodeEndpoints = append(r.NodeEndpoints, NodeEndpoint{Name: n.Name, URL: c.controlPlaneEndpoint(n)})
	}
	for _, n := range c.workers {
		r.NodeEndpoints = append(r.NodeEndpoints, NodeEndpoint{Name: n.Name, URL: r.Endpoints.Worker})
	}
	r.Endpoints.ControlPlane = r.NodeEndpoints[c.primary].URL

	// A draining node leaves every load balancer: a reload sends new
	// connections elsewhere, and the old processes finish the open ones.
	for _, n := range c.controlPlanes {
		if !n.Draining {
			r.LocalLBBackends = append(r.LocalLBBackends, Backend{Name: n.Name, Address: n.accessIP.String(), Port: c.port})
		}
	}
	r.LocalLBNodeIPs = map[string]string{}
	for i := range c.nodes {
		if n := &c.nodes[i]; c.runsLocalLB(n) {
			r.LocalLBNodes = append(r.LocalLBNodes, n.Name)
			r.LocalLBNodeIPs[n.Name] = n.ip.String()
		}
	}
	if len(r.LocalLBNodes) > 0 {
		r.LocalLBType = c.localLB.Type
		r.LocalLBListen = &Listen{Address: loopbackIPv4, Port: c.localLB.Port}
		if c.family != IPv4 {
			r.LocalLBListen.IPv6Address = loopbackIPv6
		}
		if c.external != nil {
			r.LocalLBFallback = &Backend{Name: "external_lb", Address: c.lbHost(), Port: c.external.Port}
		}
	}
	r.KubeadmDiscoveryAddress = c.discoveryAddress()
	r.KubeProxyServer = c.kubeProxyServer(r)
	r.CertSANs = c.certSANs(r)
	r.PodEndpoint = c.podEndpoint()
	r.HealthCheck = c.healthCheck
	r.HostsEntries = c.hostsEntries()
	return r
}

// lbIsControlPlaneEndpoint says whether the external load balancer is
// kubeadm's controlPlaneEndpoint: in ModeExternalLB, where every node
// uses it, and where external_lb.control_plane_endpoint asks.
func (c *cluster) lbIsControlPlaneEndpoint() bool {
	return c.mode == ModeExternalLB || c.external != nil && c.external.ControlPlaneEndpoint
}

// discoveryAddress is where `kubeadm join` finds the cluster: the external
// load balancer when it is the control-plane endpoint, else the first
// control-plane node, which runs before anything joins. kubespray derives
// it from the joining node's own endpoint, which sends a control-plane
// node with a specific bind address to its own apiserver, not running
// yet; kha does not.
func (c *cluster) discoveryAddress() string {
	if c.lbIsControlPlaneEndpoint() {
		return HostPort(c.lbHost(), c.external.Port)
	}
	return HostPort(c.controlPlanes[c.primary].accessIP.String(), c.port)
}

// kubeProxyServer is kube-proxy's apiserver. Its kubeconfig lives in one
// ConfigMap for every node, so it must work on all of them: with node-local
// load balancers, 127.0.0.1 on the load balancer's port, where every node
// answers (its load balancer, or a control-plane node's own apiserver when
// the ports are equal). kubespray writes the apiserver port there, which
// nothing listens on on workers when the load balancer's port differs.
// An IPv6-only cluster gets ::1: kube-proxy there has no IPv4 to speak.
func (c *cluster) kubeProxyServer(r Result) string {
	switch c.mode {
	case ModeExternalLB:
		return r.Endpoints.Global
	case ModeDirect:
		// kubeadm's own value: the first control-plane node's ip.
		return URL(c.controlPlanes[c.primary].ip.String(), c.port)
	}
	return URL(c.loopback(), c.localLB.Port)
}

// loopback is the node-local load balancer's address in the cluster's
// primary family.
func (c *cluster) loopback() string {
	if c.family == IPv6 {
		return loopbackIPv6
	}
	return loopbackIPv4
}

// checkKubeProxy warns when no kube-proxy server works on every node: the
// load balancer's port differs from the apiserver's and control-plane
// nodes do not run the load balancer.
func (c *cluster) checkKubeProxy() problem.Problems {
	var ps problem.Problems
	if !c.localLBInUse() || c.localLB.Port == c.port {
		return ps
	}
	for i := range c.controlPlanes {
		if n := &c.controlPlanes[i]; !c.runsLocalLB(n) {
			ps.Warnf(problem.Root("local_lb").At("port"), "No kube-proxy server for every node",
				"kube-proxy's kubeconfig (one ConfigMap) gets kube_proxy_server %s, the node-local load "+
					"balancer's port, but control-plane node %q runs no load balancer and its apiserver listens on %d. Set "+
					"local_lb.port = apiserver_port, or local_lb.every_node = true so every node runs the load balancer.",
				URL(c.loopback(), c.localLB.Port), n.Name, c.port)
			break
		}
	}
	return ps
}

// controlPlaneEndpoint is how a control-plane node reaches kube-apiserver.
// As kubeadm writes it since 1.33, its own apiserver by the address it
// advertises (kha's ip), in every mode. Before, kubespray's kube_apiserver_endpoint:
// the external LB when every node uses it, else its own apiserver.
// kubespray rewrites the bind address with a substring replace of "::" by
// "127.0.0.1", which turns "::1" into "127.0.0.11" and leaves "0.0.0.0"
// as the endpoint; kha maps both wildcards to 127.0.0.1 and keeps any
// other address as it is.
func (c *cluster) controlPlaneEndpoint(n *node) string {
	if c.kubeletLocalMode {
		return c.ownAPIServer(n, n.ip.String())
	}
	switch c.mode {
	case ModeExternalLB:
		return URL(c.lbHost(), c.external.Port)
	case ModeLocalLBEveryNode:
		return URL(localhostName, c.localLB.Port)
	}
	return c.ownAPIServer(n, loopbackIPv4)
}

// ownAPIServer is a control-plane node's own apiserver: at the one
// address it binds, or at host when it binds every address.
func (c *cluster) ownAPIServer(n *node, host string) string {
	if isWildcardIP(n.bind) {
		return URL(host, c.port)
	}
	return URL(n.bind.String(), c.port)
}

// certSANs follows kubespray's apiserver_sans order. It differs where
// kubespray is wrong: repeats are dropped after canonicalisation, the
// IPv6 addresses of dual-stack nodes are included (kubespray only adds the
// default-route IPv6 address that Ansible gathered), every control-plane
// node name is included on every node (kubespray adds only the node's own),
// and specific bind addresses are included, as is the host of
// pod_network_endpoint_override.
func (c *cluster) certSANs(r Result) SANs {
	b := newSANBuilder()
	b.add("kubernetes", "kubernetes.default", kubernetesServiceDomain, kubernetesServiceDomain+"."+c.dnsDomain)
	b.addAddr(c.serviceIP)
	b.add(localhostName, loopbackIPv4, loopbackIPv6)
	b.add(r.LBDomainName)
	if c.external != nil {
		b.add(c.external.DomainName, c.external.Address)
	}
	b.add(c.supplementary...)
	if c.podOverride != nil {
		b.add(c.podOverride.Host)
	}
	for _, n := range c.controlPlanes {
		b.addAddr(n.accessIP)
	}
	for _, n := range c.controlPlanes {
		b.addAddr(n.ip)
	}
	for _, n := range c.controlPlanes {
		b.addAddr(n.accessIP6, n.ip6)
	}
	for _, n := range c.controlPlanes {
		if !isWildcardIP(n.bind) {
			b.addAddr(n.bind)
		}
	}
	for _, n := range c.controlPlanes {
		b.add(n.Hostname)
	}
	for _, n := range c.controlPlanes {
		b.add(n.FQDN)
	}
	for _, n := range c.controlPlanes {
		b.add(n.Name)
	}
	return b.sans
}

// hostsEntries are the /etc/hosts lines that resolve the external load
// balancer's name, for nodes that use it and for tools on the nodes that
// talk to the cluster by that name. Current kubespray writes none; up to
// v2.28 it wrote this same line. Only a DNS name in front of an IP
// address needs one.
func (c *cluster) hostsEntries() []string {
	if c.external == nil || c.external.DomainName == "" {
		return nil
	}
	addr, ok := parseIP(c.external.Address)
	if _, nameIsIP := parseIP(c.external.DomainName); !ok || nameIsIP {
		return nil
	}
	return []string{addr.String() + " " + c.external.DomainName}
}

// endpointUse is one endpoint clients use, with what it is for.
type endpointUse struct {
	what string
	host string
}

func hostOfURL(u string) string {
	host, _, err := net.SplitHostPort(strings.TrimPrefix(u, "https://"))
	if err != nil {
		return u
	}
	return host
}

func (c *cluster) endpointUses(r Result) []endpointUse {
	var uses []endpointUse
	for _, ne := range r.NodeEndpoints {
		uses = append(uses, endpointUse{"node_endpoints[\"" + ne.Name + "\"] " + ne.URL, hostOfURL(ne.URL)})
	}
	uses = append(uses,
		endpointUse{"endpoints.global " + r.Endpoints.Global, hostOfURL(r.Endpoints.Global)},
		endpointUse{"endpoints.external " + r.Endpoints.External, hostOfURL(r.Endpoints.External)},
		endpointUse{"kubeconfig_server " + r.KubeconfigServer, hostOfURL(r.KubeconfigServer)},
		endpointUse{"kubeadm_control_plane_endpoint " + r.KubeadmControlPlaneEndpoint, hostOfURL("https://" + r.KubeadmControlPlaneEndpoint)},
	)
	for _, b := range r.LocalLBBackends {
		uses = append(uses, endpointUse{"apiserver_backends " + b.Name + " " + HostPort(b.Address, b.Port), b.Address})
	}
	if fb := r.LocalLBFallback; fb != nil {
		uses = append(uses, endpointUse{"local_lb_fallback " + HostPort(fb.Address, fb.Port), fb.Address})
	}
	uses = append(uses,
		endpointUse{"kubeadm_discovery_address " + r.KubeadmDiscoveryAddress, hostOfURL("https://" + r.KubeadmDiscoveryAddress)},
		endpointUse{"kube_proxy_server " + r.KubeProxyServer, hostOfURL(r.KubeProxyServer)},
		endpointUse{"pod_network_endpoint " + r.PodEndpoint.URL, r.PodEndpoint.Host})
	for _, s := range c.supplementary {
		uses = append(uses, endpointUse{"supplementary address " + s, s})
	}
	return uses
}

// checkCoverage proves that every endpoint verifies against the apiserver
// certificate: the computed SANs always (a failure is a defect of this
// package), and the SANs of an existing certificate when given, which
// turns the "x509: certificate is valid for …, not …" failure of a new LB
// name into a plan-time error. That error lists every endpoint that would
// fail and the whole SAN set the certificate must have, so one re-issue is
// enough.
func (c *cluster) checkCoverage(r Result) problem.Problems {
	var ps problem.Problems
	computed := newSANSet(r.CertSANs)
	var existing *sanSet
	if c.existingSANs != nil {
		s := newSANSet(*c.existingSANs)
		existing = &s
	}
	// A host the cluster's own ranges explain (another service range or
	// DNS domain) is one error of its own, not a certificate to re-issue.
	seenHost := map[string]bool{}
	if existing != nil {
		var explained []string
		ps, explained = c.checkClusterRanges(r, *existing)
		for _, h := range explained {
			seenHost[h] = true
		}
	}
	var failing []string
	for _, u := range c.endpointUses(r) {
		if !computed.covers(u.host) {
			ps.Errorf(problem.Root("apiserver_cert_sans"), "Endpoint not covered by the computed SANs",
				"%s would not verify against apiserver_cert_sans. This is always a bug in the provider; please report it with your configuration.", u.what)
		}
		if existing != nil && !existing.covers(u.host) && !seenHost[u.host] {
			seenHost[u.host] = true
			kind := "dns_names"
			if _, ok := parseIP(u.host); ok {
				kind = "ip_addresses"
			}
			failing = append(failing, fmt.Sprintf("%s: host %s is not in existing_cert_sans.%s, so clients would fail with \"x509: certificate is valid for ..., not %s\".",
				u.what, u.host, kind, u.host))
		}
	}
	if len(failing) > 0 {
		ps.Errorf(problem.Root("existing_cert_sans"), "Endpoint would fail TLS verification",
			"%s\nReissue the apiserver certificate with all of apiserver_cert_sans (kubeadm: apiServer.certSANs); the certificate must have %s. Then let existing_cert_sans show it (kha_apiserver_certificate reads the certificate the cluster serves).",
			strings.Join(failing, "\n"), requiredSANs(r.CertSANs, *existing))
	}
	return ps
}

// kubeadm's defaults, which a cluster kubeadm built without kubespray has.
const (
	kubeadmServiceCIDR = "10.96.0.0/12"
	kubeadmServiceIP   = "10.96.0.1"
)

// checkClusterRanges compares the cluster's service range and DNS domain
// with those the live certificate (existing) shows: kubeadm puts the
// kubernetes Service's address (the service range's first) and
// kubernetes.default.svc.<dns domain> in every apiserver certificate. One
// that lacks kha's while it has an address no node, load balancer or
// loopback has, or a kubernetes.default.svc name in another domain, was
// made for another range or domain: kha's kubeadm configuration and SANs
// would contradict the cluster. It returns the hosts it explains.
func (c *cluster) checkClusterRanges(r Result, existing sanSet) (ps problem.Problems, explained []string) {
	service := c.serviceIP
	if service.IsValid() && !existing.ips[service] {
		computed := newSANSet(r.CertSANs)
		var others []string
		for a := range existing.ips {
			if !computed.ips[a] && a.Is4() == service.Is4() && firstOfARange(a) {
				others = append(others, a.String())
			}
		}
		if len(others) > 0 {
			slices.Sort(others)
			attribute, defaults := "service_cidr", fmt.Sprintf("kha's default is kubespray's %s; kubeadm's is %s (Service address %s)",
				DefaultServiceCIDR, kubeadmServiceCIDR, kubeadmServiceIP)
			if service.Is6() {
				attribute, defaults = "service_cidr_ipv6", "kha's default is kubespray's "+DefaultServiceCIDRIPv6
			}
			fix := fmt.Sprintf("set %s to the cluster's service range (kubeadm's networking.serviceSubnet, in the kubeadm-config ConfigMap)", attribute)
			if slices.Contains(others, kubeadmServiceIP) {
				fix = fmt.Sprintf("set service_cidr = %q, kubeadm's default, or the cluster's range if it is another", kubeadmServiceCIDR)
			}
			ps.Errorf(problem.Root(attribute), "Service range contradicts the cluster",
				"existing_cert_sans lacks %s, the kubernetes Service's address in %s, and has %s, which no node, load balancer "+
					"or loopback has: the cluster was made with another service range, and kubeadm_cluster_configuration's "+
					"serviceSubnet and apiserver_cert_sans would contradict it. %s. To fix, %s.",
				service, attribute, strings.Join(others, ", "), defaults, fix)
			explained = append(explained, service.String())
		}
	}
	const svcPrefix = "kubernetes.default.svc."
	if want := svcPrefix + c.dnsDomain; !existing.dns[want] {
		var domains []string
		for name := range existing.dns {
			if d, ok := strings.CutPrefix(name, svcPrefix); ok && d != "" {
				domains = append(domains, d)
			}
		}
		if len(domains) > 0 {
			slices.Sort(domains)
			ps.Errorf(problem.Root("dns_domain"), "DNS domain contradicts the cluster",
				"existing_cert_sans lacks %s and has %s%s: the cluster's DNS domain is %q (kubeadm's networking.dnsDomain), "+
					"not %q, and kubeadm_cluster_configuration and apiserver_cert_sans would contradict it. To fix, set "+
					"dns_domain = %q (the default, %q, is kubeadm's and kubespray's).",
				want, svcPrefix, domains[0], domains[0], c.dnsDomain, domains[0], DefaultDNSDomain)
			explained = append(explained, want)
		}
	}
	return ps, explained
}

// firstOfARange says whether a could be a Service address: the first
// address of a range (kubeadm's 10.96.0.1, kubespray's 10.233.0.1), not a
// certificate's other addresses (127.0.0.2, 192.0.2.13).
func firstOfARange(a netip.Addr) bool {
	b := a.AsSlice()
	return b[len(b)-1] == 1 && (a.Is4() || b[len(b)-2] == 0)
}

// requiredSANs lists the SANs a certificate must have, "DNS: a, b; IP: x,
// y", each one that existing does not cover marked "(missing)".
func requiredSANs(want SANs, existing sanSet) string {
	list := func(values []string) string {
		marked := make([]string, len(values))
		for i, v := range values {
			marked[i] = v
			if !existing.covers(v) {
				marked[i] += " (missing)"
			}
		}
		return strings.Join(marked, ", ")
	}
	return "DNS: " + list(want.DNSNames) + "; IP: " + list(want.IPAddresses)
}
