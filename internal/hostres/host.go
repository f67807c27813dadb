package hostres

import (
	"context"
	"net"

	"golang.org/x/crypto/ssh"

	"github.com/kha/terraform-provider-kha/internal/remote"
	"github.com/kha/terraform-provider-kha/internal/vipcheck"
)

// Host is a host as the lifecycle and the models' hooks reach it: the
// methods of *remote.Client they use, and no more, so that a test can hand
// the lifecycle a host of its own (ProviderData's dialer).
type Host interface {
	// Address is the host:port connected to, as messages name the host.
	Address() string
	// HostKey is the key the host presented, nil once the connection is
	// lost: what trust on first use records.
	HostKey() ssh.PublicKey

	Put(ctx context.Context, it remote.Item) (remote.Outcome, error)
	Remove(ctx context.Context, it remote.Item, command string) error
	Observe(ctx context.Context, items []remote.Item) ([]remote.Observed, error)
	ReadFile(ctx context.Context, path string) ([]byte, error)
	RememberReads()
	PutHandoverRecord(ctx context.Context, at string, h remote.HandoverRecord) error
	RemoveHandoverRecord(ctx context.Context, at string) error

	// What the hooks ask of the host besides its files.
	ServiceState(ctx context.Context, s remote.Service) (remote.ServiceState, error)
	SeeVIP(ctx context.Context, vip, iface string, others []string) (vipcheck.Sight, error)
	DialTCP(ctx context.Context, address string) (net.Conn, error)
}

var _ Host = (*remote.Client)(nil)

// Dialer gets the host that a resolved connection reaches, connecting for
// the purpose; its error is the engine's as it is, which says whether the
// host did not answer (remote.Unreachable).
type Dialer func(ctx context.Context, cfg remote.Config, to Purpose) (Host, error)

// poolDialer dials through the run's pool: one SSH connection per host,
// however many resources write to it.
func poolDialer(pool *remote.Pool) Dialer {
	return func(ctx context.Context, cfg remote.Config, to Purpose) (Host, error) {
		get := pool.GetForRead
		if to == ToChange {
			get = pool.Get
		}
		client, err := get(ctx, cfg)
		if err != nil {
			return nil, err // a nil Host, not one holding a nil client
		}
		return client, nil
	}
}
