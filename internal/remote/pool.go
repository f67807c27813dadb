package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// SessionsPerHost bounds the concurrent sessions on one connection; sshd
// allows 10 by default (MaxSessions).
const SessionsPerHost = 8

// Pool keeps one SSH connection per host and credentials, shared by every
// caller in the process. It is safe for concurrent use.
type Pool struct {
	mu    sync.Mutex
	conns map[string]*hostConn
	dials int // connections established, for tests and diagnostics
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{conns: map[string]*hostConn{}} }

// Client runs commands on one host over a pooled connection; callers that
// differ only in Sudo share the connection.
type Client struct {
	*hostConn
	sudo bool
}

// hostConn is a pooled connection to one host.
type hostConn struct {
	cfg      Config
	sessions chan struct{}

	mu       sync.Mutex
	conn     *ssh.Client
	bastion  *ssh.Client
	cleanup  func()
	hostKey  ssh.PublicKey
	dialErr  error
	dialOnce chan struct{}
}

// Get returns the pool's client for cfg, connecting if needed. The
// returned client reconnects by itself when its connection drops.
func (p *Pool) Get(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, &StepError{Host: cfg.Address(), Step: "configure", Err: err}
	}
	p.mu.Lock()
	c, ok := p.conns[cfg.key()]
	if !ok {
		c = &hostConn{cfg: cfg, sessions: make(chan struct{}, SessionsPerHost)}
		p.conns[cfg.key()] = c
	}
	p.mu.Unlock()
	if err := c.ensure(ctx, p); err != nil {
		return nil, err
	}
	return &Client{hostConn: c, sudo: cfg.Sudo}, nil
}

// Dials reports how many SSH connections the pool has established.
func (p *Pool) Dials() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dials
}

// Close closes every pooled connection.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, c := range p.conns {
		c.close()
		delete(p.conns, k)
	}
}

// HostKey is the key the host presented, for recording on first use.
func (c *hostConn) HostKey() ssh.PublicKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hostKey
}

func (c *hostConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	if c.bastion != nil {
		c.bastion.Close()
		c.bastion = nil
	}
	if c.cleanup != nil {
		c.cleanup()
		c.cleanup = nil
	}
}

// ensure connects unless a live connection exists. Concurrent callers
// share one dial.
func (c *hostConn) ensure(ctx context.Context, p *Pool) error {
	c.mu.Lock()
	if c.conn != nil {
		conn := c.conn
		c.mu.Unlock()
		if _, _, err := conn.SendRequest("keepalive@openssh.com", true, nil); err == nil {
			return nil
		}
		c.close()
		c.mu.Lock()
	}
	if c.dialOnce != nil {
		wait := c.dialOnce
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.conn != nil {
			return nil
		}
		return c.dialErr
	}
	done := make(chan struct{})
	c.dialOnce = done
	c.mu.Unlock()

	conn, bastion, key, cleanup, err := dialWithRetry(ctx, c.cfg)

	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn, c.bastion, c.hostKey, c.cleanup, c.dialErr = conn, bastion, key, cleanup, err
	c.dialOnce = nil
	close(done)
	if err == nil {
		p.mu.Lock()
		p.dials++
		p.mu.Unlock()
	}
	return err
}

// AuthError means the host refused every authentication method.
type AuthError struct {
	Address string
	User    string
	Tried   []string
	Err     error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("ssh: unable to authenticate as %s@%s; tried: %s. Check ssh.user and that the key "+
		"is in the user's authorized_keys", e.User, e.Address, strings.Join(e.Tried, ", "))
}

func (e *AuthError) Unwrap() error { return e.Err }

// permanentError is a configuration mistake found while dialing; trying
// again cannot help.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// retryable tells transient network failures from final answers: a
// refused login or a wrong host key will not change by trying again.
func retryable(err error) bool {
	var authErr *AuthError
	var keyErr *HostKeyError
	var final permanentError
	if errors.As(err, &authErr) || errors.As(err, &keyErr) || errors.As(err, &final) || errors.Is(err, context.Canceled) {
		return false
	}
	return true
}

// dialWithRetry dials with exponential backoff within cfg's timeout.
func dialWithRetry(ctx context.Context, cfg Config) (*ssh.Client, *ssh.Client, ssh.PublicKey, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout())
	defer cancel()
	backoff := 200 * time.Millisecond
	attempts := 0
	for {
		attempts++
		conn, bastion, key, cleanup, err := dial(ctx, cfg)
		if err == nil {
			return conn, bastion, key, cleanup, nil
		}
		if !retryable(err) {
			return nil, nil, nil, nil, &StepError{Host: cfg.Address(), Step: "connect", Err: err}
		}
		select {
		case <-ctx.Done():
			return nil, nil, nil, nil, &StepError{Host: cfg.Address(), Step: "connect",
				Err: fmt.Errorf("gave up after %d attempts within ssh.timeout %s: %w", attempts, cfg.timeout(), err)}
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// dial makes one connection attempt, through the bastion when there is one.
func dial(ctx context.Context, cfg Config) (conn, bastion *ssh.Client, key ssh.PublicKey, cleanup func(), err error) {
	var netConn net.Conn
	if cfg.Bastion != nil {
		bastion, _, bastionCleanup, err := dialDirect(ctx, *cfg.Bastion, nil)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("bastion %s: %w", cfg.Bastion.Address(), err)
		}
		netConn, err = bastion.DialContext(ctx, "tcp", cfg.Address())
		if err != nil {
			bastion.Close()
			bastionCleanup()
			err = fmt.Errorf("through bastion %s: %w", cfg.Bastion.Address(), err)
			var refused *ssh.OpenChannelError
			if errors.As(err, &refused) && refused.Reason == ssh.Prohibited {
				err = permanentError{fmt.Errorf("%w (the bastion does not allow TCP forwarding)", err)}
			}
			return nil, nil, nil, nil, err
		}
		conn, key, cleanup, err := dialDirect(ctx, cfg, netConn)
		if err != nil {
			bastion.Close()
			bastionCleanup()
			return nil, nil, nil, nil, err
		}
		return conn, bastion, key, func() { cleanup(); bastionCleanup() }, nil
	}
	conn, key, cleanup, err = dialDirect(ctx, cfg, nil)
	return conn, nil, key, cleanup, err
}

// dialDirect dials cfg's address, or handshakes over netConn when given.
func dialDirect(ctx context.Context, cfg Config, netConn net.Conn) (*ssh.Client, ssh.PublicKey, func(), error) {
	methods, tried, authCleanup, err := cfg.authMethods()
	if err != nil {
		return nil, nil, nil, &AuthError{Address: cfg.Address(), User: cfg.user(), Err: err, Tried: []string{err.Error()}}
	}
	var seen ssh.PublicKey
	hostKeyCheck, err := cfg.hostKeyCallback(&seen)
	if err != nil {
		authCleanup()
		return nil, nil, nil, permanentError{err}
	}
	cleanup := authCleanup
	clientCfg := &ssh.ClientConfig{
		User:            cfg.user(),
		Auth:            methods,
		HostKeyCallback: hostKeyCheck,
		Timeout:         10 * time.Second,
	}
	if netConn == nil {
		d := net.Dialer{Timeout: 10 * time.Second}
		if netConn, err = d.DialContext(ctx, "tcp", cfg.Address()); err != nil {
			cleanup()
			return nil, nil, nil, err
		}
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = netConn.SetDeadline(deadline)
	}
	sshConn, chans, reqs, err := ssh.NewClientConn(netConn, cfg.Address(), clientCfg)
	if err != nil {
		netConn.Close()
		cleanup()
		var keyErr *HostKeyError
		if errors.As(err, &keyErr) {
			return nil, nil, nil, keyErr
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, nil, nil, &AuthError{Address: cfg.Address(), User: cfg.user(), Tried: tried, Err: err}
		}
		return nil, nil, nil, err
	}
	_ = netConn.SetDeadline(time.Time{})
	return ssh.NewClient(sshConn, chans, reqs), seen, cleanup, nil
}

// Run runs a command on the host and returns its output. stdin may be nil.
func (c *hostConn) Run(ctx context.Context, cmd string, stdin io.Reader) (stdout, stderr []byte, err error) {
	select {
	case c.sessions <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	defer func() { <-c.sessions }()

	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return nil, nil, errors.New("connection closed")
	}
	session, err := conn.NewSession()
	if err != nil {
		return nil, nil, fmt.Errorf("opening an SSH session: %w", err)
	}
	defer session.Close()
	var outBuf, errBuf bytes.Buffer
	session.Stdout, session.Stderr, session.Stdin = &outBuf, &errBuf, stdin
	done := make(chan error, 1)
	go func() { done <- session.Run(cmd) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = session.Signal(ssh.SIGKILL)
		session.Close()
		err = ctx.Err()
	}
	return outBuf.Bytes(), errBuf.Bytes(), err
}
