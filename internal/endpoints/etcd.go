package endpoints

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// EtcdMode is how etcd clients (kube-apiserver, CNIs, etcdctl) reach the
// etcd members.
type EtcdMode string

const (
	// EtcdDirect: every client is given every member and balances itself
	// (kubespray's default; the older docs' etcd_multiaccess).
	EtcdDirect EtcdMode = "direct"
	// EtcdLocalProxy: a TCP proxy on each client node's loopback forwards
	// to every member (the modern form of the older etcd-proxy mode).
	EtcdLocalProxy EtcdMode = "local_proxy"
	// EtcdLB: a VIP or FQDN in front of the members.
	EtcdLB EtcdMode = "lb"
)

// EtcdDeployment is who runs etcd (kubespray's etcd_deployment_type).
type EtcdDeployment string

const (
	// EtcdOnHosts: etcd as a host service with certificates issued for the
	// members (kubespray's host and docker deployments).
	EtcdOnHosts EtcdDeployment = "host"
	// EtcdByKubeadm: kubeadm's stacked etcd on the control-plane nodes,
	// with certificates kubeadm issues (kubespray's kubeadm deployment).
	EtcdByKubeadm EtcdDeployment = "kubeadm"
)

// Defaults of etcd addressing, as kubespray has them.
const (
	DefaultEtcdClientPort  = 2379
	DefaultEtcdPeerPort    = 2380
	DefaultEtcdMetricsPort = 2381
)

// DefaultEtcdCertAltNames are kubespray's etcd_cert_alt_names for a DNS
// domain.
func DefaultEtcdCertAltNames(dnsDomain string) []string {
	return []string{"etcd.kube-system.svc." + dnsDomain, "etcd.kube-system.svc", "etcd.kube-system", "etcd"}
}

// EtcdMember is one etcd cluster member, with kubespray's per-host
// variables.
type EtcdMember struct {
	// Name is the host's inventory name: what the certificate names.
	Name string
	// MemberName is etcd's member name (ETCD_NAME); empty means
	// kubespray's etcd<N>, N the member's 1-based position.
	MemberName string
	// IP and AccessIP are the host's addresses of the primary family
	// (kubespray's ip and access_ip), IP6 and AccessIP6 its IPv6 ones.
	IP, AccessIP, IP6, AccessIP6 string
	// Address is what etcd binds (kubespray's etcd_address, default the
	// primary ip); AccessAddress what clients of this member dial
	// (etcd_access_address, default the primary access ip), an IP or a
	// DNS name.
	Address, AccessAddress string
	// ClientPort and PeerPort 0 mean 2379 and 2380.
	ClientPort, PeerPort int
}

// EtcdLBSpec is a load balancer in front of etcd.
type EtcdLBSpec struct {
	Address    string // VIP or host name
	DomainName string // name clients use; empty means Address
	Port       int    // 0 means the client port
}

// EtcdInput is everything etcd access depends on.
type EtcdInput struct {
	Members []EtcdMember
	Mode    EtcdMode // empty means EtcdDirect
	// IPFamily selects the members' primary addresses; empty means IPv4.
	IPFamily   IPFamily
	Deployment EtcdDeployment // empty means EtcdOnHosts
	// LocalProxyPort 0 means 2379 on 127.0.0.1.
	LocalProxyPort int
	LB             *EtcdLBSpec
	// MetricsPort, when not 0, is where members serve metrics over HTTP
	// (kubespray's etcd_metrics_port).
	MetricsPort int
	DNSDomain   string // empty means DefaultDNSDomain
	// CertAltNames and CertAltIPs are added to the defaults.
	CertAltNames, CertAltIPs []string
	ExistingCertSANs         *SANs
}

// EtcdResult is the computed etcd access.
type EtcdResult struct {
	Mode EtcdMode
	// AccessAddresses are every member's client URL on its access ip
	// (kubespray's etcd_access_addresses, as a list).
	AccessAddresses []string
	// MetricsAddresses are the same on the metrics port (kubespray's
	// etcd_metrics_addresses).
	MetricsAddresses []string
	// MemberNames maps each host name to its etcd member name (ETCD_NAME).
	MemberNames map[string]string
	// Per member, by host name: the client and peer URLs it advertises
	// (on its access address), and the URLs it listens on.
	ClientURLs, PeerURLs             []NodeEndpoint
	ListenClientURLs, ListenPeerURLs []NodeEndpoint
	ListenMetricsURLs                []NodeEndpoint // empty without a metrics port
	InitialCluster                   string
	Servers                          []string // kube-apiserver's --etcd-servers, in order
	SingleEndpoint                   string   // for clients that take only one endpoint
	ProxyListen                      *Listen  // the local proxy (mode local_proxy only)
	ProxyBackends                    []Backend
	CertSANs                         SANs
	KubeadmCertSANs                  []string // etcd.local.serverCertSANs and peerCertSANs (deployment kubeadm)
	Deployment                       EtcdDeployment
}

// ComputeEtcd validates the etcd input and computes the access values with
// kubespray's formulas (roles etcd and kubespray_defaults).
func ComputeEtcd(in EtcdInput) (EtcdResult, problem.Problems) {
	var ps problem.Problems
	mode := orDefault(in.Mode, EtcdDirect)
	switch mode {
	case EtcdDirect, EtcdLocalProxy, EtcdLB:
	default:
		ps.SchemaErrorf(problem.Root("mode"), "Invalid etcd access mode", "mode is %q; use \"direct\", \"local_proxy\" or \"lb\".", mode)
	}
	family := orDefault(in.IPFamily, IPv4)
	switch family {
	case IPv4, IPv6, DualStack:
	default:
		ps.SchemaErrorf(problem.Root("ip_family"), "Invalid IP family", "ip_family is %q; use \"ipv4\", \"ipv6\" or \"dual\".", family)
	}
	deployment := orDefault(in.Deployment, EtcdOnHosts)
	if deployment != EtcdOnHosts && deployment != EtcdByKubeadm {
		ps.SchemaErrorf(problem.Root("deployment"), "Invalid deployment", "deployment is %q; use \"host\" or \"kubeadm\".", deployment)
	}
	dnsDomain := canonicalHost(orDefault(in.DNSDomain, DefaultDNSDomain))
	if !isDNSName(dnsDomain, false) {
		ps.Errorf(problem.Root("dns_domain"), "Invalid DNS domain", "dns_domain %q is not a DNS name; the default is %q.", in.DNSDomain, DefaultDNSDomain)
	}
	members := parseEtcdMembers(&ps, family, in.Members)
	proxyPort := orDefault(in.LocalProxyPort, DefaultEtcdClientPort)
	if !problem.ValidPort(proxyPort) {
		ps.SchemaErrorf(problem.Root("local_proxy_port"), "Invalid port", "local_proxy_port is %d; a TCP port is between 1 and 65535.", proxyPort)
	}
	if in.MetricsPort != 0 && !problem.ValidPort(in.MetricsPort) {
		ps.SchemaErrorf(problem.Root("metrics_port"), "Invalid port", "metrics_port is %d; a TCP port is between 1 and 65535.", in.MetricsPort)
	}
	lb := parseEtcdLB(&ps, mode, in.LB)
	for i, n := range in.CertAltNames {
		if !isDNSName(n, true) {
			ps.Errorf(problem.Root("cert_alt_names").Index(i), "Invalid DNS name", "%q is not a DNS name.", n)
		}
	}
	for i, a := range in.CertAltIPs {
		if _, ok := parseIP(a); !ok {
			ps.Errorf(problem.Root("cert_alt_ips").Index(i), "Invalid IP address", "%q is not an IP address.", a)
		}
	}
	if in.ExistingCertSANs != nil {
		checkSANList(&ps, problem.Root("existing_cert_sans"), *in.ExistingCertSANs)
	}
	if ps.HasErrors() {
		return EtcdResult{}, ps
	}

	r := EtcdResult{Mode: mode, Deployment: deployment, MemberNames: map[string]string{}}
	metricsPort := orDefault(in.MetricsPort, DefaultEtcdMetricsPort)
	var cluster []string
	for _, m := range members {
		access := URL(m.mainAccess.String(), m.clientPort)
		r.AccessAddresses = append(r.AccessAddresses, access)
		r.MetricsAddresses = append(r.MetricsAddresses, URL(m.mainAccess.String(), metricsPort))
		r.MemberNames[m.Name] = m.memberName
		r.ClientURLs = append(r.ClientURLs, NodeEndpoint{Name: m.Name, URL: URL(m.accessAddress, m.clientPort)})
		r.PeerURLs = append(r.PeerURLs, NodeEndpoint{Name: m.Name, URL: URL(m.accessAddress, m.peerPort)})
		// kubespray's etcd_peer_addresses: the access ip, not etcd_access_address.
		cluster = append(cluster, m.memberName+"="+URL(m.mainAccess.String(), m.peerPort))
		// kubespray listens on 127.0.0.1 as well, IPv6-only clusters included.
		r.ListenClientURLs = append(r.ListenClientURLs, NodeEndpoint{Name: m.Name,
			URL: URL(m.address.String(), m.clientPort) + "," + URL(loopbackIPv4, m.clientPort)})
		r.ListenPeerURLs = append(r.ListenPeerURLs, NodeEndpoint{Name: m.Name, URL: URL(m.address.String(), m.peerPort)})
		if in.MetricsPort != 0 {
			r.ListenMetricsURLs = append(r.ListenMetricsURLs, NodeEndpoint{Name: m.Name,
				URL: "http://" + HostPort(m.address.String(), in.MetricsPort) + ",http://" + HostPort(loopbackIPv4, in.MetricsPort)})
		}
		r.ProxyBackends = append(r.ProxyBackends, Backend{Name: m.Name, Address: m.mainAccess.String(), Port: m.clientPort})
	}
	r.InitialCluster = strings.Join(cluster, ",")
	switch mode {
	case EtcdDirect:
		r.Servers = r.AccessAddresses
	case EtcdLocalProxy:
		r.ProxyListen = &Listen{Address: loopbackIPv4, Port: proxyPort}
		r.Servers = []string{URL(loopbackIPv4, proxyPort)}
	case EtcdLB:
		r.Servers = []string{URL(lb.host(), lb.Port)}
	}
	if mode != EtcdLocalProxy {
		r.ProxyBackends = nil
	}
	r.SingleEndpoint = r.Servers[0]
	r.CertSANs = etcdCertSANs(members, lb, dnsDomain, in)
	if deployment == EtcdByKubeadm {
		// kubeadm adds the node name, localhost, 127.0.0.1, ::1 and the
		// advertise address itself.
		r.KubeadmCertSANs = append(append(DefaultEtcdCertAltNames(dnsDomain), in.CertAltNames...), in.CertAltIPs...)
	}
	ps = append(ps, checkEtcdCoverage(r, lb, in.ExistingCertSANs)...)
	return r, ps
}

type etcdMember struct {
	EtcdMember
	memberName string
	// mainIP and mainAccess are kubespray's main_ip and main_access_ip;
	// mainIPs and mainAccessIPs every family's (main_ips, main_access_ips).
	mainIP, mainAccess     netip.Addr
	mainIPs, mainAccessIPs []netip.Addr
	address                netip.Addr // etcd_address
	accessAddress          string     // etcd_access_address: canonical IP text or a DNS name
	accessAddressIsName    bool
	clientPort, peerPort   int
}

func parseEtcdMembers(ps *problem.Problems, family IPFamily, in []EtcdMember) []etcdMember {
	if len(in) == 0 {
		ps.SchemaErrorf(problem.Root("members"), "No etcd members", "members must list at least one etcd member.")
	}
	seen := make(duplicateIndex, 4*len(in))
	members := make([]etcdMember, 0, len(in))
	for i, m := range in {
		at := problem.Root("members").Index(i)
		em := etcdMember{EtcdMember: m, clientPort: orDefault(m.ClientPort, DefaultEtcdClientPort), peerPort: orDefault(m.PeerPort, DefaultEtcdPeerPort),
			memberName: orDefault(m.MemberName, fmt.Sprintf("etcd%d", i+1))}
		if !IsNodeName(m.Name) {
			ps.Errorf(at.At("name"), "Invalid host name", "%q is not a valid host name: use lowercase letters, digits, '-' and '.'.", m.Name)
		} else {
			seen.claim(ps, "host name", m.Name, at.At("name"))
		}
		if !IsNodeName(em.memberName) {
			ps.Errorf(at.At("member_name"), "Invalid member name", "%q is not a valid etcd member name: use lowercase letters, digits, '-' and '.'.", em.memberName)
		} else {
			seen.claim(ps, "member name", em.memberName, at.At("member_name"))
		}
		addr := func(attr, value string, want6, required bool) netip.Addr {
			if value == "" {
				if required {
					ps.Errorf(at.At(attr), "Missing address", "%s must be set (ip_family is %q).", attr, family)
				}
				return netip.Addr{}
			}
			a, ok := parseIP(value)
			switch {
			case !ok:
				ps.Errorf(at.At(attr), "Invalid IP address", "%s %q is not an IP address.", attr, value)
			case notAMemberAddress(a) != "":
				ps.Errorf(at.At(attr), "Invalid IP address", "%s %s is %s, so it is not a member address.", attr, a, notAMemberAddress(a))
			case a.Is6() != want6:
				ps.Errorf(at.At(attr), "Address family mismatch", "%s %s is not an %s address.", attr, a, map[bool]string{false: "IPv4", true: "IPv6"}[want6])
			default:
				return a
			}
			return netip.Addr{}
		}
		// kubespray's network_facts: main_ip is the IPv4 address unless the
		// cluster is IPv6-only, where ip6 (or ip) is.
		var v4, v4Access, v6, v6Access netip.Addr
		switch family {
		case IPv6:
			primary, primaryAccess, attr := m.IP6, m.AccessIP6, "ip6"
			if primary == "" {
				primary, primaryAccess, attr = m.IP, m.AccessIP, "ip"
			}
			v6 = addr(attr, primary, true, true)
			v6Access = addr("access_"+attr, primaryAccess, true, false)
		case DualStack:
			v4, v4Access = addr("ip", m.IP, false, true), addr("access_ip", m.AccessIP, false, false)
			v6, v6Access = addr("ip6", m.IP6, true, false), addr("access_ip6", m.AccessIP6, true, false)
		default:
			v4, v4Access = addr("ip", m.IP, false, true), addr("access_ip", m.AccessIP, false, false)
		}
		if !v4Access.IsValid() {
			v4Access = v4
		}
		if !v6Access.IsValid() {
			v6Access = v6
		}
		em.mainIP, em.mainAccess = v4, v4Access
		if family == IPv6 {
			em.mainIP, em.mainAccess = v6, v6Access
		}
		for _, a := range []netip.Addr{v4Access, v6Access} {
			if a.IsValid() {
				em.mainAccessIPs = append(em.mainAccessIPs, a)
			}
		}
		for _, a := range []netip.Addr{v4, v6} {
			if a.IsValid() {
				em.mainIPs = append(em.mainIPs, a)
			}
		}
		em.address = em.mainIP
		if m.Address != "" {
			em.address = addr("etcd_address", m.Address, em.mainIP.Is6(), false)
		}
		em.accessAddress = em.mainAccess.String()
		if v := m.AccessAddress; v != "" {
			a, isIP := parseIP(v)
			switch {
			case isIP && notAMemberAddress(a) != "":
				ps.Errorf(at.At("etcd_access_address"), "Invalid access address", "etcd_access_address %s is %s, so it is not a member address.", a, notAMemberAddress(a))
			case !isIP && !isDNSName(v, false):
				ps.Errorf(at.At("etcd_access_address"), "Invalid access address",
					"etcd_access_address %q is neither an IP address nor a DNS name (kubespray's etcd_access_address may be either).", v)
			}
			em.accessAddress, em.accessAddressIsName = canonicalHost(v), !isIP
		}
		if em.mainAccess.IsValid() {
			seen.claim(ps, "client URL", HostPort(em.mainAccess.String(), em.clientPort), at.At("access_ip"))
		}
		for attr, p := range problem.Sorted(map[string]int{"client_port": em.clientPort, "peer_port": em.peerPort}) {
			if !problem.ValidPort(p) {
				ps.SchemaErrorf(at.At(attr), "Invalid port", "%s is %d; a TCP port is between 1 and 65535.", attr, p)
			}
		}
		if em.clientPort == em.peerPort {
			ps.Errorf(at.At("peer_port"), "Port conflict", "client_port and peer_port are both %d; etcd needs two ports.", em.clientPort)
		}
		members = append(members, em)
	}
	return members
}

type etcdLB struct{ EtcdLBSpec }

func (l etcdLB) host() string { return orDefault(l.DomainName, l.Address) }

func parseEtcdLB(ps *problem.Problems, mode EtcdMode, spec *EtcdLBSpec) *etcdLB {
	at := problem.Root("lb")
	if mode != EtcdLB {
		if spec != nil {
			ps.Errorf(at, "Load balancer without mode lb", "lb is set but mode is %q; set mode = \"lb\" or remove lb.", mode)
		}
		return nil
	}
	if spec == nil {
		ps.Errorf(at, "Missing load balancer", "mode \"lb\" needs lb = { address = ... }: the VIP or FQDN in front of etcd.")
		return nil
	}
	lb := &etcdLB{*spec}
	lb.Port = orDefault(lb.Port, DefaultEtcdClientPort)
	if !problem.ValidPort(lb.Port) {
		ps.SchemaErrorf(at.At("port"), "Invalid port", "lb.port is %d; a TCP port is between 1 and 65535.", lb.Port)
	}
	for attr, v := range problem.Sorted(map[string]string{"address": lb.Address, "domain_name": lb.DomainName}) {
		if v == "" && attr == "domain_name" {
			continue
		}
		if _, ok := parseIP(v); !ok && !isDNSName(v, false) {
			ps.Errorf(at.At(attr), "Invalid load balancer address", "lb.%s %q is neither an IP address nor a DNS name.", attr, v)
		}
	}
	lb.Address, lb.DomainName = canonicalHost(lb.Address), canonicalHost(lb.DomainName)
	return lb
}

// etcdCertSANs follows the [alt_names] order of kubespray's etcd
// openssl.conf: localhost; per member its etcd_access_address when that is
// a name, then its host name; the alt names; per member its access ips and
// ips of every family; the user's IPs; loopback. Unlike kubespray, which
// lists an IP twice when ip equals access_ip, repeats are dropped, and a
// load balancer's name and VIP, and access or bind addresses given as IPs
// other than the node's, are included: clients dial them.
func etcdCertSANs(members []etcdMember, lb *etcdLB, dnsDomain string, in EtcdInput) SANs {
	b := newSANBuilder()
	b.add(localhostName)
	for _, m := range members {
		if m.accessAddressIsName {
			b.add(m.accessAddress)
		}
		b.add(m.Name)
	}
	b.add(DefaultEtcdCertAltNames(dnsDomain)...)
	b.add(in.CertAltNames...)
	if lb != nil {
		b.add(lb.DomainName, lb.Address)
	}
	for _, m := range members {
		b.addAddr(m.mainAccessIPs...)
		b.addAddr(m.mainIPs...)
	}
	for _, m := range members {
		if !m.accessAddressIsName {
			b.add(m.accessAddress)
		}
		b.addAddr(m.address)
	}
	b.add(in.CertAltIPs...)
	b.add(loopbackIPv4, loopbackIPv6)
	return b.sans
}

func checkEtcdCoverage(r EtcdResult, lb *etcdLB, existing *SANs) problem.Problems {
	var ps problem.Problems
	hosts := []string{}
	for _, u := range append(r.AccessAddresses, r.Servers...) {
		hosts = append(hosts, hostOfURL(u))
	}
	for _, u := range r.ClientURLs {
		hosts = append(hosts, hostOfURL(u.URL))
	}
	if lb != nil {
		hosts = append(hosts, lb.Address)
	}
	computed := newSANSet(r.CertSANs)
	var have *sanSet
	if existing != nil {
		s := newSANSet(*existing)
		have = &s
	}
	reported := map[string]bool{}
	for _, h := range hosts {
		if !computed.covers(h) {
			ps.Errorf(problem.Root("cert_sans"), "Endpoint not covered by the computed SANs",
				"%s would not verify against cert_sans. This is always a bug in the provider; please report it with your configuration.", h)
		}
		if have != nil && !have.covers(h) && !reported[h] {
			reported[h] = true
			ps.Errorf(problem.Root("existing_cert_sans"), "etcd endpoint would fail TLS verification",
				"host %s is not among existing_cert_sans, so etcd clients would fail with \"x509: certificate is valid for ..., not %s\". Reissue the etcd server certificates with cert_sans (kubespray: etcd_cert_alt_names / etcd_cert_alt_ips).", h, h)
		}
	}
	return ps
}
