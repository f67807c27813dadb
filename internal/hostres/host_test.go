package hostres

import (
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// The pool's dialer fails as the pool does, with no Host at all: a Host
// holding a nil client would pass for a connection (c != nil).
func TestPoolDialerFailsWithNoHost(t *testing.T) {
	t.Parallel()
	pool := remote.NewPool(nil)
	defer pool.Close()
	for _, to := range []Purpose{ToChange, ToRead} {
		host, err := poolDialer(pool)(t.Context(), remote.Config{Port: 22}, to)
		if host != nil || err == nil || !strings.Contains(err.Error(), "ssh.host is empty") {
			t.Errorf("purpose %d: host %v, error %v", to, host, err)
		}
	}
}
