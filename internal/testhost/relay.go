package testhost

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Relay is a TCP relay in front of a host that delays what it passes by
// half a round-trip time in each direction, as a network between the
// client and the host would. It is done in userspace because this
// machine's kernel has no sch_netem (`tc qdisc add ... netem delay` fails
// with "Specified qdisc kind is unknown").
//
// Every chunk read is stamped with the time it is due on the other side;
// the writer sleeps until then while the reader goes on reading, so a bulk
// transfer pays the delay once, not once per chunk, and order is kept.
type Relay struct {
	Host   string
	Port   int
	target string
	rtt    time.Duration

	listener net.Listener
	mu       sync.Mutex
	open     map[net.Conn]struct{}
	stats    RelayStats
	active   int
	serving  sync.WaitGroup
	// hole, while the link is dead (BlackHole), is closed when it ends:
	// Heal, or the relay's end.
	hole chan struct{}
}

// RelayStats are what a relay has carried so far; Sub gives what it
// carried between two moments.
type RelayStats struct {
	// Conns is the connections accepted: each costs the client a round
	// trip for TCP's handshake before it can send.
	Conns int
	// Turns counts the client's flights that had to wait for an answer
	// (see turnCounter; a connection's first flight is one). Each costs
	// a round trip.
	Turns int
}

// RoundTrips is what the connections cost the client in round trips:
// their handshakes and their turns.
func (s RelayStats) RoundTrips() int { return s.Conns + s.Turns }

// Add is s and another relay's reading.
func (s RelayStats) Add(other RelayStats) RelayStats {
	return RelayStats{Conns: s.Conns + other.Conns, Turns: s.Turns + other.Turns}
}

// Sub is s less an earlier reading.
func (s RelayStats) Sub(earlier RelayStats) RelayStats {
	return RelayStats{Conns: s.Conns - earlier.Conns, Turns: s.Turns - earlier.Turns}
}

// relayChunk is the most a relay reads at once.
const relayChunk = 32 << 10

// Delay starts a relay on a free loopback port that forwards to target
// with rtt of round-trip time, until the test ends.
func Delay(t testing.TB, target string, rtt time.Duration) *Relay {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{Host: "127.0.0.1", Port: portOf(t, l), target: target, rtt: rtt, listener: l, open: map[net.Conn]struct{}{}}
	r.serving.Add(1)
	go r.accept()
	t.Cleanup(r.close)
	return r
}

// Address is host:port, where clients connect.
func (r *Relay) Address() string { return net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) }

// KnownHostsName is the relay's address as known_hosts writes it.
func (r *Relay) KnownHostsName() string { return "[" + r.Host + "]:" + strconv.Itoa(r.Port) }

// Active is how many connections the relay carries now: a phase's count
// is complete once its connections ended.
func (r *Relay) Active() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.active
}

// Stats reads the relay's counters.
func (r *Relay) Stats() RelayStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// BlackHole makes the relay stop forwarding in both directions without
// closing anything, as a link that went dead: no data, no FIN, no reset
// reaches either side. It stops reading too, so what a side sends fills
// its socket's buffers and its writes block, as they do on a dead link
// until the kernel gives up (the relay's receive buffers shrink to the
// least, so only the sender's own hold anything). Connections made
// meanwhile are held the same way.
func (r *Relay) BlackHole() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hole != nil || r.open == nil {
		return
	}
	r.hole = make(chan struct{})
	for c := range r.open {
		if tcp, ok := c.(*net.TCPConn); ok {
			_ = tcp.SetReadBuffer(1) // the kernel's least
		}
	}
}

// SmallSendBuffers makes the kernel hold little of what this process
// sends through the relay, where on loopback it holds megabytes: on a WAN
// link the congestion window keeps it small, so that a write into a link
// that went dead soon waits for the kernel, holding back the
// connection's other writes.
func (r *Relay) SmallSendBuffers() error {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	shrunk := 0
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if peer, err := syscall.Getpeername(fd); err == nil {
			if in4, ok := peer.(*syscall.SockaddrInet4); ok && in4.Port == r.Port {
				if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 64<<10); err != nil {
					return err
				}
				shrunk++
			}
		}
	}
	if shrunk == 0 {
		return fmt.Errorf("this process has no connection through the relay at %s", r.Address())
	}
	return nil
}

// UploadStarted says whether a put of dir/name has begun to reach the
// host: its copy in the put's private directory has content.
func UploadStarted(dir, name string) bool {
	uploads, _ := filepath.Glob(filepath.Join(dir, "."+name+".kha-*", "new"))
	for _, u := range uploads {
		if info, err := os.Stat(u); err == nil && info.Size() > 0 {
			return true
		}
	}
	return false
}

// Heal brings the link back: the connections it held are reset, as the
// hosts' kernels gave up on them, and new ones are forwarded again.
func (r *Relay) Heal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endHole()
}

// endHole ends a black hole, with r.mu held.
func (r *Relay) endHole() {
	if r.hole == nil {
		return
	}
	for c := range r.open {
		c.Close()
	}
	close(r.hole)
	r.hole = nil
}

// stalled says whether the link is dead; if so it waits for the hole's
// end first, holding whatever the caller has: its connection is closed by
// then.
func (r *Relay) stalled() bool {
	r.mu.Lock()
	hole := r.hole
	r.mu.Unlock()
	if hole == nil {
		return false
	}
	<-hole
	return true
}

func (r *Relay) close() {
	r.listener.Close()
	r.mu.Lock()
	r.endHole()
	for c := range r.open {
		c.Close()
	}
	r.open = nil
	r.mu.Unlock()
	r.serving.Wait()
}

func (r *Relay) accept() {
	defer r.serving.Done()
	for {
		c, err := r.listener.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.stats.Conns++
		r.active++
		r.mu.Unlock()
		r.serving.Add(1)
		go r.serve(c, time.Now())
	}
}

// track keeps c to be closed with the relay; false when the relay is closed.
func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == nil {
		return false
	}
	r.open[c] = struct{}{}
	return true
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.open, c)
}

// serve relays one connection. The server sees it once the handshake's
// SYN, SYN-ACK and ACK have crossed, one and a half round trips after the
// client connected, so the relay dials the target then; the client's
// first bytes, read meanwhile, arrive with the ACK at the earliest.
func (r *Relay) serve(client net.Conn, connected time.Time) {
	defer r.serving.Done()
	defer func() {
		r.mu.Lock()
		r.active--
		r.mu.Unlock()
	}()
	defer client.Close()
	if !r.track(client) {
		return
	}
	defer r.untrack(client)
	turns := &turnCounter{answered: true}
	up := make(chan timedChunk, 64)
	go r.read(client, up, func() int {
		turn, first := turns.clientSends()
		if first {
			r.mu.Lock()
			r.stats.Turns++
			r.mu.Unlock()
		}
		return turn
	})
	time.Sleep(time.Until(connected.Add(r.rtt * 3 / 2)))
	if r.stalled() {
		drain(up)
		return
	}
	server, err := net.Dial("tcp", r.target)
	if err != nil || !r.track(server) {
		if server != nil {
			server.Close()
		}
		client.Close()
		drain(up)
		return
	}
	defer r.untrack(server)
	defer server.Close()
	turns.serverSees(1) // the handshake was the first turn's
	down := make(chan timedChunk, 64)
	go r.read(server, down, turns.serverSeen)
	var both sync.WaitGroup
	both.Add(2)
	closeBoth := func() { client.Close(); server.Close() }
	go func() { defer both.Done(); r.write(server, up, turns.serverSees, closeBoth) }()
	go func() { defer both.Done(); r.write(client, down, turns.clientReceives, closeBoth) }()
	both.Wait()
}

// turnCounter follows one connection's turns. A turn is a flight of the
// client that begins after an answer reached it: data the server sent
// after the client's latest turn reached it. Data the server sends
// unasked (sshd's KEXINIT right after its version) is no answer, so the
// client's next flight did not wait a round trip for it.
type turnCounter struct {
	mu sync.Mutex
	// turn is the client's latest turn, seen the latest the server has
	// received; answered: an answer to turn has reached the client.
	turn, seen int
	answered   bool
}

// clientSends notes a flight of the client: the turn it belongs to, and
// whether it begins it.
func (c *turnCounter) clientSends() (turn int, first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answered {
		c.turn++
		c.answered = false
		return c.turn, true
	}
	return c.turn, false
}

// serverSees notes that data of turn reached the server.
func (c *turnCounter) serverSees(turn int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = max(c.seen, turn)
}

// serverSeen is the latest turn the server has received, as it sends.
func (c *turnCounter) serverSeen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}

// clientReceives notes server data, sent after the server saw turn,
// reaching the client.
func (c *turnCounter) clientReceives(turn int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if turn >= c.turn {
		c.answered = true
	}
}

// timedChunk is data read from one side, due on the other at due; nil
// data is the end of what that side sends. turn is the turn it belongs
// to (the client's data) or answers (the server's).
type timedChunk struct {
	data []byte
	due  time.Time
	turn int
}

// read passes what src sends to out, stamped with turn(), then its end.
func (r *Relay) read(src net.Conn, out chan<- timedChunk, turn func() int) {
	defer close(out)
	for !r.stalled() {
		buf := make([]byte, relayChunk)
		n, err := src.Read(buf)
		if n > 0 {
			out <- timedChunk{data: buf[:n], due: time.Now().Add(r.rtt / 2), turn: turn()}
		}
		if err != nil {
			out <- timedChunk{due: time.Now().Add(r.rtt / 2)}
			return
		}
	}
}

// write delivers each chunk to dst when it is due and ends dst's sending
// at the end; on a failed write it calls fail and discards the rest.
// delivering notes each chunk's turn before it is written: once written,
// dst may answer before write could note it.
func (r *Relay) write(dst net.Conn, in <-chan timedChunk, delivering func(turn int), fail func()) {
	for c := range in {
		time.Sleep(time.Until(c.due))
		if r.stalled() {
			break
		}
		if c.data == nil {
			if tcp, ok := dst.(*net.TCPConn); ok && tcp.CloseWrite() == nil {
				continue
			}
			fail()
			break
		}
		delivering(c.turn)
		if _, err := dst.Write(c.data); err != nil {
			fail()
			break
		}
	}
	drain(in)
}

func drain(in <-chan timedChunk) {
	for range in {
	}
}
