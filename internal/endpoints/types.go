package endpoints

import "time"

// Mode is the way cluster members and external clients reach kube-apiserver.
type Mode string

const (
	// ModeLocalLB: every node that does not run kube-apiserver reaches it
	// through a load balancer on its own loopback (kubespray's default).
	ModeLocalLB Mode = "local_lb"
	// ModeLocalLBWithUnmanagedLB: nodes use their node-local load balancer,
	// while external clients use an external load balancer that the cluster
	// itself does not depend on.
	ModeLocalLBWithUnmanagedLB Mode = "local_lb_with_unmanaged_lb"
	// ModeExternalLB: every node, control plane included, and every client
	// goes through one external load balancer (a VIP or a cloud LB).
	ModeExternalLB Mode = "external_lb"
	// ModeDirect: no load balancer; nodes and clients use the first
	// control-plane node. Not highly available.
	ModeDirect Mode = "direct"
	// ModeLocalLBEveryNode: every node, control plane included, reaches
	// the apiservers through its own node-local load balancer, and
	// kubeadm's controlPlaneEndpoint is localhost (Epiphany's design,
	// Talos KubePrism). Outside clients use an external load balancer or
	// a node's address.
	ModeLocalLBEveryNode Mode = "local_lb_every_node"
)

// IPFamily selects the cluster's address families.
type IPFamily string

const (
	IPv4      IPFamily = "ipv4"
	IPv6      IPFamily = "ipv6"
	DualStack IPFamily = "dual"
)

// LB types of the node-local load balancer.
const (
	LBTypeNginx   = "nginx"
	LBTypeHAProxy = "haproxy"
)

// Defaults, as kubespray has them.
const (
	DefaultAPIServerPort    = 6443
	DefaultBindAddress      = "::"
	DefaultDNSDomain        = "cluster.local"
	DefaultServiceCIDR      = "10.233.0.0/18"
	DefaultServiceCIDRIPv6  = "fd85:ee78:d8a6:8607::1000/116"
	DefaultLocalLBType      = LBTypeNginx
	localhostName           = "localhost"
	loopbackIPv4            = "127.0.0.1"
	loopbackIPv6            = "::1"
	kubernetesServiceDomain = "kubernetes.default.svc"
)

// Node is one cluster member.
type Node struct {
	// Name is the Kubernetes node name (kubespray's inventory_hostname).
	Name string
	// IP is the address the node binds and advertises, of the cluster's
	// primary family (IPv6 in an IPv6-only cluster, IPv4 otherwise).
	IP string
	// AccessIP is the address other nodes use to reach this one; empty
	// means IP.
	AccessIP string
	// IP6 and AccessIP6 are the IPv6 addresses of a dual-stack node.
	IP6       string
	AccessIP6 string
	// BindAddress overrides Input.APIServerBindAddress on a control-plane
	// node; empty means the cluster-wide value.
	BindAddress string
	// Hostname and FQDN are the host's own names (kubespray's
	// ansible_hostname and ansible_fqdn), apiserver SANs of control-plane
	// nodes.
	Hostname, FQDN string
	// Draining takes a control-plane node out of every load balancer and
	// every endpoint other nodes use, while its apiserver, etcd member and
	// SANs stay: the first of the two applies that remove it.
	Draining bool
}

// LocalLB describes the node-local apiserver load balancer.
type LocalLB struct {
	// Enabled nil means: enabled unless an external load balancer is set.
	Enabled *bool
	// Type is LBTypeNginx or LBTypeHAProxy; empty means nginx.
	Type string
	// Port is where it listens on loopback; 0 means the apiserver port.
	Port int
	// HealthcheckPort, when not 0, is where the LB reports its own health.
	HealthcheckPort int
	// EveryNode runs the load balancer on control-plane nodes too, and
	// makes every node use it (ModeLocalLBEveryNode).
	EveryNode bool
}

// ExternalLB is a load balancer in front of all apiservers.
type ExternalLB struct {
	// Address is the VIP or the LB's address (IP or hostname).
	Address string
	// Port 0 means the apiserver port.
	Port int
	// DomainName is the name clients use; empty means Address.
	DomainName string
	// RunsOnControlPlane says the LB process binds Address:Port on the
	// control-plane nodes themselves (e.g. HAProxy + keepalived there), so
	// its port must not collide with kube-apiserver's.
	RunsOnControlPlane bool
	// Nodes, when not nil, names the cluster nodes that run the LB or hold
	// its VIP; empty means none (it runs elsewhere). nil means unknown.
	Nodes []string
	// ControlPlaneEndpoint makes the LB (by DomainName, else Address) and
	// Port kubeadm's controlPlaneEndpoint and join discovery address in
	// every mode, not only ModeExternalLB: a name that stays when the
	// first control-plane node drains or leaves.
	ControlPlaneEndpoint bool
	// MetalLB makes the LB a MetalLB Service of type LoadBalancer for
	// outside clients; nodes keep their node-local load balancer.
	MetalLB *MetalLB
}

// MetalLB is an apiserver VIP announced by MetalLB.
type MetalLB struct {
	// AddressPool is the MetalLB pool to take the address from; empty
	// leaves it to MetalLB.
	AddressPool string
	// SelectStaticPods selects kubeadm's kube-apiserver static pods
	// instead of listing the control-plane nodes in an EndpointSlice, so
	// kube-proxy follows the apiservers' readiness.
	SelectStaticPods bool
}

// SANs are subject alternative names of a certificate.
type SANs struct {
	DNSNames    []string
	IPAddresses []string
}

// Input is everything the computation depends on.
type Input struct {
	ControlPlaneNodes []Node
	WorkerNodes       []Node
	// WorkerAddresses is the compact form of workers, name to ip; they
	// follow WorkerNodes in name order.
	WorkerAddresses map[string]string
	// APIServerPort 0 means DefaultAPIServerPort.
	APIServerPort int
	// APIServerBindAddress empty means DefaultBindAddress.
	APIServerBindAddress string
	LocalLB              LocalLB
	ExternalLB           *ExternalLB
	// SupplementaryAddresses are extra names and IPs clients use to reach
	// the apiservers (kubespray's supplementary_addresses_in_ssl_keys).
	SupplementaryAddresses []string
	// DNSDomain empty means DefaultDNSDomain.
	DNSDomain string
	// ServiceCIDR and ServiceCIDRIPv6 empty mean the defaults.
	ServiceCIDR     string
	ServiceCIDRIPv6 string
	// IPFamily empty means IPv4.
	IPFamily IPFamily
	// ExistingCertSANs, when set, are the SANs of an apiserver certificate
	// that already exists: every endpoint must verify against them.
	ExistingCertSANs *SANs
	// Kubeadm holds what the kubeadm ClusterConfiguration needs besides
	// the endpoints.
	Kubeadm KubeadmInput
	// AnonymousAuthOff says the apiservers run with --anonymous-auth=false
	// (kubespray's kube_api_anonymous_auth: false).
	AnonymousAuthOff bool
	// APIServer are the apiservers' shutdown and request timing flags;
	// set ones go into the kubeadm configuration and are checked.
	APIServer APIServerFlags
	// LBHealthCheck is the timing of HealthCheckSpec.
	LBHealthCheck HealthCheckTiming
	// LBIdleTimeout, when not 0, is how long the load balancer in front
	// of the apiservers keeps an idle connection (a cloud load balancer's
	// idle timeout).
	LBIdleTimeout time.Duration
	// PodEndpointOverride, when set, is the https URL pods outside the
	// host network use instead of kha's choice.
	PodEndpointOverride string
}

// KubeadmInput is the external etcd of a kubeadm ClusterConfiguration.
type KubeadmInput struct {
	// EtcdEndpoints, when set, makes etcd external (kha_etcd_access'
	// servers); the files are where the apiservers find its certificates.
	EtcdEndpoints                         []string
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// KubernetesVersion, when set, is kubeadm's kubernetesVersion
	// (otherwise kubeadm asks dl.k8s.io for the latest).
	KubernetesVersion string
	// ControlPlaneKubeletLocalMode, when not nil, says whether a
	// control-plane node's kubelet uses its own apiserver; nil: as kubeadm
	// of KubernetesVersion does (today's when that is unset).
	ControlPlaneKubeletLocalMode *bool
}

// Endpoints are the apiserver URLs per role.
type Endpoints struct {
	// ControlPlane is what the first control-plane node uses; per-node
	// values are in Result.NodeEndpoints.
	ControlPlane string
	// Worker is what every node without an apiserver uses.
	Worker string
	// Global is the one endpoint for cluster-wide consumers (CNI configs).
	Global string
	// External is what clients outside the cluster should use.
	External string
}

// NodeEndpoint is the apiserver URL one node uses.
type NodeEndpoint struct {
	Name string
	URL  string
}

// Listen is where the node-local load balancer listens.
type Listen struct {
	Address     string
	IPv6Address string // empty when the cluster has no IPv6
	Port        int
}

// Backend is one apiserver behind a load balancer.
type Backend struct {
	Name    string
	Address string
	Port    int
}

// Result is the computed access matrix.
type Result struct {
	Mode Mode
	// LBDomainName is kubespray's apiserver_loadbalancer_domain_name; empty
	// in ModeDirect.
	LBDomainName                string
	Endpoints                   Endpoints
	NodeEndpoints               []NodeEndpoint
	KubeadmControlPlaneEndpoint string
	KubeconfigServer            string
	APIServerServiceIP          string
	CertSANs                    SANs
	HostsEntries                []string
	// LocalLBListen is nil when no node runs a node-local load balancer.
	LocalLBListen   *Listen
	LocalLBType     string
	LocalLBBackends []Backend
	LocalLBNodes    []string
	// LocalLBNodeIPs maps each of LocalLBNodes to its address (ip, or ip6
	// in an IPv6-only cluster): where its load balancer is configured.
	LocalLBNodeIPs map[string]string
	// LocalLBFallback is the external load balancer, the node-local load
	// balancers' last resort while every apiserver is unreachable; nil
	// without an external load balancer beside them.
	LocalLBFallback *Backend
	// KubeadmDiscoveryAddress is the apiServerEndpoint of `kubeadm join`.
	KubeadmDiscoveryAddress string
	// KubeProxyServer is `server:` of the kube-proxy kubeconfig, which
	// lives in a ConfigMap and so is the same on every node.
	KubeProxyServer string
	// KubeadmClusterConfiguration is the kubeadm ClusterConfiguration
	// fragment these endpoints need, as YAML.
	KubeadmClusterConfiguration string
	// MetalLBManifests are the Service and EndpointSlice of a MetalLB
	// VIP, as YAML documents; empty without one.
	MetalLBManifests string
	// PodEndpoint is the apiserver endpoint of pods outside the host
	// network (and of CNIs that configure them).
	PodEndpoint PodEndpoint
	// HealthCheck is the health check of a load balancer in front of the
	// apiservers (a cloud load balancer).
	HealthCheck HealthCheckSpec
}
