package lbconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// TestCheckTiming pins the warnings of a load balancer against its
// apiservers' --shutdown-delay-duration and --min-request-timeout: each
// at the attribute to change, only when the flag is known.
func TestCheckTiming(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	base := Spec{Listen: []ListenAddr{{Address: "127.0.0.1", Port: 6443}}, Backends: threeBackends, HealthCheck: HealthCheck{CAFile: goldenCA}}
	with := func(f func(*Spec)) Spec {
		s := copySpec(base)
		f(&s)
		return s
	}
	cases := []struct {
		name string
		kind Kind
		spec Spec
		// want maps each warned attribute path to a substring of its detail.
		want map[string]string
	}{
		{"flags unknown: nothing checked", HAProxy, base, nil},
		{"haproxy defaults within a 5s delay", HAProxy, with(func(s *Spec) { s.APIServer.ShutdownDelay = d(5 * time.Second) }), nil},
		{"haproxy defaults against kube-apiserver's 0s", HAProxy, with(func(s *Spec) { s.APIServer.ShutdownDelay = d(0) }),
			map[string]string{"health_check.interval": "needs up to 1s (health_check.interval 500ms × health_check.fall 2)"}},
		{"kubespray's 15s × 2 against a 20s delay", HAProxy, with(func(s *Spec) {
			s.HealthCheck.Interval, s.APIServer.ShutdownDelay = 15*time.Second, d(20*time.Second)
		}), map[string]string{"health_check.interval": "apiserver_shutdown_delay_duration to at least 45s"}},
		{"delay equal to detection warns", HAProxy, with(func(s *Spec) { s.APIServer.ShutdownDelay = d(time.Second) }),
			map[string]string{"health_check.interval": "at least 1500ms"}},
		{"tcp check cannot see /readyz: not checked", HAProxy, with(func(s *Spec) {
			s.HealthCheck.Type, s.APIServer.ShutdownDelay = CheckTCP, d(0)
		}), nil},
		{"nginx checks nothing actively: no drop check", Nginx, with(func(s *Spec) { s.APIServer.ShutdownDelay = d(0) }), nil},
		{"haproxy default timeouts against the default min-request-timeout", HAProxy, with(func(s *Spec) { s.APIServer.MinRequestTimeout = d(1800 * time.Second) }),
			map[string]string{"proxy_timeouts.client": "proxy_timeouts.client = 10m, shorter than the apiservers' --min-request-timeout 30m", "proxy_timeouts.server": "Set proxy_timeouts.server to at least 30m"}},
		{"haproxy: only the short side", HAProxy, with(func(s *Spec) {
			s.Timeouts.Client, s.Timeouts.Server, s.APIServer.MinRequestTimeout = 5*time.Minute, time.Hour, d(1800*time.Second)
		}), map[string]string{"proxy_timeouts.client": "proxy_timeouts.client = 5m"}},
		{"timeouts long enough", HAProxy, with(func(s *Spec) {
			s.Timeouts.Client, s.Timeouts.Server, s.APIServer.MinRequestTimeout = time.Hour, time.Hour, d(3600*time.Second)
		}), nil},
		{"nginx: the longer of the two is its one timeout", Nginx, with(func(s *Spec) {
			s.Timeouts.Client, s.Timeouts.Server, s.APIServer.MinRequestTimeout = 5*time.Minute, 20*time.Minute, d(1800*time.Second)
		}), map[string]string{"proxy_timeouts.server": "nginx closes a proxied connection idle for 20m"}},
		{"nginx: the longer is long enough", Nginx, with(func(s *Spec) {
			s.Timeouts.Client, s.Timeouts.Server, s.APIServer.MinRequestTimeout = 5*time.Minute, 30*time.Minute, d(1800*time.Second)
		}), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if ps := tc.spec.Validate(); ps.HasErrors() {
				t.Fatal(ps)
			}
			got := map[string]string{}
			for _, p := range tc.spec.CheckTiming(tc.kind) {
				if p.Severity != problem.Warning {
					t.Errorf("not a warning: %v", p)
				}
				got[p.Path.String()] = p.Detail
			}
			if len(got) != len(tc.want) {
				t.Errorf("warnings %v, want %v", got, tc.want)
			}
			for path, substr := range tc.want {
				if !strings.Contains(got[path], substr) {
					t.Errorf("warning at %s = %q, want one mentioning %q", path, got[path], substr)
				}
			}
		})
	}
}
