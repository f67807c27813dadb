// Package lbconfig renders apiserver load balancer configurations: HAProxy
// and nginx (stream) as node-local proxies on loopback or as an external
// load balancer on a VIP, and the kubelet static pod manifests that run
// them. Rendering is deterministic and pure; Validate reports every input
// problem with its attribute path before anything is rendered.
package lbconfig

import (
	"fmt"
	"github.com/kha/terraform-provider-kha/internal/problem"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
)

// Role says where the load balancer sits.
type Role string

const (
	// NodeLocal listens on a node's loopback (kubespray's localhost LB).
	NodeLocal Role = "node_local"
	// External listens on a VIP for the whole cluster.
	External Role = "external"
)

// ListenAddr is one address the load balancer binds.
type ListenAddr struct {
	Address string // IP literal, unbracketed
	Port    int
}

// Backend is one kube-apiserver.
type Backend = endpoints.Backend

// Health check types.
const (
	// CheckHTTPS requests Path over HTTPS without credentials, verifying
	// the server against CAFile: kube-apiserver answers /readyz
	// anonymously unless --anonymous-auth=false.
	CheckHTTPS = "https"
	// CheckHTTPSClientCert presents ClientCert in the same request, for
	// apiservers that refuse anonymous requests.
	CheckHTTPSClientCert = "https_client_cert"
	// CheckTCP only opens a connection (Epiphany's option tcp-check): no
	// credentials, but a hung apiserver passes.
	CheckTCP = "tcp"
)

// HealthCheck configures HAProxy's active checks of the backends.
type HealthCheck struct {
	// Type is CheckHTTPS (default), CheckHTTPSClientCert or CheckTCP.
	Type string
	// Path is requested over HTTPS; empty means /readyz.
	Path string
	// CAFile is the cluster CA on the load balancer's host, to verify the
	// apiservers' certificates. Without it, InsecureSkipVerify must be set.
	CAFile             string
	InsecureSkipVerify bool
	// Interval between checks; a backend is down after Fall failures and
	// up again after Rise successes. Defaults: 500ms, 2, 2.
	Interval   time.Duration
	Fall, Rise int
	// ClientCert is a PEM file with the client certificate and its key,
	// or the certificate whose key is the file of the same name ending in
	// .key (kubeadm's apiserver-kubelet-client.crt and .key).
	ClientCert string
}

// Timeouts of proxied connections.
type Timeouts struct {
	Connect time.Duration // default 1s
	// Client and Server are how long a silent connection stays open on
	// either side; kubectl watches and kubelets hold connections for
	// minutes. Default 10m each.
	Client, Server time.Duration
}

// Servers tunes each backend server.
type Servers struct {
	// SlowStart ramps a server's weight up over this time after it comes
	// back (HAProxy only); 0 means none.
	SlowStart time.Duration
	// MaxConn and MaxQueue bound one server's connections and queue
	// (HAProxy only); 0 means no limit.
	MaxConn, MaxQueue int
	// FailTimeout is how long nginx keeps a server that failed out of
	// rotation; 0 means 10 intervals of the health check, at least the
	// connect timeout.
	FailTimeout time.Duration
}

// Observability switches the load balancer's own reporting.
type Observability struct {
	// Logs makes HAProxy log connections and health check changes
	// (option log-health-checks); on by default (the zero value is off,
	// WithDefaults does not change it: callers set it).
	Logs bool
	// LogTarget is where HAProxy logs: "stdout" (a static pod) or
	// "syslog" (/dev/log, journald on systemd hosts).
	LogTarget string
	// Metrics serves HAProxy's Prometheus exporter (/metrics) or nginx's
	// stub_status (/stub_status) on the health port, to connections made
	// to a loopback address only: /healthz answers on every address the
	// health port binds, the metrics (node names, backend states, session
	// counts) stay on the host.
	Metrics bool
	// ExposeMetrics serves the metrics on every address the health port
	// binds, without authentication: the operator's explicit choice.
	ExposeMetrics bool
}

// Where the metrics are answered (the resources' monitoring.metrics_listen).
const (
	// MetricsListenLoopback answers connections to a loopback address only.
	MetricsListenLoopback = "loopback"
	// MetricsListenAll answers on every address the health port binds.
	MetricsListenAll = "all"
)

// Where the health port answers (the resources' monitoring.healthcheck_listen).
const (
	// HealthcheckListenLoopback binds the health port on the host's
	// loopback only: what a node-local load balancer needs, whose checks
	// (the kubelet's probes of a static pod, a monitoring agent on the
	// node) run on the node.
	HealthcheckListenLoopback = "loopback"
	// HealthcheckListenAll binds it on every address: what an external
	// load balancer needs, which a cloud load balancer or a probe on
	// another host checks.
	HealthcheckListenAll = "all"
)

// defaultHealthcheckListen is where a load balancer of role answers its
// health port unless told: on loopback for a node-local one, on every
// address for an external one.
func defaultHealthcheckListen(role Role) string {
	if role == External {
		return HealthcheckListenAll
	}
	return HealthcheckListenLoopback
}

// Log targets.
const (
	LogStdout = "stdout"
	LogSyslog = "syslog"
)

// Runtime holds the paths a running instance uses; empty fields are left
// to the binary's defaults.
type Runtime struct {
	PIDFile string
	// StatsSocket is HAProxy's admin socket (used for seamless reloads).
	StatsSocket string
	// NginxStreamModule is the load_module path; empty for builds with the
	// stream module compiled in (the official nginx image).
	NginxStreamModule string
	// NginxWorkerConnections is nginx's worker_connections; 0 means
	// max(MaxConn, 1024).
	NginxWorkerConnections int
	// HealthOnLoopback binds the health port on 127.0.0.1 only, not on
	// every address (a throwaway instance; see Preflight).
	HealthOnLoopback bool
	// User and Group are what HAProxy started as root drops to once it has
	// bound its sockets and read its files (global user/group); empty, it
	// keeps the user it was started as. Both or neither.
	User, Group string
}

// Spec is everything a load balancer configuration depends on.
type Spec struct {
	// Name of the proxied service in the config; default kube_apiserver.
	Name     string
	Role     Role
	Listen   []ListenAddr
	Backends []Backend
	// Fallback, when set, is a last-resort server used only while every
	// backend is down (KubePrism's and the k3s agent's behaviour): the
	// external load balancer or VIP. Its Address may be a DNS name.
	Fallback *Backend
	// AnonymousAuthOff says the backends refuse anonymous requests
	// (kube-apiserver --anonymous-auth=false).
	AnonymousAuthOff bool
	// Balance is "leastconn" (default) or "roundrobin".
	Balance string
	// LocalFirst names the backend to prefer: the others become backups,
	// used only while it is down (a control-plane node's own apiserver).
	LocalFirst string
	// HealthcheckPort, when not 0, serves /healthz for the load balancer
	// itself (kubespray's healthcheck port), on the addresses
	// HealthcheckListen says, and the metrics (Observability) on loopback.
	HealthcheckPort int
	// HealthcheckListen is HealthcheckListenLoopback or
	// HealthcheckListenAll; "" is defaultHealthcheckListen of the role.
	HealthcheckListen string
	HealthCheck       HealthCheck
	Timeouts          Timeouts
	Servers           Servers
	Observability     Observability
	MaxConn           int // default 4000
	Runtime           Runtime
	// APIServer are the backends' kube-apiserver flags, where known:
	// CheckTiming checks the load balancer against them.
	APIServer endpoints.APIServerFlags
}

// Balance algorithms.
const (
	BalanceLeastConn  = "leastconn"
	BalanceRoundRobin = "roundrobin"
)

// WithDefaults returns the spec with every unset field at its default.
func (s Spec) WithDefaults() Spec {
	if s.Role == "" {
		s.Role = NodeLocal
	}
	if s.HealthcheckListen == "" {
		s.HealthcheckListen = defaultHealthcheckListen(s.Role)
	}
	if s.Name == "" {
		s.Name = "kube_apiserver"
	}
	if s.Balance == "" {
		s.Balance = BalanceLeastConn
	}
	if s.HealthCheck.Type == "" {
		s.HealthCheck.Type = CheckHTTPS
	}
	if s.HealthCheck.Path == "" {
		s.HealthCheck.Path = "/readyz"
	}
	if s.Observability.LogTarget == "" {
		s.Observability.LogTarget = LogSyslog
	}
	if s.HealthCheck.Interval == 0 {
		s.HealthCheck.Interval = 500 * time.Millisecond
	}
	if s.HealthCheck.Fall == 0 {
		s.HealthCheck.Fall = 2
	}
	if s.HealthCheck.Rise == 0 {
		s.HealthCheck.Rise = 2
	}
	if s.Timeouts.Connect == 0 {
		s.Timeouts.Connect = time.Second
	}
	if s.Timeouts.Client == 0 {
		s.Timeouts.Client = 10 * time.Minute
	}
	if s.Timeouts.Server == 0 {
		s.Timeouts.Server = 10 * time.Minute
	}
	if s.Servers.FailTimeout == 0 {
		s.Servers.FailTimeout = max(10*s.HealthCheck.Interval, s.Timeouts.Connect)
	}
	if s.MaxConn == 0 {
		s.MaxConn = 4000
	}
	return s
}

// Validate reports every problem of a spec, defaults applied, addressed
// with the attribute names the Terraform resources use.
func (s Spec) Validate() problem.Problems {
	s = s.WithDefaults()
	var ps problem.Problems
	if s.Role != NodeLocal && s.Role != External {
		ps.SchemaErrorf(problem.Root("role"), "Invalid role", "role is %q; use %q or %q.", s.Role, NodeLocal, External)
	}
	if len(s.Listen) == 0 {
		ps.Errorf(problem.Root("listen"), "Nothing to listen on", "listen must have at least one address, e.g. kha_cluster_endpoints' local_lb_listen.")
	}
	seenListen := map[string]bool{}
	for i, l := range s.Listen {
		at := problem.Root("listen").Index(i)
		a, err := netip.ParseAddr(l.Address)
		switch {
		case err != nil || a.Zone() != "" || a.IsMulticast():
			ps.Errorf(at.At("address"), "Invalid listen address", "%q is not an IP address to listen on.", l.Address)
		case s.Role == NodeLocal && !a.IsLoopback():
			ps.Errorf(at.At("address"), "Node-local load balancer off loopback",
				"a node-local load balancer listens on loopback only, but %s is not a loopback address; use role = %q for a VIP.", a, External)
		}
		if !problem.ValidPort(l.Port) {
			ps.SchemaErrorf(at.At("port"), "Invalid port", "port is %d; a TCP port is between 1 and 65535.", l.Port)
		}
		key := endpoints.HostPort(l.Address, l.Port)
		if seenListen[key] {
			ps.Errorf(at, "Duplicate listen address", "%s is listed twice.", key)
		}
		seenListen[key] = true
	}
	if len(s.Backends) == 0 {
		ps.Errorf(problem.Root("backends"), "No backends", "backends must list at least one apiserver, e.g. kha_cluster_endpoints' apiserver_backends.")
	}
	names := map[string]bool{}
	for i, b := range s.Backends {
		at := problem.Root("backends").Index(i)
		if !problem.IsIdentifier(b.Name) {
			ps.Errorf(at.At("name"), "Invalid backend name", "%q must be letters, digits, '.', '-' or '_' (it becomes a server name).", b.Name)
		}
		if names[b.Name] {
			ps.Errorf(at.At("name"), "Duplicate backend name", "%q is used twice.", b.Name)
		}
		names[b.Name] = true
		if a, err := netip.ParseAddr(b.Address); err != nil || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() {
			ps.Errorf(at.At("address"), "Invalid backend address", "%q is not the IP address of an apiserver.", b.Address)
		}
		if !problem.ValidPort(b.Port) {
			ps.SchemaErrorf(at.At("port"), "Invalid port", "port is %d; a TCP port is between 1 and 65535.", b.Port)
		}
	}
	if fb := s.Fallback; fb != nil {
		at := problem.Root("fallback")
		a, err := netip.ParseAddr(fb.Address)
		switch {
		case err == nil && !problem.IsServiceAddress(a):
			ps.Errorf(at.At("address"), "Invalid fallback address", "%s cannot be the external load balancer.", a)
		case err != nil && !endpoints.IsDNSName(fb.Address):
			ps.Errorf(at.At("address"), "Invalid fallback address", "%q is neither an IP address nor a DNS name.", fb.Address)
		}
		if !problem.ValidPort(fb.Port) {
			ps.SchemaErrorf(at.At("port"), "Invalid port", "port is %d; a TCP port is between 1 and 65535.", fb.Port)
		}
	}
	if s.LocalFirst != "" && !names[s.LocalFirst] {
		ps.Errorf(problem.Root("local_first"), "Unknown backend", "local_first is %q, which is not a backend name.", s.LocalFirst)
	}
	if s.Balance != BalanceLeastConn && s.Balance != BalanceRoundRobin {
		ps.SchemaErrorf(problem.Root("balance"), "Invalid balance", "balance is %q; use %q or %q.", s.Balance, BalanceLeastConn, BalanceRoundRobin)
	}
	if s.HealthcheckPort != 0 {
		if !problem.ValidPort(s.HealthcheckPort) {
			ps.SchemaErrorf(problem.Root("healthcheck_port"), "Invalid port", "healthcheck_port is %d; a TCP port is between 1 and 65535.", s.HealthcheckPort)
		}
		for _, l := range s.Listen {
			if l.Port != s.HealthcheckPort {
				continue
			}
			if !s.healthOnLoopback() {
				ps.Errorf(problem.Root("healthcheck_port"), "Port conflict",
					"healthcheck_port %d binds every address, which includes the listen address %s.", s.HealthcheckPort, endpoints.HostPort(l.Address, l.Port))
			} else if ip := net.ParseIP(l.Address); ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
				ps.Errorf(problem.Root("healthcheck_port"), "Port conflict",
					"healthcheck_port %d binds the host's loopback (monitoring.healthcheck_listen = \"loopback\"), which includes the listen address %s.", s.HealthcheckPort, endpoints.HostPort(l.Address, l.Port))
			}
		}
	}
	switch s.HealthcheckListen {
	case HealthcheckListenLoopback, HealthcheckListenAll:
	default:
		ps.SchemaErrorf(problem.Root("monitoring").At("healthcheck_listen"), "Invalid health port address", "monitoring.healthcheck_listen is %q; use %q or %q.",
			s.HealthcheckListen, HealthcheckListenLoopback, HealthcheckListenAll)
	}
	if s.Observability.ExposeMetrics && s.HealthcheckPort != 0 && s.healthOnLoopback() && !s.Runtime.HealthOnLoopback {
		ps.Errorf(problem.Root("monitoring").At("metrics_listen"), "Nothing to expose on",
			"monitoring.metrics_listen = %q serves the metrics on every address of healthcheck_port, but monitoring.healthcheck_listen = %q binds "+
				"it on the host's loopback only: set monitoring.healthcheck_listen = %q too, or leave monitoring.metrics_listen at %q.",
			MetricsListenAll, HealthcheckListenLoopback, HealthcheckListenAll, MetricsListenLoopback)
	}
	hc, hcAt := s.HealthCheck, problem.Root("health_check")
	if !strings.HasPrefix(hc.Path, "/") || strings.ContainsAny(hc.Path, "\"'#\\") || !isPrintableASCII(hc.Path) {
		ps.Errorf(hcAt.At("path"), "Invalid health check path", "%q must start with '/' and contain only printable ASCII without spaces, quotes or '#'; percent-encode anything else.", hc.Path)
	}
	if !problem.IsIdentifier(s.Name) {
		ps.Errorf(problem.Root("name"), "Invalid name", "%q must be letters, digits, '.', '-' or '_'.", s.Name)
	} else if s.Name == healthzFrontend {
		ps.Errorf(problem.Root("name"), "Reserved name", "%q is the load balancer's own health endpoint; choose another name.", s.Name)
	}
	switch hc.Type {
	case CheckHTTPS:
		if s.AnonymousAuthOff {
			ps.Errorf(hcAt.At("type"), "Anonymous health checks on apiservers that refuse them",
				"health_check.type = %q requests %s without credentials, but the backends refuse anonymous requests "+
					"(kha_cluster_endpoints' apiserver_anonymous_auth = false, kube-apiserver --anonymous-auth=false): every "+
					"check would get 401, every backend would be marked down, and the load balancer would refuse every "+
					"connection. Use health_check.type = %q with health_check.client_cert (e.g. kubeadm's "+
					"/etc/kubernetes/pki/apiserver-kubelet-client.crt), or %q.", CheckHTTPS, hc.Path, CheckHTTPSClientCert, CheckTCP)
		}
		if hc.ClientCert != "" {
			ps.Errorf(hcAt.At("client_cert"), "Client certificate without its check type",
				"health_check.client_cert is set but health_check.type is %q; set type = %q to present it.", CheckHTTPS, CheckHTTPSClientCert)
		}
	case CheckHTTPSClientCert:
		if hc.ClientCert == "" {
			ps.Errorf(hcAt.At("client_cert"), "Missing client certificate",
				"health_check.type = %q needs health_check.client_cert: a PEM file on the load balancer's host with a client "+
					"certificate the apiservers accept and its key (or the certificate, with the key in the file of the same "+
					"name ending in .key), e.g. kubeadm's /etc/kubernetes/pki/apiserver-kubelet-client.crt.", CheckHTTPSClientCert)
		}
	case CheckTCP:
	default:
		ps.SchemaErrorf(hcAt.At("type"), "Invalid health check type", "health_check.type is %q; use %q, %q or %q.",
			hc.Type, CheckHTTPS, CheckHTTPSClientCert, CheckTCP)
	}
	if hc.ClientCert != "" && !isConfigPath(hc.ClientCert) {
		ps.Errorf(hcAt.At("client_cert"), "Invalid client certificate path", "%q must be an absolute path without spaces, quotes, '#', ';' or braces.", hc.ClientCert)
	}
	if hc.CAFile == "" && !hc.InsecureSkipVerify && hc.Type != CheckTCP {
		ps.Errorf(hcAt.At("ca_file"), "Unverified health checks",
			"give health_check.ca_file (the cluster CA on the load balancer's host, e.g. /etc/kubernetes/pki/ca.crt) so "+
				"the checks verify the apiservers, or set health_check.insecure_skip_verify = true to opt out.")
	}
	if hc.CAFile != "" && !isConfigPath(hc.CAFile) {
		ps.Errorf(hcAt.At("ca_file"), "Invalid CA file path", "%q must be an absolute path without spaces, quotes, '#', ';' or braces.", hc.CAFile)
	}
	if hc.Interval < 100*time.Millisecond || hc.Interval > time.Hour {
		ps.Errorf(hcAt.At("interval"), "Invalid interval", "interval %s must be between 100ms and 1h.", hc.Interval)
	}
	for attr, v := range problem.Sorted(map[string]int{"fall": hc.Fall, "rise": hc.Rise}) {
		if v < 1 || v > 100 {
			ps.SchemaErrorf(hcAt.At(attr), "Invalid count", "%s is %d; use 1 to 100.", attr, v)
		}
	}
	if s.Timeouts.Connect < 100*time.Millisecond || s.Timeouts.Connect > time.Minute {
		ps.Errorf(problem.Root("proxy_timeouts").At("connect"), "Invalid timeout", "proxy_timeouts.connect %s must be between 100ms and 1m.", s.Timeouts.Connect)
	}
	for attr, d := range problem.Sorted(map[string]time.Duration{"client": s.Timeouts.Client, "server": s.Timeouts.Server}) {
		if d < time.Second || d > 24*time.Hour {
			ps.Errorf(problem.Root("proxy_timeouts").At(attr), "Invalid timeout", "proxy_timeouts.%s %s must be between 1s and 24h.", attr, d)
		}
	}
	if d := s.Servers.SlowStart; d < 0 || d > time.Hour {
		ps.Errorf(problem.Root("servers").At("slowstart"), "Invalid duration", "servers.slowstart %s must be between 0 and 1h.", d)
	}
	if d := s.Servers.FailTimeout; d < time.Second || d > time.Hour {
		ps.Errorf(problem.Root("servers").At("fail_timeout"), "Invalid duration", "servers.fail_timeout %s must be between 1s and 1h (nginx counts whole seconds).", d)
	}
	for _, limit := range []struct {
		at problem.Path
		v  int
	}{
		{problem.Root("servers").At("maxconn"), s.Servers.MaxConn}, {problem.Root("servers").At("maxqueue"), s.Servers.MaxQueue},
		{problem.Root("worker_connections"), s.Runtime.NginxWorkerConnections},
	} {
		if limit.v < 0 || limit.v > 1_000_000 {
			ps.SchemaErrorf(limit.at, "Invalid limit", "%s is %d; use 0 (no limit, or the default) to 1000000.", limit.at, limit.v)
		}
	}
	if s.Runtime.User != "" || s.Runtime.Group != "" {
		if !problem.AccountPattern.MatchString(s.Runtime.User) || !problem.AccountPattern.MatchString(s.Runtime.Group) {
			ps.Errorf(problem.Root("run_as"), "Invalid user or group", "%q and %q must be user:group, each a user or group name "+
				"(lowercase letters, digits, '_', '-', '.') or a numeric id.", s.Runtime.User, s.Runtime.Group)
		}
	}
	if strings.Contains(s.Runtime.StatsSocket, ",") {
		// HAProxy reads a socket address as a list at commas.
		ps.Errorf(problem.Root("stats_socket"), "Invalid path", "%q must not contain ',': HAProxy splits socket addresses at commas.", s.Runtime.StatsSocket)
	}
	if s.Observability.ExposeMetrics && (!s.Observability.Metrics || s.HealthcheckPort == 0) {
		ps.Errorf(problem.Root("monitoring").At("metrics_listen"), "Nothing to expose",
			"monitoring.metrics_listen = %q serves the metrics on every address of healthcheck_port, but there are none to serve: "+
				"set monitoring.metrics = true and healthcheck_port, or leave monitoring.metrics_listen at %q.", MetricsListenAll, MetricsListenLoopback)
	}
	if t := s.Observability.LogTarget; t != LogStdout && t != LogSyslog {
		ps.Errorf(problem.Root("log_target"), "Invalid log target", "log target %q; use %q or %q.", t, LogStdout, LogSyslog)
	}
	if s.MaxConn < 1 || s.MaxConn > 1_000_000 {
		ps.SchemaErrorf(problem.Root("max_connections"), "Invalid connection limit", "max_connections is %d; use 1 to 1000000.", s.MaxConn)
	}
	for attr, p := range problem.Sorted(map[string]string{"pid_file": s.Runtime.PIDFile, "stats_socket": s.Runtime.StatsSocket,
		"stream_module": s.Runtime.NginxStreamModule}) {
		if p != "" && !isConfigPath(p) {
			ps.Errorf(problem.Root(attr), "Invalid path", "%q must be an absolute path without spaces, quotes, '#', ';' or braces.", p)
		}
	}
	return ps
}

func isPrintableASCII(s string) bool {
	for _, c := range []byte(s) {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// isConfigPath accepts paths both config languages take unquoted: '#'
// starts a comment in each, ';' and braces end nginx directives.
func isConfigPath(p string) bool {
	return strings.HasPrefix(p, "/") && !strings.ContainsAny(p, " \t\r\n\"'#;{}\\")
}

// duration renders d in the unit both HAProxy and nginx accept.
func duration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// CheckTiming warns where the load balancer's timing works against the
// apiservers' flags (s.APIServer, the set ones): a health check that
// keeps a stopping apiserver in rotation after its shutdown delay, and
// idle timeouts that cut long requests before the apiserver would.
func (s Spec) CheckTiming(k Kind) problem.Problems {
	s = s.WithDefaults()
	var ps problem.Problems
	hc := s.HealthCheck
	if d := s.APIServer.ShutdownDelay; d != nil && k == HAProxy && hc.Type != CheckTCP {
		detection := time.Duration(hc.Fall) * hc.Interval
		if *d <= detection {
			ps.Warnf(problem.Root("health_check").At("interval"), "Load balancer outlasts the apiserver's shutdown delay",
				"HAProxy needs up to %s (health_check.interval %s × health_check.fall %d) to take a stopping apiserver out "+
					"of rotation, but the apiservers fail %s for only %s before they close their port (--shutdown-delay-duration, "+
					"backends[*].shutdown_delay_duration): for the rest of that time HAProxy sends new connections to a closed "+
					"port and retries them elsewhere. Set kha_cluster_endpoints' apiserver_shutdown_delay_duration to at least %s, "+
					"or shorten health_check.interval or health_check.fall.",
				duration(detection), duration(hc.Interval), hc.Fall, hc.Path, *d, duration(detection+hc.Interval))
		}
	}
	mrt := s.APIServer.MinRequestTimeout
	if mrt == nil {
		return ps
	}
	timeouts := map[string]time.Duration{"client": s.Timeouts.Client, "server": s.Timeouts.Server}
	what := "HAProxy closes a proxied connection idle for proxy_timeouts.%[1]s = %[2]s"
	if k == Nginx {
		// nginx has one idle timeout, the longer of the two.
		longer := "client"
		if s.Timeouts.Server > s.Timeouts.Client {
			longer = "server"
		}
		timeouts = map[string]time.Duration{longer: max(s.Timeouts.Client, s.Timeouts.Server)}
		what = "nginx closes a proxied connection idle for %[2]s (proxy_timeout, the longer of proxy_timeouts.client and proxy_timeouts.server)"
	}
	for attr, d := range problem.Sorted(timeouts) {
		if d < *mrt {
			ps.Warnf(problem.Root("proxy_timeouts").At(attr), "Load balancer cuts long requests",
				what+", shorter than the apiservers' --min-request-timeout %[3]s (backends[*].min_request_timeout): a watch "+
					"without a timeout of its own (kubectl get -w), kubectl logs -f or kubectl exec that is quiet that long is cut, "+
					"while the apiserver lets such requests run for at least %[3]s. Set proxy_timeouts.%[1]s to at least %[3]s.",
				attr, duration(d), duration(*mrt))
		}
	}
	return ps
}
