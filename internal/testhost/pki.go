package testhost

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// PKI is a test CA and one server certificate valid for the loopback
// addresses tests use (127.0.0.1-4, ::1, localhost) and three node
// addresses (192.0.2.11-13), like an apiserver certificate with the SANs
// kha computes.
type PKI struct {
	CAPEM  string
	Pool   *x509.CertPool
	Server tls.Certificate
	ca     testCA
}

var (
	pkiOnce sync.Once
	pki     PKI
	pkiErr  error
)

// TestPKI returns the process-wide test PKI, created on first use.
func TestPKI(t testing.TB) PKI {
	t.Helper()
	pkiOnce.Do(func() { pki, pkiErr = newPKI() })
	if pkiErr != nil {
		t.Fatal(pkiErr)
	}
	return pki
}

// WriteServerFiles writes the server certificate and key as PEM files.
func (p PKI) WriteServerFiles(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(p.Server.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Server.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func newPKI() (PKI, error) {
	ca, err := generateCA("kha-test-ca")
	if err != nil {
		return PKI{}, err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.2"), net.ParseIP("127.0.0.3"), net.ParseIP("127.0.0.4"), net.ParseIP("::1")}
	// Node addresses for plans that only compute endpoints: a node's
	// address is never a loopback one. Nothing dials them.
	ips = append(ips, net.ParseIP("192.0.2.11"), net.ParseIP("192.0.2.12"), net.ParseIP("192.0.2.13"))
	der, key, err := ca.sign("kube-apiserver", ips, []string{"localhost", "kubernetes"}, x509.ExtKeyUsageServerAuth)
	if err != nil {
		return PKI{}, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return PKI{
		CAPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.der})),
		Pool:   pool,
		Server: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		ca:     ca,
	}, nil
}

// OtherCAPEM is a CA certificate that signed none of the test servers: a
// valid file that verifies nothing here.
func OtherCAPEM(t testing.TB) string {
	t.Helper()
	ca, err := generateCA("kha-other-ca")
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.der}))
}

// WriteCAFile writes the CA certificate as dir/ca.crt.
func (p PKI) WriteCAFile(t testing.TB, dir string) string {
	return p.ca.write(t, dir, "ca")
}

// WriteCAPair writes the CA certificate and key as dir/ca.crt and
// dir/ca.key, as kubeadm keeps them on a control-plane node.
func (p PKI) WriteCAPair(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	return p.ca.write(t, dir, "ca"), p.ca.writeKey(t, dir, "ca")
}

// CAKeyPEM is the CA's key as PEM.
func (p PKI) CAKeyPEM(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(p.ca.writeKey(t, t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ServerPEM is the server certificate ("crt") or its key ("key") as PEM.
func (p PKI) ServerPEM(t testing.TB, which string) string {
	t.Helper()
	cert, key := p.WriteServerFiles(t, t.TempDir())
	file := map[string]string{"crt": cert, "key": key}[which]
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// WriteOtherCAPair writes a CA's certificate and key that signed none of
// the test servers, as dir/other-ca.crt and dir/other-ca.key.
func WriteOtherCAPair(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	ca, err := generateCA("kha-other-ca")
	if err != nil {
		t.Fatal(err)
	}
	return ca.write(t, dir, "other-ca"), ca.writeKey(t, dir, "other-ca")
}

// WriteClientFiles issues a client certificate for user name and writes
// it as dir/name.crt with its key in dir/name.key, as kubeadm names its
// pairs.
func (p PKI) WriteClientFiles(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	return p.ca.issue(t, dir, name, nil, x509.ExtKeyUsageClientAuth)
}

// ClientPEM issues a client certificate for user name in groups (the
// subject's organizations; system:masters makes a cluster admin, as in
// kubeadm's admin.conf) and returns it and its key as PEM.
func (p PKI) ClientPEM(t testing.TB, name string, groups ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	der, key, err := p.ca.signSubject(pkix.Name{CommonName: name, Organization: groups}, nil, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
