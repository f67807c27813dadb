package kubeconfig

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/buildinfo"
	"github.com/kha/terraform-provider-kha/internal/testhost"
	"time"
)

func readLocal(_ context.Context, path string) ([]byte, error) { return os.ReadFile(path) }

func dialLocal(ctx context.Context, address string) (net.Conn, error) {
	return (&net.Dialer{}).DialContext(ctx, "tcp", address)
}

func kubeconfigFor(server, caFile, certFile, keyFile string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster:
    certificate-authority: %s
    server: %s
contexts:
- name: node@kubernetes
  context: {cluster: kubernetes, user: node}
current-context: node@kubernetes
users:
- name: node
  user:
    client-certificate: %s
    client-key: %s
`, caFile, server, certFile, keyFile)
}

// TestProbeAgainstARealAPIServer: a hardened kube-apiserver accepts the
// kubeconfig's own client certificate, and the probe fails, saying why,
// when the certificate is missing, the CA is another, or the server name
// is not in the apiserver's certificate.
func TestProbeAgainstARealAPIServer(t *testing.T) {
	testhost.KubeDir(t)
	member := &testhost.EtcdMember{Name: "etcd1", IP: "127.0.0.1", ClientPort: testhost.FreePort(t, "127.0.0.1"), PeerPort: testhost.FreePort(t, "127.0.0.1")}
	etcd := testhost.StartEtcd(t, []*testhost.EtcdMember{member}, []string{"127.0.0.1"})
	kas := testhost.StartKubeAPIServer(t, etcd, "127.0.0.2", false)
	dir := t.TempDir()
	pki := testhost.TestPKI(t)
	ca := pki.WriteCAFile(t, dir)
	cert, key := pki.WriteClientFiles(t, dir, "system:node:w1")
	otherCA := filepath.Join(dir, "other-ca.crt")
	os.WriteFile(otherCA, []byte(testhost.OtherCAPEM(t)), 0o644)
	_, port, _ := net.SplitHostPort(kas.Address)
	ok := kubeconfigFor("https://"+kas.Address, ca, cert, key)

	if err := Probe(context.Background(), []byte(ok), "", readLocal, dialLocal); err != nil {
		t.Fatalf("a working kubeconfig: %v", err)
	}
	// By name: the apiserver's certificate has localhost.
	byName := strings.Replace(ok, "127.0.0.2:"+port, "localhost:"+port, 1)
	dialToKAS := func(ctx context.Context, _ string) (net.Conn, error) { return dialLocal(ctx, kas.Address) }
	if err := Probe(context.Background(), []byte(byName), "", readLocal, dialToKAS); err != nil {
		t.Fatalf("by a name in the certificate: %v", err)
	}
	for name, tc := range map[string]struct{ kubeconfig, want string }{
		"no client certificate": {strings.Replace(strings.Replace(ok, "client-certificate: "+cert, "", 1), "client-key: "+key, "", 1),
			"refused the kubeconfig's credentials (HTTP 401)"},
		"another CA":             {strings.Replace(ok, ca, otherCA, 1), "certificate signed by unknown authority"},
		"a name not in the SANs": {strings.Replace(byName, "localhost:", "api.example.com:", 1), "not api.example.com"},
		"a missing CA file":      {strings.Replace(ok, ca, "/nonexistent/ca.crt", 1), "reading certificate-authority /nonexistent/ca.crt"},
	} {
		t.Run(name, func(t *testing.T) {
			err := Probe(context.Background(), []byte(tc.kubeconfig), "", readLocal, dialToKAS)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `cluster "kubernetes"`) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

// TestProbeWithATokenAndInlineData: a bearer token (inline and from a
// file) and inline CA data, against a server that wants the token.
func TestProbeWithATokenAndInlineData(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || r.Header.Get("Authorization") != "Bearer s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	caData := base64.StdEncoding.EncodeToString(pemCert(srv.Certificate().Raw))
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600)
	base := fmt.Sprintf("clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %s}}]\n"+
		"contexts: [{name: x, context: {cluster: c, user: u}}]\n", srv.URL, caData)
	for name, user := range map[string]string{"inline token": "{token: s3cret}", "token file": fmt.Sprintf("{tokenFile: %s}", tokenFile)} {
		if err := Probe(context.Background(), []byte(base+"users: [{name: u, user: "+user+"}]\n"), "c", readLocal, dialLocal); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	err := Probe(context.Background(), []byte(base+"users: [{name: u, user: {token: wrong-s3cret}}]\n"), "c", readLocal, dialLocal)
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("a refused token: want the status and not the token, got %v", err)
	}
	err = Probe(context.Background(), []byte(base+"users: [{name: u, user: {exec: {command: aws}}}]\n"), "c", readLocal, dialLocal)
	if err == nil || !strings.Contains(err.Error(), "plugin") {
		t.Fatalf("exec credentials: %v", err)
	}
}

// TestProbeUserAgent: the apiserver's audit log names the provider and its
// version as the client.
func TestProbeUserAgent(t *testing.T) {
	buildinfo.SetVersion("0.1.0")
	t.Cleanup(func() { buildinfo.SetVersion("") })
	agents := make(chan string, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agents <- r.Header.Get("User-Agent")
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	caData := base64.StdEncoding.EncodeToString(pemCert(srv.Certificate().Raw))
	kc := fmt.Sprintf("clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %s}}]\n"+
		"contexts: [{name: x, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n", srv.URL, caData)
	if err := Probe(context.Background(), []byte(kc), "c", readLocal, dialLocal); err != nil {
		t.Fatal(err)
	}
	if got, want := <-agents, "terraform-provider-kha/0.1.0"; got != want {
		t.Errorf("User-Agent = %q, want %q", got, want)
	}
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestProbeWaitsOutABusyMoment: an apiserver that is briefly not ready
// (an etcd election answers /readyz with 500) is waited for within the
// probe's deadline; a refusal of the credentials ends the wait at once,
// and an apiserver that never gets ready fails at the deadline with its
// answer.
func TestProbeWaitsOutABusyMoment(t *testing.T) {
	var readyAt atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer s3cret":
			w.WriteHeader(http.StatusUnauthorized)
		case time.Now().UnixNano() < readyAt.Load():
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("[-]etcd failed: reason withheld"))
		default:
			w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	caData := base64.StdEncoding.EncodeToString(pemCert(srv.Certificate().Raw))
	kubeconfig := func(token string) []byte {
		return []byte(fmt.Sprintf("clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %s}}]\n"+
			"contexts: [{name: x, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: %s}}]\n", srv.URL, caData, token))
	}
	probe := func(token string, within time.Duration) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		start := time.Now()
		err := Probe(ctx, kubeconfig(token), "c", readLocal, dialLocal)
		return time.Since(start), err
	}

	readyAt.Store(time.Now().Add(time.Second).UnixNano())
	if took, err := probe("s3cret", 10*time.Second); err != nil {
		t.Fatalf("not ready for a second, then ready: %v (after %v)", err, took)
	}

	readyAt.Store(time.Now().Add(time.Hour).UnixNano())
	took, err := probe("wrong", 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || took > 5*time.Second {
		t.Fatalf("refused credentials: want HTTP 401 at once, got %v after %v", err, took)
	}
	took, err = probe("s3cret", 1500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") || !strings.Contains(err.Error(), "etcd failed") || took < time.Second {
		t.Fatalf("never ready: want the apiserver's answer at the deadline, got %v after %v", err, took)
	}
}

// TestProbeFailsWithTheServersLastAnswer: an apiserver that refuses
// connections or answers 503 for the whole timeout fails the probe with
// that answer and how long it was waited for, never with the deadline of
// a read. The reader takes a round trip per file and ends with ctx, as a
// read over SSH does; the credentials are read once, not per attempt.
func TestProbeFailsWithTheServersLastAnswer(t *testing.T) {
	pki := testhost.TestPKI(t)
	dir := t.TempDir()
	ca := pki.WriteCAFile(t, dir)
	cert, key := pki.WriteClientFiles(t, dir, "system:node:w1")
	var reads atomic.Int32
	roundTrip := func(ctx context.Context, path string) ([]byte, error) {
		reads.Add(1)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(400 * time.Millisecond):
		}
		return os.ReadFile(path)
	}
	busy := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("[-]etcd failed: reason withheld"))
	}))
	busy.TLS = &tls.Config{Certificates: []tls.Certificate{pki.Server}}
	busy.StartTLS()
	defer busy.Close()
	refusing := fmt.Sprintf("127.0.0.1:%d", testhost.FreePort(t, "127.0.0.1"))

	for _, tc := range []struct{ name, address, want string }{
		{"refuses connections", refusing, "connection refused"},
		{"answers 503", busy.Listener.Addr().String(), "GET /readyz answered HTTP 503: [-]etcd failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads.Store(0)
			// Three reads take 1.2 s: a probe per attempt would be in its
			// second round of reads when the 2 s end.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			err := Probe(ctx, []byte(kubeconfigFor("https://"+tc.address, ca, cert, key)), "", roundTrip, dialLocal)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "still not ready after") ||
				strings.Contains(err.Error(), "reading") || strings.Contains(err.Error(), "deadline") {
				t.Fatalf("want the server's answer %q after the wait, got %v", tc.want, err)
			}
			if n := reads.Load(); n != 3 {
				t.Errorf("%d reads, want 3: the CA, the client certificate and its key, once each", n)
			}
		})
	}
}

// TestProbeOfAServerThatDoesNotSpeakTLS: a kubeconfig whose server is a
// plain HTTP port (or any other protocol: an sshd) fails at once, saying
// so, rather than being asked again until the timeout ends.
func TestProbeOfAServerThatDoesNotSpeakTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testhost.TestPKI(t).WriteCAFile(t, dir)
	cert, key := testhost.TestPKI(t).WriteClientFiles(t, dir, "system:node:w1")
	plain := httptest.NewServer(testhost.APIServerHandler("plain"))
	defer plain.Close()
	for _, tc := range []struct {
		name    string
		address func(t *testing.T) string
	}{
		{"plain HTTP", func(*testing.T) string { return plain.Listener.Addr().String() }},
		{"an sshd", func(t *testing.T) string { return testhost.Start(t, testhost.Options{}).Address() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			address := tc.address(t)
			_, port, _ := net.SplitHostPort(address)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			err := Probe(ctx, []byte(kubeconfigFor("https://"+address, ca, cert, key)), "", readLocal, dialLocal)
			want := fmt.Sprintf("the server at %s does not speak TLS (is %s a plain HTTP port?)", address, port)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("want %q, got %v", want, err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("took %v: a server that does not speak TLS is final, not a server to wait for", took)
			}
		})
	}
}

// TestConnectTalksToTheCurrentContextsCluster: the API client sends its
// requests to the cluster of the current context, with that context's
// user's token, content type and body as given, and keeps one connection
// for several requests.
func TestConnectTalksToTheCurrentContextsCluster(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"), body)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	caData := base64.StdEncoding.EncodeToString(pemCert(srv.Certificate().Raw))
	content := fmt.Sprintf("clusters: [{name: other, cluster: {server: https://127.0.0.9:1}}, {name: c, cluster: {server: %q, certificate-authority-data: %s}}]\n"+
		"contexts: [{name: o, context: {cluster: other, user: v}}, {name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"+
		"users: [{name: v, user: {token: wrong}}, {name: u, user: {token: s3cret}}]\n", srv.URL, caData)
	api, err := Connect(context.Background(), []byte(content), readLocal, dialLocal)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	if api.Server != srv.URL {
		t.Fatalf("server %s, want %s", api.Server, srv.URL)
	}
	for i := 0; i < 3; i++ {
		status, body, err := api.Do(context.Background(), http.MethodPut, "/api/v1/x", "application/json", []byte(`{"a":1}`))
		if err != nil || status != http.StatusOK || string(body) != `PUT /api/v1/x application/json {"a":1}` {
			t.Fatalf("%d %q %v", status, body, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for three requests, want 1", n)
	}
	if _, err := Connect(context.Background(), []byte(strings.Replace(content, "current-context: x", "current-context: y", 1)), readLocal, dialLocal); err == nil ||
		!strings.Contains(err.Error(), `current-context "y" names no cluster`) {
		t.Fatalf("an unknown current context: %v", err)
	}
}
