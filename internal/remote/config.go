// Package remote delivers files to hosts over SSH: verified host keys, one
// pooled connection per host, and a managed-file primitive that uploads to
// a temporary file, validates it, renames it atomically over the target and
// reloads the service, restoring the previous file on any failure.
//
// It knows nothing of Terraform; resources translate their schema into a
// Config and a File.
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

	// Timeout bounds dialing, including retries; 0 means DefaultTimeout.
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

// Validate reports configuration mistakes before anything is dialed.
func (c Config) Validate() error {
	if c.Host == "" {
		return errors.New("ssh.host is empty: set the host's address")
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("ssh.port %d is not a TCP port (1-65535)", c.Port)
	}
	if c.HostKey == "" && c.KnownHosts == "" && !c.InsecureTrustOnFirstUse {
		return fmt.Errorf("%w %s: set ssh.host_key to the host's public key (for example the output of "+
			"`ssh-keyscan -t ed25519 %s`, without the host name) or to the CA key that signs its host certificate, or "+
			"ssh.known_hosts to known_hosts content; ssh.insecure_trust_on_first_use = true records the "+
			"key seen at the first connection instead", ErrNoHostKey, c.Address(), c.Host)
	}
	if c.HostKey != "" {
		if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(c.HostKey)); err != nil {
			return fmt.Errorf("ssh.host_key is not a public key in authorized_keys format (\"ssh-ed25519 AAAA...\"): %v", err)
		}
	}
	if c.PrivateKey == "" && c.Password == "" && !c.Agent {
		return errors.New("no authentication method: set ssh.private_key (or private_key_wo), ssh.password (or password_wo), or ssh.agent = true")
	}
	if c.Certificate != "" && c.PrivateKey == "" {
		return errors.New("ssh.certificate needs ssh.private_key: the certificate signs that key")
	}
	if c.Bastion != nil {
		if err := c.Bastion.Validate(); err != nil {
			return fmt.Errorf("bastion: %w", err)
		}
	}
	return nil
}

// authMethods returns the SSH auth methods and their names for messages.
func (c Config) authMethods() ([]ssh.AuthMethod, []string, func(), error) {
	var methods []ssh.AuthMethod
	var names []string
	cleanup := func() {}
	if c.PrivateKey != "" {
		signer, err := ssh.ParsePrivateKey([]byte(c.PrivateKey))
		if err != nil {
			var missing *ssh.PassphraseMissingError
			if errors.As(err, &missing) {
				return nil, nil, cleanup, errors.New("ssh.private_key is encrypted with a passphrase; give an unencrypted key or use ssh.agent")
			}
			return nil, nil, cleanup, errors.New("ssh.private_key is not a valid private key (OpenSSH or PEM)")
		}
		if c.Certificate != "" {
			pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(c.Certificate))
			cert, ok := pub.(*ssh.Certificate)
			if err != nil || !ok {
				return nil, nil, cleanup, errors.New("ssh.certificate is not an SSH user certificate (\"ssh-ed25519-cert-v01@openssh.com AAAA...\")")
			}
			if signer, err = ssh.NewCertSigner(cert, signer); err != nil {
				return nil, nil, cleanup, fmt.Errorf("ssh.certificate does not match ssh.private_key: %v", err)
			}
		}
		methods = append(methods, ssh.PublicKeys(signer))
		names = append(names, "publickey ("+signer.PublicKey().Type()+" "+ssh.FingerprintSHA256(signer.PublicKey())+")")
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

// hostKeyCallback verifies the host against HostKey (as a pinned key and
// as a host CA) and KnownHosts, or records the key on first use. seen
// receives the key the host presented.
func (c Config) hostKeyCallback(seen *ssh.PublicKey) (ssh.HostKeyCallback, error) {
	var lines []string
	if c.KnownHosts != "" {
		lines = append(lines, c.KnownHosts)
	}
	pinned := c.HostKey
	if pinned == "" && c.InsecureTrustOnFirstUse {
		pinned = c.TrustedHostKey
	}
	if pinned != "" {
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(pinned))
		if err != nil {
			return nil, fmt.Errorf("host key %q is not in authorized_keys format: %v", pinned, err)
		}
		line := knownhosts.Line([]string{c.Address()}, key)
		lines = append(lines, line, "@cert-authority "+line)
	}
	if len(lines) == 0 { // trust on first use, nothing recorded yet
		return func(_ string, _ net.Addr, key ssh.PublicKey) error {
			*seen = key
			return nil
		}, nil
	}
	check, err := knownHostsChecker(strings.Join(lines, "\n") + "\n")
	if err != nil {
		return nil, err
	}
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		*seen = key
		err := check(c.Address(), remote, key)
		var keyErr *knownhosts.KeyError
		switch {
		case errors.As(err, &keyErr):
			return &HostKeyError{Address: c.Address(), Presented: key, Expected: keyErr.Want}
		case err != nil: // a host certificate that no pinned CA signed, a revoked key
			return &HostKeyError{Address: c.Address(), Presented: key, Reason: err.Error()}
		}
		return nil
	}, nil
}

// knownHostsCache holds one parsed checker per known_hosts content: a
// provider-wide known_hosts is parsed once, not once per host.
var knownHostsCache sync.Map // content -> ssh.HostKeyCallback

// knownHostsChecker parses known_hosts content with the knownhosts
// package, which reads only files.
func knownHostsChecker(content string) (ssh.HostKeyCallback, error) {
	if check, ok := knownHostsCache.Load(content); ok {
		return check.(ssh.HostKeyCallback), nil
	}
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
	knownHostsCache.Store(content, check)
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
	return fmt.Sprintf("host key verification failed for %s: it presented %s %s, expected %s. If the host was "+
		"reinstalled, update ssh.host_key / known_hosts; otherwise something may be intercepting the connection",
		e.Address, e.Presented.Type(), ssh.FingerprintSHA256(e.Presented), expected)
}
