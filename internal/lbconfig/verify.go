package lbconfig

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
)

// Dialer opens a TCP connection as seen from the load balancer's host.
type Dialer func(ctx context.Context, address string) (net.Conn, error)

// Verification tells whether a load balancer that was just reloaded
// serves: HAProxy reports, on its health port, at least one backend up
// after a passing check (from the process that runs this configuration,
// not one still draining), and a TLS handshake through the listen address
// reaches an apiserver. nginx, which reports nothing on its backends, is
// verified by the handshake alone.
type Verification struct {
	Kind Kind
	// Listen is probed with a TLS handshake; empty for a VIP, which may be
	// held by a peer.
	Listen []ListenAddr
	// MetricsPort, when not 0, serves HAProxy's /metrics; ConfigID is the
	// X-Kha-Config header the configuration's health frontend sends.
	MetricsPort int
	ConfigID    string
	Backend     string // the backend's name in the metrics
	Timeout     time.Duration
}

// VerificationFor is the verification of a rendered configuration.
func VerificationFor(kind Kind, spec Spec, text string, timeout time.Duration) Verification {
	s := spec.WithDefaults()
	v := Verification{Kind: kind, Backend: s.Name, Timeout: timeout}
	if s.Role == NodeLocal {
		v.Listen = s.Listen
	}
	if kind == HAProxy && s.HealthcheckPort != 0 && s.Observability.Metrics {
		v.MetricsPort, v.ConfigID = s.HealthcheckPort, ConfigID(text)
	}
	return v
}

// configIDLine carries the configuration's identity in its health frontend.
var configIDLine = regexp.MustCompile(`(?m)^    http-after-response set-header X-Kha-Config "[0-9a-f]*"\n`)

// ConfigID is a configuration's identity: a digest of it without the line
// that carries the identity.
func ConfigID(text string) string {
	return shortDigest(configIDLine.ReplaceAllString(text, ""))
}

func shortDigest(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:8])
}

// Run polls until the load balancer serves or the time is up, and then
// says what it saw last.
func (v Verification) Run(ctx context.Context, dial Dialer) error {
	ctx, cancel := context.WithTimeout(ctx, v.Timeout)
	defer cancel()
	for {
		err := v.once(ctx, dial)
		if err == nil {
			return nil
		}
		var down *allDownError
		if errors.As(err, &down) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the load balancer did not serve within %s: %w", v.Timeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (v Verification) once(ctx context.Context, dial Dialer) error {
	if v.MetricsPort != 0 {
		if err := v.backendsUp(ctx, dial); err != nil {
			return err
		}
	}
	for _, l := range v.Listen {
		if err := handshake(ctx, dial, endpoints.HostPort(l.Address, l.Port)); err != nil {
			return fmt.Errorf("a TLS handshake through %s failed: %v", endpoints.HostPort(l.Address, l.Port), err)
		}
	}
	return nil
}

// handshake completes a TLS handshake with whatever answers: through a
// pass-through load balancer, an apiserver. Its certificate is the
// clients' business; reaching one is what is checked.
func handshake(ctx context.Context, dial Dialer, address string) error {
	conn, err := dial(ctx, address)
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"}) // reachability only
	return tc.HandshakeContext(ctx)
}

// serverState is one backend server as HAProxy's metrics report it.
type serverState struct {
	state, check string
	code         int
}

var metricLine = regexp.MustCompile(`^haproxy_server_(status|check_status|check_code)\{([^}]*)\} ([0-9.]+)$`)

// backendsUp reads HAProxy's /metrics on the health port and wants at
// least one server up after a passing check.
func (v Verification) backendsUp(ctx context.Context, dial Dialer) error {
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dial(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(v.MetricsPort)))
	}, DisableKeepAlives: true}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(v.MetricsPort)+"/metrics?scope=server", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("HAProxy's health port %d did not answer: %v", v.MetricsPort, err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("X-Kha-Config"); id != v.ConfigID {
		return fmt.Errorf("the HAProxy answering on port %d does not run the new configuration yet (it reports %q)", v.MetricsPort, id)
	}
	servers := map[string]*serverState{}
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		m := metricLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := parseLabels(m[2])
		if labels["proxy"] != v.Backend {
			continue
		}
		s := servers[labels["server"]]
		if s == nil {
			s = &serverState{}
			servers[labels["server"]] = s
		}
		switch {
		case m[1] == "status" && m[3] == "1":
			s.state = labels["state"]
		case m[1] == "check_status" && m[3] == "1":
			s.check = labels["state"]
		case m[1] == "check_code":
			s.code, _ = strconv.Atoi(strings.Split(m[3], ".")[0])
		}
	}
	var report, hints []string
	hinted := map[string]bool{}
	allDown := len(servers) > 0
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := servers[name]
		if s.state == "UP" && strings.HasSuffix(s.check, "OK") {
			return nil
		}
		allDown = allDown && s.state == "DOWN" && lasting(s)
		r := name + " " + orDash(s.state) + " (check " + orDash(s.check)
		if s.code != 0 {
			r += ", HTTP " + strconv.Itoa(s.code)
		}
		report = append(report, r+")")
		hint := checkHints[s.check]
		if s.code == 401 || s.code == 403 {
			hint = "the apiserver refuses anonymous requests: use health_check.type = \"https_client_cert\" or \"tcp\""
		}
		if hint != "" && !hinted[hint] {
			hinted[hint] = true
			hints = append(hints, s.check+": "+hint)
		}
	}
	if len(report) == 0 {
		return fmt.Errorf("HAProxy reports no server of backend %s", v.Backend)
	}
	err = fmt.Errorf("no apiserver is up after a passing health check: %s", strings.Join(append(report, hints...), "; "))
	if allDown {
		return &allDownError{err}
	}
	return err
}

// allDownError: every server failed its checks (health_check.fall times
// in a row) in a way that waiting does not heal, so waiting longer would
// only delay the verdict.
type allDownError struct{ error }

func (e *allDownError) Unwrap() error { return e.error }

// checkHints say what HAProxy's check statuses mean for an apiserver.
var checkHints = map[string]string{
	"L4CON":   "the connection failed: is the apiserver running, and its address and port right?",
	"L4TOUT":  "the connection timed out: a firewall, or a route that goes nowhere?",
	"L6RSP":   "the TLS handshake failed: does health_check.ca_file hold the CA that signed the apiservers' certificates, and health_check.client_cert one they accept?",
	"L6TOUT":  "the TLS handshake timed out",
	"L7TOUT":  "no HTTP answer in time",
	"L7RSP":   "an answer that is not HTTP",
	"L7STS":   "an HTTP status other than 200",
	"SOCKERR": "a socket error",
}

// lasting reports whether a server's failed check is one that waiting does
// not heal: a TLS handshake the CA or client certificate breaks, an answer
// that is not HTTP, a refusal of the check's credentials. Timeouts, refused
// connections and other statuses (a 500 from an apiserver that starts or
// waits on etcd) may pass, so they wait for the timeout.
func lasting(s *serverState) bool {
	switch s.check {
	case "L6RSP", "L7RSP":
		return true
	case "L7STS":
		return s.code == 401 || s.code == 403
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// parseLabels reads a Prometheus label set: name="value",...
func parseLabels(s string) map[string]string {
	labels := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			labels[strings.TrimSpace(k)] = strings.Trim(v, `"`)
		}
	}
	return labels
}
