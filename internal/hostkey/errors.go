package hostkey

import (
	"errors"
	"fmt"

	"golang.org/x/crypto/ssh"
)

// MismatchError means the host is known and presented none of the keys
// known for it.
type MismatchError struct {
	Name        string          // the host as known_hosts writes it
	Expected    []ssh.PublicKey // the host's own keys
	Authorities []ssh.PublicKey // the CAs that may sign its host certificate
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("the key is not one of the %d keys and %d CAs known for %s", len(e.Expected), len(e.Authorities), e.Name)
}

// UnknownHostError means no key and no CA is known for the host.
type UnknownHostError struct{ Name string }

func (e *UnknownHostError) Error() string { return "no key and no CA is known for " + e.Name }

// RevokedError means the key, or the CA key that signed the presented
// certificate, is on an @revoked line.
type RevokedError struct{ Key ssh.PublicKey }

func (e *RevokedError) Error() string {
	return fmt.Sprintf("the key %s %s is revoked (@revoked in known_hosts)", e.Key.Type(), ssh.FingerprintSHA256(e.Key))
}

// CertificateError means a host certificate did not verify: no CA of the
// host signed it, or its CA's signature, validity period or principals
// refuse it.
type CertificateError struct {
	Name string
	Err  error
}

func (e *CertificateError) Error() string {
	return fmt.Sprintf("host certificate for %s: %v", e.Name, e.Err)
}

func (e *CertificateError) Unwrap() error { return e.Err }

var (
	errNoAuthority        = errors.New("no @cert-authority line or pinned CA key for the host signed it")
	errNotHostCertificate = errors.New("not a host certificate")
)
