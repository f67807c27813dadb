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
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/kha/terraform-provider-kha/internal/hostkey"
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
	// RefreshTimeout bounds connecting to read the host (GetForRead):
	// refresh and plan; 0 means DefaultRefreshTimeout, or Timeout when
	// that is shorter.
	RefreshTimeout time.Duration
	// Sudo runs privileged steps through `sudo -n`.
	Sudo bool

	// Bastion, when set, is the jump host the connection goes through.
	Bastion *Config
}

// DefaultTimeout is Terraform provisioners' connection timeout.
const DefaultTimeout = 5 * time.Minute

// DefaultRefreshTimeout is how long a read of the host keeps trying to
// connect: short, because a plan waits on it and a dead host is what an
// HA estate plans around.
const DefaultRefreshTimeout = 20 * time.Second

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

// KeyscanCommand is the command that prints the host's keys, run where
// the host is reachable: here, or on the bastion when there is one (the
// hosts behind a bastion are often not reachable from where Terraform
// runs).
func (c Config) KeyscanCommand() string {
	cmd := fmt.Sprintf("ssh-keyscan -p %d %s", c.port(), c.Host)
	if b := c.Bastion; b != nil {
		cmd = fmt.Sprintf("ssh -p %d %s@%s %s", b.port(), b.user(), b.Host, cmd)
	}
	return cmd
}

// KeyscanWhere says, with a bastion, that ssh-keyscan runs on it and that
// what it prints must be checked out of band.
func (c Config) KeyscanWhere() string {
	if c.Bastion == nil {
		return ""
	}
	return fmt.Sprintf(" (run ssh-keyscan on the bastion %s, which reaches %s, and compare the fingerprints "+
		"(`ssh-keygen -lf`) with the host's console; the bastion is verified too: a known_hosts line for its own address, or bastion_host_key)", c.Bastion.Address(), c.Host)
}

// Address is host:port, IPv6-safe.
func (c Config) Address() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.port())) }

func (c Config) timeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// budget is how long a caller keeps trying to connect, and the setting
// that says so.
type budget struct {
	d       time.Duration
	setting string
}

func (c Config) applyBudget() budget { return budget{c.timeout(), "ssh.timeout"} }

func (c Config) readBudget() budget {
	switch {
	case c.RefreshTimeout > 0:
		return budget{c.RefreshTimeout, "ssh.refresh_timeout"}
	case c.timeout() < DefaultRefreshTimeout:
		return budget{c.timeout(), "ssh.timeout"}
	}
	return budget{DefaultRefreshTimeout, "ssh.refresh_timeout"}
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
		strconv.FormatBool(c.Agent), c.AgentIdentity, c.HostKey, knownHostsDigest(c.KnownHosts), c.TrustedHostKey,
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
		return fmt.Errorf("%w %s: set ssh.host_key to the host's public key (a line of `%s` without the "+
			"host name) or to the CA key that signs its host certificate, or ssh.known_hosts to known_hosts content "+
			"(`ssh-keyscan` output as it is)%s; ssh.insecure_trust_on_first_use = true records the key seen at the "+
			"first connection instead", ErrNoHostKey, c.Address(), c.KeyscanCommand(), c.KeyscanWhere())
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
		if c.HostKey == "" && !c.InsecureTrustOnFirstUse && !v.KnowsHost {
			return fmt.Errorf("ssh.known_hosts has no key and no @cert-authority line for %s (lines for a port other than 22 "+
				"are written [host]:port); add the output of `%s`%s", c.Address(), c.KeyscanCommand(), c.KeyscanWhere())
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
var signerCache cache[[sha256.Size]byte, parsedSigner] // by the sha256 of key and certificate

// signers parses the private key and its certificate. It never echoes
// key material in an error.
func (c Config) signers() (ssh.Signer, string, bool, error) {
	id := sha256.Sum256([]byte(c.PrivateKey + "\x00" + c.Certificate))
	if p, ok := signerCache.Load(id); ok {
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
		method, closeAgent, err := agentAuth(c.AgentIdentity)
		if err != nil {
			return nil, nil, cleanup, err
		}
		cleanup = closeAgent
		methods = append(methods, method)
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

// agentAuth authenticates with the keys of the SSH agent at
// SSH_AUTH_SOCK, or with the one whose comment or SHA256 fingerprint is
// identity; the returned func closes the agent connection.
func agentAuth(identity string) (ssh.AuthMethod, func(), error) {
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, nil, errors.New("ssh.agent is true but SSH_AUTH_SOCK is not set")
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the SSH agent at SSH_AUTH_SOCK: %v", err)
	}
	ag := agent.NewClient(conn)
	signers := func() ([]ssh.Signer, error) {
		all, err := ag.Signers()
		if err != nil || identity == "" {
			return all, err
		}
		keys, _ := ag.List()
		for i, k := range keys {
			if i < len(all) && (k.Comment == identity || ssh.FingerprintSHA256(k) == identity) {
				return []ssh.Signer{all[i]}, nil
			}
		}
		return nil, fmt.Errorf("the SSH agent holds no key with comment or fingerprint %q", identity)
	}
	return ssh.PublicKeysCallback(signers), func() { conn.Close() }, nil
}

// verifier checks host keys for one address (hostkey.Verifier), and
// says which address a refused key came from.
type verifier struct {
	*hostkey.Verifier
	address string
}

// verifierCache holds verifiers by the configuration's key material and
// address.
var verifierCache cache[verifierKey, *verifier]

// verifierKey names a verifier by its address and key material;
// known_hosts enters parsed, as looking it up in knownHostsCache already
// read the content once.
type verifierKey struct {
	address, pinned, trusted string
	knownHosts               *hostkey.KnownHosts // nil without known_hosts
}

// verifier parses the configuration's host key settings into a verifier:
// known_hosts, ssh.host_key, and the key recorded on first use.
func (c Config) verifier() (*verifier, error) {
	pinned := c.HostKey
	trusted := ""
	if pinned == "" && c.InsecureTrustOnFirstUse {
		trusted = c.TrustedHostKey
	}
	var known *hostkey.KnownHosts
	if c.KnownHosts != "" {
		var err error
		if known, err = parseKnownHosts(c.KnownHosts); err != nil {
			return nil, err
		}
	}
	cacheKey := verifierKey{c.Address(), pinned, trusted, known}
	if v, ok := verifierCache.Load(cacheKey); ok {
		return v, nil
	}
	var pinnedKey, trustedKey ssh.PublicKey
	var err error
	if pinned != "" {
		if pinnedKey, err = parseHostKey("ssh.host_key", pinned); err != nil {
			return nil, err
		}
	}
	if trusted != "" {
		if trustedKey, err = parseHostKey("the recorded trusted_host_key", trusted); err != nil {
			return nil, err
		}
	}
	v := &verifier{Verifier: hostkey.NewVerifier(c.Host, c.port(), known, pinnedKey, trustedKey), address: c.Address()}
	verifierCache.Store(cacheKey, v)
	return v, nil
}

func parseHostKey(attr, text string) (ssh.PublicKey, error) {
	key, err := parsePublicKey(text)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not in authorized_keys format: %v", attr, text, err)
	}
	return key, nil
}

// callback returns the host key check; seen receives the key the host
// presented (for a certificate, the key it certifies, which is what trust
// on first use records).
func (v *verifier) callback(seen *ssh.PublicKey) ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		*seen = key
		if cert, isCert := key.(*ssh.Certificate); isCert {
			*seen = cert.Key
		}
		if err := v.Check(hostname, remote, key); err != nil {
			return &HostKeyError{Address: v.address, Presented: key, Err: err}
		}
		return nil
	}
}

// knownHostsCache holds parsed known_hosts by content: a provider-wide
// known_hosts is parsed once per provider process, not once per host.
var knownHostsCache cache[string, *hostkey.KnownHosts] // by content

func parseKnownHosts(content string) (*hostkey.KnownHosts, error) {
	if known, ok := knownHostsCache.Load(content); ok {
		return known, nil
	}
	known, err := hostkey.ParseKnownHosts(content)
	if err != nil {
		return nil, fmt.Errorf("ssh.known_hosts: %w", err)
	}
	knownHostsCache.Store(content, known)
	return known, nil
}

// knownHostsDigests holds the digest of known_hosts content by content: a
// provider-wide known_hosts grows with the fleet, and hashing it for the
// pool's key of every resource made each lookup cost as much as the fleet
// is large.
var knownHostsDigests cache[string, string]

func knownHostsDigest(content string) string {
	if digest, ok := knownHostsDigests.Load(content); ok {
		return digest
	}
	sum := sha256.Sum256([]byte(content))
	digest := string(sum[:])
	knownHostsDigests.Store(content, digest)
	return digest
}

// HostKeyError means the host presented a key it was not expected to.
type HostKeyError struct {
	Address   string
	Presented ssh.PublicKey
	// Err says why: a *hostkey.MismatchError, *hostkey.UnknownHostError,
	// *hostkey.RevokedError or *hostkey.CertificateError.
	Err error
}

func (e *HostKeyError) Error() string {
	expected := "a key it could verify (" + e.Err.Error() + ")"
	var mismatch *hostkey.MismatchError
	var unknown *hostkey.UnknownHostError
	switch {
	case errors.As(e.Err, &mismatch):
		expected = expectedKeys(mismatch)
	case errors.As(e.Err, &unknown):
		expected = "no key for this address"
	}
	return fmt.Sprintf("host key verification failed for %s: it presented %s %s, expected %s. Something may be "+
		"intercepting the connection. If the host was reinstalled or re-keyed on purpose, check the new key out of "+
		"band and set ssh.host_key (or ssh.known_hosts) to it; a key recorded by trust on first use is replaced the "+
		"same way", e.Address, e.Presented.Type(), ssh.FingerprintSHA256(e.Presented), expected)
}

func (e *HostKeyError) Unwrap() error { return e.Err }

// expectedKeys lists the fingerprints of a host's keys, then of the CAs
// that are not also among them (a pinned key is both).
func expectedKeys(m *hostkey.MismatchError) string {
	var want []string
	listed := map[string]bool{}
	for _, k := range m.Expected {
		listed[string(k.Marshal())] = true
		want = append(want, k.Type()+" "+ssh.FingerprintSHA256(k))
	}
	for _, k := range m.Authorities {
		if !listed[string(k.Marshal())] {
			want = append(want, "a certificate signed by "+k.Type()+" "+ssh.FingerprintSHA256(k))
		}
	}
	return strings.Join(want, ", ")
}
