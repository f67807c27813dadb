package testhost

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// KubeDir is where `make kube` put kube-apiserver and kubectl, built from
// the Go module proxy (KHA_KUBE_DIR).
func KubeDir(t testing.TB) string {
	t.Helper()
	Real(t, "a real kube-apiserver")
	dir := os.Getenv("KHA_KUBE_DIR")
	_, err := os.Stat(filepath.Join(dir, "kube-apiserver"))
	Require(t, dir != "" && err == nil, "kube-apiserver is not built: run `make kube` and set KHA_KUBE_DIR (make test does both)")
	return dir
}

// KubeAPIServer is a real kube-apiserver on loopback, serving the test
// PKI's server certificate and trusting its CA for client certificates.
type KubeAPIServer struct {
	Address string // host:port
}

// StartKubeAPIServer runs kube-apiserver on ip (one of the loopback
// addresses the test PKI's certificate covers) against etcd until the
// test ends, and waits until it is ready. anonymous is its
// --anonymous-auth; extra are more flags (--name=value), as kubeadm passes
// a ClusterConfiguration's apiServer.extraArgs.
func StartKubeAPIServer(t testing.TB, etcd *EtcdCluster, ip string, anonymous bool, extra ...string) *KubeAPIServer {
	t.Helper()
	cert, key := TestPKI(t).WriteServerFiles(t, t.TempDir())
	return startKubeAPIServer(t, etcd, ip, anonymous, cert, key, extra...)
}

// StartKubeAPIServerServing is StartKubeAPIServer, hardened (no anonymous
// requests), serving the certificate and key in these files, which it
// reloads when they change, as kube-apiserver does: they must be valid
// for ip and signed by the test PKI's CA.
func StartKubeAPIServerServing(t testing.TB, etcd *EtcdCluster, ip, certFile, keyFile string) *KubeAPIServer {
	t.Helper()
	return startKubeAPIServer(t, etcd, ip, false, certFile, keyFile)
}

func startKubeAPIServer(t testing.TB, etcd *EtcdCluster, ip string, anonymous bool, cert, key string, extra ...string) *KubeAPIServer {
	t.Helper()
	binary := filepath.Join(KubeDir(t), "kube-apiserver")
	pki := TestPKI(t)
	dir := t.TempDir()
	ca := pki.WriteCAFile(t, dir)
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(saKey)
	pub, _ := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	saKeyFile, saPubFile := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	for file, block := range map[string]*pem.Block{saKeyFile: {Type: "EC PRIVATE KEY", Bytes: der}, saPubFile: {Type: "PUBLIC KEY", Bytes: pub}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := portOf(t, l)
	l.Close()
	var servers string
	for i, m := range etcd.Members {
		if i > 0 {
			servers += ","
		}
		servers += m.ClientURL()
	}
	log, err := os.Create(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--bind-address=" + ip, "--advertise-address=" + ip, "--secure-port=" + strconv.Itoa(port),
		"--etcd-servers=" + servers, "--etcd-cafile=" + etcd.CAFile, "--etcd-certfile=" + etcd.CertFile, "--etcd-keyfile=" + etcd.KeyFile,
		"--etcd-prefix=/registry-" + strconv.Itoa(port), // apiservers sharing etcd keep apart
		"--tls-cert-file=" + cert, "--tls-private-key-file=" + key, "--client-ca-file=" + ca,
		"--service-account-key-file=" + saPubFile, "--service-account-signing-key-file=" + saKeyFile,
		"--service-account-issuer=https://kubernetes.default.svc", "--service-cluster-ip-range=10.233.0.0/18",
		"--authorization-mode=Node,RBAC", "--anonymous-auth=" + strconv.FormatBool(anonymous), "--cert-dir=" + dir}, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })

	// Ready once /readyz answers 200 to a client certificate.
	clientCert, clientKey := pki.WriteClientFiles(t, dir, "readiness")
	pair, err := tls.LoadX509KeyPair(clientCert, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{pair}}}}
	s := &KubeAPIServer{Address: net.JoinHostPort(ip, strconv.Itoa(port))}
	deadline := time.Now().Add(90 * time.Second)
	for {
		if resp, err := client.Get("https://" + s.Address + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-exited:
			logs, _ := os.ReadFile(log.Name())
			t.Fatalf("kube-apiserver exited:\n%s", tail(logs))
		default:
		}
		if time.Now().After(deadline) {
			logs, _ := os.ReadFile(log.Name())
			t.Fatalf("kube-apiserver on %s not ready within 90s:\n%s", s.Address, tail(logs))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tail(b []byte) []byte {
	if len(b) > 3000 {
		return b[len(b)-3000:]
	}
	return b
}
