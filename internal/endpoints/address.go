package endpoints

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// parseIP parses an IP literal without zone and returns its canonical
// form; IPv4-mapped IPv6 addresses become plain IPv4, as x509 stores them.
func parseIP(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// IsDNSName reports whether s is a DNS name (no wildcard).
func IsDNSName(s string) bool { return isDNSName(s, false) }

// isDNSName reports whether s is a valid DNS name of RFC 1123 labels; with
// allowWildcard, a leading "*." label is accepted as in certificate SANs.
func isDNSName(s string, allowWildcard bool) bool {
	if allowWildcard {
		s = strings.TrimPrefix(s, "*.")
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if !isDNSLabel(label) {
			return false
		}
	}
	// An all-numeric last label would read as an IPv4 address.
	last := s[strings.LastIndexByte(s, '.')+1:]
	return strings.Trim(last, "0123456789") != ""
}

func isDNSLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// IsNodeName reports whether s is a valid Kubernetes node name (a
// lowercase DNS-1123 subdomain).
func IsNodeName(s string) bool {
	return s == strings.ToLower(s) && isDNSName(s, false) && !strings.HasSuffix(s, ".")
}

// canonicalHost returns the form a host takes in SANs and URLs: canonical
// IP text, or the lowercased DNS name without a trailing dot.
func canonicalHost(s string) string {
	if a, ok := parseIP(s); ok {
		return a.String()
	}
	return strings.ToLower(strings.TrimSuffix(s, "."))
}

// HostPort joins host and port, bracketing IPv6 literals.
func HostPort(host string, port int) string {
	return net.JoinHostPort(canonicalHost(host), strconv.Itoa(port))
}

// URL is the https URL of host:port, IPv6-safe.
func URL(host string, port int) string {
	return "https://" + HostPort(host, port)
}

func isWildcardIP(a netip.Addr) bool { return a.IsUnspecified() }

// CheckHostsEntry validates one /etc/hosts line: an IP address, then one
// or more host names.
func CheckHostsEntry(line string) error {
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return fmt.Errorf("%q needs an IP address and at least one name, e.g. \"10.0.0.100 api.example.com\"", line)
	}
	if _, ok := parseIP(fields[0]); !ok {
		return fmt.Errorf("%q does not start with an IP address", line)
	}
	for _, name := range fields[1:] {
		if !isDNSName(name, false) {
			return fmt.Errorf("%q is not a host name (in %q)", name, line)
		}
	}
	return nil
}
