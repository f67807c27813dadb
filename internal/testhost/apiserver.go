package testhost

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// APIServerHandler answers like a kube-apiserver as far as load balancers
// and these tests care: /readyz, /whoami (the server's name) and /stream,
// which sends ?lines=N lines 100ms apart.
func APIServerHandler(name string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/whoami", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, name) })
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("lines"))
		for i := 0; i < n; i++ {
			fmt.Fprintf(w, "%s %d\n", name, i)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return mux
}

// NewAPIServer returns an HTTPS server for APIServerHandler with the test
// PKI's certificate. Health checks close connections right after the
// handshake; their EOFs are not worth a log line.
func NewAPIServer(name, addr string, cert tls.Certificate) *http.Server {
	return &http.Server{Addr: addr, Handler: APIServerHandler(name),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ErrorLog: log.New(io.Discard, "", 0)}
}

// StartAPIServer runs an apiserver stand-in in this process on host at a
// free port until the test ends, and returns its address.
func StartAPIServer(t testing.TB, name, host string) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := NewAPIServer(name, l.Addr().String(), TestPKI(t).Server)
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}
