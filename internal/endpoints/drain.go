package endpoints

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// Drain bounds: how long the processes a reload replaces keep serving the
// connections they had (lbconfig renders these).
const (
	HAProxyDrainSeconds = 30 // hard-stop-after
	NginxDrainSeconds   = 10 // worker_shutdown_timeout
)

// referencesTo is what still points at draining node n.
func (c *cluster) referencesTo(n *node, r Result, in Input) []string {
	own := map[string]bool{n.Name: true, canonicalHost(n.Hostname): n.Hostname != "", canonicalHost(n.FQDN): n.FQDN != ""}
	for _, a := range []string{n.ip.String(), n.accessIP.String(), n.ip6.String(), n.accessIP6.String()} {
		if a != "invalid IP" {
			own[a] = true
		}
	}
	var refs []string
	for _, ne := range r.NodeEndpoints {
		if host := hostOfURL(ne.URL); ne.Name == n.Name && !strings.HasPrefix(ne.URL, "https://localhost") && (own[host] || IsLoopbackHost(host)) {
			refs = append(refs, fmt.Sprintf("node_endpoints[%q] %s: its own kubelet, until the node leaves", ne.Name, ne.URL))
		} else if own[host] {
			refs = append(refs, fmt.Sprintf("node_endpoints[%q] %s", ne.Name, ne.URL))
		}
	}
	refs = append(refs, "apiserver_cert_sans: its name and addresses stay, so every client verifies until the node is gone")
	for _, e := range in.Kubeadm.EtcdEndpoints {
		if u, err := url.Parse(e); err == nil && own[canonicalHost(u.Hostname())] {
			refs = append(refs, "kubeadm.etcd_endpoints "+e+": its etcd member, which stays until you remove it")
		}
	}
	if c.external != nil {
		for _, name := range c.external.Nodes {
			if name == n.Name {
				refs = append(refs, "external_lb.nodes: it runs the external load balancer or holds its VIP")
			}
		}
	}
	for _, s := range c.supplementary {
		if own[s] {
			refs = append(refs, "supplementary_addresses "+s)
		}
	}
	return refs
}

// drainingReferences warns, for each draining node, that it has left the
// load balancers and what still names it.
func (c *cluster) drainingReferences(r Result, in Input) problem.Problems {
	var ps problem.Problems
	for i := range c.controlPlanes {
		n := &c.controlPlanes[i]
		if !n.Draining {
			continue
		}
		ps.Warnf(n.path.At("draining"), "Control-plane node draining",
			"%s is draining: it is left out of apiserver_backends, so every load balancer fed from them sends no new connection to it "+
				"after this apply (the processes a reload replaces finish the open ones: HAProxy within %d s, nginx within %d s), and "+
				"no other node's endpoint, kubeadm_control_plane_endpoint or kubeadm_discovery_address names it. Still pointing at it:\n- %s\n"+
				"Give kha_kube_vip no resource for it, so it cannot hold the VIP. Once this apply is done and the drain time has passed, "+
				"remove %s from control_plane_nodes in a second apply; then remove its etcd member and stop its apiserver (guide: "+
				"Removing a control-plane node).",
			n.Name, HAProxyDrainSeconds, NginxDrainSeconds, strings.Join(c.referencesTo(n, r, in), "\n- "), n.Name)
	}
	return ps
}
