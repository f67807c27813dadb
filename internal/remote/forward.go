package remote

import (
	"net"
	"os"
	"sync"
	"time"
)

// forwardedConn is a connection forwarded through an SSH channel
// (DialTCP) that honours deadlines and whose Close ends a Read or Write in
// progress. An SSH channel does neither: a read from a host that stopped
// answering would wait until the host comes back, and with it every check
// that reads through it (a TLS handshake, an HTTP request), whatever its
// context says. One goroutine reads the channel ahead of the caller.
type forwardedConn struct {
	net.Conn
	chunks  chan []byte // what the channel sent, in order
	readErr error       // the channel's read error, once chunks is closed
	pending []byte      // the rest of the last chunk
	closed  chan struct{}
	once    sync.Once

	mu                          sync.Mutex
	readDeadline, writeDeadline time.Time
}

func newForwardedConn(c net.Conn) *forwardedConn {
	f := &forwardedConn{Conn: c, chunks: make(chan []byte), closed: make(chan struct{})}
	go f.pump()
	return f
}

// pump reads the channel until it ends or the connection is closed.
func (f *forwardedConn) pump() {
	defer close(f.chunks)
	for {
		buf := make([]byte, 32<<10)
		n, err := f.Conn.Read(buf)
		if n > 0 {
			select {
			case f.chunks <- buf[:n]:
			case <-f.closed:
				return
			}
		}
		if err != nil {
			f.readErr = err // read by Read after chunks is closed
			return
		}
	}
}

// expiry is a channel that fires at the deadline, nil for none; stop
// releases its timer.
func expiry(deadline time.Time) (fired <-chan time.Time, stop func()) {
	if deadline.IsZero() {
		return nil, func() {}
	}
	t := time.NewTimer(time.Until(deadline))
	return t.C, func() { t.Stop() }
}

func (f *forwardedConn) Read(p []byte) (int, error) {
	if len(f.pending) == 0 {
		f.mu.Lock()
		deadline := f.readDeadline
		f.mu.Unlock()
		fired, stop := expiry(deadline)
		defer stop()
		select {
		case chunk, ok := <-f.chunks:
			if !ok {
				return 0, f.readErr
			}
			f.pending = chunk
		case <-f.closed:
			return 0, net.ErrClosed
		case <-fired:
			return 0, os.ErrDeadlineExceeded
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

func (f *forwardedConn) Write(p []byte) (int, error) {
	f.mu.Lock()
	deadline := f.writeDeadline
	f.mu.Unlock()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := f.Conn.Write(p)
		done <- result{n, err}
	}()
	fired, stop := expiry(deadline)
	defer stop()
	select {
	case r := <-done:
		return r.n, r.err
	case <-f.closed:
		return 0, net.ErrClosed
	case <-fired:
		// The connection is of no further use: a write may still land.
		_ = f.Close() // always nil
		return 0, os.ErrDeadlineExceeded
	}
}

// Close ends what waits on the connection at once; the channel's own
// close goes to the host in the background.
func (f *forwardedConn) Close() error {
	f.once.Do(func() {
		close(f.closed)
		go f.Conn.Close()
	})
	return nil
}

func (f *forwardedConn) SetDeadline(t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readDeadline, f.writeDeadline = t, t
	return nil
}

func (f *forwardedConn) SetReadDeadline(t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readDeadline = t
	return nil
}

func (f *forwardedConn) SetWriteDeadline(t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeDeadline = t
	return nil
}
