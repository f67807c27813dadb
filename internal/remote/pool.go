package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// SessionsPerHost bounds the concurrent sessions on one connection; sshd
// allows 10 by default (MaxSessions). A host that allows fewer gets fewer
// (sessionSlots).
const SessionsPerHost = 8

// linkGrace is how long a connection has to answer once an operation's
// context ended while it held a session, before it counts as dead.
const linkGrace = 3 * time.Second

// Pool keeps one SSH connection per host and credentials, shared by every
// caller in the process. It is safe for concurrent use.
type Pool struct {
	logger Logger
	mu     sync.Mutex
	conns  map[string]*hostConn
	dials  int // connections established, for tests and diagnostics
}

// NewPool returns an empty pool that reports its steps to logger (nil
// discards them).
func NewPool(logger Logger) *Pool {
	if logger == nil {
		logger = discard{}
	}
	return &Pool{logger: logger, conns: map[string]*hostConn{}}
}

// Client runs commands on one host over a pooled connection; callers that
// differ only in Sudo share the connection.
type Client struct {
	*hostConn
	sudo bool
	// reads holds, once RememberReads asked for it, what ReadFile read
	// by path, until an edit of the path starts from it.
	reads map[string][]byte
}

// RememberReads makes the client keep what ReadFile reads for the next
// edit of the same path (EditedFile's Put and Remove), which then starts
// from it rather than reading the file again: its write refuses a file
// that changed since, as it refuses one changed since it read it itself.
// For the reads and edits of one operation, in one goroutine.
func (c *Client) RememberReads() { c.reads = map[string][]byte{} }

// Address is the host:port the client connects to.
func (c *hostConn) Address() string { return c.cfg.Address() }

// hostConn is a pooled connection to one host.
type hostConn struct {
	cfg      Config
	pool     *Pool // that made it, which counts its dials
	logger   Logger
	sessions *sessionSlots
	// locks serialise read-modify-write changes of one directory by
	// callers in this process (blocks in one file); the host-side lock
	// covers other processes.
	locks cache[string, *sync.Mutex] // by directory

	mu   sync.Mutex
	conn *ssh.Client
	// lost is closed once conn has ended (its transport saw the host
	// close it, or a failure): ensure learns it without asking the host.
	lost     <-chan struct{}
	bastion  *ssh.Client
	cleanup  func()
	hostKey  ssh.PublicKey
	dialErr  error
	dialOnce chan struct{}
	readErr  error // a read that gave up, see readGaveUp
}

// Get returns the pool's client for cfg, connecting if needed within
// cfg's Timeout: for changing the host. The returned client reconnects by
// itself when its connection drops.
func (p *Pool) Get(ctx context.Context, cfg Config) (*Client, error) {
	return p.get(ctx, cfg, cfg.applyBudget(), false)
}

// GetForRead is Get for reading the host (refresh, plan), connecting
// within cfg's RefreshTimeout: a plan does not wait minutes on a host
// that is down. The budget is this caller's own: a caller with a longer
// one that shares the dial goes on trying after this one gives up. Once
// a read gave up on the host, later reads fail at once with its error
// until a connection is made: a plan reads a host's resources one after
// another where they depend on each other, and a dead host would
// otherwise cost the budget once for each.
func (p *Pool) GetForRead(ctx context.Context, cfg Config) (*Client, error) {
	return p.get(ctx, cfg, cfg.readBudget(), true)
}

func (p *Pool) get(ctx context.Context, cfg Config, b budget, read bool) (*Client, error) {
	c, err := p.conn(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.readGaveUp(); read && err != nil {
		return nil, err
	}
	ensure := c.ensure
	if read {
		ensure = c.ensureForRead
	}
	if err := ensure(ctx, b); err != nil {
		return nil, err
	}
	return &Client{hostConn: c, sudo: cfg.Sudo}, nil
}

// conn is the pooled connection for cfg, made (not dialed) when there is
// none: one per distinct configuration.
func (p *Pool) conn(cfg Config) (*hostConn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, &StepError{Host: cfg.Address(), Step: "configure", Err: err}
	}
	key := cfg.key()
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.conns[key]
	if !ok {
		c = &hostConn{cfg: cfg, pool: p, logger: p.logger, sessions: &sessionSlots{limit: SessionsPerHost, freed: make(chan struct{})}}
		p.conns[key] = c
	}
	return c, nil
}

// ensureForRead is ensure for a read: one that gives up on the host is
// kept (see readGaveUp).
func (c *hostConn) ensureForRead(ctx context.Context, b budget) error {
	err := c.ensure(ctx, b)
	if Unreachable(err) {
		c.mu.Lock()
		c.readErr = err
		c.mu.Unlock()
	}
	return err
}

// readGaveUp is the error of a read that gave up on the host, while no
// connection was made since.
func (c *hostConn) readGaveUp() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil || c.readErr == nil {
		return nil
	}
	return fmt.Errorf("%w (not tried again: a read gave up on the host earlier in this run)", c.readErr)
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

// HostKey is the key the host presented (for a host certificate, the key
// it certifies), for recording on first use.
func (c *hostConn) HostKey() ssh.PublicKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hostKey
}

// lockDir serialises changes of one directory within this process.
func (c *hostConn) lockDir(dir string) func() {
	mu := c.locks.LoadOrStore(dir, &sync.Mutex{})
	mu.Lock()
	return mu.Unlock
}

func (c *hostConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
}

// closeLocked is close with c.mu held.
func (c *hostConn) closeLocked() {
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

// ensure connects unless a live connection exists, trying for the
// caller's budget b. Concurrent callers share one dial; when the dial
// gives up within its caller's budget, a waiter with time left dials
// again within its own.
func (c *hostConn) ensure(ctx context.Context, b budget) error {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	start := time.Now()
	for {
		c.mu.Lock()
		if c.conn != nil {
			select {
			case <-c.lost:
			default:
				c.mu.Unlock()
				return nil
			}
			c.closeLocked()
			c.log(ctx, LevelInfo, "connection lost; reconnecting", nil)
		}
		if wait := c.dialOnce; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					return &StepError{Host: c.cfg.Address(), Step: StepConnect, Err: &GaveUpError{Elapsed: time.Since(start),
						Budget: b, Reasons: []string{"waiting for another attempt to connect"}, Err: ctx.Err()}}
				}
				return ctx.Err()
			}
			c.mu.Lock()
			conn, err := c.conn, c.dialErr
			c.mu.Unlock()
			var gaveUp *GaveUpError
			if conn == nil && errors.As(err, &gaveUp) && ctx.Err() == nil {
				continue // its budget ended, not ours
			}
			if conn != nil {
				return nil
			}
			return err
		}
		done := make(chan struct{})
		c.dialOnce = done
		c.mu.Unlock()

		conn, bastion, key, cleanup, err := c.dialWithRetry(ctx, b, start)

		c.mu.Lock()
		c.conn, c.bastion, c.hostKey, c.cleanup, c.dialErr = conn, bastion, key, cleanup, err
		if conn != nil {
			c.lost = watchEnd(conn)
		}
		c.dialOnce = nil
		close(done)
		c.mu.Unlock()
		if err == nil {
			c.pool.mu.Lock()
			c.pool.dials++
			c.pool.mu.Unlock()
		}
		return err
	}
}

// watchEnd returns a channel that is closed when conn ends.
func watchEnd(conn *ssh.Client) <-chan struct{} {
	lost := make(chan struct{})
	go func() {
		_ = conn.Wait()
		close(lost)
	}()
	return lost
}

// GaveUpError is a connection given up on after retrying only failures
// that heal (refused, no route, timeouts) for the caller's budget: the
// host may be down or off the network; nothing says it is misconfigured.
type GaveUpError struct {
	Attempts int // 0: waited on another caller's attempts
	Elapsed  time.Duration
	Budget   budget
	Reasons  []string // what was retried, sorted
	Err      error    // the last failure
	// DefaultPort says that no port was set: kha dialled 22.
	DefaultPort bool
}

// misspeltPortHint follows a refused connection to port 22 that nobody
// set: Terraform drops a key it does not know inside `ssh = { … }` (an
// object's attributes), so a misspelt `port` reaches kha as none.
const misspeltPortHint = " Port 22 is the default: neither ssh.port nor the provider's default_ssh.port is set. If you set " +
	"one, check its spelling: Terraform drops a key it does not know inside ssh = { … } without a word."

func (e *GaveUpError) Error() string {
	attempts := "waiting"
	if e.Attempts > 0 {
		attempts = fmt.Sprintf("%d attempts", e.Attempts)
	}
	hint := ""
	if e.DefaultPort && slices.Contains(e.Reasons, refusedReason) {
		hint = misspeltPortHint
	}
	return fmt.Sprintf("gave up after %s over %s (%s %s or the operation's timeout), retrying %s: %v.%s %s",
		attempts, e.Elapsed.Round(time.Millisecond), e.Budget.setting, e.Budget.d, strings.Join(e.Reasons, " and "), e.Err, hint, GoneHint)
}

func (e *GaveUpError) Unwrap() error { return e.Err }

// Unreachable says whether err is a connection given up on after failures
// that heal: the host is down or off the network, as opposed to a wrong
// host key or a refused login.
func Unreachable(err error) bool {
	var gaveUp *GaveUpError
	return errors.As(err, &gaveUp)
}

// AuthError means the host refused every authentication method.
type AuthError struct {
	Address string
	User    string
	Tried   []string
	Err     error
}

func (e *AuthError) Error() string {
	if len(e.Tried) == 0 {
		return fmt.Sprintf("ssh: cannot authenticate as %s@%s: %v", e.User, e.Address, e.Err)
	}
	return fmt.Sprintf("ssh: unable to authenticate as %s@%s; tried: %s. Check ssh.user and that the key "+
		"is in the user's authorized_keys", e.User, e.Address, strings.Join(e.Tried, ", "))
}

func (e *AuthError) Unwrap() error { return e.Err }

// permanentError is a failure found while dialing that trying again
// cannot heal.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// healing names the failures worth retrying, which a host that is booting
// or whose sshd is starting produces; "" means the failure is final: a
// refused login, a wrong host key, a name that does not resolve.
func healing(err error) string {
	var authErr *AuthError
	var keyErr *HostKeyError
	var final permanentError
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.As(err, &opErr) && opErr.Op == "dial" && opErr.Timeout():
		// A host that drops packets: the attempt's own timeout, which
		// reads as the context's too; dialWithRetry gives up once the
		// caller's budget ends.
		return "connection timeouts"
	case errors.As(err, &authErr), errors.As(err, &keyErr), errors.As(err, &final),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ""
	case errors.As(err, &dnsErr):
		if dnsErr.IsTimeout || dnsErr.IsTemporary {
			return "a name server that did not answer"
		}
		return ""
	case errors.Is(err, syscall.ECONNREFUSED):
		return refusedReason
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the host"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closing during the handshake"
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return "connection timeouts"
	}
	return ""
}

// refusedReason is healing's name for a refused connection.
const refusedReason = "connection refused"

// GoneHint ends the error of a connection given up on: the way out when
// the host will not come back, which touches no host.
const GoneHint = "If the host is gone for good, take its resources out of the state without destroying them: " +
	"a removed block with lifecycle { destroy = false }, then apply (OpenTofu: apply -refresh=false); " +
	"or on_destroy = \"keep\" applied with -refresh=false, then destroy with -refresh=false; " +
	"or terraform state rm. See the Troubleshooting guide, \"A host that is gone for good\"."

// dialWithRetry dials, retrying what can heal with exponential backoff
// until ctx ends (ensure bounds it by the caller's budget b). start is
// when the caller began to wait, on another caller's attempts first,
// perhaps: a give-up says how long the caller waited in all.
func (c *hostConn) dialWithRetry(ctx context.Context, b budget, start time.Time) (*ssh.Client, *ssh.Client, ssh.PublicKey, func(), error) {
	backoff := 200 * time.Millisecond
	retried := map[string]bool{}
	for attempt := 1; ; attempt++ {
		c.log(ctx, LevelDebug, "dialing", map[string]any{"attempt": attempt, "user": c.cfg.user()})
		conn, bastion, key, cleanup, err := dial(ctx, c.cfg)
		if err == nil {
			c.log(ctx, LevelDebug, "connected; host key verified", map[string]any{"host_key": ssh.FingerprintSHA256(key),
				"host_key_type": key.Type(), "trust_on_first_use": c.cfg.TrustsOnFirstUse() && c.cfg.TrustedHostKey == ""})
			return conn, bastion, key, cleanup, nil
		}
		reason := healing(err)
		if reason == "" && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// The budget ended during the attempt: through a bastion, a
			// target off the network keeps the channel open (or the
			// handshake over it) waiting, where a direct dial reports a
			// timeout.
			reason = "connection timeouts"
		}
		if reason == "" {
			c.log(ctx, LevelWarn, "connecting failed", map[string]any{"error": err.Error()})
			if attempt > 1 {
				err = fmt.Errorf("%w (after %d attempts over %s)", err, attempt, time.Since(start).Round(time.Millisecond))
			}
			return nil, nil, nil, nil, &StepError{Host: c.cfg.Address(), Step: StepConnect, Err: err}
		}
		retried[reason] = true
		left := time.Duration(0)
		if deadline, ok := ctx.Deadline(); ok {
			left = max(time.Until(deadline), 0).Round(time.Second)
		}
		c.log(ctx, LevelInfo, "connecting failed; retrying", map[string]any{"attempt": attempt, "why": reason,
			"error": err.Error(), "backoff": backoff.String(), "left": left.String(), "budget": b.setting + " " + b.d.String()})
		select {
		case <-ctx.Done():
			reasons := make([]string, 0, len(retried))
			for r := range retried {
				reasons = append(reasons, r)
			}
			slices.Sort(reasons)
			return nil, nil, nil, nil, &StepError{Host: c.cfg.Address(), Step: StepConnect, Err: &GaveUpError{Attempts: attempt,
				Elapsed: time.Since(start), Budget: b, Reasons: reasons, Err: err, DefaultPort: c.cfg.Port == 0}}
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
			} else if errors.As(err, &refused) && refused.Reason == ssh.ConnectionFailed {
				err = fmt.Errorf("%w: %w", err, syscall.ECONNREFUSED) // the target's port, seen from the bastion
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
		return nil, nil, nil, &AuthError{Address: cfg.Address(), User: cfg.user(), Err: err}
	}
	v, err := cfg.verifier()
	if err != nil {
		authCleanup()
		return nil, nil, nil, permanentError{err}
	}
	var seen ssh.PublicKey
	cleanup := authCleanup
	clientCfg := &ssh.ClientConfig{
		User:              cfg.user(),
		Auth:              methods,
		HostKeyCallback:   v.callback(&seen),
		HostKeyAlgorithms: v.Algorithms,
		Timeout:           10 * time.Second,
	}
	if netConn == nil {
		d := net.Dialer{Timeout: 10 * time.Second}
		if netConn, err = d.DialContext(ctx, "tcp", cfg.Address()); err != nil {
			cleanup()
			return nil, nil, nil, err
		}
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = netConn.SetDeadline(deadline) // a channel through a bastion has no deadlines: see below
	}
	// Through a bastion, only closing the channel ends a handshake that a
	// silent target keeps waiting.
	stop := context.AfterFunc(ctx, func() { netConn.Close() })
	sshConn, chans, reqs, err := ssh.NewClientConn(netConn, cfg.Address(), clientCfg)
	if !stop() { // ctx ended, and the channel is closed
		if err == nil {
			sshConn.Close()
			err = errors.New("ssh: handshake done as the time to connect ended")
		}
		err = fmt.Errorf("%w: %w", err, ctx.Err())
	}
	if err != nil {
		netConn.Close()
		cleanup()
		var keyErr *HostKeyError
		switch {
		case errors.As(err, &keyErr):
			return nil, nil, nil, keyErr
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, nil, nil, &AuthError{Address: cfg.Address(), User: cfg.user(), Tried: tried, Err: err}
		case strings.Contains(err.Error(), "no common algorithm for host key"):
			return nil, nil, nil, permanentError{fmt.Errorf("%w: the host has no host key of the types pinned for it (%s)",
				err, strings.Join(v.Algorithms, ", "))}
		}
		return nil, nil, nil, err
	}
	_ = netConn.SetDeadline(time.Time{})
	return ssh.NewClient(sshConn, chans, reqs), seen, cleanup, nil
}

// DialTCP opens a TCP connection from the host to address (SSH's
// direct-tcpip, what `ssh -L` uses): a check of a service that listens on
// the host's loopback, without any tool on the host. Its deadlines and
// Close end a read or write in progress, also on a host that stopped
// answering (forwardedConn). A dial that failed on the host comes back as
// the error a dial there returns (rejectedDial).
func (c *hostConn) DialTCP(ctx context.Context, address string) (net.Conn, error) {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return nil, errors.New("connection closed")
	}
	nc, err := conn.DialContext(ctx, "tcp", address)
	var refused *ssh.OpenChannelError
	if errors.As(err, &refused) && refused.Reason == ssh.Prohibited {
		return nil, fmt.Errorf("the host does not allow TCP forwarding over SSH (sshd AllowTcpForwarding), which kha uses to "+
			"reach %s on it: allow it for the connection's user (Match User ... AllowTcpForwarding local), or turn the check off", address)
	}
	if errors.As(err, &refused) && refused.Reason == ssh.ConnectionFailed {
		return nil, asHostDialError(err, refused.Message, address)
	}
	if err != nil {
		return nil, err
	}
	return newForwardedConn(nc), nil
}

// asHostDialError reads the rejection of a channel whose dial failed on the
// host (sshd's "connect failed", with the host's error text as reason) as
// the error a dial on the host returns: syscall.ECONNREFUSED for a port
// nobody listens on, a *net.DNSError that is not found for a name the
// host's resolver does not know, so that a check tells them from a
// server that is not ready yet. The error's text stays the rejection's.
func asHostDialError(err error, reason, address string) error {
	reason = strings.ToLower(reason)
	switch {
	case strings.Contains(reason, "connection refused"): // strerror(ECONNREFUSED)
		return rejectedDial{err, syscall.ECONNREFUSED}
	case slices.ContainsFunc(nameNotFoundReasons, func(r string) bool { return strings.Contains(reason, r) }):
		host, _, _ := net.SplitHostPort(address)
		return rejectedDial{err, &net.DNSError{Err: reason, Name: host, IsNotFound: true}}
	}
	return err
}

// nameNotFoundReasons are what OpenSSH's sshd says (gai_strerror) when the
// host's resolver finds no such name, in glibc's, musl's and the BSDs'
// words; a resolver that did not answer ("Temporary failure in name
// resolution") is not among them.
var nameNotFoundReasons = []string{
	"name or service not known",           // glibc EAI_NONAME
	"no address associated with hostname", // glibc EAI_NODATA
	"name does not resolve",               // musl EAI_NONAME
	"name has no usable address",          // musl EAI_NODATA
	"servname provided, or not known",     // FreeBSD, macOS EAI_NONAME
}

// rejectedDial is a dial the host's sshd rejected, read as the host's own
// dial error (cause); its text is the rejection's.
type rejectedDial struct{ rejection, cause error }

func (e rejectedDial) Error() string   { return e.rejection.Error() }
func (e rejectedDial) Unwrap() []error { return []error{e.rejection, e.cause} }

// session opens a session on the pooled connection, waiting for a free
// slot; release gives the slot back. A connection that the host closed
// before this process noticed is made again, within a read's budget (the
// host answered a moment ago): nothing ran on it. A host that refuses the
// session past its MaxSessions gets fewer at once: the caller waits for
// a slot. Once ctx ends, a connection that does not answer is closed
// (dropIfDead), which ends whatever waits on the session.
func (c *hostConn) session(ctx context.Context) (s *ssh.Session, release func(), err error) {
	alone := 0 // refusals with no other session open
	for {
		if err := c.sessions.take(ctx); err != nil {
			return nil, nil, err
		}
		s, conn, err := c.openSession(ctx)
		if err == nil {
			probed := make(chan struct{})
			stop := context.AfterFunc(ctx, func() { c.dropIfDead(conn); close(probed) })
			return s, func() {
				if !stop() { // the operation's end waits for the verdict on its connection
					<-probed
				}
				s.Close()
				if !c.sessions.lowered() {
					c.sessions.give(true)
					return
				}
				// A host at its MaxSessions frees a closed session's place
				// after it handled the close: a session opened right after
				// it would be refused. A round trip waits for that.
				go func() {
					answers(conn, linkGrace)
					c.sessions.give(true)
				}()
			}, nil
		}
		var refused *ssh.OpenChannelError // sshd refuses a session only past its MaxSessions: "open failed"
		if !errors.As(err, &refused) {
			c.sessions.give(false)
			return nil, nil, err
		}
		if err := c.sessionRefused(ctx, &alone, err); err != nil {
			return nil, nil, err
		}
	}
}

// openSession opens a session, making the connection again when the host
// closed it unnoticed; conn is the connection it is on.
func (c *hostConn) openSession(ctx context.Context) (s *ssh.Session, conn *ssh.Client, err error) {
	s, conn, lost, err := c.newSession(ctx)
	var refused *ssh.OpenChannelError // by a host that is there
	if errors.Is(err, errNoConnection) || err != nil && !errors.As(err, &refused) && !Unreachable(err) && ended(lost) {
		if err = c.readGaveUp(); err == nil { // another caller gave up on the host meanwhile
			if err = c.ensureForRead(ctx, c.cfg.readBudget()); err == nil {
				s, conn, _, err = c.newSession(ctx)
			}
		}
	}
	return s, conn, err
}

// sessionRefused handles a session the host refused: with sessions of this
// connection open, the host's bound is what is open, and the caller waits
// for one of them. With none open, a session closed a moment ago may
// still count on the host, for a few tries; then the host allows none.
func (c *hostConn) sessionRefused(ctx context.Context, alone *int, err error) error {
	open, lowered := c.sessions.refused()
	if open > 0 {
		if lowered {
			c.log(ctx, LevelWarn, fmt.Sprintf("the host refused a session with %d open (sshd's MaxSessions); kha now opens at most "+
				"%d at once on it, and operations wait for one: raise MaxSessions in its sshd_config or lower "+
				"Terraform's -parallelism", open, open), map[string]any{"error": err.Error()})
		}
		return nil
	}
	const tries = 4
	if *alone < tries {
		wait := 100 * time.Millisecond << *alone
		*alone++
		select {
		case <-time.After(wait):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return &StepError{Host: c.cfg.Address(), Step: StepConnect, Err: fmt.Errorf("%w: the host refused every session on kha's "+
		"connection, with none other open: its sshd allows none (MaxSessions 0, perhaps in a Match block of its "+
		"sshd_config). kha runs its commands in sessions: set MaxSessions to 1 or more (10 is sshd's default); kha "+
		"opens up to %d at once on a host, fewer when the host refuses more, and Terraform's -parallelism bounds how "+
		"many resources apply at once", err, SessionsPerHost)}
}

// dropIfDead closes conn, and drops it from the pool, unless it answers
// within linkGrace: called once an operation's context ended, which may
// have left the operation blocked on conn, writing into a link that went
// dead (a write waits for the kernel, up to a quarter of an hour) or
// waiting for an answer that cannot come. Closing ends them, and the next
// operation dials anew. A connection that answers stays, for the other
// operations it carries.
func (c *hostConn) dropIfDead(conn *ssh.Client) {
	if answers(conn, linkGrace) {
		return
	}
	c.log(context.Background(), LevelWarn, "the host did not answer on its connection once an operation's time ended; closing it",
		map[string]any{"waited": linkGrace.String()})
	c.mu.Lock()
	if c.conn == conn {
		c.closeLocked()
	}
	c.mu.Unlock()
	conn.Close()
}

// answers says whether conn answers a keepalive within d (a closed
// connection answers at once, with its error).
func answers(conn *ssh.Client, d time.Duration) bool {
	answered := make(chan struct{})
	go func() {
		_, _, _ = conn.SendRequest("keepalive@openssh.com", true, nil) // any answer, even a refusal, proves the link
		close(answered)
	}()
	wait := time.NewTimer(d)
	defer wait.Stop()
	select {
	case <-answered:
		return true
	case <-wait.C:
		return false
	}
}

// sessionSlots bounds the sessions open at once on one connection: to
// SessionsPerHost, and to what the host allows once it refused one.
type sessionSlots struct {
	mu sync.Mutex
	// limit is the bound; taken, the slots of sessions open or being
	// opened; open, the sessions open.
	limit, taken, open int
	freed              chan struct{} // closed and replaced when a slot frees
}

// take waits for a free slot until ctx ends.
func (s *sessionSlots) take(ctx context.Context) error {
	s.mu.Lock()
	for s.taken >= s.limit {
		freed := s.freed
		s.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
	}
	s.taken++
	s.mu.Unlock()
	return nil
}

// give gives a slot back; opened says its session was open.
func (s *sessionSlots) give(opened bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken--
	if opened {
		s.open--
	}
	close(s.freed)
	s.freed = make(chan struct{})
}

// opened counts a session of a taken slot as open. The host allows as
// many as are open: a bound lowered below that (the host's refusal was
// counted before a session it had opened) rises to it.
func (s *sessionSlots) opened() {
	s.mu.Lock()
	s.open++
	s.limit = max(s.limit, s.open)
	s.mu.Unlock()
}

// lowered says whether a host's refusal lowered the bound.
func (s *sessionSlots) lowered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit < SessionsPerHost
}

// refused gives back the slot of a session the host refused and lowers
// the bound to the sessions open, if any: it returns them, and whether
// the bound dropped.
func (s *sessionSlots) refused() (open int, lowered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken--
	if s.open > 0 && s.open < s.limit {
		s.limit, lowered = s.open, true
	}
	return s.open, lowered
}

// newSession opens a session on the current connection, whose lost
// channel it returns. A host that does not answer within the read budget
// (it went off the network, or drops every packet, while the connection
// was idle: nothing tells the transport) is given up on as one that does
// not answer a dial is, and the connection closed: the callers waiting
// on it learn so at once, and later reads fail at once (readGaveUp).
func (c *hostConn) newSession(ctx context.Context) (*ssh.Session, *ssh.Client, <-chan struct{}, error) {
	c.mu.Lock()
	conn, lost := c.conn, c.lost
	c.mu.Unlock()
	if conn == nil {
		return nil, nil, nil, errNoConnection
	}
	type opened struct {
		s   *ssh.Session
		err error
	}
	done := make(chan opened, 1)
	go func() {
		s, err := conn.NewSession()
		done <- opened{s, err}
	}()
	b, start := c.cfg.readBudget(), time.Now()
	wait := time.NewTimer(b.d)
	defer wait.Stop()
	select {
	case o := <-done:
		if o.err != nil {
			return nil, nil, lost, fmt.Errorf("opening an SSH session: %w", o.err)
		}
		c.sessions.opened()
		return o.s, conn, lost, nil
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil, lost, ctx.Err()
		}
	case <-wait.C:
	}
	err := &StepError{Host: c.cfg.Address(), Step: StepConnect, Err: &GaveUpError{Elapsed: time.Since(start), Budget: b,
		Reasons: []string{"a session the host did not open"}, Err: context.DeadlineExceeded}}
	c.log(ctx, LevelWarn, "the host did not open a session on its connection; closing it", map[string]any{"error": err.Error()})
	c.mu.Lock()
	if c.conn == conn {
		c.closeLocked()
		c.readErr = err
	}
	c.mu.Unlock()
	conn.Close() // the pending NewSession returns; a session it may still open goes with the connection
	return nil, nil, lost, err
}

// errNoConnection means the pooled connection went (a caller gave up on
// the host, or the pool closed) between the caller's ensure and its
// session.
var errNoConnection = errors.New("connection closed")

// ended says whether the connection whose lost channel this is (nil: no
// connection) has ended, waiting a moment for its transport to tell: a
// session refused because the host closed the connection precedes that
// by little.
func ended(lost <-chan struct{}) bool {
	if lost == nil {
		return false
	}
	select {
	case <-lost:
		return true
	case <-time.After(time.Second):
		return false
	}
}

// Run runs a command on the host and returns its output. stdin may be
// nil. When ctx ends first, the command gets SIGTERM (a shell script's
// traps then clean up) and the session is closed.
func (c *hostConn) Run(ctx context.Context, cmd string, stdin io.Reader) (stdout, stderr []byte, err error) {
	session, release, err := c.session(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	var outBuf, errBuf bytes.Buffer
	session.Stdout, session.Stderr, session.Stdin = &outBuf, &errBuf, stdin
	done := make(chan error, 1)
	go func() { done <- session.Run(cmd) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = session.Signal(ssh.SIGTERM)
		session.Close()
		err = ctx.Err()
	}
	return outBuf.Bytes(), errBuf.Bytes(), err
}
