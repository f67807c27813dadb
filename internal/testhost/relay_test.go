package testhost

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// serve runs handle on every connection to a loopback listener, closing
// the connection after it, until the test ends; it returns the address.
func serve(t *testing.T, handle func(c net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return l.Addr().String()
}

// echo answers with what the client sends, until it stops sending.
func echo(c net.Conn) { _, _ = io.Copy(c, c) }

// giveBack reads all the client sends, then sends it back.
func giveBack(c net.Conn) {
	if b, err := io.ReadAll(c); err == nil {
		_, _ = c.Write(b)
	}
}

func TestRelayCountsEachExchangeAsARoundTrip(t *testing.T) {
	const rtt, exchanges = 20 * time.Millisecond, 5
	relay := Delay(t, serve(t, echo), rtt)
	start := time.Now()
	c, err := net.Dial("tcp", relay.Address())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	answers := bufio.NewReader(c)
	for i := 0; i < exchanges; i++ {
		question := fmt.Sprintf("question %d\n", i)
		if _, err := io.WriteString(c, question); err != nil {
			t.Fatal(err)
		}
		answer, err := answers.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if answer != question {
			t.Fatalf("answer %q to %q", answer, question)
		}
	}
	elapsed := time.Since(start)
	got := relay.Stats()
	if got != (RelayStats{Conns: 1, Turns: exchanges}) {
		t.Errorf("stats %+v, want 1 connection and %d turns", got, exchanges)
	}
	// The handshake and each exchange wait a round trip.
	if min := (exchanges + 1) * rtt; elapsed < min {
		t.Errorf("%d exchanges took %v, less than %v", exchanges, elapsed, min)
	}
}

func TestRelayStreamsBulkTransfers(t *testing.T) {
	const rtt, size = 50 * time.Millisecond, 8 << 20
	relay := Delay(t, serve(t, giveBack), rtt)
	sent := make([]byte, size)
	if _, err := rand.Read(sent); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, err := net.Dial("tcp", relay.Address())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	received := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(c)
		received <- b
	}()
	if _, err := c.Write(sent); err != nil {
		t.Fatal(err)
	}
	// The end of sending reaches the server, which then answers.
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got := <-received
	elapsed := time.Since(start)
	if !bytes.Equal(got, sent) {
		t.Fatalf("received %d bytes, not the %d sent", len(got), len(sent))
	}
	// At most relayChunk bytes a chunk, each way: paying the delay per
	// chunk would take chunks × rtt.
	chunks := 2 * size / relayChunk
	if max := time.Duration(chunks) * rtt / 8; elapsed > max {
		t.Errorf("%d MB each way took %v, more than %v (%d chunks at %v)", size>>20, elapsed, max, chunks, rtt)
	}
	if got := relay.Stats(); got.Conns != 1 || got.Turns != 1 {
		t.Errorf("stats %+v, want one connection and one turn", got)
	}
}

func TestRelayPropagatesCloses(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	relay := Delay(t, l.Addr().String(), 10*time.Millisecond)

	t.Run("server", func(t *testing.T) {
		c, err := net.Dial("tcp", relay.Address())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(s, "bye")
		s.Close()
		got, err := io.ReadAll(c)
		if err != nil || string(got) != "bye" {
			t.Errorf("client read %q, %v; want bye and the end", got, err)
		}
	})
	t.Run("client", func(t *testing.T) {
		c, err := net.Dial("tcp", relay.Address())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "bye")
		c.Close()
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		got, err := io.ReadAll(s)
		if err != nil || string(got) != "bye" {
			t.Errorf("server read %q, %v; want bye and the end", got, err)
		}
	})
	// Both connections ended on both sides: the relay carries none.
	for deadline := time.Now().Add(5 * time.Second); relay.Active() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the relay still carries %d connections", relay.Active())
		}
	}
}

// An SSH connection and one command through the relay, as x/crypto/ssh
// makes them. Its turns: the version (the first flight); KEXINIT and the
// key share, after the server's version and KEXINIT; NEWKEYS and the
// service request, after the key exchange's reply; a "none"
// authentication after the service is accepted; a public key query and
// then the signed request; the channel's opening; the command, after the
// channel's confirmation: 8. Closing the channel answers the server's
// close, a 9th, unless the connection ends first. On a loaded machine
// data sshd sends unasked can leave it only after the client's next
// flight reached it, and then counts as an answer: one more (seen in
// make test, whose packages run two at a time on two cores).
func TestRelayCarriesSSH(t *testing.T) {
	s := Start(t, Options{})
	const rtt = 10 * time.Millisecond
	relay := Delay(t, s.Address(), rtt)
	c, err := ssh.Dial("tcp", relay.Address(), &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(s.ClientKey.Signer)},
		HostKeyCallback: ssh.FixedHostKey(s.HostKey.Signer.PublicKey()), HostKeyAlgorithms: []string{ssh.KeyAlgoED25519}})
	if err != nil {
		t.Fatal(err)
	}
	session, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, err := session.Output("echo relayed")
	session.Close()
	c.Close()
	if err != nil || string(out) != "relayed\n" {
		t.Fatalf("output %q, %v", out, err)
	}
	got := relay.Stats()
	t.Logf("through the relay: %+v", got)
	// The session's end (exit status, EOF and close from each side)
	// crosses on the wire in one turn or two, as the scheduler has it.
	if got.Conns != 1 || got.Turns < 8 || got.Turns > 12 {
		t.Errorf("stats %+v, want 1 connection and 8 to 12 turns", got)
	}
}

// A black hole passes nothing and closes nothing: a read waits; after
// Heal the connection it held is reset, and a new one is relayed.
func TestRelayBlackHoleThenHeal(t *testing.T) {
	relay := Delay(t, serve(t, echo), 0)
	exchange := func(c net.Conn) error {
		if _, err := io.WriteString(c, "ping\n"); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		answer, err := bufio.NewReader(c).ReadString('\n')
		if err == nil && answer != "ping\n" {
			err = fmt.Errorf("answer %q", answer)
		}
		return err
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", relay.Address())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := dial()
	if err := exchange(c); err != nil {
		t.Fatalf("before the black hole: %v", err)
	}
	relay.BlackHole()
	var netErr net.Error
	if err := exchange(c); !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("in the black hole: want a read that waits, got %v", err)
	}
	relay.Heal()
	if err := exchange(c); err == nil || errors.As(err, &netErr) && netErr.Timeout() {
		t.Fatalf("after Heal, the held connection: want it reset, got %v", err)
	}
	if err := exchange(dial()); err != nil {
		t.Fatalf("a new connection after Heal: %v", err)
	}
}
