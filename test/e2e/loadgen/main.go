// Command loadgen is the end-to-end test's stand-in for a kubelet: until
// the stop file appears, it reads a node's kubeconfig afresh and asks its
// server for /readyz with the kubeconfig's own credentials, on a new
// connection each time, every interval. It prints one line per request:
// start (Unix ns), 0 or 1 for success or failure, duration (ms); failures
// go to stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/kha/terraform-provider-kha/internal/kubeconfig"
)

func main() {
	path := flag.String("kubeconfig", "", "the node's kubeconfig")
	stop := flag.String("stop", "", "stop once this file exists")
	interval := flag.Duration("interval", 50*time.Millisecond, "time between request starts")
	flag.Parse()
	read := func(_ context.Context, p string) ([]byte, error) { return os.ReadFile(p) }
	dial := func(ctx context.Context, address string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", address)
	}
	for {
		if _, err := os.Stat(*stop); err == nil {
			return
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		content, err := os.ReadFile(*path)
		if err == nil {
			err = kubeconfig.Probe(ctx, content, "", read, dial)
		}
		cancel()
		failed := 0
		if err != nil {
			failed = 1
			fmt.Fprintln(os.Stderr, err)
		}
		fmt.Printf("%d %d %d\n", start.UnixNano(), failed, time.Since(start).Milliseconds())
		time.Sleep(time.Until(start.Add(*interval)))
	}
}
