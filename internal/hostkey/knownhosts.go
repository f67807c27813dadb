package hostkey

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
)

// KnownHosts is parsed known_hosts content, indexed by the host names its
// lines write out, so that looking up one host reads its own few lines
// and those that may name any host, not a fleet's.
type KnownHosts struct {
	entries []entry
	// byName holds, for each host name a line writes out literally
	// (lowercased), the indexes of those lines in entries, ascending.
	byName map[string][]int
	// anyName are the lines that may apply to any name: hashed names and
	// patterns (with "*", "?" or "!"), ascending.
	anyName []int
	// revoked holds the keys of @revoked lines by their wire form: they
	// are refused for every host, whatever the line's host field says.
	revoked map[string]bool
}

// entry is one known_hosts line with a key for hosts: a plain line or an
// @cert-authority one.
type entry struct {
	patterns  string      // the comma-separated host patterns; "" when hashed
	hashed    *hashedName // a |1|salt|hash host field
	key       ssh.PublicKey
	authority bool
}

// hashedName is a host field that ssh-keygen -H or ssh-keyscan -H wrote:
// HMAC-SHA1 of the host's name, keyed with a salt.
type hashedName struct{ salt, hash []byte }

// ParseKnownHosts parses known_hosts content (ssh-keyscan output, an
// OpenSSH known_hosts file) in memory.
func ParseKnownHosts(content string) (*KnownHosts, error) {
	kh := &KnownHosts{byName: map[string][]int{}, revoked: map[string]bool{}}
	for i, line := range bytes.Split([]byte(content), []byte("\n")) {
		if err := kh.add(line); err != nil {
			return nil, fmt.Errorf("known_hosts line %d: %w", i+1, err)
		}
	}
	return kh, nil
}

// add parses one line into kh; a blank or comment line adds nothing.
func (kh *KnownHosts) add(line []byte) error {
	marker, hosts, key, _, _, err := ssh.ParseKnownHosts(line)
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return err
	case strings.HasPrefix(hosts[0], "@"):
		return fmt.Errorf("a host pattern cannot start with @ (%q): one marker per line", hosts[0])
	}
	if marker == "revoked" {
		kh.revoked[plainKey(key)] = true
		return nil
	}
	if marker != "" && marker != "cert-authority" {
		return fmt.Errorf("unknown marker @%s: known_hosts has @cert-authority and @revoked", marker)
	}
	e := entry{key: key, authority: marker == "cert-authority", patterns: strings.Join(hosts, ",")}
	at := len(kh.entries)
	switch {
	case strings.HasPrefix(e.patterns, "|"):
		if e.hashed, err = parseHashedName(e.patterns); err != nil {
			return err
		}
		e.patterns = ""
		kh.anyName = append(kh.anyName, at)
	case strings.ContainsAny(e.patterns, "*?!"):
		kh.anyName = append(kh.anyName, at)
	default:
		for _, h := range hosts {
			h = strings.ToLower(h)
			kh.byName[h] = append(kh.byName[h], at)
		}
	}
	kh.entries = append(kh.entries, e)
	return nil
}

func parseHashedName(field string) (*hashedName, error) {
	parts := strings.Split(field, "|")
	if len(parts) != 4 || parts[1] != "1" {
		return nil, fmt.Errorf("hashed host %q is not |1|salt|hash", field)
	}
	salt, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, fmt.Errorf("hashed host %q: salt: %v", field, err)
	}
	hash, err := base64.StdEncoding.DecodeString(parts[3])
	if err != nil {
		return nil, fmt.Errorf("hashed host %q: hash: %v", field, err)
	}
	return &hashedName{salt: salt, hash: hash}, nil
}

// Name is a host's address as known_hosts writes it, and as OpenSSH
// matches patterns and hashes against it: the bare host on port 22,
// "[host]:port" on any other.
func Name(host string, port int) string {
	if port == 22 {
		return host
	}
	return "[" + host + "]:" + strconv.Itoa(port)
}

// Host is what the content knows of the host at host:port: the keys of
// the lines that name it, the CAs of its @cert-authority lines, and every
// revoked key.
func (kh *KnownHosts) Host(host string, port int) *Host {
	h := NewHost(host, port)
	h.revoked = kh.revoked
	for _, i := range kh.linesFor(h.name) {
		if e := kh.entries[i]; e.matches(h.name) {
			if e.authority {
				h.Authorities = append(h.Authorities, e.key)
			} else {
				h.Keys = append(h.Keys, e.key)
			}
		}
	}
	return h
}

// linesFor returns, in file order, the indexes of the lines that may
// apply to name: those that write it out and those that may name any host.
func (kh *KnownHosts) linesFor(name string) []int {
	named, anyName := kh.byName[strings.ToLower(name)], kh.anyName
	lines := make([]int, 0, len(named)+len(anyName))
	for len(named) > 0 || len(anyName) > 0 {
		if len(anyName) == 0 || (len(named) > 0 && named[0] < anyName[0]) {
			lines, named = append(lines, named[0]), named[1:]
		} else {
			lines, anyName = append(lines, anyName[0]), anyName[1:]
		}
	}
	return lines
}

// matches says whether the line applies to a host's known_hosts name.
func (e entry) matches(name string) bool {
	if e.hashed != nil {
		// OpenSSH hashes the lowercased name; the name as given is tried
		// too, for lines hashed from a name written in capitals.
		return e.hashed.matches(name) || e.hashed.matches(strings.ToLower(name))
	}
	return matchesHost(e.patterns, name)
}

func (h *hashedName) matches(name string) bool {
	mac := hmac.New(sha1.New, h.salt)
	mac.Write([]byte(name))
	return hmac.Equal(mac.Sum(nil), h.hash)
}

// matchesHost reads a comma-separated known_hosts pattern list as
// OpenSSH's match_hostname does: name matches when a pattern matches it
// and no negated one ("!pattern") does; "*" and "?" are the only wildcards
// and case does not count.
func matchesHost(patterns, name string) bool {
	name = strings.ToLower(name)
	matched := false
	for _, p := range strings.Split(strings.ToLower(patterns), ",") {
		negated := strings.HasPrefix(p, "!")
		if wildcardMatch(strings.TrimPrefix(p, "!"), name) {
			if negated {
				return false
			}
			matched = true
		}
	}
	return matched
}

// wildcardMatch matches s against a pattern of "*" (any run of bytes), "?"
// (any one byte) and literal bytes. On a mismatch it resumes after the
// last "*" one byte further, so it takes at most the product of the two
// lengths in steps, never an exponential number.
func wildcardMatch(pattern, s string) bool {
	p, i := 0, 0
	star, resume := -1, 0 // the last "*" seen, and where s stood then
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, resume = p, i
			p++
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p, i = p+1, i+1
		case star >= 0:
			resume++
			p, i = star+1, resume
		default:
			return false
		}
	}
	return strings.Trim(pattern[p:], "*") == ""
}

// plainKey is a key's wire form, or for a certificate the wire form of
// the key it certifies: what @revoked lines are compared by.
func plainKey(key ssh.PublicKey) string {
	if cert, ok := key.(*ssh.Certificate); ok {
		key = cert.Key
	}
	return string(key.Marshal())
}
