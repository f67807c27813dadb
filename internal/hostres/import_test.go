package hostres

import (
	"strings"
	"testing"
)

// TestSplitImportID: an import ID names a host, a port an SSH server can
// listen on, and what to import there; a port of 0 or beyond 65535 is
// refused with what a port must be, not passed on to a connection.
func TestSplitImportID(t *testing.T) {
	for id, want := range map[string]struct {
		host string
		port int64
		rest string
		err  string
	}{
		"10.0.0.11:22:/etc/haproxy/haproxy.cfg":    {host: "10.0.0.11", port: 22, rest: "/etc/haproxy/haproxy.cfg"},
		"[fd00::11]:2222:/etc/hosts#api":           {host: "fd00::11", port: 2222, rest: "/etc/hosts#api"},
		"cp1.example.com:65535:/etc/kha/lb.cfg":    {host: "cp1.example.com", port: 65535, rest: "/etc/kha/lb.cfg"},
		"10.0.0.11:0:/etc/haproxy/haproxy.cfg":     {err: `port "0" in "10.0.0.11:0:/etc/haproxy/haproxy.cfg" is not 1 to 65535`},
		"10.0.0.11:65536:/etc/haproxy/haproxy.cfg": {err: `port "65536" in`},
		"10.0.0.11:-1:/etc/haproxy/haproxy.cfg":    {err: `port "-1" in`},
		"10.0.0.11:ssh:/etc/haproxy/haproxy.cfg":   {err: `port "ssh" in`},
		"10.0.0.11:22:":                            {err: "is not host:port:path"},
		"kube-vip.yml":                             {err: "is not host:port:path"},
	} {
		host, port, rest, err := splitImportID(id)
		switch {
		case want.err == "" && (err != nil || host != want.host || port != want.port || rest != want.rest):
			t.Errorf("%q: got %q %d %q, %v; want %q %d %q", id, host, port, rest, err, want.host, want.port, want.rest)
		case want.err != "" && (err == nil || !strings.Contains(err.Error(), want.err)):
			t.Errorf("%q: got %q %d %q, %v; want an error with %q", id, host, port, rest, err, want.err)
		}
	}
}
