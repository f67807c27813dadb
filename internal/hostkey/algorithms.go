package hostkey

import (
	"slices"

	"golang.org/x/crypto/ssh"
)

// Algorithms are the host key algorithms to ask the server for, in order:
// the server presents the first one it has, so it presents a key that
// verifies rather than its own first choice. Every certificate type comes
// first when a CA may vouch for the host (the server then presents its
// certificate), then the plain types of the host's keys, then their
// certificates (accepted for their plain key, as OpenSSH does). The
// host's types go in OpenSSH's order of preference, not the order they
// were listed in: ssh-keyscan lists RSA first, and an RSA signature costs
// the host tens of times what an Ed25519 one does on every connection.
// With nothing known, firstUseAlgorithms.
func (h *Host) Algorithms() []string {
	if !h.Known() {
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
	if len(h.Authorities) > 0 {
		add(certAlgorithms...)
	}
	types := make([]string, 0, len(h.Keys))
	for _, k := range h.Keys {
		types = append(types, k.Type())
	}
	slices.SortStableFunc(types, func(a, b string) int { return preference(a) - preference(b) })
	var certs []string
	for _, t := range types {
		p, c := keyAlgorithms(t)
		add(p...)
		certs = append(certs, c...)
	}
	add(certs...)
	return algos
}

// keyPreference is OpenSSH's order of host key types; a type it does not
// name goes after them, in the order it was listed.
var keyPreference = []string{
	ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoRSA,
}

func preference(keyType string) int {
	if i := slices.Index(keyPreference, keyType); i >= 0 {
		return i
	}
	return len(keyPreference)
}

// firstUseAlgorithms are asked for when nothing is known of the host
// (trust on first use): Ed25519 first, as OpenSSH prefers it, so the key
// recorded is the one `ssh-keyscan -t ed25519` shows.
var firstUseAlgorithms = []string{
	ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256,
	ssh.CertAlgoED25519v01, ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01, ssh.CertAlgoECDSA521v01,
	ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01,
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
