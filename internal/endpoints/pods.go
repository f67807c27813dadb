package endpoints

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// This file holds what consumers beyond the nodes need: an apiserver
// endpoint for pods outside the host network, and the health check and
// timing of a load balancer in front of the apiservers, against the
// apiservers' graceful shutdown.

// Defaults of kube-apiserver's flags and of the exported health check.
const (
	// DefaultMinRequestTimeout is kube-apiserver's --min-request-timeout.
	DefaultMinRequestTimeout = 1800 * time.Second
	// Defaults of HealthCheckSpec: detection within 10s, within what
	// every cloud load balancer accepts (AWS and Azure check at most
	// every 5s).
	DefaultHealthCheckInterval  = 5 * time.Second
	DefaultHealthCheckTimeout   = 2 * time.Second
	DefaultHealthCheckThreshold = 2
	// readyzPath fails as soon as an apiserver starts shutting down.
	readyzPath = "/readyz"
)

// Health check protocols of HealthCheckSpec.
const (
	HealthCheckHTTPS = "HTTPS"
	HealthCheckTCP   = "TCP"
)

// APIServerFlags are kube-apiserver flags the load balancers must agree
// with. nil means not set: kube-apiserver's default applies, and nothing
// is checked against it.
type APIServerFlags struct {
	// ShutdownDelay is --shutdown-delay-duration: how long a stopping
	// apiserver keeps serving while its /readyz fails (default 0s).
	ShutdownDelay *time.Duration
	// MinRequestTimeout is --min-request-timeout, whole seconds (default
	// 1800s): the shortest time the apiserver lets a watch run.
	MinRequestTimeout *time.Duration
	// GoawayChance is --goaway-chance (0 to 0.02); nil is the default:
	// DefaultGoawayChance where a load balancer spreads clients over two
	// or more apiservers, else none.
	GoawayChance *float64
}

// DefaultGoawayChance is --goaway-chance where a load balancer spreads
// clients over two or more apiservers, as OpenShift sets it for highly
// available control planes: an HTTP/2 client (kubelet, controller,
// kube-proxy) keeps one connection for hours, so after an apiserver
// restarts every client stays on the others (kubernetes#48610). With it,
// one request in a thousand asks its client to reconnect, through the
// load balancer.
const DefaultGoawayChance = 0.001

// maxGoawayChance is the most kube-apiserver takes.
const maxGoawayChance = 0.02

// HealthCheckTiming is how often a load balancer in front of the
// apiservers checks them; zero fields mean the defaults.
type HealthCheckTiming struct {
	Interval, Timeout                    time.Duration
	HealthyThreshold, UnhealthyThreshold int
}

// HealthCheckSpec is the health check a load balancer in front of the
// apiservers should run, in the terms cloud load balancers take.
type HealthCheckSpec struct {
	// Protocol is HealthCheckHTTPS, or HealthCheckTCP when the apiservers
	// refuse anonymous requests (no cloud LB presents a client certificate).
	Protocol string
	// Path is empty with HealthCheckTCP.
	Path                                 string
	Port                                 int
	Interval, Timeout                    time.Duration
	HealthyThreshold, UnhealthyThreshold int
}

// Detection is how long the check takes at most to take an apiserver out
// of rotation once its /readyz fails: UnhealthyThreshold failed checks,
// one Interval apart.
func (h HealthCheckSpec) Detection() time.Duration {
	return time.Duration(h.UnhealthyThreshold) * h.Interval
}

// PodEndpoint is the apiserver endpoint of pods outside the host network.
type PodEndpoint struct {
	URL string
	// Host is unbracketed (an IPv6 literal as it is), for fields that take
	// a host alone (Cilium's k8sServiceHost, KUBERNETES_SERVICE_HOST).
	Host string
	Port int
	// SinglePoint says the endpoint is one control-plane node's apiserver.
	SinglePoint bool
}

// podEndpoint is the endpoint of pods outside the host network: the
// override, else the external load balancer or VIP, else the first
// control-plane node. A node-local load balancer listens on each node's
// loopback, which a pod in the pod network cannot reach, and the
// kubernetes Service needs kube-proxy or the CNI to serve it, so it cannot
// be the CNI's own endpoint. A MetalLB VIP is a Service too.
func (c *cluster) podEndpoint() PodEndpoint {
	if o := c.podOverride; o != nil {
		return *o
	}
	if c.external != nil && c.external.MetalLB == nil {
		host := c.lbHost()
		if IsLoopbackHost(host) {
			// A domain_name on the loopback (every node resolving the
			// name to its own load balancer) is no name for pods; the
			// address is never a loopback one.
			host = c.external.Address
		}
		return PodEndpoint{URL: URL(host, c.external.Port), Host: host, Port: c.external.Port}
	}
	// The first control-plane node that is not draining, as for kubeadm's
	// controlPlaneEndpoint.
	host := c.controlPlanes[c.primary].accessIP.String()
	return PodEndpoint{URL: URL(host, c.port), Host: host, Port: c.port, SinglePoint: true}
}

// ParsePodEndpoint reads an https URL with a host and an optional port
// (default 443). The host comes back unbracketed and canonical.
func ParsePodEndpoint(s string) (PodEndpoint, error) {
	u, err := url.Parse(s)
	if err != nil {
		return PodEndpoint{}, fmt.Errorf("%q is not a URL", s)
	}
	if u.Scheme != "https" || u.Opaque != "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return PodEndpoint{}, fmt.Errorf("%q is not of the form https://host:port", s)
	}
	host, port := u.Hostname(), 443
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || !problem.ValidPort(n) {
			return PodEndpoint{}, fmt.Errorf("%q has no valid port", s)
		}
		port = n
	}
	// Any spelling of an address comes back canonical, so that loopback
	// ones ("127.1", "0x7f000001") are seen for what a pod would dial.
	if a, ok := parseHostAddr(host); ok {
		if strings.Contains(u.Host, "%") || a.IsMulticast() {
			return PodEndpoint{}, fmt.Errorf("%q does not name one host", s)
		}
		host = a.String()
	} else if !isDNSName(host, false) {
		return PodEndpoint{}, fmt.Errorf("%q has no valid host", s)
	}
	host = canonicalHost(host)
	return PodEndpoint{URL: URL(host, port), Host: host, Port: port}, nil
}

// loopbackNames are the loopback names of the common distributions' own
// hosts files: Debian's ip6-localhost and ip6-loopback, Red Hat's
// localhost.localdomain.
var loopbackNames = map[string]bool{localhostName: true, "ip6-localhost": true, "ip6-loopback": true, "localhost.localdomain": true}

// IsLoopbackHost says a host is this machine's own: localhost (and the
// other loopbackNames), a name under .localhost, a loopback address or
// the unspecified one (which, as a destination, is this machine too), in
// any spelling a resolver reads as one ("127.1", "0x7f000001",
// "::ffff:127.0.0.1", "0").
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if loopbackNames[host] || strings.HasSuffix(host, "."+localhostName) {
		return true
	}
	a, ok := parseHostAddr(host)
	return ok && (a.IsLoopback() || a.IsUnspecified())
}

// LoopbackURLHost returns the host of an apiserver URL (or host:port)
// when it is a loopback one.
func LoopbackURLHost(s string) (string, bool) {
	hostport := s
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		hostport = u.Host
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return host, IsLoopbackHost(host)
}

// parsePodOverride reads Input.PodEndpointOverride.
func (c *cluster) parsePodOverride(ps *problem.Problems, s string) {
	if s == "" {
		return
	}
	at := problem.Root("pod_network_endpoint_override")
	pe, err := ParsePodEndpoint(s)
	if err != nil {
		ps.Errorf(at, "Invalid pod endpoint", "%s; give the URL pods use to reach kube-apiserver, e.g. https://10.0.0.100:6443 or https://[fd00::100]:6443.", err)
		return
	}
	if a, ok := parseIP(pe.Host); ok && a.IsUnspecified() {
		ps.Errorf(at, "Invalid pod endpoint", "%q does not name one host; give the URL pods use to reach kube-apiserver, "+
			"e.g. https://10.0.0.100:6443 or https://[fd00::100]:6443.", s)
		return
	}
	if IsLoopbackHost(pe.Host) {
		ps.Warnf(at, "Loopback endpoint for pods",
			"%s is the pod's own loopback: a pod outside the host network (calico-kube-controllers, controllers, webhooks) "+
				"reaches no apiserver there, only host-network pods on a node whose load balancer listens there do. "+
				"Give the external load balancer or VIP, or remove pod_network_endpoint_override to get kha's choice.", pe.URL)
	}
	c.podOverride = &pe
}

// parseTiming reads the apiserver flags and the health check timing.
func (c *cluster) parseTiming(ps *problem.Problems, in Input) {
	c.flags = in.APIServer
	if d := in.APIServer.ShutdownDelay; d != nil && (*d < 0 || *d > time.Hour) {
		ps.Errorf(problem.Root("apiserver_shutdown_delay_duration"), "Invalid duration", "%s must be between 0s and 1h.", *d)
	}
	if d := in.APIServer.MinRequestTimeout; d != nil && (*d < time.Second || *d%time.Second != 0 || *d > 24*time.Hour) {
		ps.Errorf(problem.Root("apiserver_min_request_timeout"), "Invalid timeout", "%d must be whole seconds between 1 and 86400.", *d/time.Second)
	}
	if p := in.APIServer.GoawayChance; p != nil && (*p < 0 || *p > maxGoawayChance) {
		ps.SchemaErrorf(problem.Root("apiserver_goaway_chance"), "Invalid chance", "%g must be between 0 and %g, as kube-apiserver "+
			"takes it; %g is a request in a thousand.", *p, maxGoawayChance, DefaultGoawayChance)
	}
	c.idleTimeout = in.LBIdleTimeout
	if d := in.LBIdleTimeout; d != 0 && (d < time.Second || d%time.Second != 0 || d > 24*time.Hour) {
		ps.Errorf(problem.Root("lb_idle_timeout"), "Invalid timeout", "lb_idle_timeout %s must be whole seconds between 1s and 24h.", d)
	}
	t, at := in.LBHealthCheck, problem.Root("lb_health_check")
	c.healthCheck = HealthCheckSpec{Protocol: HealthCheckHTTPS, Path: readyzPath, Port: c.port,
		Interval: orDefault(t.Interval, DefaultHealthCheckInterval), Timeout: orDefault(t.Timeout, DefaultHealthCheckTimeout),
		HealthyThreshold: orDefault(t.HealthyThreshold, DefaultHealthCheckThreshold), UnhealthyThreshold: orDefault(t.UnhealthyThreshold, DefaultHealthCheckThreshold)}
	if c.anonymousAuthOff {
		c.healthCheck.Protocol, c.healthCheck.Path = HealthCheckTCP, ""
	}
	h := &c.healthCheck
	for attr, d := range problem.Sorted(map[string]time.Duration{"interval": h.Interval, "timeout": h.Timeout}) {
		if d < time.Second || d > 5*time.Minute || d%time.Second != 0 {
			ps.Errorf(at.At(attr), "Invalid duration", "%s %s must be whole seconds between 1s and 5m (cloud load balancers count seconds).", attr, d)
		}
	}
	if h.Timeout > h.Interval {
		ps.Errorf(at.At("timeout"), "Timeout longer than the interval", "timeout %s must not exceed interval %s.", h.Timeout, h.Interval)
	}
	for attr, v := range problem.Sorted(map[string]int{"healthy_threshold": h.HealthyThreshold, "unhealthy_threshold": h.UnhealthyThreshold}) {
		if v < 1 || v > 10 {
			ps.SchemaErrorf(at.At(attr), "Invalid threshold", "%s is %d; use 1 to 10.", attr, v)
		}
	}
}

// checkPodEndpoint warns when pods depend on one control-plane node while
// the control plane has several.
func (c *cluster) checkPodEndpoint(pe PodEndpoint) problem.Problems {
	var ps problem.Problems
	if !pe.SinglePoint || c.mode == ModeDirect || len(c.controlPlanes) < 2 {
		return ps
	}
	why := "there is no external load balancer"
	if c.external != nil {
		why = "the MetalLB VIP is a Service, which the CNI must serve before it can be reached"
	}
	ps.Warnf(problem.Root("pod_network_endpoint"), "Pods depend on one control-plane node",
		"pod_network_endpoint is %s, the apiserver of %q alone, because %s and the node-local load balancers listen on each "+
			"node's loopback, which pods outside the host network cannot reach. While %q is down, such pods (and a CNI "+
			"configured with cilium_values or calico_kubernetes_services_endpoint) lose the API. Give external_lb "+
			"(a VIP or cloud load balancer), or set pod_network_endpoint_override to an endpoint that survives one node.",
		pe.URL, c.controlPlanes[c.primary].Name, why, c.controlPlanes[c.primary].Name)
	return ps
}

// checkShutdownTiming warns when the load balancer's health check keeps a
// stopping apiserver in rotation after it stops accepting connections.
func (c *cluster) checkShutdownTiming() problem.Problems {
	var ps problem.Problems
	d := c.flags.ShutdownDelay
	if d == nil {
		return ps
	}
	h := c.healthCheck
	if h.Protocol == HealthCheckTCP {
		return ps // the check cannot see /readyz; the description says so
	}
	if *d <= h.Detection() {
		ps.Warnf(problem.Root("apiserver_shutdown_delay_duration"), "Load balancer outlasts the apiserver's shutdown delay",
			"a stopping apiserver fails /readyz for %s (apiserver_shutdown_delay_duration) before it closes its port, but a "+
				"load balancer with health_check_spec (every %s, down after %d failures) needs up to %s to take it out of "+
				"rotation: for the rest of that time, new connections reach a closed port and fail. Set "+
				"apiserver_shutdown_delay_duration to at least %s, or shorten lb_health_check.interval or "+
				"lb_health_check.unhealthy_threshold.",
			*d, h.Interval, h.UnhealthyThreshold, h.Detection(), h.Detection()+h.Interval)
	}
	return ps
}

// checkIdleTimeout warns when the load balancer in front of the
// apiservers closes idle connections sooner than the apiservers end long
// requests.
func (c *cluster) checkIdleTimeout() problem.Problems {
	var ps problem.Problems
	if mrt := c.flags.MinRequestTimeout; mrt != nil && c.idleTimeout != 0 && c.idleTimeout < *mrt {
		ps.Warnf(problem.Root("lb_idle_timeout"), "Load balancer cuts long requests",
			"the load balancer closes a connection idle for %s (lb_idle_timeout), shorter than the apiservers' "+
				"--min-request-timeout %s (apiserver_min_request_timeout): a watch without a timeout of its own (kubectl get -w), "+
				"kubectl logs -f or kubectl exec that is quiet that long is cut, while the apiserver lets such requests run for "+
				"at least %s. Raise the load balancer's idle timeout to at least %s and set lb_idle_timeout to match.",
			c.idleTimeout, *mrt, *mrt, *mrt)
	}
	return ps
}

// apiserverArgs are the extra kube-apiserver flags of the kubeadm
// configuration, by name.
func (c *cluster) apiserverArgs() []extraArg {
	var args []extraArg
	if c.anonymousAuthOff {
		args = append(args, extraArg{Name: "anonymous-auth", Value: "false"})
	}
	if chance := c.goawayChance(); chance > 0 {
		args = append(args, extraArg{Name: "goaway-chance", Value: strconv.FormatFloat(chance, 'f', -1, 64)})
	}
	if d := c.flags.MinRequestTimeout; d != nil {
		args = append(args, extraArg{Name: "min-request-timeout", Value: strconv.Itoa(int(*d / time.Second))})
	}
	if d := c.flags.ShutdownDelay; d != nil {
		args = append(args, extraArg{Name: "shutdown-delay-duration", Value: d.String()})
	}
	return args
}

// goawayChance is --goaway-chance: the one set, else DefaultGoawayChance
// where a load balancer spreads clients over two or more apiservers that
// are not draining. Without one (direct, or a VIP that kube-vip holds on
// an apiserver's own node) every client of the endpoint reaches the same
// apiserver, and reconnecting would only return it there.
func (c *cluster) goawayChance() float64 {
	if p := c.flags.GoawayChance; p != nil {
		return *p
	}
	heldByAnAPIServer := c.mode == ModeExternalLB && c.external.Nodes != nil && len(c.external.Nodes) == 0
	if c.mode == ModeDirect || heldByAnAPIServer {
		return 0
	}
	serving := 0
	for _, n := range c.controlPlanes {
		if !n.Draining {
			serving++
		}
	}
	if serving < 2 {
		return 0
	}
	return DefaultGoawayChance
}

// HostsLoopbackNames maps each name a hosts file (/etc/hosts) gives a
// loopback address (or the unspecified one, which dials the same host) to
// that address. Addresses are read in every spelling glibc reads there.
func HostsLoopbackNames(hosts []byte) map[string]string {
	names := map[string]string{}
	for _, line := range strings.Split(string(hosts), "\n") {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		if a, ok := parseHostAddr(fields[0]); ok && (a.IsLoopback() || a.IsUnspecified()) {
			for _, name := range fields[1:] {
				names[canonicalHost(name)] = a.String()
			}
		}
	}
	return names
}
