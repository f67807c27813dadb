package lbconfig

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// metricsServer serves HAProxy-style /metrics for backend "kube_apiserver":
// the i-th request gets states(i), one "server=state/check" per server.
func metricsServer(t *testing.T, states func(i int) []string) Dialer {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Kha-Config", "cfg")
		for _, s := range states(int(n.Add(1)) - 1) {
			name, rest, _ := strings.Cut(s, "=")
			state, check, _ := strings.Cut(rest, "/")
			fmt.Fprintf(w, "haproxy_server_status{proxy=\"kube_apiserver\",server=%q,state=%q} 1\n", name, state)
			fmt.Fprintf(w, "haproxy_server_check_status{proxy=\"kube_apiserver\",server=%q,state=%q} 1\n", name, check)
		}
	}))
	t.Cleanup(srv.Close)
	return func(ctx context.Context, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", srv.Listener.Addr().String())
	}
}

func TestVerificationWaitsOutTransientCheckFailures(t *testing.T) {
	v := Verification{Kind: HAProxy, MetricsPort: 1, ConfigID: "cfg", Backend: "kube_apiserver", Timeout: 10 * time.Second}
	t.Run("every apiserver slow for a moment (L7TOUT), then one answers", func(t *testing.T) {
		dial := metricsServer(t, func(i int) []string {
			if i < 3 {
				return []string{"cp1=DOWN/L7TOUT", "cp2=DOWN/L7TOUT"}
			}
			return []string{"cp1=DOWN/L7TOUT", "cp2=UP/L7OK"}
		})
		if err := v.Run(context.Background(), dial); err != nil {
			t.Fatalf("a load balancer that serves after a slow moment was refused: %v", err)
		}
	})
	t.Run("apiservers still starting (L7STS 500, L4CON), then one answers", func(t *testing.T) {
		dial := metricsServer(t, func(i int) []string {
			if i < 3 {
				return []string{"cp1=DOWN/L4CON", "cp2=DOWN/L7STS"}
			}
			return []string{"cp1=UP/L7OK", "cp2=DOWN/L7STS"}
		})
		if err := v.Run(context.Background(), dial); err != nil {
			t.Fatalf("refused: %v", err)
		}
	})
	t.Run("a wrong CA fails every TLS handshake: the verdict comes at once", func(t *testing.T) {
		dial := metricsServer(t, func(int) []string { return []string{"cp1=DOWN/L6RSP", "cp2=DOWN/L6RSP"} })
		start := time.Now()
		err := v.Run(context.Background(), dial)
		if err == nil || !strings.Contains(err.Error(), "health_check.ca_file") {
			t.Fatalf("err = %v, want the CA hint", err)
		}
		if waited := time.Since(start); waited > v.Timeout/2 {
			t.Errorf("waited %s for a failure that waiting cannot heal", waited)
		}
	})
}
