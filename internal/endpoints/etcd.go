package endpoints

import (
	"github.com/kha/terraform-provider-kha/internal/problem"
	"net/netip"
	"strings"
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

// Defaults of etcd addressing, as kubespray has them.
const (
	DefaultEtcdClientPort = 2379
	DefaultEtcdPeerPort   = 2380
)

// DefaultEtcdCertAltNames are kubespray's etcd_cert_alt_names for a DNS
// domain.
func DefaultEtcdCertAltNames(dnsDomain string) []string {
	return []string{"etcd.kube-system.svc." + dnsDomain, "etcd.kube-system.svc", "etcd.kube-system", "etcd"}
}

// EtcdMember is one etcd cluster member.
type EtcdMember struct {
	Name string
	// IP is the address etcd binds; AccessIP what clients dial (empty: IP).
	IP, AccessIP string
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
	// LocalProxyPort 0 means 2379 on 127.0.0.1.
	LocalProxyPort int
	LB             *EtcdLBSpec
	DNSDomain      string // empty means DefaultDNSDomain
	// CertAltNames and CertAltIPs are added to the defaults.
	CertAltNames, CertAltIPs []string
	ExistingCertSANs         *SANs
}

// EtcdResult is the computed etcd access.
type EtcdResult struct {
	Mode EtcdMode
	// AccessAddresses are every member's client URL (kubespray's
	// etcd_access_addresses, as a list).
	AccessAddresses []string
	// ClientURLs and PeerURLs per member, in member order.
	ClientURLs, PeerURLs []NodeEndpoint
	// InitialCluster is etcd's --initial-cluster value.
	InitialCluster string
	// ListenClientURLs per member: its own address and loopback.
	ListenClientURLs []NodeEndpoint
	// Servers is what kube-apiserver's --etcd-servers gets, in order.
	Servers []string
	// SingleEndpoint is for clients that take only one endpoint.
	SingleEndpoint string
	// ProxyListen and ProxyBackends describe the local proxy (mode
	// local_proxy only).
	ProxyListen   *Listen
	ProxyBackends []Backend
	CertSANs      SANs
}

// ComputeEtcd validates the etcd input and computes the access values.
func ComputeEtcd(in EtcdInput) (EtcdResult, problem.Problems) {
	var ps problem.Problems
	mode := orDefault(in.Mode, EtcdDirect)
	switch mode {
	case EtcdDirect, EtcdLocalProxy, EtcdLB:
	default:
		ps.SchemaErrorf(problem.Root("mode"), "Invalid etcd access mode", "mode is %q; use \"direct\", \"local_proxy\" or \"lb\".", mode)
	}
	dnsDomain := canonicalHost(orDefault(in.DNSDomain, DefaultDNSDomain))
	if !isDNSName(dnsDomain, false) {
		ps.Errorf(problem.Root("dns_domain"), "Invalid DNS domain", "dns_domain %q is not a DNS name; the default is %q.", in.DNSDomain, DefaultDNSDomain)
	}
	members := parseEtcdMembers(&ps, in.Members)
	proxyPort := orDefault(in.LocalProxyPort, DefaultEtcdClientPort)
	if !problem.ValidPort(proxyPort) {
		ps.SchemaErrorf(problem.Root("local_proxy_port"), "Invalid port", "local_proxy_port is %d; a TCP port is between 1 and 65535.", proxyPort)
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

	r := EtcdResult{Mode: mode}
	var cluster []string
	for _, m := range members {
		client := URL(m.access.String(), m.clientPort)
		r.AccessAddresses = append(r.AccessAddresses, client)
		r.ClientURLs = append(r.ClientURLs, NodeEndpoint{Name: m.Name, URL: client})
		peer := URL(m.access.String(), m.peerPort)
		r.PeerURLs = append(r.PeerURLs, NodeEndpoint{Name: m.Name, URL: peer})
		cluster = append(cluster, m.Name+"="+peer)
		// kubespray always adds 127.0.0.1, even in IPv6-only clusters;
		// an IPv6 member listens on ::1 instead.
		loopback := loopbackIPv4
		if m.ip.Is6() {
			loopback = loopbackIPv6
		}
		r.ListenClientURLs = append(r.ListenClientURLs, NodeEndpoint{Name: m.Name,
			URL: URL(m.ip.String(), m.clientPort) + "," + URL(loopback, m.clientPort)})
		r.ProxyBackends = append(r.ProxyBackends, Backend{Name: m.Name, Address: m.access.String(), Port: m.clientPort})
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
	ps = append(ps, checkEtcdCoverage(r, lb, in.ExistingCertSANs)...)
	return r, ps
}

type etcdMember struct {
	EtcdMember
	ip, access           netip.Addr
	clientPort, peerPort int
}

func parseEtcdMembers(ps *problem.Problems, in []EtcdMember) []etcdMember {
	if len(in) == 0 {
		ps.SchemaErrorf(problem.Root("members"), "No etcd members", "members must list at least one etcd member.")
	}
	seen := make(duplicateIndex, 3*len(in))
	members := make([]etcdMember, 0, len(in))
	for i, m := range in {
		at := problem.Root("members").Index(i)
		em := etcdMember{EtcdMember: m, clientPort: orDefault(m.ClientPort, DefaultEtcdClientPort), peerPort: orDefault(m.PeerPort, DefaultEtcdPeerPort)}
		if !isNodeName(m.Name) {
			ps.Errorf(at.At("name"), "Invalid member name", "%q is not a valid member name: use lowercase letters, digits, '-' and '.'.", m.Name)
		} else {
			seen.claim(ps, "member name", m.Name, at.At("name"))
		}
		var ok bool
		if em.ip, ok = parseIP(m.IP); !ok || em.ip.IsUnspecified() {
			ps.Errorf(at.At("ip"), "Invalid IP address", "ip %q is not a member address.", m.IP)
		}
		em.access = em.ip
		if m.AccessIP != "" {
			if em.access, ok = parseIP(m.AccessIP); !ok || em.access.IsUnspecified() {
				ps.Errorf(at.At("access_ip"), "Invalid IP address", "access_ip %q is not a member address.", m.AccessIP)
			}
		}
		if em.access.IsValid() {
			seen.claim(ps, "client URL", HostPort(em.access.String(), em.clientPort), at.At("access_ip"))
		}
		for attr, p := range map[string]int{"client_port": em.clientPort, "peer_port": em.peerPort} {
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
	for attr, v := range map[string]string{"address": lb.Address, "domain_name": lb.DomainName} {
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
// openssl.conf: localhost, member names, the default alt names, then member
// access and bind IPs, the user's IPs and loopback. Repeats are dropped
// (kubespray lists an IP twice when ip equals access_ip), and a load
// balancer's name and VIP are included, as the certificate must carry them.
func etcdCertSANs(members []etcdMember, lb *etcdLB, dnsDomain string, in EtcdInput) SANs {
	b := newSANBuilder()
	b.add(localhostName)
	for _, m := range members {
		b.add(m.Name)
	}
	b.add(DefaultEtcdCertAltNames(dnsDomain)...)
	b.add(in.CertAltNames...)
	if lb != nil {
		b.add(lb.DomainName, lb.Address)
	}
	for _, m := range members {
		b.addAddr(m.access, m.ip)
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
