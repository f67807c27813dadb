package provider

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/lbconfig"
	"github.com/kha/terraform-provider-kha/internal/remote"
	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestAccAPIServerCertificate_feedsExistingSANs reads the test
// apiserver certificate from a file over SSH and in TLS handshakes, and
// feeds its SANs into kha_cluster_endpoints: the plan passes while the
// endpoints verify against it and fails, at plan time, once a load
// balancer name it lacks is added.
func TestAccAPIServerCertificate_feedsExistingSANs(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	pki := testhost.TestPKI(t)
	certFile, _ := pki.WriteServerFiles(t, t.TempDir())
	apiserver := testhost.StartAPIServer(t, "cp1", "127.0.0.2")
	leaf, _ := x509.ParseCertificate(pki.Server.Certificate[0])
	sum := sha256.Sum256(leaf.Raw)
	vars := func(domain string) config.Variables {
		v := config.Variables{"host": config.StringVariable(s.Host), "port": config.IntegerVariable(s.Port),
			"host_key": config.StringVariable(s.RSAHostKey.Public()), "private_key": config.StringVariable(s.ClientKey.PEM),
			"cert_path": config.StringVariable(certFile), "apiserver": config.StringVariable(apiserver)}
		if domain != "" {
			v["lb_domain_name"] = config.StringVariable(domain)
		}
		return v
	}
	sans := func(addr string) []statecheck.StateCheck {
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("dns_names"), knownvalue.ListExact([]knownvalue.Check{
				knownvalue.StringExact("localhost"), knownvalue.StringExact("kubernetes")})),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("ip_addresses"), knownvalue.ListSizeExact(8)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("sha256_fingerprint"), knownvalue.StringExact(hex.EncodeToString(sum[:]))),
		}
	}
	var checks []statecheck.StateCheck
	for _, addr := range []string{"data.kha_apiserver_certificate.file", "data.kha_apiserver_certificate.served", "data.kha_apiserver_certificate.served_from_node"} {
		checks = append(checks, sans(addr)...)
	}
	checks = append(checks, statecheck.ExpectKnownValue("data.kha_apiserver_certificate.file", tfjsonpath.New("source"),
		knownvalue.StringRegexp(regexp.MustCompile(`^file 127\.0\.0\.1:\d+:`+regexp.QuoteMeta(certFile)+`$`))))
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				// Every endpoint verifies against the live certificate.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("kha_cluster_endpoints.c", tfjsonpath.New("mode"), knownvalue.StringExact("local_lb")),
				}},
				ConfigStateChecks: checks,
			},
			{
				// A load balancer name the certificate lacks: a plan error
				// naming the endpoint and the SAN to add.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("api.k8s.example.com"),
				PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Endpoint would fail TLS verification.*existing_cert_sans.*endpoints\.external\s+https://api\.k8s\.example\.com:8443.*` +
					`host\s+api\.k8s\.example\.com\s+is\s+not\s+in\s+existing_cert_sans\.dns_names`),
			},
		},
	}))
}

// TestAccAPIServerCertificate_errors: a file that is not a certificate and
// an address nothing answers on fail the read with what went wrong.
func TestAccAPIServerCertificate_errors(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	notPEM := filepath.Join(t.TempDir(), "apiserver.crt")
	os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644)
	for name, tc := range map[string]struct{ config, want string }{
		"not a certificate": {`data "kha_apiserver_certificate" "x" {
  ssh  = { host = "` + s.Host + `", port = ` + strconv.Itoa(s.Port) + `, host_key = "` + s.RSAHostKey.Public() + `" }
  path = "` + notPEM + `"
}`, `has\s+no\s+PEM\s+certificate`},
		"nothing answers": {`data "kha_apiserver_certificate" "x" { address = "127.0.0.1:` + strconv.Itoa(testhost.FreePort(t, "127.0.0.1")) + `" }`, `connection refused`},
		"neither":         {`data "kha_apiserver_certificate" "x" { server_name = "a" }`, `(?s)At least one of these attributes must be configured: \[ssh,address\]`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{Config: `provider "kha" {
  default_ssh = { private_key = <<-EOT
` + s.ClientKey.PEM + `EOT
  }
}
` + tc.config, ExpectError: regexp.MustCompile(tc.want)}},
			})
		})
	}
}

// TestAccAPIServerCertificate_neverTrustsOnFirstUse: trust on first use on
// default_ssh is for resources, which record the key. The data source
// would record nothing and accept any host on every read, so it refuses
// before dialing: an impostor sshd on the node's address never sees a
// connection, let alone the password. A pinned key reads as usual.
func TestAccAPIServerCertificate_neverTrustsOnFirstUse(t *testing.T) {
	t.Parallel()
	pw := testhost.SetPassword(t)
	impostor := testhost.Start(t, testhost.Options{Password: true})
	pki := testhost.TestPKI(t)
	certFile, _ := pki.WriteServerFiles(t, t.TempDir())
	provider := `provider "kha" {
  default_ssh = { user = "` + testhost.UnprivilegedUser + `", password = "` + pw + `", sudo = true,
                  insecure_trust_on_first_use = true }
}
`
	read := func(ssh string) string {
		return provider + `data "kha_apiserver_certificate" "x" {
  ssh  = { host = "` + impostor.Host + `", port = ` + strconv.Itoa(impostor.Port) + ssh + ` }
  path = "` + certFile + `"
}`
	}
	refused := regexp.MustCompile(`(?s)never\s+trusts\s+on\s+first\s+use.*ssh\.host_key`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: read(""), ExpectError: refused},
			// The block has no such field: Terraform drops it, and the
			// inherited setting is refused the same way.
			{Config: read(", insecure_trust_on_first_use = true"), ExpectError: refused},
			{Config: read(`, host_key = "` + impostor.HostKey.Public() + `"`),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue("data.kha_apiserver_certificate.x",
					tfjsonpath.New("ip_addresses"), knownvalue.ListSizeExact(8))}},
		},
	})
	// Only the pinned read logged in.
	if n := strings.Count(impostor.Log(), "Accepted password"); n != 1 {
		t.Errorf("the host saw %d password logins, want 1 (the pinned read):\n%s", n, impostor.Log())
	}
}

// TestAccAPIServerCertificate_caPEM: with ca_pem the certificate must
// chain to the cluster CA and, in a handshake, be valid for the address;
// without it whatever is served is read.
func TestAccAPIServerCertificate_caPEM(t *testing.T) {
	t.Parallel()
	pki := testhost.TestPKI(t)
	apiserver := testhost.StartAPIServer(t, "cp1", "127.0.0.2")
	read := func(address, ca, serverName string) string {
		return `data "kha_apiserver_certificate" "x" {
  address     = "` + address + `"
  ca_pem      = ` + ca + `
  server_name = ` + serverName + `
}`
	}
	heredoc := func(pem string) string { return "<<-EOT\n" + pem + "EOT\n" }
	unitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: read(apiserver, heredoc(pki.CAPEM), "null"), ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.kha_apiserver_certificate.x", tfjsonpath.New("dns_names"),
					knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("localhost"), knownvalue.StringExact("kubernetes")}))}},
			{Config: read(apiserver, heredoc(pki.CAPEM), `"kubernetes"`)},
			{Config: read(apiserver, heredoc(testhost.OtherCAPEM(t)), "null"),
				ExpectError: regexp.MustCompile(`(?s)does\s+not\s+verify\s+against\s+ca_pem.*unknown\s+authority`)},
			{Config: read(apiserver, heredoc(pki.CAPEM), `"api.example.com"`),
				ExpectError: regexp.MustCompile(`(?s)does\s+not\s+verify\s+against\s+ca_pem.*api\.example\.com`)},
			{Config: read(apiserver, `"not a certificate"`, "null"),
				ExpectError: regexp.MustCompile(`(?s)Invalid CA Certificate.*ca_pem\s+holds\s+no\s+PEM\s+certificate`)},
			// Unverified, a name the certificate lacks still reads.
			{Config: read(apiserver, "null", `"api.example.com"`)},
		},
	})
}

// TestAccAPIServerCertificate_allowMissing: with allow_missing, a cluster
// without an apiserver yet reads as no certificate: a file that does not
// exist on a real host, an address nothing listens on (from here and from
// the node) give found = false and null SAN lists, which
// kha_cluster_endpoints takes as "no certificate yet". A file that is
// there but holds no certificate still fails, and so does a missing file
// without allow_missing.
func TestAccAPIServerCertificate_allowMissing(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	notPEM := filepath.Join(t.TempDir(), "apiserver.crt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "pki", "apiserver.crt")
	closed := "127.0.0.1:" + strconv.Itoa(testhost.FreePort(t, "127.0.0.1"))
	ssh := `ssh = { host = "` + s.Host + `", port = ` + strconv.Itoa(s.Port) + `, host_key = "` + s.RSAHostKey.Public() + `" }`
	cfg := func(body string) string {
		return `provider "kha" {
  default_ssh = { private_key = <<-EOT
` + s.ClientKey.PEM + `EOT
  }
}
` + body
	}
	reads := cfg(`
data "kha_apiserver_certificate" "file" {
  ` + ssh + `
  path          = "` + missing + `"
  allow_missing = true
}

data "kha_apiserver_certificate" "served" {
  address       = "` + closed + `"
  allow_missing = true
}

data "kha_apiserver_certificate" "served_from_node" {
  ` + ssh + `
  address       = "` + closed + `"
  allow_missing = true
}

resource "kha_cluster_endpoints" "c" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  external_lb         = { address = "10.0.0.100", domain_name = "api.example.com" }
  existing_cert_sans = {
    dns_names    = data.kha_apiserver_certificate.file.dns_names
    ip_addresses = data.kha_apiserver_certificate.file.ip_addresses
  }
}
`)
	var checks []statecheck.StateCheck
	for _, name := range []string{"file", "served", "served_from_node"} {
		addr := "data.kha_apiserver_certificate." + name
		checks = append(checks,
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("found"), knownvalue.Bool(false)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("dns_names"), knownvalue.Null()),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("ip_addresses"), knownvalue.Null()),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("sha256_fingerprint"), knownvalue.Null()))
	}
	checks = append(checks, statecheck.ExpectKnownValue("data.kha_apiserver_certificate.file", tfjsonpath.New("source"),
		knownvalue.StringExact("file "+s.Address()+":"+missing)))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: cfg(`data "kha_apiserver_certificate" "x" {
  ` + ssh + `
  path = "` + missing + `"
}`), ExpectError: regexp.MustCompile(`(?s)Reading the Apiserver Certificate Failed.*` + regexp.QuoteMeta(filepath.Base(missing)))},
			{Config: cfg(`data "kha_apiserver_certificate" "x" {
  ` + ssh + `
  path          = "` + notPEM + `"
  allow_missing = true
}`), ExpectError: regexp.MustCompile(`has\s+no\s+PEM\s+certificate`)},
			{Config: reads, ConfigStateChecks: checks, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("kha_cluster_endpoints.c", tfjsonpath.New("kubeadm_control_plane_endpoint"), knownvalue.StringExact("api.example.com:6443")),
			}}},
		},
	})
}

// TestAPIServerCertificate_firstUseRefusalBehindABastion: the refusal to
// trust on first use says how to pin the host, with ssh-keyscan run on the
// bastion when the node is behind one.
func TestAPIServerCertificate_firstUseRefusalBehindABastion(t *testing.T) {
	t.Parallel()
	cfg := remote.Config{Host: "10.0.0.11", Bastion: &remote.Config{Host: "203.0.113.10", User: "jump"}}
	msg := errNoFirstUseForDataSources(cfg).Error()
	for _, want := range []string{"`ssh -p 22 jump@203.0.113.10 ssh-keyscan -p 22 10.0.0.11`", "run ssh-keyscan on the bastion 203.0.113.10:22"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q: %s", want, msg)
		}
	}
	cfg.Bastion = nil
	if msg := errNoFirstUseForDataSources(cfg).Error(); !strings.Contains(msg, "`ssh-keyscan -p 22 10.0.0.11`") || strings.Contains(msg, "bastion") {
		t.Errorf("without a bastion: %s", msg)
	}
}

// clientOf is a connection to the test host s, closed when the test ends.
func clientOf(t *testing.T, s *testhost.Server) *remote.Client {
	t.Helper()
	pool := remote.NewPool(nil)
	t.Cleanup(pool.Close)
	client, err := pool.Get(context.Background(), remote.Config{Host: s.Host, Port: s.Port, PrivateKey: s.ClientKey.PEM,
		HostKey: s.HostKey.Public(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// frozenService is a service on the test host's loopback reached through
// an SSH connection to it: the host freezes as the service accepts, and
// the service never answers. thaw lets the host go on.
func frozenService(t *testing.T) (client *remote.Client, address string, thaw func()) {
	t.Helper()
	s := testhost.Start(t, testhost.Options{})
	client = clientOf(t, s)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	thawed := make(chan func(), 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		thawed <- s.FreezeConnections()
		<-time.After(30 * time.Second)
	}()
	return client, l.Addr().String(), func() {
		select {
		case thaw := <-thawed:
			thaw()
		default:
			t.Fatal("the host never froze: the forwarded connection was not accepted")
		}
	}
}

// TestHandshakeGivesUpOnAFrozenHost: a TLS handshake through a host that
// stops answering ends with its context.
func TestHandshakeGivesUpOnAFrozenHost(t *testing.T) {
	t.Parallel()
	client, address, thaw := frozenService(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := handshakeCertificate(ctx, client, address, "", "")
		done <- err
	}()
	select {
	case err := <-done:
		// The connection's deadline, set to the context's, may fire first.
		if err == nil || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the handshake ended with %v, want the context's deadline", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the handshake did not give up 13 s after its context ended")
	}
	thaw()
}

// TestLBVerificationGivesUpOnAFrozenHost: the check after a load
// balancer's reload ends with its timeout on a host that stops answering
// (and the engine then puts the previous configuration back), where it
// used to wait for the host forever.
func TestLBVerificationGivesUpOnAFrozenHost(t *testing.T) {
	t.Parallel()
	client, address, thaw := frozenService(t)
	_, port, _ := net.SplitHostPort(address)
	p, _ := strconv.Atoi(port)
	v := lbVerifier{lbconfig.Verification{Kind: lbconfig.HAProxy, Listen: []lbconfig.ListenAddr{{Address: "127.0.0.1", Port: p}},
		Timeout: 2 * time.Second}}
	done := make(chan error, 1)
	go func() { done <- v.Verify(context.Background(), client) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not serve within 2s") {
			t.Fatalf("the verification ended with %v, want its timeout", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the verification did not give up 13 s after its timeout")
	}
	thaw()
}
