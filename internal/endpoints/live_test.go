package endpoints

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestLiveGoawayChanceReachesKubeAPIServer passes the extraArgs of kubeadm's
// configuration to a real kube-apiserver, as kubeadm does: it starts on
// them, and --goaway-chance takes effect. Over 1,000 requests an HTTP/2
// client is asked to reconnect (new connections) at the chance set, 0.02
// here, the most kube-apiserver takes; without the flag it never is.
func TestLiveGoawayChanceReachesKubeAPIServer(t *testing.T) {
	testhost.KubeDir(t)
	member := &testhost.EtcdMember{Name: "etcd1", IP: "127.0.0.1"}
	member.ClientPort, member.PeerPort = testhost.FreePort(t, "127.0.0.1"), testhost.FreePort(t, "127.0.0.1")
	etcd := testhost.StartEtcd(t, []*testhost.EtcdMember{member}, []string{"127.0.0.1"})
	chance := maxGoawayChance
	r, ps := Compute(Input{ControlPlaneNodes: threeCPs, APIServer: APIServerFlags{GoawayChance: &chance}})
	if ps.HasErrors() {
		t.Fatal(ps)
	}
	flags := apiserverFlags(t, r.KubeadmClusterConfiguration)
	if strings.Join(flags, " ") != "--goaway-chance=0.02" {
		t.Fatalf("extraArgs %v", flags)
	}
	// An authenticated client: kube-apiserver asks anonymous HTTP/2
	// clients to reconnect after every request whatever the flag says.
	pki := testhost.TestPKI(t)
	certFile, keyFile := pki.WriteClientFiles(t, t.TempDir(), "goaway-test")
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags       []string
		reconnected bool
	}{{flags, true}, {nil, false}} {
		kas := testhost.StartKubeAPIServer(t, etcd, "127.0.0.1", false, c.flags...)
		var dials atomic.Int32
		client := &http.Client{Transport: &http.Transport{
			ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{pair}},
			DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
				dials.Add(1)
				return (&net.Dialer{}).DialContext(ctx, network, address)
			},
		}}
		for range 1000 {
			resp, err := client.Get("https://" + kas.Address + "/version")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK { // /version: every authenticated user
				t.Fatalf("%s %s", resp.Proto, resp.Status)
			}
		}
		if got := dials.Load() > 1; got != c.reconnected {
			t.Errorf("kube-apiserver %v: %d connections for 1,000 requests", c.flags, dials.Load())
		}
		t.Logf("kube-apiserver %v: %d connections for 1,000 requests", c.flags, dials.Load())
	}
}
