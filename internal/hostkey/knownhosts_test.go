package hostkey

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

func TestMatchesHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		patterns, name string
		want           bool
	}{
		{"10.0.0.1", "10.0.0.1", true},
		{"10.0.0.1", "10.0.0.2", false},
		{"10.0.0.1", "10.0.0.10", false},
		{"10.0.0.3,10.0.0.1", "10.0.0.1", true},
		{"Node1.Example.COM", "node1.example.com", true},
		{"node1.example.com", "NODE1.example.com", true},
		{"10.0.0.*", "10.0.0.1", true},
		{"10.0.0.*", "10.0.1.1", false},
		{"10.0.0.?", "10.0.0.1", true},
		{"10.0.0.?", "10.0.0.10", false},
		{"*.example.com", "node1.example.com", true},
		{"*.example.com", "example.com", false},
		{"*", "anything", true},
		{"!10.0.0.1,10.0.0.*", "10.0.0.1", false},
		{"!10.0.0.1,10.0.0.*", "10.0.0.2", true},
		{"10.0.0.*,!10.0.0.1", "10.0.0.1", false},
		{"!10.0.0.1", "10.0.0.2", false}, // a negation alone matches nothing
		// On a port other than 22 the name is "[host]:port".
		{"[10.0.0.1]:2222", "[10.0.0.1]:2222", true},
		{"[10.0.0.1]:2222", "[10.0.0.1]:2223", false},
		{"10.0.0.1", "[10.0.0.1]:2222", false},
		{"10.0.0.*", "[10.0.0.1]:2222", false},
		{"*", "[10.0.0.1]:2222", true},
		{"*:2222", "[10.0.0.1]:2222", true},
		{"[10.0.0.*]:*", "[10.0.0.1]:2222", true},
		{"![10.0.0.1]:*,*", "[10.0.0.1]:2222", false},
		{"!10.9.9.9,*", "[10.0.0.1]:2222", true},
		{"[10.0.0.1]:22", "10.0.0.1", false}, // port 22 is written bare
		{"[::1]:2222", "[::1]:2222", true},
		{"::1", "::1", true},
		{"", "10.0.0.1", false},
		{"10.0.0.1,", "10.0.0.1", true},
	} {
		if got := matchesHost(tc.patterns, tc.name); got != tc.want {
			t.Errorf("matchesHost(%q, %q) = %v, want %v", tc.patterns, tc.name, got, tc.want)
		}
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		host string
		port int
		want string
	}{
		{"10.0.0.1", 22, "10.0.0.1"},
		{"10.0.0.1", 2222, "[10.0.0.1]:2222"},
		{"::1", 22, "::1"},
		{"::1", 2222, "[::1]:2222"},
		{"node1.example.com", 22, "node1.example.com"},
	} {
		if got := Name(tc.host, tc.port); got != tc.want {
			t.Errorf("Name(%q, %d) = %q, want %q", tc.host, tc.port, got, tc.want)
		}
	}
}

// Which lines apply to a host: names, ports, hashed names, patterns and
// markers, as OpenSSH reads them.
func TestKnownHostsHost(t *testing.T) {
	t.Parallel()
	k := map[string]testhost.Key{}
	for _, name := range []string{"a", "b", "c"} {
		k[name] = testhost.NewKey(t)
	}
	for _, tc := range []struct {
		name, line  string
		host        string
		port        int
		keys, cas   []string
		wantRevoked bool
	}{
		{name: "plain", line: "10.0.0.1 a", host: "10.0.0.1", port: 22, keys: []string{"a"}},
		{name: "plain, another host", line: "10.0.0.2 a", host: "10.0.0.1", port: 22},
		{name: "plain, another port", line: "10.0.0.1 a", host: "10.0.0.1", port: 2222},
		{name: "bracketed port", line: "[10.0.0.1]:2222 a", host: "10.0.0.1", port: 2222, keys: []string{"a"}},
		{name: "bracketed port, port 22", line: "[10.0.0.1]:2222 a", host: "10.0.0.1", port: 22},
		{name: "a list", line: "node1,10.0.0.1 a", host: "10.0.0.1", port: 22, keys: []string{"a"}},
		{name: "a host name in capitals", line: "NODE1.example.com a", host: "node1.example.com", port: 22, keys: []string{"a"}},
		{name: "hashed", line: knownhosts.HashHostname("10.0.0.1") + " a", host: "10.0.0.1", port: 22, keys: []string{"a"}},
		{name: "hashed, port", line: knownhosts.HashHostname("[10.0.0.1]:2222") + " a", host: "10.0.0.1", port: 2222, keys: []string{"a"}},
		{name: "hashed, another port", line: knownhosts.HashHostname("10.0.0.1") + " a", host: "10.0.0.1", port: 2222},
		{name: "hashed lowercased", line: knownhosts.HashHostname("node1") + " a", host: "Node1", port: 22, keys: []string{"a"}},
		{name: "hashed as written", line: knownhosts.HashHostname("Node1") + " a", host: "Node1", port: 22, keys: []string{"a"}},
		{name: "pattern", line: "10.0.0.* a", host: "10.0.0.1", port: 22, keys: []string{"a"}},
		{name: "pattern on another port", line: "10.0.0.* a", host: "10.0.0.1", port: 2222},
		{name: "* on another port", line: "* a", host: "10.0.0.1", port: 2222, keys: []string{"a"}},
		{name: "negated", line: "!10.0.0.1,10.0.0.* a", host: "10.0.0.1", port: 22},
		{name: "negated with a port", line: "![10.0.0.1]:*,* a", host: "10.0.0.1", port: 2222},
		{name: "cert-authority", line: "@cert-authority 10.0.0.1 a", host: "10.0.0.1", port: 22, cas: []string{"a"}},
		{name: "cert-authority *", line: "@cert-authority * a", host: "10.0.0.1", port: 2222, cas: []string{"a"}},
		{name: "cert-authority, another host", line: "@cert-authority 10.0.0.2 a", host: "10.0.0.1", port: 22},
		{name: "revoked for every host", line: "@revoked 10.0.0.2 a", host: "10.0.0.1", port: 22, wantRevoked: true},
		{name: "comment and blank lines", line: "# 10.0.0.1 a\n\n  \n", host: "10.0.0.1", port: 22},
		{name: "CRLF", line: "10.0.0.1 a\r\n", host: "10.0.0.1", port: 22, keys: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := tc.line
			for name, key := range k {
				line = strings.ReplaceAll(line, " "+name, " "+key.Public())
			}
			kh, err := ParseKnownHosts(line)
			if err != nil {
				t.Fatal(err)
			}
			h := kh.Host(tc.host, tc.port)
			if got := keyNames(k, h.Keys); !slices.Equal(got, tc.keys) {
				t.Errorf("keys %v, want %v", got, tc.keys)
			}
			if got := keyNames(k, h.Authorities); !slices.Equal(got, tc.cas) {
				t.Errorf("CAs %v, want %v", got, tc.cas)
			}
			var revoked *RevokedError
			if got := errors.As(h.Check(k["a"].Signer.PublicKey()), &revoked); got != tc.wantRevoked {
				t.Errorf("revoked %v, want %v", got, tc.wantRevoked)
			}
		})
	}
}

func keyNames(named map[string]testhost.Key, keys []ssh.PublicKey) []string {
	var names []string
	for _, key := range keys {
		for name, k := range named {
			if equalTo(k.Signer.PublicKey())(key) {
				names = append(names, name)
			}
		}
	}
	return names
}

func TestParseKnownHostsErrors(t *testing.T) {
	t.Parallel()
	key := testhost.NewKey(t).Public()
	for _, tc := range []struct{ content, want string }{
		{"10.0.0.1 " + key + "\n10.0.0.2 ssh-ed25519\n", "line 2"},
		{key + "\n", "line 1"},
		{"@unknown 10.0.0.1 " + key + "\n", "unknown marker @unknown"},
		{"@cert-authority @revoked " + key + "\n", "one marker per line"},
		{"|2|c2FsdA==|aGFzaA== " + key + "\n", "is not |1|salt|hash"},
		{"|1|not*base64|aGFzaA== " + key + "\n", "salt"},
		{"10.0.0.1 ssh-rsa " + strings.Fields(key)[1] + "\n", "line 1"},
	} {
		if _, err := ParseKnownHosts(tc.content); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error with %q", tc.content, err, tc.want)
		}
	}
}

// A host holds only the known_hosts lines that can apply to it, and checks
// keys as a reading of every line would: lines naming the host, hashed
// names, patterns, its CA and revocations (which apply to every host).
func TestKnownHostsLinesForOneHost(t *testing.T) {
	t.Parallel()
	k := map[string]testhost.Key{}
	for _, name := range []string{"plain", "other-port", "hashed", "pattern", "revoked", "ca", "listed", "elsewhere"} {
		k[name] = testhost.NewKey(t)
	}
	content := strings.Join([]string{
		"10.0.0.1 " + k["plain"].Public(),
		"[10.0.0.1]:2222 " + k["other-port"].Public(),
		knownhosts.HashHostname("10.0.0.1") + " " + k["hashed"].Public(),
		"10.0.0.* " + k["pattern"].Public(),
		"@revoked * " + k["revoked"].Public(),
		"@cert-authority 10.0.0.1 " + k["ca"].Public(),
		"# a comment",
		"10.0.0.3,10.0.0.1 " + k["listed"].Public(),
		"10.0.0.9 " + k["elsewhere"].Public(),
		"10.0.0.1 " + k["revoked"].Public(),
	}, "\n") + "\n"
	kh, err := ParseKnownHosts(content)
	if err != nil {
		t.Fatal(err)
	}

	read := map[string]bool{}
	for _, i := range kh.linesFor("10.0.0.1") {
		read[string(kh.entries[i].key.Marshal())] = true
	}
	for name, want := range map[string]bool{"plain": true, "other-port": false, "hashed": true, "pattern": true, "revoked": true,
		"ca": true, "listed": true, "elsewhere": false} {
		key := k[name].Signer.PublicKey().Marshal()
		if got := read[string(key)] || kh.revoked[string(key)]; got != want {
			t.Errorf("the %s key's line read: %v, want %v", name, got, want)
		}
	}
	if got := len(kh.linesFor("node1.example.com")); got != len(kh.anyName) {
		t.Errorf("a host name no line writes out reads %d lines, want the %d hashed and pattern ones", got, len(kh.anyName))
	}

	h := kh.Host("10.0.0.1", 22)
	for _, name := range []string{"plain", "hashed", "pattern", "listed"} {
		if err := h.Check(k[name].Signer.PublicKey()); err != nil {
			t.Errorf("the %s key is refused: %v", name, err)
		}
	}
	var revoked *RevokedError
	if err := h.Check(k["revoked"].Signer.PublicKey()); !errors.As(err, &revoked) {
		t.Errorf("a revoked key listed for the host: got %v, want a revocation", err)
	}
	whole := readingEveryLine(kh, "10.0.0.1")
	var mismatch *MismatchError
	err = h.Check(k["elsewhere"].Signer.PublicKey())
	if !errors.As(err, &mismatch) || len(mismatch.Expected) != len(whole.Keys) || len(mismatch.Authorities) != len(whole.Authorities) {
		t.Errorf("another host's key: got %v, want a mismatch listing the %d keys and %d CAs every line gives",
			err, len(whole.Keys), len(whole.Authorities))
	}
}

// readingEveryLine is what known_hosts gives a name when every line is
// matched, without the index.
func readingEveryLine(kh *KnownHosts, name string) *Host {
	h := &Host{name: name}
	for _, e := range kh.entries {
		switch {
		case !e.matches(name):
		case e.authority:
			h.Authorities = append(h.Authorities, e.key)
		default:
			h.Keys = append(h.Keys, e.key)
		}
	}
	return h
}

// The index never changes what a host is given: for any content and host,
// looking up through it gives what matching every line gives.
func FuzzKnownHostsIndex(f *testing.F) {
	key := testhost.NewKey(f).Public()
	f.Add("10.0.0.1,10.0.0.2\n*", "10.0.0.1", 22)
	f.Add("[10.0.0.1]:2222\n!10.0.0.*,*", "10.0.0.1", 2222)
	f.Add(knownhosts.HashHostname("node1")+"\n@cert-authority NODE1", "Node1", 22)
	f.Fuzz(func(t *testing.T, hostFields, host string, port int) {
		var content strings.Builder
		for _, hosts := range strings.Split(hostFields, "\n") {
			content.WriteString(hosts + " " + key + "\n")
		}
		kh, err := ParseKnownHosts(content.String())
		if err != nil {
			return
		}
		h, whole := kh.Host(host, port), readingEveryLine(kh, Name(host, port))
		if len(h.Keys) != len(whole.Keys) || len(h.Authorities) != len(whole.Authorities) {
			t.Errorf("%q for %q: the index gives %d keys and %d CAs, every line %d and %d",
				content.String(), Name(host, port), len(h.Keys), len(h.Authorities), len(whole.Keys), len(whole.Authorities))
		}
	})
}

// wildcardMatch agrees with the same pattern as a regular expression.
func FuzzWildcardMatch(f *testing.F) {
	for _, seed := range [][2]string{{"*", ""}, {"10.0.0.*", "10.0.0.1"}, {"a*b*c", "aXbYbc"}, {"?*?", "a"}, {"*a*a*a*a*b", strings.Repeat("a", 60)}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if !isASCII(pattern) || !isASCII(s) {
			t.Skip("a regular expression matches runes; wildcardMatch, as OpenSSH, bytes")
		}
		expr := regexp.QuoteMeta(pattern)
		expr = strings.ReplaceAll(strings.ReplaceAll(expr, `\*`, `(?s:.*)`), `\?`, `(?s:.)`)
		re := regexp.MustCompile(`^` + expr + `$`)
		if got, want := wildcardMatch(pattern, s), re.MatchString(s); got != want {
			t.Errorf("wildcardMatch(%q, %q) = %v, the regular expression says %v", pattern, s, got, want)
		}
	})
}

func isASCII(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r >= 0x80 })
}
