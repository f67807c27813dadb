package endpoints

import (
	"net/netip"
	"strings"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// sanBuilder collects SANs in order, splitting IPs from DNS names and
// dropping repeats. Unlike kubespray, which compares strings, it compares
// canonical forms, so "fd00::0001" and "fd00::1" are one SAN.
type sanBuilder struct {
	sans SANs
	seen map[string]bool
}

func newSANBuilder() *sanBuilder { return &sanBuilder{seen: map[string]bool{}} }

func (b *sanBuilder) add(values ...string) {
	for _, v := range values {
		if v == "" {
			continue
		}
		h := canonicalHost(v)
		if b.seen[h] {
			continue
		}
		b.seen[h] = true
		if _, ok := parseIP(h); ok {
			b.sans.IPAddresses = append(b.sans.IPAddresses, h)
		} else {
			b.sans.DNSNames = append(b.sans.DNSNames, h)
		}
	}
}

func (b *sanBuilder) addAddr(addrs ...netip.Addr) {
	for _, a := range addrs {
		if a.IsValid() {
			b.add(a.String())
		}
	}
}

// CertSANs sorts names and IP literals into certificate SANs, in order,
// without repeats. Invalid entries are reported with their index.
func CertSANs(values []string) (SANs, problem.Problems) {
	var problems problem.Problems
	b := newSANBuilder()
	for i, v := range values {
		if _, ok := parseIP(v); !ok && !isDNSName(v, true) {
			problems.Errorf(problem.Path{i}, "Invalid SAN",
				"%q is neither an IP address nor a DNS name; a SAN is an IP literal (10.0.0.1, fd00::1) or a DNS name, optionally with a leading \"*.\" wildcard label.", v)
			continue
		}
		b.add(v)
	}
	return b.sans, problems
}

// sanSet answers whether a certificate with these SANs verifies for a
// host, with the rules of crypto/x509's VerifyHostname: IP hosts need an
// IP SAN, names match exactly or through a wildcard in the leftmost label.
type sanSet struct {
	ips map[netip.Addr]bool
	dns map[string]bool
}

func newSANSet(s SANs) sanSet {
	set := sanSet{ips: map[netip.Addr]bool{}, dns: map[string]bool{}}
	for _, v := range s.IPAddresses {
		if a, ok := parseIP(v); ok {
			set.ips[a] = true
		}
	}
	for _, v := range s.DNSNames {
		set.dns[canonicalHost(v)] = true
	}
	return set
}

func (s sanSet) covers(host string) bool {
	if a, ok := parseIP(host); ok {
		return s.ips[a]
	}
	h := canonicalHost(host)
	if s.dns[h] {
		return true
	}
	if i := strings.IndexByte(h, '.'); i > 0 {
		return s.dns["*"+h[i:]]
	}
	return false
}

// Covers reports whether a certificate with these SANs verifies for host.
func (s SANs) Covers(host string) bool { return newSANSet(s).covers(host) }
