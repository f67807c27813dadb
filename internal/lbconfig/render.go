package lbconfig

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
)

// healthzFrontend names HAProxy's frontend for the load balancer's own
// health; Spec.Name may not take it.
const healthzFrontend = "healthz"

// loopbackNets are the destinations HAProxy answers metrics for unless
// they are exposed: connections made to a loopback address.
const loopbackNets = "127.0.0.0/8 ::1"

// ErrInvalid is returned by the renderers for a spec that does not
// validate; call Validate for the problems.
var ErrInvalid = errors.New("invalid load balancer spec")

func (s Spec) prepared() (Spec, error) {
	s = s.WithDefaults()
	if s.Validate().HasErrors() {
		return s, ErrInvalid
	}
	return s, nil
}

func isIPv6(address string) bool {
	a, err := netip.ParseAddr(address)
	return err == nil && a.Is6() && !a.Is4In6()
}

// healthOnLoopback says whether the health port of a spec with its
// defaults binds the host's loopback only: as HealthcheckListen says, and
// always for a throwaway instance.
func (s Spec) healthOnLoopback() bool {
	return s.Runtime.HealthOnLoopback || s.HealthcheckListen == HealthcheckListenLoopback
}

// hasIPv6 says whether the health endpoint also binds the IPv6 wildcard.
func (s Spec) hasIPv6() bool {
	for _, l := range s.Listen {
		if isIPv6(l.Address) {
			return true
		}
	}
	return false
}

// RenderHAProxy renders haproxy.cfg: a TCP pass-through with active
// health checks of every apiserver, marking a dead one down after about
// Fall × Interval (one second by default) and closing its sessions so
// clients reconnect to a live one.
func RenderHAProxy(spec Spec) (string, error) {
	s, err := spec.prepared()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	hc, logs := s.HealthCheck, s.Observability.Logs
	w("# Rendered by kha (role %s). Changes made here are reverted by the next apply.", s.Role)
	w("global")
	if s.Runtime.User != "" {
		w("    user %s", s.Runtime.User)
		w("    group %s", s.Runtime.Group)
	}
	w("    maxconn %d", s.MaxConn)
	w("    hard-stop-after %ds", endpoints.HAProxyDrainSeconds) // how long a drained server keeps its connections
	if logs {
		if s.Observability.LogTarget == LogStdout {
			w("    log stdout format raw local0")
		} else {
			w("    log /dev/log local0")
		}
	}
	if hc.Type == CheckHTTPSClientCert {
		// crt foo.crt then also loads the key from foo.key (kubeadm's layout).
		w("    ssl-load-extra-del-ext")
	}
	if s.Runtime.PIDFile != "" {
		w("    pidfile %s", s.Runtime.PIDFile)
	}
	if s.Runtime.StatsSocket != "" {
		w("    stats socket %s mode 600 level admin expose-fd listeners", s.Runtime.StatsSocket)
	}
	w("")
	w("defaults")
	w("    mode tcp")
	if logs {
		w("    log global")
		w("    option tcplog")
		w("    option log-health-checks")
	}
	w("    timeout connect %s", duration(s.Timeouts.Connect))
	w("    timeout client %s", duration(s.Timeouts.Client))
	w("    timeout server %s", duration(s.Timeouts.Server))
	w("    timeout check %s", duration(max(hc.Interval, s.Timeouts.Connect)))
	w("    retries 3")
	w("    option redispatch")
	if s.HealthcheckPort != 0 {
		w("")
		w("frontend %s", healthzFrontend)
		w("    mode http")
		w("    no log")
		if s.healthOnLoopback() {
			w("    bind 127.0.0.1:%d", s.HealthcheckPort)
			if s.hasIPv6() && !s.Runtime.HealthOnLoopback {
				w("    bind [::1]:%d v6only", s.HealthcheckPort)
			}
		} else {
			w("    bind 0.0.0.0:%d", s.HealthcheckPort)
			if s.hasIPv6() {
				w("    bind [::]:%d v6only", s.HealthcheckPort)
			}
		}
		w("    monitor-uri /healthz")
		if s.Role == External {
			// A VIP holder that reaches no apiserver should hand the VIP
			// over. The worker a reload replaces counts no server while it
			// stops, and still answers a check or two: without !stopping,
			// keepalived could move the VIP at every reload.
			w("    monitor fail if { nbsrv(%s) lt 1 } !{ stopping }", s.Name)
		}
		if s.Observability.Metrics {
			metrics := "{ path /metrics }"
			if !s.Observability.ExposeMetrics {
				// Answered on connections to a loopback address only (a
				// scraper on the host, kha's verification through its SSH
				// connection); elsewhere /metrics gets the 503 of any other
				// path.
				metrics += " { dst " + loopbackNets + " }"
			}
			w("    http-request use-service prometheus-exporter if %s", metrics)
			// Tells the process that runs this configuration from one still
			// draining after a reload; the value is filled in below.
			w(`    http-after-response set-header X-Kha-Config ""`)
		}
	}
	w("")
	w("frontend %s", s.Name)
	for _, l := range s.Listen {
		w("    bind %s", endpoints.HostPort(l.Address, l.Port))
	}
	w("    default_backend %s", s.Name)
	w("")
	w("backend %s", s.Name)
	w("    balance %s", s.Balance)
	check := "check"
	switch hc.Type {
	case CheckTCP:
		w("    option tcp-check")
	default:
		w("    option httpchk GET %s", hc.Path)
		w("    http-check expect status 200")
		check = "check check-ssl verify required ca-file " + hc.CAFile
		if hc.CAFile == "" {
			check = "check check-ssl verify none"
		}
		if hc.Type == CheckHTTPSClientCert {
			check += " crt " + hc.ClientCert
		}
	}
	server := fmt.Sprintf("%s inter %s fastinter %s downinter %s fall %d rise %d on-marked-down shutdown-sessions",
		check, duration(hc.Interval), duration(hc.Interval), duration(hc.Interval), hc.Fall, hc.Rise)
	if d := s.Servers.SlowStart; d > 0 {
		server += " slowstart " + duration(d)
	}
	if n := s.Servers.MaxConn; n > 0 {
		server += fmt.Sprintf(" maxconn %d", n)
	}
	if n := s.Servers.MaxQueue; n > 0 {
		server += fmt.Sprintf(" maxqueue %d", n)
	}
	w("    default-server %s", server)
	for _, be := range s.Backends {
		backup := ""
		if s.LocalFirst != "" && be.Name != s.LocalFirst {
			backup = " backup"
		}
		w("    server %s %s%s", be.Name, endpoints.HostPort(be.Address, be.Port), backup)
	}
	if fb := s.Fallback; fb != nil {
		// Last in the list: HAProxy uses the first backup that is up, so
		// this one only when every apiserver is down. A name that does not
		// resolve when HAProxy starts leaves it without an address, not
		// HAProxy without a configuration.
		w("    server %s %s backup init-addr libc,none", fallbackName, endpoints.HostPort(fb.Address, fb.Port))
	}
	text := b.String()
	return strings.Replace(text, `X-Kha-Config ""`, `X-Kha-Config "`+ConfigID(text)+`"`, 1), nil
}

// fallbackName is the server name of the last-resort server.
const fallbackName = "kha_fallback"

// NginxNote is the caveat every nginx configuration carries.
const NginxNote = "Open-source nginx has no active health checks: it learns that an apiserver is dead only when " +
	"connections to it fail, and a hung apiserver that still accepts connections keeps receiving clients. Use " +
	"HAProxy where that matters."

// RenderNginx renders nginx.conf with a stream proxy: the strongest passive
// failure handling open-source nginx has (one failed connect marks a
// backend down for fail_timeout, and the next backend is tried at once).
func RenderNginx(spec Spec) (string, error) {
	s, err := spec.prepared()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Rendered by kha (role %s). Changes made here are reverted by the next apply.", s.Role)
	w("# %s", NginxNote)
	if s.Runtime.NginxStreamModule != "" {
		w("load_module %s;", s.Runtime.NginxStreamModule)
	}
	w("error_log stderr notice;")
	if s.Runtime.PIDFile != "" {
		w("pid %s;", s.Runtime.PIDFile)
	}
	w("worker_processes 2;")
	w("worker_rlimit_nofile 65535;")
	w("worker_shutdown_timeout %ds;", endpoints.NginxDrainSeconds)
	w("")
	w("events {")
	w("    multi_accept on;")
	w("    use epoll;")
	w("    worker_connections %d;", orDefaultInt(s.Runtime.NginxWorkerConnections, max(s.MaxConn, 1024)))
	w("}")
	w("")
	w("stream {")
	w("    upstream %s {", s.Name)
	if s.Balance == BalanceLeastConn {
		w("        least_conn;")
	}
	// nginx takes whole seconds here.
	failTimeout := fmt.Sprintf("%ds", (s.Servers.FailTimeout+time.Second-1)/time.Second)
	for _, be := range s.Backends {
		backup := ""
		if s.LocalFirst != "" && be.Name != s.LocalFirst {
			backup = " backup"
		}
		w("        server %s max_fails=1 fail_timeout=%s%s; # %s", endpoints.HostPort(be.Address, be.Port), failTimeout, backup, be.Name)
	}
	tries := len(s.Backends)
	if fb := s.Fallback; fb != nil {
		w("        server %s max_fails=1 fail_timeout=%s backup; # %s", endpoints.HostPort(fb.Address, fb.Port), failTimeout, fallbackName)
		tries++
	}
	w("    }")
	w("")
	w("    server {")
	for _, l := range s.Listen {
		w("        listen %s;", endpoints.HostPort(l.Address, l.Port))
	}
	w("        proxy_pass %s;", s.Name)
	w("        proxy_timeout %s;", duration(max(s.Timeouts.Client, s.Timeouts.Server)))
	w("        proxy_connect_timeout %s;", duration(s.Timeouts.Connect))
	w("        proxy_next_upstream on;")
	w("        proxy_next_upstream_tries %d;", tries)
	w("        proxy_next_upstream_timeout %s;", duration(s.Timeouts.Connect*time.Duration(tries+1)))
	w("    }")
	w("}")
	if s.HealthcheckPort != 0 {
		w("")
		w("http {")
		w("    access_log off;")
		w("    server_tokens off;")
		server := func(listen []string, metrics bool) {
			w("    server {")
			for _, l := range listen {
				w("        listen %s;", l)
			}
			w("        location = /healthz {")
			w("            return 200;")
			w("        }")
			if metrics {
				w("        location = /stub_status {")
				w("            stub_status;")
				w("        }")
			}
			w("    }")
		}
		port := strconv.Itoa(s.HealthcheckPort)
		loopback := []string{"127.0.0.1:" + port}
		if s.hasIPv6() {
			loopback = append(loopback, "[::1]:"+port)
		}
		all := []string{port}
		if s.hasIPv6() {
			all = append(all, "[::]:"+port+" ipv6only=on")
		}
		switch {
		case s.Runtime.HealthOnLoopback:
			server(loopback[:1], s.Observability.Metrics)
		case s.healthOnLoopback():
			server(loopback, s.Observability.Metrics)
		case s.Observability.ExposeMetrics || !s.Observability.Metrics:
			server(all, s.Observability.Metrics)
		default:
			// nginx picks the server by the address a connection was made
			// to: stub_status only for connections to loopback.
			server(all, false)
			server(loopback, true)
		}
		w("}")
	}
	return b.String(), nil
}

func orDefaultInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
