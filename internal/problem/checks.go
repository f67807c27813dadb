package problem

import (
	"iter"
	"maps"
	"net/netip"
	"regexp"
	"slices"
)

// account is a user or group name as useradd accepts it, or a numeric id.
const account = `([a-z_][a-z0-9_.-]{0,31}\$?|[0-9]{1,10})`

var (
	// AccountPattern is a user or group name, or a numeric id.
	AccountPattern = regexp.MustCompile(`^` + account + `$`)
	// UserGroupPattern is user:group, each an AccountPattern.
	UserGroupPattern = regexp.MustCompile(`^` + account + `:` + account + `$`)
)

// ValidPort reports whether p is a TCP port.
func ValidPort(p int) bool { return p >= 1 && p <= 65535 }

// IsIdentifier reports whether s is 1-63 letters, digits, '.', '-' or
// '_': a name that every config language kha renders takes unquoted.
func IsIdentifier(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// IsServiceAddress reports whether other hosts can reach a service on a:
// a VIP or a load balancer's address is not loopback, unspecified,
// multicast or scoped to one link.
func IsServiceAddress(a netip.Addr) bool {
	return a.IsValid() && a.Zone() == "" && !a.IsUnspecified() && !a.IsLoopback() && !a.IsMulticast()
}

// Sorted yields a map's entries in key order. A check that runs over
// several attributes at once ranges over Sorted(map[string]T{...}), so its
// findings come out in the same order every run, as a map's do not.
func Sorted[T any](m map[string]T) iter.Seq2[string, T] {
	return func(yield func(string, T) bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}
