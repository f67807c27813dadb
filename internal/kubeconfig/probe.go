package kubeconfig

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/kha/terraform-provider-kha/internal/buildinfo"
)

// Reader reads a file a kubeconfig refers to (a CA, a client certificate)
// as its user would.
type Reader func(ctx context.Context, path string) ([]byte, error)

// Dialer opens a connection as the kubeconfig's user would.
type Dialer func(ctx context.Context, address string) (net.Conn, error)

// Probe proves that content works: for each selected cluster, a GET of
// /readyz at its server, verified as its clients verify it (the cluster's
// CA and TLS server name) and authenticated with the credentials of the
// context that uses the cluster, answers 200. An apiserver that is not
// ready yet (a 5xx or 429 answer, a refused or dropped connection: an etcd
// election, a restart) is asked again until ctx ends, and then fails with
// its last answer; a TLS failure or a refusal of the credentials fails at
// once. The files the credentials are in are read once. Errors name the
// cluster and what failed, never a credential. Probe expects a restart
// (MayRestart): ProbeExpecting(ctx, Steady, ...) checks a server that
// nothing restarts.
func Probe(ctx context.Context, content []byte, cluster string, read Reader, dial Dialer) error {
	return ProbeExpecting(ctx, MayRestart, content, cluster, read, dial)
}

// ProbeExpecting is Probe for a server of which it expects what expect
// says: with Steady, what cannot heal while nobody restarts the server
// ends the probe at once (*UnservedError).
func ProbeExpecting(ctx context.Context, expect Expect, content []byte, cluster string, read Reader, dial Dialer) error {
	c, err := Parse(content)
	if err != nil {
		return err
	}
	selected, err := c.Selected(cluster)
	if err != nil {
		return err
	}
	for _, nc := range selected {
		if err := c.probeUntilReady(ctx, nc, expect, read, dial); err != nil {
			return fmt.Errorf("cluster %q at %s: %w", nc.Name, nc.Cluster.Server, err)
		}
	}
	return nil
}

// Expect is what a probe expects of what serves the server while it
// waits, which decides what is worth asking again.
type Expect int

const (
	// MayRestart: what serves the server may be restarting while the
	// probe waits (the change just restarted the kubelet, or an apiserver
	// or a load balancer restarts beside it): a refused connection and a
	// name that does not resolve yet are asked again, as an apiserver
	// that is not ready yet is.
	MayRestart Expect = iota
	// Steady: nothing restarts what serves the server while the probe
	// waits, as in a destroy's check of the server a kubeconfig had before
	// kha. A name that does not resolve, and a port nobody listens on
	// while its host answers (a refused connection), cannot heal within
	// the wait and end the probe at once with an *UnservedError; what can
	// (a 5xx answer, a timeout, a reset) is asked again.
	Steady
)

// Unserved says why a server cannot be reached at all.
type Unserved int

const (
	// NameUnknown: the server's name does not resolve where it is
	// dialled from.
	NameUnknown Unserved = iota + 1
	// PortClosed: the server's host answers, but refuses the connection:
	// nothing listens on the port.
	PortClosed
)

// UnservedError is a server a Steady probe gives up on at once, with the
// host and port of its URL and the dial's error.
type UnservedError struct {
	Why        Unserved
	Host, Port string
	Err        error
}

func (e *UnservedError) Error() string {
	if e.Why == NameUnknown {
		reason := e.Err.Error()
		var dnsErr *net.DNSError
		if errors.As(e.Err, &dnsErr) && dnsErr.Err != "" {
			reason = dnsErr.Err
		}
		return fmt.Sprintf("the name %s does not resolve (%s)", e.Host, reason)
	}
	return fmt.Sprintf("port %s on %s is not served (connection refused): its host answers, but nothing listens there", e.Port, e.Host)
}

func (e *UnservedError) Unwrap() error { return e.Err }

// retryInterval is the pause between two probes of a server not ready yet.
const retryInterval = 250 * time.Millisecond

// probeUntilReady reads the cluster's credentials once, then asks the
// server until it is ready, says no for good, or ctx ends. When ctx ends
// while the server is not ready, the error is the server's last answer
// and how long it was waited for: never the deadline itself, which would
// hide why the server did not get ready.
func (c *Config) probeUntilReady(ctx context.Context, nc NamedCluster, expect Expect, read Reader, dial Dialer) error {
	start := time.Now()
	e, err := c.endpointOf(ctx, nc, read, dial)
	if err != nil {
		return err
	}
	e.expect = expect
	var last error
	for {
		err := e.ask(ctx)
		var notReady notReadyError
		switch {
		case errors.As(err, &notReady):
			last = notReady.err
		case err != nil && last != nil && ctx.Err() != nil:
			return stillNotReady(last, start)
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return stillNotReady(last, start)
		case <-time.After(retryInterval):
		}
	}
}

func stillNotReady(last error, since time.Time) error {
	return fmt.Errorf("still not ready after %s: %w", time.Since(since).Round(100*time.Millisecond), last)
}

// notReadyError is an answer that waiting may change.
type notReadyError struct{ err error }

func (e notReadyError) Error() string { return e.err.Error() }
func (e notReadyError) Unwrap() error { return e.err }

// transport tells a server that is not there yet from one that can never
// work: a failed TLS verification or handshake alert, or a reply that is
// not TLS at all, is final, and so, for a Steady probe, is a name that
// does not resolve or a refused connection; anything else that kept the
// request from an answer (refused, reset, timed out) is not, unless ctx
// has ended.
func (e *endpoint) transport(ctx context.Context, err error) error {
	var verify *tls.CertificateVerificationError
	var alert tls.AlertError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var record tls.RecordHeaderError
	if errors.As(err, &record) || errors.Is(err, http.ErrSchemeMismatch) {
		return fmt.Errorf("the server at %s does not speak TLS (is %s a plain HTTP port?)", e.address, e.port)
	}
	if errors.As(err, &verify) || errors.As(err, &alert) || errors.As(err, &unknownCA) || errors.As(err, &hostname) || ctx.Err() != nil {
		return err
	}
	if e.expect == Steady {
		if unserved := e.unserved(err); unserved != nil {
			return unserved
		}
	}
	if errors.Is(err, io.EOF) {
		sni := fmt.Sprintf("SNI %q", e.serverName)
		if net.ParseIP(e.serverName) != nil {
			sni = "no SNI (the server is an address)"
		}
		err = fmt.Errorf("%w: the connection closed before TLS completed (a load balancer that routes by SNI closes it for a name "+
			"it does not route, and this client sends %s; tls-server-name sets the name)", err, sni)
	}
	return notReadyError{err}
}

// unserved is err as an *UnservedError when it says that the server
// cannot be reached at all: its name does not resolve where it is
// dialled from, or its host refused the connection; nil otherwise.
func (e *endpoint) unserved(err error) error {
	host, _, _ := net.SplitHostPort(e.address) // host:port, as endpointOf made it
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return &UnservedError{Why: NameUnknown, Host: host, Port: e.port, Err: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &UnservedError{Why: PortClosed, Host: host, Port: e.port, Err: err}
	}
	return nil
}

// endpoint is a cluster's server with the credentials its clients use,
// read once for every attempt.
type endpoint struct {
	address, port string
	serverName    string // what TLS sends and verifies
	expect        Expect // what a probe may wait out
	client        *http.Client
	httpTransport *http.Transport
	header        http.Header
}

// endpointOf reads what the cluster and its user name (CA, client
// certificate and key, token file) through read.
func (c *Config) endpointOf(ctx context.Context, nc NamedCluster, read Reader, dial Dialer) (*endpoint, error) {
	u, err := url.Parse(nc.Cluster.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, errors.New("the server is not an https URL")
	}
	e := &endpoint{address: u.Host, port: u.Port(), header: http.Header{"User-Agent": {buildinfo.UserAgent()}}}
	if e.port == "" {
		e.port = "443"
		e.address = net.JoinHostPort(u.Hostname(), e.port)
	}
	tlsConfig := &tls.Config{ServerName: u.Hostname(), InsecureSkipVerify: nc.Cluster.InsecureSkipTLSVerify}
	if nc.Cluster.TLSServerName != "" {
		tlsConfig.ServerName = nc.Cluster.TLSServerName
	}
	e.serverName = tlsConfig.ServerName
	ca, err := pemOf(ctx, nc.Cluster.CertificateAuthorityData, nc.Cluster.CertificateAuthority, "certificate-authority", read)
	if err != nil {
		return nil, err
	}
	if len(ca) > 0 {
		tlsConfig.RootCAs = x509.NewCertPool()
		if !tlsConfig.RootCAs.AppendCertsFromPEM(ca) {
			return nil, errors.New("its certificate authority has no PEM certificate")
		}
	}
	if user, ok := c.UserFor(nc.Name); ok {
		if user.UsesPlugin() {
			return nil, errors.New("its user's credentials come from an exec or auth-provider plugin, which kha does not run; " +
				"turn the check off for this kubeconfig")
		}
		certPEM, err := pemOf(ctx, user.ClientCertificateData, user.ClientCertificate, "client-certificate", read)
		if err != nil {
			return nil, err
		}
		keyPEM, err := pemOf(ctx, user.ClientKeyData, user.ClientKey, "client-key", read)
		if err != nil {
			return nil, err
		}
		if len(certPEM) > 0 {
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				return nil, errors.New("its client certificate and key do not make a key pair")
			}
			tlsConfig.Certificates = []tls.Certificate{pair}
		}
		token := user.Token
		if token == "" && user.TokenFile != "" {
			b, err := read(ctx, user.TokenFile)
			if err != nil {
				return nil, fmt.Errorf("reading tokenFile %s: %w", user.TokenFile, err)
			}
			token = strings.TrimSpace(string(b))
		}
		if token != "" {
			e.header.Set("Authorization", "Bearer "+token)
		}
	}
	e.httpTransport = &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx, e.address) }}
	e.client = &http.Client{Transport: e.httpTransport}
	return e, nil
}

// ask GETs /readyz once.
func (e *endpoint) ask(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+e.address+"/readyz", nil)
	if err != nil {
		return err
	}
	req.Header = e.header
	resp, err := e.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is in the caller's message already
		}
		return e.transport(ctx, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("the apiserver refused the kubeconfig's credentials (HTTP %d)", resp.StatusCode)
	}
	err = fmt.Errorf("GET /readyz answered HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return notReadyError{err}
	}
	return err
}

// pemOf returns inline data, or the file a path names.
func pemOf(ctx context.Context, data Base64, path, field string, read Reader) ([]byte, error) {
	if data != "" {
		b, err := data.Decode()
		if err != nil {
			return nil, fmt.Errorf("%s-data is not base64", field)
		}
		return b, nil
	}
	if path == "" {
		return nil, nil
	}
	b, err := read(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", field, path, err)
	}
	return b, nil
}

// APIClient is an authenticated connection to the apiserver of a
// kubeconfig's current context, verified and authenticated as Probe's
// (the cluster's CA and TLS server name, the user's client certificate or
// token), dialled through Dialer. It never logs or returns a credential.
type APIClient struct {
	// Server is the apiserver URL, as the kubeconfig names it.
	Server string
	e      *endpoint
}

// Connect reads what the kubeconfig's current context names (the files
// its CA and credentials are in, through read) and returns a client of its
// cluster's apiserver. Nothing is sent until the first request.
func Connect(ctx context.Context, content []byte, read Reader, dial Dialer) (*APIClient, error) {
	c, err := Parse(content)
	if err != nil {
		return nil, err
	}
	nc, err := c.currentCluster()
	if err != nil {
		return nil, err
	}
	e, err := c.endpointOf(ctx, nc, read, dial)
	if err != nil {
		return nil, fmt.Errorf("cluster %q at %s: %w", nc.Name, nc.Cluster.Server, err)
	}
	e.httpTransport.DisableKeepAlives = false // several requests, one TLS session
	return &APIClient{Server: nc.Cluster.Server, e: e}, nil
}

// currentCluster is the cluster of the current context, or the only
// cluster when there is no current context.
func (c *Config) currentCluster() (NamedCluster, error) {
	name := ""
	for _, ctx := range c.Contexts {
		if ctx.Name == c.CurrentContext {
			name = ctx.Context.Cluster
		}
	}
	if name == "" && len(c.Clusters) == 1 {
		return c.Clusters[0], nil
	}
	if name == "" {
		return NamedCluster{}, fmt.Errorf("the kubeconfig's current-context %q names no cluster", c.CurrentContext)
	}
	selected, err := c.Selected(name)
	if err != nil {
		return NamedCluster{}, err
	}
	return selected[0], nil
}

// maxResponse bounds what is read of an answer.
const maxResponse = 16 << 20

// Do sends one request to the apiserver and returns its status and body.
// A transport error names the server and what failed.
func (a *APIClient) Do(ctx context.Context, method, path, contentType string, body []byte) (int, []byte, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://"+a.e.address+path, reader)
	if err != nil {
		return 0, nil, err
	}
	req.Header = a.e.header.Clone()
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := a.e.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return 0, nil, fmt.Errorf("%s %s at %s: %w", method, path, a.Server, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s at %s: reading the answer: %w", method, path, a.Server, err)
	}
	return resp.StatusCode, answer, nil
}

// Close ends the client's connections.
func (a *APIClient) Close() {
	a.e.client.CloseIdleConnections()
}
