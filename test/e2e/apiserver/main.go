// Command apiserver is the estate end-to-end test's stand-in for a
// kube-apiserver: testhost's APIServerHandler behind TLS with the node's
// own serving certificate, checking client certificates as kube-apiserver
// does (a certificate is optional, since health checks and /readyz are
// anonymous, but one that the cluster CA did not sign fails the
// handshake). It starts in milliseconds and needs no etcd, so an estate of
// several control-plane nodes costs almost nothing.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

func main() {
	name := flag.String("name", "", "the node's name, answered at /whoami")
	listen := flag.String("listen", ":6443", "address to listen on")
	certFile := flag.String("cert", "", "serving certificate (PEM)")
	keyFile := flag.String("key", "", "its key (PEM)")
	caFile := flag.String("client-ca", "", "the CA that signs client certificates (PEM)")
	flag.Parse()
	if err := run(*name, *listen, *certFile, *keyFile, *caFile); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		os.Exit(1)
	}
}

func run(name, listen, certFile, keyFile, caFile string) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s has no PEM certificate", caFile)
	}
	srv := testhost.NewAPIServer(name, listen, cert)
	srv.TLSConfig.ClientCAs = pool
	srv.TLSConfig.ClientAuth = tls.VerifyClientCertIfGiven
	return srv.ListenAndServeTLS("", "")
}
