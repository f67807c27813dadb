// Package remote delivers files to hosts over SSH: verified host keys, one
// pooled connection per host, and a managed-file primitive that uploads
// into a private directory next to the target, validates the copy, waits
// for the client's commit, renames it atomically over the target and
// reloads the service, restoring the previous file on any failure.
//
// It knows nothing of Terraform; resources translate their schema into a
// Config and Files, and pass a Logger.
package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Config says how to reach and authenticate to one host. The names follow
// Terraform's provisioner connection block.
type Config struct {
	Host string
	Port int    // 0 means 22
	User string // empty means root

	Password    string
	PrivateKey  string // OpenSSH or PEM private key text
	Certificate string // SSH user certificate for PrivateKey, authorized_keys format
	// Agent uses the SSH agent at SSH_AUTH_SOCK; AgentIdentity picks one
	// of its keys by comment or SHA256 fingerprint.
	Agent         bool
	AgentIdentity string

	// HostKey is the host's public key, or the key of the CA that signs
	// its host certificate (authorized_keys format). KnownHosts is
	// known_hosts content and may carry @cert-authority lines.
	HostKey    string
	KnownHosts string
	// InsecureTrustOnFirstUse accepts the key presented at the first
	// connection when no HostKey or KnownHosts is given; TrustedHostKey is
	// the key recorded then, which every later connection must present.
	InsecureTrustOnFirstUse bool
	TrustedHostKey          string

	// Timeout bounds connecting, retries included; 0 means
	// DefaultTimeout. A context deadline that comes sooner wins.
	Timeout time.Duration
	// Sudo runs privileged steps through `sudo -n`.
	Sudo bool

	// Bastion, when set, is the jump host the connection goes through.
	Bastion *Config
}

// DefaultTimeout is Terraform provisioners' connection timeout.
const DefaultTimeout = 5 * time.Minute

func (c Config) port() int {
	if c.Port == 0 {
		return 22
	}
	return c.Port
}

func (c Config) user() string {
	if c.User == "" {
		return "root"
	}
	return c.User
}

// Address is host:port, IPv6-safe.
func (c Config) Address() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.port())) }

func (c Config) timeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// TrustsOnFirstUse says whether the first connection records the host's
// key: trust on first use is on and nothing else verifies the host.
func (c Config) TrustsOnFirstUse() bool {
	return c.InsecureTrustOnFirstUse && c.HostKey == "" && c.KnownHosts == ""
}

// key identifies a pooled connection: the same host reached with other
// credentials or through another bastion is another connection; Sudo is
// not part of it. Secrets enter only as a digest.
func (c Config) key() string {
	h := sha256.New()
	for _, s := range []string{c.user(), c.Address(), c.Password, c.PrivateKey, c.Certificate,
		strconv.FormatBool(c.Agent), c.AgentIdentity, c.HostKey, c.KnownHosts, c.TrustedHostKey,
		strconv.FormatBool(c.InsecureTrustOnFirstUse)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if c.Bastion != nil {
		h.Write([]byte(c.Bastion.key()))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ErrNoHostKey is returned before dialing when a host's key cannot be
// verified because none was given.
var ErrNoHostKey = errors.New("no host key to verify the host against")

// Validate reports configuration mistakes before anything is dialed: it
// parses every key and certificate, and checks that known_hosts has an
// entry for the address.
func (c Config) Validate() error {
	if c.Host == "" {
		return errors.New("ssh.host is empty: set the host's address")
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("ssh.port %d is not a TCP port (1-65535)", c.Port)
	}
	if c.HostKey == "" && c.KnownHosts == "" && !c.InsecureTrustOnFirstUse {
		return fmt.Errorf("%w %s: set ssh.host_key to the host's public key (a line of `ssh-keyscan %s` without the "+
			"host name) or to the CA key that signs its host certificate, or ssh.known_hosts to known_hosts content "+
			"(`ssh-keyscan` output as it is); ssh.insecure_trust_on_first_use = true records the key seen at the "+
			"first connection instead", ErrNoHostKey, c.Address(), c.Host)
	}
	if c.HostKey != "" {
		if _, err := parsePublicKey(c.HostKey); err != nil {
			return fmt.Errorf("ssh.host_key is not a public key in authorized_keys format (\"ssh-ed25519 AAAA...\"): %v", err)
		}
	}
	if c.KnownHosts != "" {
		v, err := c.verifier()
		if err != nil {
			return err
		}
		if c.HostKey == "" && !c.InsecureTrustOnFirstUse && !v.knowsHost {
			return fmt.Errorf("ssh.known_hosts has no key and no @cert-authority line for %s (lines for a port other than 22 "+
				"are written [host]:port); add the output of `ssh-keyscan -p %d %s`", c.Address(), c.port(), c.Host)
		}
	}
	if _, _, _, err := c.signers(); err != nil {
		return err
	}
	if c.PrivateKey == "" && c.Password == "" && !c.Agent {
		return errors.New("no authentication method: set ssh.private_key (or private_key_wo), ssh.password (or password_wo), or ssh.agent = true")
	}
	if c.Bastion != nil {
		if err := c.Bastion.Validate(); err != nil {
			return fmt.Errorf("bastion: %w", err)
		}
	}
	return nil
}

// parsedSigner is what signers returns for one key and certificate.
type parsedSigner struct {
	signer ssh.Signer
	name   string
	ok     bool
	err    error
}

// signerCache holds parsed keys by their text: a provider process parses a
// key once, not once per host and step.
var signerCache sync.Map // sha256 of key and certificate -> parsedSigner

// signers parses the private key and its certificate. It never echoes
// key material in an error.
func (c Config) signers() (ssh.Signer, string, bool, error) {
	id := sha256.Sum256([]byte(c.PrivateKey + "\x00" + c.Certificate))
	if p, ok := signerCache.Load(id); ok {
		p := p.(parsedSigner)
		return p.signer, p.name, p.ok, p.err
	}
	var p parsedSigner
	p.signer, p.name, p.ok, p.err = c.parseSigners()
	signerCache.Store(id, p)
	return p.signer, p.name, p.ok, p.err
}

func (c Config) parseSigners() (signer ssh.Signer, name string, ok bool, err error) {
	if c.PrivateKey == "" {
		if c.Certificate != "" {
			return nil, "", false, errors.New("ssh.certificate needs ssh.private_key: the certificate signs that key")
		}
		return nil, "", false, nil
	}
	signer, err = ssh.ParsePrivateKey([]byte(c.PrivateKey))
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, "", false, errors.New("ssh.private_key is encrypted with a passphrase; give an unencrypted key or use ssh.agent")
		}
		return nil, "", false, errors.New("ssh.private_key is not a valid private key (OpenSSH or PEM)")
	}
	if c.Certificate != "" {
		pub, err := parsePublicKey(c.Certificate)
		cert, isCert := pub.(*ssh.Certificate)
		if err != nil || !isCert || cert.CertType != ssh.UserCert {
			return nil, "", false, errors.New("ssh.certificate is not an SSH user certificate (\"ssh-ed25519-cert-v01@openssh.com AAAA...\")")
		}
		if signer, err = ssh.NewCertSigner(cert, signer); err != nil {
			return nil, "", false, fmt.Errorf("ssh.certificate does not match ssh.private_key: %v", err)
		}
	}
	return signer, "publickey (" + signer.PublicKey().Type() + " " + ssh.FingerprintSHA256(signer.PublicKey()) + ")", true, nil
}

// CheckCredentials parses a private key and, when given, the user
// certificate that signs it, without echoing key material.
func CheckCredentials(privateKey, certificate string) error {
	_, _, _, err := Config{PrivateKey: privateKey, Certificate: certificate}.signers()
	return err
}

// CheckHostKey parses a pinned host key.
func CheckHostKey(text string) error {
	if _, err := parsePublicKey(text); err != nil {
		return fmt.Errorf("not a public key in authorized_keys format (\"ssh-ed25519 AAAA...\"): %v", err)
	}
	return nil
}

// CheckKnownHosts parses known_hosts content.
func CheckKnownHosts(content string) error {
	_, err := parseKnownHosts(content)
	return err
}

func parsePublicKey(text string) (ssh.PublicKey, error) {
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(text))
	return key, err
}

// authMethods returns the SSH auth methods and their names for messages.
func (c Config) authMethods() ([]ssh.AuthMethod, []string, func(), error) {
	var methods []ssh.AuthMethod
	var names []string
	cleanup := func() {}
	signer, name, ok, err := c.signers()
	if err != nil {
		return nil, nil, cleanup, err
	}
	if ok {
		methods = append(methods, ssh.PublicKeys(signer))
		names = append(names, name)
	}
	if c.Agent {
		sock := os.Getenv("SSH_AUTH_SOCK")
		if sock == "" {
			return nil, nil, cleanup, errors.New("ssh.agent is true but SSH_AUTH_SOCK is not set")
		}
		conn, err := net.Dial("unix", sock)
		if err != nil {
			return nil, nil, cleanup, fmt.Errorf("connecting to the SSH agent at SSH_AUTH_SOCK: %v", err)
		}
		cleanup = func() { conn.Close() }
		ag := agent.NewClient(conn)
		signers := func() ([]ssh.Signer, error) {
			all, err := ag.Signers()
			if err != nil || c.AgentIdentity == "" {
				return all, err
			}
			keys, _ := ag.List()
			for i, k := range keys {
				if i < len(all) && (k.Comment == c.AgentIdentity || ssh.FingerprintSHA256(k) == c.AgentIdentity) {
					return []ssh.Signer{all[i]}, nil
				}
			}
			return nil, fmt.Errorf("the SSH agent holds no key with comment or fingerprint %q", c.AgentIdentity)
		}
		methods = append(methods, ssh.PublicKeysCallback(signers))
		names = append(names, "agent")
	}
	if c.Password != "" {
		pw := c.Password
		methods = append(methods, ssh.Password(pw), ssh.KeyboardInteractive(
			func(_, _ string, questions []string, _ []bool) ([]string, error) {
				answers := make([]string, len(questions))
				for i := range answers {
					answers[i] = pw
				}
				return answers, nil
			}))
		names = append(names, "password", "keyboard-interactive")
	}
	return methods, names, cleanup, nil
}

// certAlgorithms are the host certificate algorithms offered when a CA
// may vouch for the host. RSA certificates are offered with SHA-2
// signatures only, as OpenSSH 8.8 and later require.
var certAlgorithms = []string{
	ssh.CertAlgoED25519v01, ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01, ssh.CertAlgoECDSA521v01,
	ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01,
}

// keyAlgorithms are the host key algorithms that present a plain key of a
// type, and of its certificate.
func keyAlgorithms(keyType string) (plain, cert []string) {
	switch keyType {
	case ssh.KeyAlgoRSA:
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}, []string{ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01}
	case ssh.KeyAlgoED25519:
		return []string{keyType}, []string{ssh.CertAlgoED25519v01}
	case ssh.KeyAlgoECDSA256:
		return []string{keyType}, []string{ssh.CertAlgoECDSA256v01}
	case ssh.KeyAlgoECDSA384:
		return []string{keyType}, []string{ssh.CertAlgoECDSA384v01}
	case ssh.KeyAlgoECDSA521:
		return []string{keyType}, []string{ssh.CertAlgoECDSA521v01}
	}
	return []string{keyType}, nil
}

// verifier checks host keys for one address against everything the
// configuration pins, and knows which algorithms to ask the server for.
type verifier struct {
	address string
	check   ssh.HostKeyCallback // nil: trust on first use, nothing recorded yet
	// algorithms are the host key algorithms to offer, in order: the
	// server presents the first one it has, so it presents a key kha can
	// verify rather than its own first choice.
	algorithms []string
	// knowsHost says whether a key or CA is known for the address.
	knowsHost bool
}

// verifierCache holds verifiers by the configuration's key material and
// address.
var verifierCache sync.Map // verifierKey -> *verifier

// verifierKey keeps the parts apart: joining them would copy a fleet's
// known_hosts for every host.
type verifierKey struct{ address, pinned, trusted, knownHosts string }

func (c Config) verifier() (*verifier, error) {
	pinned := c.HostKey
	trusted := ""
	if pinned == "" && c.InsecureTrustOnFirstUse {
		trusted = c.TrustedHostKey
	}
	cacheKey := verifierKey{c.Address(), pinned, trusted, c.KnownHosts}
	if v, ok := verifierCache.Load(cacheKey); ok {
		return v.(*verifier), nil
	}
	v := &verifier{address: c.Address()}
	var dbs []*knownHostsDB
	if c.KnownHosts != "" {
		for _, lines := range []string{linesFor(c.KnownHosts, c.Host, c.Address()), portPatternLines(c.KnownHosts, c.Address())} {
			if lines == "" {
				continue
			}
			db, err := parseKnownHosts(lines)
			if err != nil {
				return nil, err
			}
			dbs = append(dbs, db)
		}
	}
	var lines []string
	var plain []ssh.PublicKey
	mayBeCA := false
	for attr, text := range map[string]string{"ssh.host_key": pinned, "the recorded trusted_host_key": trusted} {
		if text == "" {
			continue
		}
		key, err := parsePublicKey(text)
		if err != nil {
			return nil, fmt.Errorf("%s %q is not in authorized_keys format: %v", attr, text, err)
		}
		line := knownhosts.Line([]string{c.Address()}, key)
		lines = append(lines, line)
		plain = append(plain, key)
		if attr == "ssh.host_key" { // a pinned key may be the host's or its CA's
			lines = append(lines, "@cert-authority "+line)
			mayBeCA = true
		}
	}
	if len(lines) > 0 {
		db, err := parseKnownHosts(strings.Join(lines, "\n") + "\n")
		if err != nil {
			return nil, err
		}
		dbs = append(dbs, db)
	}
	if len(dbs) > 0 {
		v.check = unionCheck(dbs)
		var cas []ssh.PublicKey
		for _, db := range dbs {
			cas = append(cas, db.cas...)
		}
		known, ca := knownFor(v.check, c.Address(), cas)
		plain = append(plain, known...)
		mayBeCA = mayBeCA || ca
	}
	v.algorithms, v.knowsHost = hostKeyAlgorithms(plain, mayBeCA), len(plain) > 0 || mayBeCA
	verifierCache.Store(cacheKey, v)
	return v, nil
}

// firstUseAlgorithms are asked for when nothing is known of the host
// (trust on first use): Ed25519 first, as OpenSSH prefers it, so the key
// recorded is the one `ssh-keyscan -t ed25519` shows.
var firstUseAlgorithms = []string{
	ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256,
	ssh.CertAlgoED25519v01, ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01, ssh.CertAlgoECDSA521v01,
	ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01,
}

// hostKeyAlgorithms orders what the server is asked to present: every
// certificate type first when a CA may vouch for the host (the server then
// presents its certificate), then the plain types of the keys known for
// it, then their certificates (accepted for their plain key, as OpenSSH
// does). With nothing known, firstUseAlgorithms.
func hostKeyAlgorithms(known []ssh.PublicKey, mayBeCA bool) []string {
	if len(known) == 0 && !mayBeCA {
		return firstUseAlgorithms
	}
	var algos []string
	seen := map[string]bool{}
	add := func(as ...string) {
		for _, a := range as {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	if mayBeCA {
		add(certAlgorithms...)
	}
	var certs []string
	for _, k := range known {
		p, c := keyAlgorithms(k.Type())
		add(p...)
		certs = append(certs, c...)
	}
	add(certs...)
	return algos
}

// probeAddr stands for the remote address in the probes below; the
// knownhosts checker only uses it when the host name is an IP.
var probeAddr = &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 22}

// knownFor asks a known_hosts checker what it holds for an address: the
// plain keys (a probe key's mismatch lists every key of a matching line)
// and whether an @cert-authority line applies. For the latter each CA key
// (cas: the keys of the checker's @cert-authority lines) is tried on a
// probe certificate that names it as its signer: the checker refuses it
// for its principal, not for a lack of authorities, when the CA's line
// matches the address.
func knownFor(check ssh.HostKeyCallback, address string, cas []ssh.PublicKey) (keys []ssh.PublicKey, ca bool) {
	isCA := map[string]bool{}
	for _, key := range cas {
		isCA[string(key.Marshal())] = true
	}
	probe, _, _, _, _ := ssh.ParseAuthorizedKey([]byte(probeKey))
	var keyErr *knownhosts.KeyError
	if err := check(address, probeAddr, probe); errors.As(err, &keyErr) {
		for _, k := range keyErr.Want {
			if !isCA[string(k.Key.Marshal())] { // the checker matches CA lines as plain ones too
				keys = append(keys, k.Key)
			}
		}
	}
	for _, key := range cas {
		cert := &ssh.Certificate{Key: probe, CertType: ssh.HostCert, SignatureKey: key, ValidPrincipals: []string{"kha-probe."},
			ValidBefore: ssh.CertTimeInfinity, Signature: &ssh.Signature{Format: key.Type()}}
		if err := check(address, probeAddr, cert); err != nil && !strings.Contains(err.Error(), "no authorities for hostname") {
			ca = true
		}
	}
	return keys, ca
}

// probeKey is a public key that no host has: a probe for what a
// known_hosts checker expects.
const probeKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh"

// callback returns the host key check; seen receives the key the host
// presented (for a certificate, the key it certifies, which is what trust
// on first use records).
func (v *verifier) callback(seen *ssh.PublicKey) ssh.HostKeyCallback {
	return func(_ string, remote net.Addr, key ssh.PublicKey) error {
		plainKey := key
		cert, isCert := key.(*ssh.Certificate)
		if isCert {
			plainKey = cert.Key
		}
		*seen = plainKey
		if v.check == nil {
			return nil
		}
		err := v.check(v.address, remote, key)
		if err != nil && isCert && v.check(v.address, remote, cert.Key) == nil {
			return nil // a certificate for a key pinned as such, as OpenSSH accepts
		}
		var keyErr *knownhosts.KeyError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &keyErr):
			return &HostKeyError{Address: v.address, Presented: key, Expected: keyErr.Want}
		default: // a host certificate that no pinned CA signed, a revoked key
			return &HostKeyError{Address: v.address, Presented: key, Reason: err.Error()}
		}
	}
}

// knownHostsDB is parsed known_hosts content.
type knownHostsDB struct {
	check ssh.HostKeyCallback
	cas   []ssh.PublicKey // the keys of its @cert-authority lines
}

// knownHostsCache holds parsed known_hosts by content: a provider-wide
// known_hosts is parsed once per provider process, not once per host.
var knownHostsCache sync.Map // content -> *knownHostsDB

func parseKnownHosts(content string) (*knownHostsDB, error) {
	if db, ok := knownHostsCache.Load(content); ok {
		return db.(*knownHostsDB), nil
	}
	check, err := knownHostsChecker(content)
	if err != nil {
		return nil, err
	}
	db := &knownHostsDB{check: check}
	for rest := []byte(content); len(rest) > 0; {
		marker, _, key, _, next, err := ssh.ParseKnownHosts(rest)
		if err != nil {
			break
		}
		if marker == "cert-authority" {
			db.cas = append(db.cas, key)
		}
		rest = next
	}
	knownHostsCache.Store(content, db)
	return db, nil
}

// knownHostsIndex sorts known_hosts lines by the host they name.
type knownHostsIndex struct {
	byHost map[string][]string // lowercased host entry -> the lines naming it
	// always are the lines that may apply to any host: hashed names,
	// patterns, and @revoked lines (which revoke a key for every host).
	always []string
}

var knownHostsIndexes sync.Map // content -> *knownHostsIndex

// linesFor returns the lines of known_hosts content that can apply to
// address (host and port as known_hosts writes them), so that each host's
// checker holds its own few lines rather than a fleet's: the knownhosts
// package walks every line of its file for each key it checks. For a host
// name all lines stay, as the checker also matches the address the name
// resolves to.
func linesFor(content, host, address string) string {
	if _, err := netip.ParseAddr(host); err != nil {
		return content
	}
	idx := knownHostsIndexOf(content)
	// A new slice: appending to the index's own would write into it.
	lines := slices.Concat(idx.byHost[strings.ToLower(knownhosts.Normalize(address))], idx.always)
	return strings.Join(lines, "\n") + "\n"
}

// portPatternLines reads known_hosts patterns for a port other than 22 as
// OpenSSH does, which matches them against "[host]:port": "*" and
// "@cert-authority *" apply to every port. The knownhosts package gives a
// pattern without a port port 22 alone. It returns each pattern line that
// OpenSSH applies to address (none of its negated patterns matches, another
// does) with the address in place of the patterns, for a checker beside
// the one of linesFor; "" when there is none, and always for port 22, where
// the package reads patterns as OpenSSH does.
func portPatternLines(content, address string) string {
	name := knownhosts.Normalize(address)
	if !strings.HasPrefix(name, "[") {
		return ""
	}
	var out strings.Builder
	for _, line := range knownHostsIndexOf(content).always {
		fields := strings.Fields(line)
		at := 0 // the patterns' field
		if strings.HasPrefix(fields[0], "@") {
			if fields[0] != "@cert-authority" {
				continue // @revoked applies to every host as it is
			}
			at = 1
		}
		if len(fields) < at+3 || strings.HasPrefix(fields[at], "|") || !matchesHost(fields[at], strings.ToLower(name)) {
			continue
		}
		fields[at] = name
		out.WriteString(strings.Join(fields, " ") + "\n")
	}
	return out.String()
}

// matchesHost reads a comma-separated known_hosts pattern list as
// OpenSSH's match_hostname does: name matches when a pattern matches it
// and no negated one ("!pattern") does; "*" and "?" are the only wildcards
// and case does not count.
func matchesHost(patterns, name string) bool {
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
// (any one byte) and literal bytes.
func wildcardMatch(pattern, s string) bool {
	for pattern != "" {
		switch {
		case pattern[0] == '*':
			pattern = strings.TrimLeft(pattern, "*")
			for i := len(s); i >= 0; i-- {
				if wildcardMatch(pattern, s[i:]) {
					return true
				}
			}
			return false
		case s == "" || (pattern[0] != '?' && pattern[0] != s[0]):
			return false
		}
		pattern, s = pattern[1:], s[1:]
	}
	return s == ""
}

// knownHostsIndexOf is the index of known_hosts content, made once.
func knownHostsIndexOf(content string) *knownHostsIndex {
	cached, ok := knownHostsIndexes.Load(content)
	if !ok {
		cached, _ = knownHostsIndexes.LoadOrStore(content, indexKnownHosts(content))
	}
	return cached.(*knownHostsIndex)
}

func indexKnownHosts(content string) *knownHostsIndex {
	idx := &knownHostsIndex{byHost: map[string][]string{}}
	for _, line := range strings.Split(content, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		hosts := fields[0]
		if strings.HasPrefix(hosts, "@") {
			if hosts == "@revoked" || len(fields) < 2 {
				idx.always = append(idx.always, line)
				continue
			}
			hosts = fields[1]
		}
		entries := strings.Split(hosts, ",")
		if strings.ContainsAny(hosts, "|*?!") {
			idx.always = append(idx.always, line)
			continue
		}
		for _, e := range entries {
			e = strings.ToLower(e)
			idx.byHost[e] = append(idx.byHost[e], line)
		}
	}
	return idx
}

// unionCheck checks a key as one known_hosts file holding every db's lines
// would: a key any of them revokes is refused, one any of them holds is
// accepted, and a mismatch lists the keys of all of them.
func unionCheck(dbs []*knownHostsDB) ssh.HostKeyCallback {
	if len(dbs) == 1 {
		return dbs[0].check
	}
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		errs := make([]error, len(dbs))
		for i, db := range dbs {
			errs[i] = db.check(host, remote, key)
			var revoked *knownhosts.RevokedError
			if errors.As(errs[i], &revoked) {
				return errs[i]
			}
		}
		mismatch := &knownhosts.KeyError{}
		var other error
		for _, err := range errs {
			var keyErr *knownhosts.KeyError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &keyErr):
				mismatch.Want = append(mismatch.Want, keyErr.Want...)
			case other == nil || strings.Contains(other.Error(), "no authorities for hostname"):
				other = err // a certificate's: the most telling one
			}
		}
		if other != nil {
			return other
		}
		return mismatch
	}
}

// knownHostsChecker parses known_hosts content with the knownhosts
// package, which reads only files.
func knownHostsChecker(content string) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "kha-known-hosts-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, werr := f.WriteString(content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, werr
	}
	check, err := knownhosts.New(f.Name())
	if err != nil {
		return nil, fmt.Errorf("ssh.known_hosts: %v", err)
	}
	return check, nil
}

// HostKeyError means the host presented a key it was not expected to.
type HostKeyError struct {
	Address   string
	Presented ssh.PublicKey
	Expected  []knownhosts.KnownKey
	Reason    string // set when the key was refused for another reason than a mismatch
}

func (e *HostKeyError) Error() string {
	var want []string
	for _, k := range e.Expected {
		want = append(want, k.Key.Type()+" "+ssh.FingerprintSHA256(k.Key))
	}
	expected := "no key for this address"
	switch {
	case e.Reason != "":
		expected = "a key it could verify (" + e.Reason + ")"
	case len(want) > 0:
		expected = strings.Join(want, ", ")
	}
	return fmt.Sprintf("host key verification failed for %s: it presented %s %s, expected %s. Something may be "+
		"intercepting the connection. If the host was reinstalled or re-keyed on purpose, check the new key out of "+
		"band and set ssh.host_key (or ssh.known_hosts) to it; a key recorded by trust on first use is replaced the "+
		"same way", e.Address, e.Presented.Type(), ssh.FingerprintSHA256(e.Presented), expected)
}
