package provider

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestAccAPIServerCertificate_feedsExistingSANs reads the test
// apiserver certificate from a file over SSH and in TLS handshakes, and
// feeds its SANs into kha_cluster_endpoints: the plan passes while the
// endpoints verify against it and fails, at plan time, once a load
// balancer name it lacks is added.
func TestAccAPIServerCertificate_feedsExistingSANs(t *testing.T) {
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
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("ip_addresses"), knownvalue.ListSizeExact(5)),
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
