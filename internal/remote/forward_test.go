package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestForwardedConnections: a connection through the host carries what
// the service sends to its end, and on a host that stops answering its
// deadline and Close end a read in progress, where an SSH channel alone
// waits for the host forever.
func TestForwardedConnections(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	payload := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // several of the reader's chunks
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	freeze := make(chan struct{})
	thawed := make(chan func(), 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		_, _ = conn.Write(payload)
		conn.Close()
		conn, err = l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		<-freeze
		thawed <- s.FreezeConnections()
		<-time.After(30 * time.Second)
	}()

	conn, err := c.DialTCP(ctx, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("read %d of %d bytes, %v", len(got), len(payload), err)
	}
	conn.Close()

	conn, err = c.DialTCP(ctx, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	close(freeze)
	thaw := <-thawed
	defer thaw()
	read := func() <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := conn.Read(make([]byte, 1))
			done <- err
		}()
		return done
	}
	_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	select {
	case err := <-read():
		var timeout net.Error
		if !errors.As(err, &timeout) || !timeout.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a read past its deadline ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read with a 500ms deadline still waits on the frozen host after 5 s")
	}
	_ = conn.SetReadDeadline(time.Time{})
	done := read()
	time.Sleep(100 * time.Millisecond)
	conn.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("a read ended by Close returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a read waiting on a frozen host")
	}
}

// TestAsHostDialError: sshd's reason for a dial that failed on the host
// reads as the error a dial there returns, by the host's C library's
// words; a resolver that did not answer is not a name that is unknown.
func TestAsHostDialError(t *testing.T) {
	t.Parallel()
	rejected := errors.New("ssh: rejected: connect failed")
	for _, tc := range []struct {
		reason            string
		refused, notFound bool
	}{
		{"Connection refused", true, false},
		{"Name or service not known", false, true},
		{"No address associated with hostname", false, true},
		{"Name does not resolve", false, true},
		{"Temporary failure in name resolution", false, false},
		{"No route to host", false, false},
	} {
		err := asHostDialError(rejected, tc.reason, "api.example:6443")
		var dns *net.DNSError
		notFound := errors.As(err, &dns) && dns.IsNotFound && dns.Name == "api.example"
		if errors.Is(err, syscall.ECONNREFUSED) != tc.refused || notFound != tc.notFound || err.Error() != rejected.Error() {
			t.Errorf("%q: %v (refused %v, not found %v)", tc.reason, err, errors.Is(err, syscall.ECONNREFUSED), notFound)
		}
	}
}
