package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
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
