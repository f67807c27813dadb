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
	// A last label that reads as a number (decimal, or 0x hex) makes the
	// whole an IPv4 address to resolvers and URL parsers, valid or not.
	return !looksNumeric(s[strings.LastIndexByte(s, '.')+1:])
}

// looksNumeric says a label reads as a number to inet_aton and WHATWG
// URL parsers: digits, or 0x and hex digits.
func looksNumeric(l string) bool {
	if len(l) >= 2 && (l[:2] == "0x" || l[:2] == "0X") {
		l = strings.ToLower(l[2:])
		return strings.Trim(l, "0123456789abcdef") == ""
	}
	return l != "" && strings.Trim(l, "0123456789") == ""
}

// inetNumber reads one part of an address as inet_aton does: decimal,
// octal with a leading 0, hex with 0x (no digits read as 0, as glibc and
// WHATWG URL parsers read them).
func inetNumber(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	}
	n, err := strconv.ParseUint(s, base, 64)
	return n, err == nil
}

// parseInetAton reads an IPv4 address in every form inet_aton takes, and
// with it glibc's getaddrinfo (so curl and Go's cgo resolver), and WHATWG
// URL parsers: one to four parts, each decimal, octal or hex, the last
// filling the bytes the others leave ("127.1", "0x7f000001",
// "017700000001"), and a trailing dot.
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(strings.TrimSuffix(s, "."), ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	last := len(parts) - 1
	for i, p := range parts {
		n, ok := inetNumber(p)
		if !ok || i < last && n > 0xff || i == last && n >= 1<<(8*(4-last)) {
			return netip.Addr{}, false
		}
		if i < last {
			n <<= 8 * (3 - i)
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseHostAddr reads a URL's host as an address the way resolvers would:
// an IP literal (unmapped, without zone) or any inet_aton form.
func parseHostAddr(host string) (netip.Addr, bool) {
	if a, ok := parseIP(host); ok {
		return a, true
	}
	return parseInetAton(host)
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

// limitedBroadcast is 255.255.255.255, which reaches every host of a
// segment and none in particular.
var limitedBroadcast = netip.AddrFrom4([4]byte{255, 255, 255, 255})

// notAHostAddress says why a is no one host's address other hosts reach
// it at (loopback, unspecified, multicast, broadcast); "" when it may be.
func notAHostAddress(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "a loopback address: each host reaches itself there"
	case a.IsUnspecified():
		return "the unspecified address: it names no host"
	case a.IsMulticast():
		return "a multicast address: it names a group, not a host"
	case a == limitedBroadcast:
		return "the broadcast address: it names every host of a segment"
	}
	return ""
}

// notAMemberAddress is notAHostAddress but for loopback: an etcd member
// on loopback serves the clients of its own host (one host running both).
func notAMemberAddress(a netip.Addr) string {
	if a.IsLoopback() {
		return ""
	}
	return notAHostAddress(a)
}

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
