package testhost

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// EtcdMember is one member of a test cluster.
type EtcdMember struct {
	Name                 string
	IP                   string
	ClientPort, PeerPort int
	// ExtraClientIP is one more address the member serves clients on, to
	// test what happens outside its certificate's SANs.
	ExtraClientIP string
	cmd           *exec.Cmd
	exited        chan struct{}
}

// EtcdCluster is a running TLS etcd cluster with client-cert auth.
type EtcdCluster struct {
	Members []*EtcdMember
	// CAFile verifies the members; CertFile and KeyFile are a client
	// certificate they accept.
	CAFile, CertFile, KeyFile string
	dir                       string
}

// ClientURL is the member's client URL on its own IP.
func (m *EtcdMember) ClientURL() string {
	return "https://" + net.JoinHostPort(m.IP, strconv.Itoa(m.ClientPort))
}

// Kill ends the member and waits until it is gone.
func (m *EtcdMember) Kill() {
	if m.cmd != nil {
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

// StartEtcd runs Debian's etcd as a cluster of members on loopback. Their
// client-serving certificates carry servingIPs as IP SANs: no DNS names,
// which etcd would try to resolve. Peer certificates add 127.0.0.1, the
// source address of peer connections on loopback.
func StartEtcd(t testing.TB, members []*EtcdMember, servingIPs []string) *EtcdCluster {
	t.Helper()
	Real(t, "a real etcd")
	etcd, err := exec.LookPath("etcd")
	Require(t, err == nil, "etcd is not installed (Debian etcd-server)")
	dir := t.TempDir()
	c := &EtcdCluster{Members: members, dir: dir}
	ca := newCA(t)
	c.CAFile = ca.write(t, dir, "ca")
	c.CertFile, c.KeyFile = ca.issue(t, dir, "client", nil, x509.ExtKeyUsageClientAuth)
	var initial []string
	for _, m := range members {
		initial = append(initial, m.Name+"=https://"+net.JoinHostPort(m.IP, strconv.Itoa(m.PeerPort)))
	}
	for _, m := range members {
		serving, servingKey := ca.issue(t, dir, "serving-"+m.Name, servingIPs, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
		peer, peerKey := ca.issue(t, dir, "peer-"+m.Name, []string{m.IP, "127.0.0.1"}, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
		listen := m.ClientURL()
		if m.ExtraClientIP != "" {
			listen += ",https://" + net.JoinHostPort(m.ExtraClientIP, strconv.Itoa(m.ClientPort))
		}
		peerURL := "https://" + net.JoinHostPort(m.IP, strconv.Itoa(m.PeerPort))
		log, err := os.Create(filepath.Join(dir, m.Name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		m.cmd = exec.Command(etcd, "--name", m.Name, "--data-dir", filepath.Join(dir, "data-"+m.Name),
			"--listen-client-urls", listen, "--advertise-client-urls", m.ClientURL(),
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--listen-metrics-urls", "http://"+net.JoinHostPort(m.IP, "0"),
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-token", "kha-test", "--initial-cluster-state", "new",
			"--heartbeat-interval", "250", "--election-timeout", "2500",
			"--cert-file", serving, "--key-file", servingKey, "--client-cert-auth", "--trusted-ca-file", c.CAFile,
			"--peer-cert-file", peer, "--peer-key-file", peerKey, "--peer-client-cert-auth", "--peer-trusted-ca-file", c.CAFile,
			"--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn")
		m.cmd.Stdout, m.cmd.Stderr = log, log
		m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := m.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		m.exited = make(chan struct{})
		go func(m *EtcdMember) { _ = m.cmd.Wait(); log.Close(); close(m.exited) }(m)
		t.Cleanup(m.Kill)
	}
	var urls []string
	for _, m := range members {
		urls = append(urls, m.ClientURL())
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := c.Etcdctl(strings.Join(urls, ","), "endpoint", "health"); err == nil {
			return c
		}
		if time.Now().After(deadline) {
			logs, _ := os.ReadFile(filepath.Join(dir, members[0].Name+".log"))
			t.Fatalf("etcd cluster not healthy within 60s:\n%s", logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Etcdctl runs the real etcdctl (v3 API) against endpoints with the
// cluster's CA and client certificate.
func (c *EtcdCluster) Etcdctl(endpoints string, args ...string) (string, error) {
	etcdctl, err := exec.LookPath("etcdctl")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(etcdctl, append([]string{"--endpoints", endpoints, "--cacert", c.CAFile, "--cert", c.CertFile,
		"--key", c.KeyFile, "--dial-timeout=2s", "--command-timeout=5s"}, args...)...)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("etcdctl --endpoints %s %s: %w: %s", endpoints, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

func generateCA(name string) (testCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return testCA{}, err
	}
	// Ten years, as kubeadm's CA: certificates issued from it on a node
	// must not outlive it.
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return testCA{}, err
	}
	cert, err := x509.ParseCertificate(der)
	return testCA{cert: cert, key: key, der: der}, err
}

// sign issues a certificate for IP and DNS SANs.
func (ca testCA) sign(name string, ips []net.IP, dns []string, usage ...x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey, error) {
	return ca.signSubject(pkix.Name{CommonName: name}, ips, dns, usage...)
}

// signSubject is sign with a whole subject: its organizations are the
// groups Kubernetes reads from a client certificate.
func (ca testCA) signSubject(subject pkix.Name, ips []net.IP, dns []string, usage ...x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: usage,
		IPAddresses: ips, DNSNames: dns}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	return der, key, err
}

func newCA(t testing.TB) testCA {
	ca, err := generateCA("kha-etcd-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func (ca testCA) write(t testing.TB, dir, name string) string {
	p := filepath.Join(dir, name+".crt")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeKey writes the CA's key as dir/name.key.
func (ca testCA) writeKey(t testing.TB, dir, name string) string {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".key")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// issue signs a certificate for the IPs and writes it with its key.
func (ca testCA) issue(t testing.TB, dir, name string, ips []string, usage ...x509.ExtKeyUsage) (certFile, keyFile string) {
	var parsed []net.IP
	for _, ip := range ips {
		if p := net.ParseIP(ip); p != nil {
			parsed = append(parsed, p)
		}
	}
	der, key, err := ca.sign(name, parsed, nil, usage...)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
