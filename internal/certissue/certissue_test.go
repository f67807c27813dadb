package certissue

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

var now = time.Now()

// testCert issues a certificate (self-signed when parent is nil).
func testCert(t testing.TB, cn string, pub any, priv any, parent *x509.Certificate, notBefore, notAfter time.Time, dns []string, ips ...string) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, NotBefore: notBefore, NotAfter: notAfter,
		DNSNames: dns, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage, tmpl.ExtKeyUsage = true, true, x509.KeyUsageCertSign, nil
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type testPKI struct {
	ca   *x509.Certificate
	key  *ecdsa.PrivateKey
	live *x509.Certificate
}

func newTestPKI(t testing.TB, caEnd time.Time) testPKI {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := testCert(t, "kubernetes", &caKey.PublicKey, caKey, nil, now.Add(-time.Hour), caEnd, nil)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	live := testCert(t, "kube-apiserver", &rsaKey.PublicKey, caKey, ca, now.Add(-24*time.Hour), now.Add(364*24*time.Hour),
		[]string{"cp1", "kubernetes", "kubernetes.default"}, "10.96.0.1", "10.0.0.11")
	return testPKI{ca: ca, key: caKey, live: live}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t, now.Add(10*365*24*time.Hour))
	want := Want{DNSNames: []string{"API.example.com.", "kubernetes"}, IPAddresses: []string{"10.0.0.100", "::ffff:10.0.0.11", "fd00::0001"}}
	cases := []struct {
		name    string
		want    Want
		live    *x509.Certificate
		caEnd   time.Time
		check   func(Issue) string
		wantErr string
	}{
		{name: "kubeadm's defaults without a live certificate", want: want, check: func(i Issue) string {
			if i.Algorithm != RSA2048 || i.Days != 365 || i.CommonName != "kube-apiserver" {
				return "not kubeadm's defaults"
			}
			if strings.Join(i.SANs.Strings(), ",") != "DNS:api.example.com,DNS:kubernetes,IP:10.0.0.100,IP:10.0.0.11,IP:fd00::1" {
				return "SANs not canonical"
			}
			return ""
		}},
		{name: "the live certificate's SANs, algorithm and validity are kept", want: Want{DNSNames: want.DNSNames, IPAddresses: want.IPAddresses, KeepLiveSANs: true},
			live: p.live, check: func(i Issue) string {
				if i.Algorithm != RSA2048 || i.Days != 365 {
					return "not the live certificate's algorithm or validity"
				}
				if got := strings.Join(i.SANs.Strings(), ","); got != "DNS:api.example.com,DNS:cp1,DNS:kubernetes,DNS:kubernetes.default,IP:10.0.0.100,IP:10.0.0.11,IP:10.96.0.1,IP:fd00::1" {
					return "SANs " + got
				}
				return ""
			}},
		{name: "the configuration's algorithm and validity win", want: Want{DNSNames: want.DNSNames, Algorithm: ECDSAP384, Validity: 90 * 24 * time.Hour},
			live: p.live, check: func(i Issue) string {
				if i.Algorithm != ECDSAP384 || i.Days != 90 || len(i.SANs.IPAddresses) != 0 {
					return "the configuration lost"
				}
				return ""
			}},
		{name: "never past the CA's end", want: want, caEnd: now.Add(100*24*time.Hour + time.Hour), check: func(i Issue) string {
			if i.Days != 100 {
				return "days past the CA's end"
			}
			return ""
		}},
		{name: "a CA about to end", want: want, caEnd: now.Add(time.Hour), wantErr: "renew the CA first"},
		{name: "no SANs", want: Want{}, wantErr: "no SANs"},
		{name: "a name openssl would read as more", want: Want{DNSNames: []string{"a.example.com,IP:1.2.3.4"}}, wantErr: "not a DNS name"},
		{name: "a newline", want: Want{DNSNames: []string{"a\n[v3]"}}, wantErr: "not a DNS name"},
		{name: "an IP with a zone", want: Want{IPAddresses: []string{"fe80::1%eth0"}}, wantErr: "not an IP address"},
		{name: "an unknown algorithm", want: Want{DNSNames: []string{"a"}, Algorithm: "DSA-1024"}, wantErr: "unknown key algorithm"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ca := p.ca
			if !tc.caEnd.IsZero() {
				ca = newTestPKI(t, tc.caEnd).ca
			}
			got, err := Plan(tc.want, tc.live, ca, now, "0a")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if why := tc.check(got); why != "" {
				t.Fatalf("%s: %+v", why, got)
			}
		})
	}
}

// TestPlan_liveSANsFiltered: the live certificate's SANs, kept, pass the
// filter the configuration's do: a name openssl's configuration would read
// as more than a name (another SAN, a new section) is left out, and the
// extension section has only the names that pass.
func TestPlan_liveSANsFiltered(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t, now.Add(10*365*24*time.Hour))
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	hostile := []string{"cp1", "a.example.com,IP:192.0.2.66", "b.example.com\n[v3]\nbasicConstraints=critical,CA:TRUE", "c$ENV::HOME",
		"d e.example.com", "#f"}
	live := testCert(t, "kube-apiserver", &key.PublicKey, p.key, p.ca, now.Add(-24*time.Hour), now.Add(364*24*time.Hour), hostile, "10.0.0.11")
	got, err := Plan(Want{DNSNames: []string{"kubernetes"}, KeepLiveSANs: true}, live, p.ca, now, "0a")
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(got.SANs.Strings(), ","); s != "DNS:cp1,DNS:kubernetes,IP:10.0.0.11" {
		t.Errorf("SANs %s: want the live certificate's that pass the filter, and the configuration's", s)
	}
	if len(got.Dropped) != len(hostile)-1 {
		t.Errorf("dropped %q: want every live name but cp1", got.Dropped)
	}
	ext := got.Extensions()
	if !strings.HasSuffix(ext, "\nsubjectAltName=DNS:cp1,DNS:kubernetes,IP:10.0.0.11\n") || strings.Count(ext, "\n") != 7 ||
		strings.Contains(ext, "192.0.2.66") || strings.Contains(strings.ToLower(ext), "ca:true") {
		t.Errorf("the extension section carries a live name that is not one:\n%s", ext)
	}
}

func TestExtensions(t *testing.T) {
	t.Parallel()
	i := Issue{CommonName: "kube-apiserver", Algorithm: ECDSAP256, SANs: SANs{DNSNames: []string{"a.example.com"}, IPAddresses: []string{"10.0.0.1"}}}
	got := i.Extensions()
	for _, want := range []string{"keyUsage=critical,digitalSignature\n", "extendedKeyUsage=serverAuth\n", "subjectAltName=DNS:a.example.com,IP:10.0.0.1\n", "basicConstraints=critical,CA:FALSE\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	i.Algorithm = RSA2048
	if !strings.Contains(i.Extensions(), "keyUsage=critical,digitalSignature,keyEncipherment\n") {
		t.Error("an RSA key is for key encipherment too, as kubeadm issues it")
	}
}

func TestLacks(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t, now.Add(365*24*time.Hour))
	other := newTestPKI(t, now.Add(365*24*time.Hour))
	cases := []struct {
		name string
		c    *x509.Certificate
		ca   *x509.Certificate
		want Want
		is   string
	}{
		{"has all it should", p.live, p.ca, Want{DNSNames: []string{"kubernetes"}, IPAddresses: []string{"10.0.0.11"}, KeepLiveSANs: true}, ""},
		{"a new load balancer name", p.live, p.ca, Want{DNSNames: []string{"api.example.com", "kubernetes"}, KeepLiveSANs: true}, "lacks DNS:api.example.com"},
		{"more than planned, without keep", p.live, p.ca, Want{DNSNames: []string{"cp1", "kubernetes", "kubernetes.default"}, IPAddresses: []string{"10.96.0.1"}},
			"has SANs beyond the planned ones: IP:10.0.0.11"},
		{"another CA's", p.live, other.ca, Want{DNSNames: []string{"kubernetes"}, KeepLiveSANs: true}, "does not verify against the CA"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Lacks(tc.c, tc.ca, tc.want, now)
			if tc.is == "" && got != "" || !strings.Contains(got, tc.is) {
				t.Fatalf("Lacks = %q, want %q", got, tc.is)
			}
		})
	}
	if got := Due(p.live, p.ca, Want{DNSNames: []string{"kubernetes"}, KeepLiveSANs: true}, now.Add(400*24*time.Hour)); !strings.Contains(got, "expired") {
		t.Fatalf("an expired certificate: %q", got)
	}
}

// TestRenewal: a certificate that ends within renew_before lacks its
// renewal, with the date and the days left, unless the CA ends within the
// window too, which Notices then reports; with renewal off, an end within
// 30 days is a notice; a renewal that would be born due is refused.
func TestRenewal(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t, now.Add(10*365*24*time.Hour)) // live ends in 364 days
	shortCA := newTestPKI(t, now.Add(200*24*time.Hour))
	sans := Want{DNSNames: []string{"kubernetes"}, KeepLiveSANs: true}
	renew := func(days int) Want { w := sans; w.RenewBefore = time.Duration(days) * 24 * time.Hour; return w }
	byDefault := sans
	byDefault.RenewBefore, byDefault.RenewAtThird = ExpiryWatch, true
	// issued is a certificate of p's CA valid for days, issued ago days ago.
	issued := func(days, ago int) *x509.Certificate {
		start := now.Add(-time.Duration(ago) * 24 * time.Hour)
		return testCert(t, "kube-apiserver", &p.key.PublicKey, p.key, p.ca, start, start.Add(time.Duration(days)*24*time.Hour), []string{"kubernetes"})
	}
	cases := []struct {
		name    string
		c, ca   *x509.Certificate
		want    Want
		lacks   string // "" when it lacks nothing
		due     string // "" when it is not due
		notices []string
	}{
		{name: "ends after the window", c: p.live, ca: p.ca, want: renew(30)},
		{name: "ends within the window", c: p.live, ca: p.ca, want: renew(400),
			due: "expires on " + day(p.live.NotAfter) + ", in 363 days 23 hours 59 minutes: within renew_before (400 days)"},
		{name: "a window a minute short of a year, in units that do not contradict the time left", c: p.live, ca: p.ca,
			want: Want{DNSNames: sans.DNSNames, KeepLiveSANs: true, RenewBefore: 525599 * time.Minute},
			due:  "in 363 days 23 hours 59 minutes: within renew_before (364 days 23 hours 59 minutes)"},
		{name: "the CA ends within the window too: the CA's to renew", c: shortCA.live, ca: shortCA.ca, want: renew(365),
			notices: []string{`the cluster CA "kubernetes" expires on ` + day(shortCA.ca.NotAfter) + ", in 199 days", "Renew the CA"}},
		{name: "the CA ends within 30 days", c: p.live, ca: newTestPKI(t, now.Add(20*24*time.Hour)).ca, want: renew(0),
			lacks: "does not verify", notices: []string{"in 19 days"}},
		{name: "by default, 30 days before the end", c: issued(90, 61), ca: p.ca, want: byDefault, due: "in 28 days 23 hours 59 minutes: within renew_before (30 days)"},
		{name: "by default, a 30-day certificate 12 days before its end: not yet", c: issued(30, 18), ca: p.ca, want: byDefault},
		{name: "by default, a 30-day certificate in its last third", c: issued(30, 21), ca: p.ca, want: byDefault, due: "in 8 days 23 hours 59 minutes: within renew_before (10 days)"},
		{name: "by default, a one-day certificate just issued: not yet", c: issued(1, 0), ca: p.ca, want: byDefault},
		{name: "renewal off, 20 days left", c: testCert(t, "kube-apiserver", &p.key.PublicKey, p.key, p.ca, now.Add(-time.Hour), now.Add(20*24*time.Hour), []string{"kubernetes"}),
			ca: p.ca, want: renew(0), notices: []string{`renew_before = "0s" renews it only once it has expired`, "in 19 days"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Lacks(tc.c, tc.ca, tc.want, now); tc.lacks == "" && got != "" || !strings.Contains(got, tc.lacks) {
				t.Errorf("Lacks = %q, want %q", got, tc.lacks)
			}
			if got := Due(tc.c, tc.ca, tc.want, now); tc.due == "" && got != "" || !strings.Contains(got, tc.due) {
				t.Errorf("Due = %q, want %q", got, tc.due)
			}
			got := strings.Join(Notices(tc.c, tc.ca, tc.want, now), "\n")
			for _, n := range tc.notices {
				if !strings.Contains(got, n) {
					t.Errorf("Notices = %q, want %q in them", got, n)
				}
			}
			if len(tc.notices) == 0 && got != "" {
				t.Errorf("Notices = %q, want none", got)
			}
		})
	}
	t.Run("a renewal born due is refused", func(t *testing.T) {
		t.Parallel()
		if _, err := Plan(renew(400), p.live, p.ca, now, "01"); err == nil || !strings.Contains(err.Error(), "not longer than renew_before") {
			t.Errorf("Plan with a window longer than the live certificate's validity: %v", err)
		}
		w := renew(400)
		w.Validity = 2 * 365 * 24 * time.Hour
		if issue, err := Plan(w, p.live, p.ca, now, "01"); err != nil || issue.Days != 730 {
			t.Errorf("Plan with validity past the window: %d days, %v", issue.Days, err)
		}
		if _, err := Plan(renew(365), shortCA.live, shortCA.ca, now, "01"); err != nil {
			t.Errorf("Plan under a CA that ends within the window (its SANs may still change): %v", err)
		}
	})
}

// FuzzNewSANs: whatever the input, a SAN that passes never carries what
// openssl's configuration would read as more than one value.
func FuzzNewSANs(f *testing.F) {
	for _, seed := range []string{"kubernetes", "*.example.com", "a,b", "a\nb", "10.0.0.1", "fd00::1", "$ENV::x", "a b", "x#y", "under_score"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sans, err := NewSANs([]string{s}, nil)
		if err == nil {
			for _, d := range sans.DNSNames {
				if strings.ContainsAny(d, ",\n\r$# \t:=[]\\\"'") {
					t.Fatalf("%q passed as %q", s, d)
				}
			}
		}
		sans, err = NewSANs(nil, []string{s})
		if err == nil && strings.ContainsAny(sans.IPAddresses[0], ",\n$# %") {
			t.Fatalf("%q passed as IP %q", s, sans.IPAddresses[0])
		}
	})
}

// Keeps is what a certificate issued for a Want has: what the digest of a
// kha_apiserver_serving_certificate says, so that dropping a SAN the live
// certificate keeps leaves it as it was.
func TestKeeps(t *testing.T) {
	live := &SANs{DNSNames: []string{"cp1", "kubernetes", "bad,name"}, IPAddresses: []string{"10.0.0.1", "10.0.0.3"}}
	for _, tc := range []struct {
		name    string
		want    Want
		live    *SANs
		sans    []string
		dropped []string
	}{
		{"kept", Want{DNSNames: []string{"Kubernetes", "api.example"}, IPAddresses: []string{"10.0.0.1"}, KeepLiveSANs: true}, live,
			[]string{"DNS:api.example", "DNS:cp1", "DNS:kubernetes", "IP:10.0.0.1", "IP:10.0.0.3"}, []string{"bad,name"}},
		{"a SAN dropped that the live one keeps", Want{DNSNames: []string{"kubernetes"}, KeepLiveSANs: true}, live,
			[]string{"DNS:cp1", "DNS:kubernetes", "IP:10.0.0.1", "IP:10.0.0.3"}, []string{"bad,name"}},
		{"alone", Want{DNSNames: []string{"kubernetes"}}, live, []string{"DNS:kubernetes"}, nil},
		{"no live certificate", Want{DNSNames: []string{"kubernetes"}, KeepLiveSANs: true}, nil, []string{"DNS:kubernetes"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sans, dropped, err := tc.want.Keeps(tc.live)
			if err != nil || !slices.Equal(sans.Strings(), tc.sans) || !slices.Equal(dropped, tc.dropped) {
				t.Fatalf("Keeps = %v, dropped %q, %v; want %v, dropped %q", sans.Strings(), dropped, err, tc.sans, tc.dropped)
			}
		})
	}
	if _, _, err := (Want{DNSNames: []string{"a b"}}).Keeps(live); err == nil {
		t.Fatal("a name with a blank was kept")
	}
}
