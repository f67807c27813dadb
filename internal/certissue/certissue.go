// Package certissue decides what an apiserver serving certificate issued
// on a node must hold: its SANs (the plan's, and those of the live
// certificate kept), subject, key algorithm and validity, the way kubeadm
// issues it; it renders that as openssl's extension section and checks a
// certificate against it. Plain Go: no host, no Terraform.
package certissue

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The key algorithms, by kubeadm's names (ClusterConfiguration's
// encryptionAlgorithm).
const (
	RSA2048   = "RSA-2048"
	RSA3072   = "RSA-3072"
	RSA4096   = "RSA-4096"
	ECDSAP256 = "ECDSA-P256"
	ECDSAP384 = "ECDSA-P384"
)

// Algorithms are the key algorithms a certificate can be issued with.
var Algorithms = []string{RSA2048, RSA3072, RSA4096, ECDSAP256, ECDSAP384}

// kubeadm's defaults for a certificate it issues without a live one to
// follow: RSA-2048, one year, CN kube-apiserver.
const (
	DefaultAlgorithm  = RSA2048
	DefaultValidity   = 365 * 24 * time.Hour
	DefaultCommonName = "kube-apiserver"
)

// Want is what the configuration asks of the certificate.
type Want struct {
	DNSNames    []string
	IPAddresses []string
	// KeepLiveSANs adds the SANs of the certificate on the node to the
	// issued one (a node name kubeadm added, say).
	KeepLiveSANs bool
	// Algorithm and Validity, when set, replace the live certificate's.
	Algorithm string
	Validity  time.Duration
	// RenewBefore re-issues a certificate that ends within it; 0 renews
	// nothing before it has expired. With RenewAtThird (the default) it is
	// at most a third of each certificate's validity, so that a
	// short-lived certificate is not due as soon as it is issued.
	RenewBefore  time.Duration
	RenewAtThird bool
}

// Validity is when a certificate starts and ends, with its CA's end
// (zero when unknown): all that says whether it is due for renewal.
type Validity struct{ NotBefore, NotAfter, CANotAfter time.Time }

// ValidityOf is c's validity under ca (nil when unknown).
func ValidityOf(c, ca *x509.Certificate) Validity {
	v := Validity{NotBefore: c.NotBefore, NotAfter: c.NotAfter}
	if ca != nil {
		v.CANotAfter = ca.NotAfter
	}
	return v
}

// window is how long before its end a certificate of v is due for
// renewal.
func (w Want) window(v Validity) time.Duration {
	if w.RenewAtThird {
		return min(w.RenewBefore, v.NotAfter.Sub(v.NotBefore)/3)
	}
	return w.RenewBefore
}

// ExpiryWatch is how far ahead kha warns of an end nothing will renew
// (the default renew_before): the serving certificate's with renewal off,
// the CA's always.
const ExpiryWatch = 30 * 24 * time.Hour

// renewalDue says whether v ends within its window while a certificate
// issued now could end past it: one the CA does not cut short within the
// window too (that is the CA's to renew; Notices says so).
func (w Want) renewalDue(v Validity, now time.Time) bool {
	horizon := now.Add(w.window(v))
	return w.RenewBefore > 0 && v.NotAfter.Before(horizon) && (v.CANotAfter.IsZero() || v.CANotAfter.After(horizon))
}

// Notices warn of an end within the window that nothing will renew: the
// CA's (kha issues certificates under it but cannot renew it), and the
// certificate's when RenewBefore is 0.
func Notices(c, ca *x509.Certificate, want Want, now time.Time) []string {
	var notices []string
	window := max(want.RenewBefore, ExpiryWatch)
	if ca != nil && ca.NotAfter.Before(now.Add(window)) {
		notices = append(notices, fmt.Sprintf("the cluster CA %q expires on %s, in %s: every certificate it signed stops "+
			"verifying then, and kha issues none that outlasts it. Renew the CA before then.", ca.Subject.CommonName, day(ca.NotAfter), within(ca.NotAfter, now)))
	}
	if c != nil && want.RenewBefore == 0 && c.NotAfter.After(now) && c.NotAfter.Before(now.Add(ExpiryWatch)) {
		notices = append(notices, fmt.Sprintf("the certificate expires on %s, in %s, and renew_before = \"0s\" renews it only once it "+
			"has expired, after clients stopped trusting it: set renew_before.", day(c.NotAfter), within(c.NotAfter, now)))
	}
	return notices
}

// day is t as a date and time in UTC.
func day(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// within says how long until t, in days, or hours under two days.
func within(t, now time.Time) string {
	d := t.Sub(now)
	if d >= 48*time.Hour {
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	}
	return fmt.Sprintf("%d hours", int(d.Hours()))
}

// span is d in days, hours and minutes, each cut down, the zero ones left
// out: a time left and a window side by side never read as more than
// they are ("in 364 days 12 hours: within renew_before (364 days 23
// hours 59 minutes)").
func span(d time.Duration) string {
	var parts []string
	for _, u := range []struct {
		name string
		size time.Duration
	}{{"day", 24 * time.Hour}, {"hour", time.Hour}, {"minute", time.Minute}} {
		if n := d / u.size; n > 0 {
			d -= n * u.size
			name := u.name
			if n > 1 {
				name += "s"
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, name))
		}
	}
	if len(parts) == 0 {
		return "less than a minute"
	}
	return strings.Join(parts, " ")
}

// SANs is a canonical, sorted, repeat-free SAN set.
type SANs struct {
	DNSNames    []string
	IPAddresses []string
}

// Strings are the SANs as openssl writes them: DNS:name, IP:address.
func (s SANs) Strings() []string {
	out := make([]string, 0, len(s.DNSNames)+len(s.IPAddresses))
	for _, d := range s.DNSNames {
		out = append(out, "DNS:"+d)
	}
	for _, ip := range s.IPAddresses {
		out = append(out, "IP:"+ip)
	}
	return out
}

// dnsName is a DNS SAN kha writes into openssl's configuration: labels of
// letters, digits, hyphens and underscores, a leading "*." wildcard at
// most. Nothing that openssl's configuration syntax would read as more
// than a name (",", "$", "#", blanks) gets through.
var dnsName = regexp.MustCompile(`^(\*\.)?[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*\.?$`)

// NewSANs canonicalises SANs: lowercase names, IPs in their shortest
// form, sorted, once each. An entry that is neither is an error naming it.
func NewSANs(dns, ips []string) (SANs, error) {
	var s SANs
	for _, d := range dns {
		name, ok := canonicalDNSName(d)
		if !ok {
			return SANs{}, fmt.Errorf("%q is not a DNS name", name)
		}
		s.DNSNames = append(s.DNSNames, name)
	}
	for _, ip := range ips {
		a, err := netip.ParseAddr(ip)
		if err != nil || a.Zone() != "" {
			return SANs{}, fmt.Errorf("%q is not an IP address", ip)
		}
		s.IPAddresses = append(s.IPAddresses, a.Unmap().String())
	}
	slices.Sort(s.DNSNames)
	slices.Sort(s.IPAddresses)
	s.DNSNames, s.IPAddresses = slices.Compact(s.DNSNames), slices.Compact(s.IPAddresses)
	return s, nil
}

// canonicalDNSName is d lowercase without a trailing dot, and whether it
// is a name kha may write (dnsName).
func canonicalDNSName(d string) (string, bool) {
	d = strings.TrimSuffix(strings.ToLower(d), ".")
	return d, len(d) <= 253 && dnsName.MatchString(d)
}

// writable are the SANs of s that kha may write, as NewSANs would take
// them, and the names it may not. A live certificate is the host's: its
// names go through the filter the configuration's do, or one could carry
// ",IP:..." or a new openssl section into the certificate kha issues.
func (s SANs) writable() (SANs, []string) {
	out := SANs{IPAddresses: s.IPAddresses} // parsed from the certificate's bytes: addresses
	var dropped []string
	for _, d := range s.DNSNames {
		if _, ok := canonicalDNSName(d); ok {
			out.DNSNames = append(out.DNSNames, d)
		} else {
			dropped = append(dropped, d)
		}
	}
	return out, dropped
}

// SANsOf are a certificate's SANs, canonical.
func SANsOf(c *x509.Certificate) SANs {
	var s SANs
	for _, d := range c.DNSNames {
		s.DNSNames = append(s.DNSNames, strings.TrimSuffix(strings.ToLower(d), "."))
	}
	for _, ip := range c.IPAddresses {
		if a, ok := netip.AddrFromSlice(ip); ok {
			s.IPAddresses = append(s.IPAddresses, a.Unmap().String())
		}
	}
	slices.Sort(s.DNSNames)
	slices.Sort(s.IPAddresses)
	s.DNSNames, s.IPAddresses = slices.Compact(s.DNSNames), slices.Compact(s.IPAddresses)
	return s
}

// union is s with other's SANs added.
func (s SANs) union(other SANs) SANs {
	out := SANs{DNSNames: append(slices.Clone(s.DNSNames), other.DNSNames...), IPAddresses: append(slices.Clone(s.IPAddresses), other.IPAddresses...)}
	slices.Sort(out.DNSNames)
	slices.Sort(out.IPAddresses)
	out.DNSNames, out.IPAddresses = slices.Compact(out.DNSNames), slices.Compact(out.IPAddresses)
	return out
}

// missing are the SANs of s that have does not.
func (s SANs) missing(have SANs) []string {
	var out []string
	for _, d := range s.DNSNames {
		if !slices.Contains(have.DNSNames, d) {
			out = append(out, "DNS:"+d)
		}
	}
	for _, ip := range s.IPAddresses {
		if !slices.Contains(have.IPAddresses, ip) {
			out = append(out, "IP:"+ip)
		}
	}
	return out
}

// Equal says whether two canonical sets are the same.
func (s SANs) Equal(other SANs) bool {
	return slices.Equal(s.DNSNames, other.DNSNames) && slices.Equal(s.IPAddresses, other.IPAddresses)
}

// Issue is one certificate to issue.
type Issue struct {
	CommonName string
	SANs       SANs
	Algorithm  string
	Days       int
	// Serial is the serial number in hex, random.
	Serial string
	// Dropped are the live certificate's DNS names left out: not names
	// kha may write (see SANs.writable).
	Dropped []string
}

// commonName is a subject CN kha passes to openssl's -subj as it is.
var commonName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._:@-]{0,63}$`)

// Plan is the certificate to issue: want's SANs (and, when kept, the live
// certificate's that pass NewSANs' filter), the live certificate's
// subject CN, key algorithm and validity (kubeadm's defaults without
// one), never past the CA's end. now is when it is issued; serial its
// serial number in hex.
func Plan(want Want, live, ca *x509.Certificate, now time.Time, serial string) (Issue, error) {
	sans, err := NewSANs(want.DNSNames, want.IPAddresses)
	if err != nil {
		return Issue{}, err
	}
	if len(sans.DNSNames)+len(sans.IPAddresses) == 0 {
		return Issue{}, errors.New("no SANs: an apiserver certificate needs at least one")
	}
	out := Issue{CommonName: DefaultCommonName, SANs: sans, Algorithm: DefaultAlgorithm, Serial: serial}
	validity := DefaultValidity
	if live != nil {
		liveSANs := SANsOf(live)
		if out.SANs, out.Dropped, err = want.Keeps(&liveSANs); err != nil {
			return Issue{}, err
		}
		if commonName.MatchString(live.Subject.CommonName) {
			out.CommonName = live.Subject.CommonName
		}
		if a := AlgorithmOf(live); a != "" {
			out.Algorithm = a
		}
		if d := live.NotAfter.Sub(live.NotBefore); d >= 24*time.Hour {
			validity = d
		}
	}
	if want.Algorithm != "" {
		out.Algorithm = want.Algorithm
	}
	if want.Validity > 0 {
		validity = want.Validity
	}
	if !slices.Contains(Algorithms, out.Algorithm) {
		return Issue{}, fmt.Errorf("unknown key algorithm %q (one of %s)", out.Algorithm, strings.Join(Algorithms, ", "))
	}
	// openssl counts whole days from now; a certificate outliving its CA
	// stops verifying when the CA does.
	days := math.Ceil(validity.Hours() / 24)
	if left := math.Floor(ca.NotAfter.Sub(now).Hours() / 24); left < days {
		days = left
	}
	if days < 1 {
		return Issue{}, fmt.Errorf("the CA (%s) expires on %s, in less than a day: renew the CA first", ca.Subject.CommonName, day(ca.NotAfter))
	}
	// A certificate born inside the renewal window would be re-issued at
	// every apply; one the CA cuts short is the CA's to renew.
	if lasts := time.Duration(days) * 24 * time.Hour; !want.RenewAtThird && lasts <= want.RenewBefore && ca.NotAfter.After(now.Add(want.RenewBefore)) {
		return Issue{}, fmt.Errorf("the new certificate would be valid for %d days, not longer than renew_before (%s): it would be due "+
			"for renewal as soon as it is issued. Set validity longer than renew_before", int(days), want.RenewBefore)
	}
	out.Days = int(days)
	return out, nil
}

// Keeps are the SANs a certificate issued for w has: w's, and with
// KeepLiveSANs those of live (a live certificate's; nil for none) that
// pass NewSANs' filter. dropped are live's names that do not.
func (w Want) Keeps(live *SANs) (sans SANs, dropped []string, err error) {
	if sans, err = NewSANs(w.DNSNames, w.IPAddresses); err != nil || !w.KeepLiveSANs || live == nil {
		return sans, nil, err
	}
	kept, dropped := live.writable()
	return sans.union(kept), dropped, nil
}

// AlgorithmOf is the key algorithm of a certificate by kubeadm's names, or
// "" for one kha does not issue (Ed25519, DSA, odd sizes).
func AlgorithmOf(c *x509.Certificate) string {
	switch k := c.PublicKey.(type) {
	case *rsa.PublicKey:
		switch k.N.BitLen() {
		case 2048:
			return RSA2048
		case 3072:
			return RSA3072
		case 4096:
			return RSA4096
		}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return ECDSAP256
		case elliptic.P384():
			return ECDSAP384
		}
	case ed25519.PublicKey:
	}
	return ""
}

// Extensions is openssl's extension section "v3" for the certificate:
// a server certificate as kubeadm makes it (key usage, serverAuth, the
// SANs, key identifiers).
func (i Issue) Extensions() string {
	usage := "digitalSignature,keyEncipherment"
	if strings.HasPrefix(i.Algorithm, "ECDSA") {
		usage = "digitalSignature"
	}
	return "[v3]\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical," + usage + "\nextendedKeyUsage=serverAuth\n" +
		"subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\nsubjectAltName=" + strings.Join(i.SANs.Strings(), ",") + "\n"
}

// Subject is openssl's -subj for the certificate.
func (i Issue) Subject() string { return "/CN=" + i.CommonName }

// Check says why an issued certificate is not the one planned: other
// SANs, another CN or key algorithm, not signed by ca, not a server
// certificate; nil when it is.
func (i Issue) Check(c, ca *x509.Certificate) error {
	if got := SANsOf(c); !got.Equal(i.SANs) {
		return fmt.Errorf("it has the SANs %s, not %s", strings.Join(got.Strings(), ","), strings.Join(i.SANs.Strings(), ","))
	}
	if c.Subject.CommonName != i.CommonName {
		return fmt.Errorf("its CN is %q, not %q", c.Subject.CommonName, i.CommonName)
	}
	if a := AlgorithmOf(c); a != i.Algorithm {
		return fmt.Errorf("its key is %s, not %s", orUnknown(a), i.Algorithm)
	}
	return VerifiesAgainst(c, ca)
}

func orUnknown(a string) string {
	if a == "" {
		return "of another kind"
	}
	return a
}

// VerifiesAgainst says why c is not a server certificate that ca signed.
func VerifiesAgainst(c, ca *x509.Certificate) error {
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("it does not verify against the CA %q: %v", ca.Subject.CommonName, err)
	}
	return nil
}

// Lacks says what a certificate lacks of want, for the drift check: the
// planned SANs it does not have (and, without KeepLiveSANs, the ones it
// has beyond them), a signature other than ca's. "" when it has all it
// should. Its end is Due's.
func Lacks(c, ca *x509.Certificate, want Want, now time.Time) string {
	sans, err := NewSANs(want.DNSNames, want.IPAddresses)
	if err != nil {
		return err.Error()
	}
	have := SANsOf(c)
	var problems []string
	if m := sans.missing(have); len(m) > 0 {
		problems = append(problems, "lacks "+strings.Join(m, ","))
	}
	if extra := have.missing(sans); !want.KeepLiveSANs && len(extra) > 0 {
		problems = append(problems, "has SANs beyond the planned ones: "+strings.Join(extra, ","))
	}
	if ca != nil {
		if err := VerifiesAgainst(c, ca); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return strings.Join(problems, "; ")
}

// Due says why a certificate is due for renewal under want: it expired,
// or it ends within its window while a certificate issued now could end
// past it. "" when it is not due. A renewal that is due is no change
// made outside Terraform: the refresh tells it apart from Lacks.
func Due(c, ca *x509.Certificate, want Want, now time.Time) string {
	return want.Due(ValidityOf(c, ca), now)
}

// Due is Due for a certificate of validity v: what a plan judges from the
// state, with the planned window.
func (w Want) Due(v Validity, now time.Time) string {
	switch {
	case now.After(v.NotAfter):
		return "expired on " + day(v.NotAfter)
	case w.renewalDue(v, now):
		return fmt.Sprintf("expires on %s, in %s: within renew_before (%s)", day(v.NotAfter), span(v.NotAfter.Sub(now)),
			span(w.window(v)))
	}
	return ""
}

// ParsePEM is the first certificate of a PEM text.
func ParsePEM(text []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, text = pem.Decode(text)
		if block == nil {
			return nil, errors.New("no PEM certificate in it")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}
