package lbconfig

import "time"

// Preflight is a throwaway instance of a load balancer: the new
// configuration run once more, beside the live load balancer, before it
// replaces the live one. A configuration that passes `haproxy -c` or
// `nginx -t` but would serve nothing (a CA that signed no apiserver, a
// client certificate the apiservers refuse, backends behind a firewall)
// is caught while the live load balancer keeps serving.
type Preflight struct {
	Config       string
	Verification Verification
}

// PreflightFor is the throwaway instance of spec: the same backends,
// health checks, fallback and timeouts, listening on loopback at
// listenPort (a VIP may be held elsewhere) with its metrics and health on
// loopback at healthPort, without the live instance's PID file and admin
// socket. pidFile is where nginx, which always writes one, puts its PID.
func PreflightFor(kind Kind, spec Spec, listenPort, healthPort int, pidFile string, timeout time.Duration) (Preflight, error) {
	s := spec.WithDefaults()
	s.Role = NodeLocal
	s.Listen = []ListenAddr{{Address: "127.0.0.1", Port: listenPort}}
	s.HealthcheckPort = healthPort
	// HAProxy in the foreground prints each event (a server down, no
	// server left) on stderr already: as log lines too, the user would
	// read every one twice. nginx's access log is its only account of
	// the check's connections.
	s.Observability = Observability{Logs: kind == Nginx, LogTarget: LogStdout, Metrics: true}
	s.Runtime.PIDFile, s.Runtime.StatsSocket, s.Runtime.HealthOnLoopback = "", "", true
	if kind == Nginx {
		s.Runtime.PIDFile = pidFile
	}
	render := RenderHAProxy
	if kind == Nginx {
		render = RenderNginx
	}
	text, err := render(s)
	if err != nil {
		return Preflight{}, err
	}
	return Preflight{Config: text, Verification: VerificationFor(kind, s, text, timeout)}, nil
}
