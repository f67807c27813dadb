package kubeconfig

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestSteadyProbeEndsAtOnceOnWhatCannotHeal: where nothing restarts what
// serves the server (a destroy's check of the server a kubeconfig had
// before kha), a port nobody listens on while its host answers, and a
// name that does not resolve, end the probe at once with that cause and
// never wait out its deadline. The probe that may meet a restart (the
// change's own check after the kubelet restarts) asks them again until
// its deadline, as before.
func TestSteadyProbeEndsAtOnceOnWhatCannotHeal(t *testing.T) {
	t.Parallel()
	pki := testhost.TestPKI(t)
	dir := t.TempDir()
	ca := pki.WriteCAFile(t, dir)
	cert, key := pki.WriteClientFiles(t, dir, "system:node:w1")
	closed := strconv.Itoa(testhost.FreePort(t, "127.0.0.1")) // nothing listens there

	for _, tc := range []struct {
		name, host, port string
		why              Unserved
		want             string
	}{
		{"a port nobody listens on", "127.0.0.1", closed, PortClosed,
			"port " + closed + " on 127.0.0.1 is not served (connection refused): its host answers, but nothing listens there"},
		{"a name that does not resolve", "kha-test.invalid", "6443", NameUnknown, "the name kha-test.invalid does not resolve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dial := Dialer(dialLocal)
			if tc.why == NameUnknown {
				// The node's resolver says so (no query leaves the machine):
				// the error remote's DialTCP makes of sshd's rejection.
				dial = func(context.Context, string) (net.Conn, error) {
					return nil, &net.DNSError{Err: "name or service not known", Name: tc.host, IsNotFound: true}
				}
			}
			content := []byte(kubeconfigFor("https://"+net.JoinHostPort(tc.host, tc.port), ca, cert, key))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := ProbeExpecting(ctx, Steady, content, "", readLocal, dial)
			if ctx.Err() != nil {
				t.Fatalf("the probe waited out its deadline: %v", err)
			}
			var unserved *UnservedError
			if !errors.As(err, &unserved) || unserved.Why != tc.why || unserved.Host != tc.host || unserved.Port != tc.port {
				t.Fatalf("want an UnservedError (%d) for %s port %s, got %#v: %v", tc.why, tc.host, tc.port, unserved, err)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "still not ready") {
				t.Fatalf("want %q, got %v", tc.want, err)
			}

			// Expecting a restart, the same server is asked again until
			// the deadline, and fails with its last answer.
			short, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
			defer cancel()
			err = Probe(short, content, "", readLocal, dial)
			if short.Err() == nil || errors.As(err, &unserved) || !strings.Contains(err.Error(), "still not ready after") {
				t.Fatalf("a probe that may meet a restart: want it asked again until the deadline, got %v", err)
			}
		})
	}
}

// TestSteadyProbeWaitsOutWhatCanHeal: a steady probe still waits for an
// apiserver that is briefly not ready (503 during an etcd election), and
// a probe that may meet a restart waits for a port that refuses
// connections until its server starts listening (the kubelet restarting
// a static pod).
func TestSteadyProbeWaitsOutWhatCanHeal(t *testing.T) {
	t.Parallel()
	pki := testhost.TestPKI(t)
	dir := t.TempDir()
	ca := pki.WriteCAFile(t, dir)
	cert, key := pki.WriteClientFiles(t, dir, "system:node:w1")

	var readyAt atomic.Int64
	readyAt.Store(time.Now().Add(time.Second).UnixNano())
	busy := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if time.Now().UnixNano() < readyAt.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	busy.TLS = &tls.Config{Certificates: []tls.Certificate{pki.Server}}
	busy.StartTLS()
	defer busy.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ProbeExpecting(ctx, Steady, []byte(kubeconfigFor("https://"+busy.Listener.Addr().String(), ca, cert, key)), "", readLocal, dialLocal); err != nil {
		t.Fatalf("steady: a server busy for a second, then ready: %v", err)
	}

	address := fmt.Sprintf("127.0.0.1:%d", testhost.FreePort(t, "127.0.0.1"))
	restarted := httptest.NewUnstartedServer(testhost.APIServerHandler("restarted"))
	restarted.TLS = &tls.Config{Certificates: []tls.Certificate{pki.Server}}
	defer restarted.Close()
	go func() {
		time.Sleep(time.Second)
		l, err := net.Listen("tcp", address)
		if err != nil {
			t.Errorf("listening again at %s: %v", address, err)
			return
		}
		restarted.Listener = l
		restarted.StartTLS()
	}()
	if err := Probe(ctx, []byte(kubeconfigFor("https://"+address, ca, cert, key)), "", readLocal, dialLocal); err != nil {
		t.Fatalf("may restart: a port that refuses for a second, then serves: %v", err)
	}
}
