package endpoints

import (
	"bytes"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The YAML these endpoints imply: kubeadm's ClusterConfiguration and the
// objects of a MetalLB VIP. Rendered from typed structures, so they are
// valid YAML whatever the values, and deterministic.

// kubeadmClusterConfiguration is the part of kubeadm's v1beta4
// ClusterConfiguration that the endpoints decide.
type kubeadmClusterConfiguration struct {
	APIVersion           string            `yaml:"apiVersion"`
	Kind                 string            `yaml:"kind"`
	KubernetesVersion    string            `yaml:"kubernetesVersion,omitempty"`
	ControlPlaneEndpoint string            `yaml:"controlPlaneEndpoint"`
	Networking           kubeadmNetworking `yaml:"networking"`
	APIServer            kubeadmAPIServer  `yaml:"apiServer"`
	Etcd                 *kubeadmEtcd      `yaml:"etcd,omitempty"`
	FeatureGates         map[string]bool   `yaml:"featureGates,omitempty"`
}

type kubeadmNetworking struct {
	DNSDomain     string `yaml:"dnsDomain"`
	ServiceSubnet string `yaml:"serviceSubnet"`
}

type kubeadmAPIServer struct {
	CertSANs  []string   `yaml:"certSANs"`
	ExtraArgs []extraArg `yaml:"extraArgs,omitempty"`
}

// extraArg is v1beta4's form of a command-line flag.
type extraArg struct {
	Name  string `yaml:"name"`
	Value string `yaml:"value"`
}

type kubeadmEtcd struct {
	External kubeadmExternalEtcd `yaml:"external"`
}

type kubeadmExternalEtcd struct {
	Endpoints []string `yaml:"endpoints"`
	CAFile    string   `yaml:"caFile,omitempty"`
	CertFile  string   `yaml:"certFile,omitempty"`
	KeyFile   string   `yaml:"keyFile,omitempty"`
}

func (c *cluster) kubeadmConfiguration(r Result, in KubeadmInput) string {
	cfg := kubeadmClusterConfiguration{
		APIVersion: "kubeadm.k8s.io/v1beta4", Kind: "ClusterConfiguration", KubernetesVersion: in.KubernetesVersion,
		ControlPlaneEndpoint: r.KubeadmControlPlaneEndpoint,
		Networking:           kubeadmNetworking{DNSDomain: c.dnsDomain, ServiceSubnet: strings.Join(c.serviceCIDRs, ",")},
		APIServer:            kubeadmAPIServer{CertSANs: append(append([]string{}, r.CertSANs.DNSNames...), r.CertSANs.IPAddresses...)},
	}
	cfg.APIServer.ExtraArgs = c.apiserverArgs()
	if g := c.kubeletLocalModeGate; g != nil {
		cfg.FeatureGates = map[string]bool{kubeletLocalModeGate: *g}
	}
	if len(in.EtcdEndpoints) > 0 {
		cfg.Etcd = &kubeadmEtcd{External: kubeadmExternalEtcd{Endpoints: in.EtcdEndpoints,
			CAFile: in.EtcdCAFile, CertFile: in.EtcdCertFile, KeyFile: in.EtcdKeyFile}}
	}
	return marshalYAML(cfg)
}

// MetalLBServiceName names the Service and EndpointSlice of a MetalLB VIP.
const MetalLBServiceName = "kube-apiserver-vip"

type object struct {
	APIVersion  string         `yaml:"apiVersion"`
	Kind        string         `yaml:"kind"`
	Metadata    objectMeta     `yaml:"metadata"`
	Spec        *serviceSpec   `yaml:"spec,omitempty"`
	AddressType string         `yaml:"addressType,omitempty"`
	Ports       []endpointPort `yaml:"ports,omitempty"`
	Endpoints   []endpoint     `yaml:"endpoints,omitempty"`
}

type objectMeta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

type serviceSpec struct {
	Type     string            `yaml:"type"`
	Selector map[string]string `yaml:"selector,omitempty"`
	Ports    []servicePort     `yaml:"ports"`
}

type servicePort struct {
	Name       string `yaml:"name"`
	Protocol   string `yaml:"protocol"`
	Port       int    `yaml:"port"`
	TargetPort int    `yaml:"targetPort,omitempty"`
}

type endpointPort struct {
	Name     string `yaml:"name"`
	Protocol string `yaml:"protocol"`
	Port     int    `yaml:"port"`
}

type endpoint struct {
	Addresses  []string           `yaml:"addresses"`
	NodeName   string             `yaml:"nodeName,omitempty"`
	Conditions endpointConditions `yaml:"conditions"`
}

type endpointConditions struct {
	Ready bool `yaml:"ready"`
}

// metalLBManifests are a Service of type LoadBalancer on the VIP and, unless
// it selects kubeadm's static pods, an EndpointSlice with every
// control-plane node's apiserver.
func (c *cluster) metalLBManifests() string {
	lb := c.external
	labels := map[string]string{"app.kubernetes.io/managed-by": "kha", "app.kubernetes.io/name": MetalLBServiceName}
	annotations := map[string]string{"metallb.universe.tf/loadBalancerIPs": lb.Address}
	if lb.MetalLB.AddressPool != "" {
		annotations["metallb.universe.tf/address-pool"] = lb.MetalLB.AddressPool
	}
	svc := object{APIVersion: "v1", Kind: "Service",
		Metadata: objectMeta{Name: MetalLBServiceName, Namespace: "kube-system", Labels: labels, Annotations: annotations},
		Spec:     &serviceSpec{Type: "LoadBalancer", Ports: []servicePort{{Name: "https", Protocol: "TCP", Port: lb.Port}}}}
	if lb.MetalLB.SelectStaticPods {
		svc.Spec.Selector = map[string]string{"component": "kube-apiserver", "tier": "control-plane"}
		svc.Spec.Ports[0].TargetPort = c.port
		return marshalYAML(svc)
	}
	sliceLabels := map[string]string{"kubernetes.io/service-name": MetalLBServiceName, "endpointslice.kubernetes.io/managed-by": "kha"}
	slice := object{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice", AddressType: "IPv4",
		Metadata: objectMeta{Name: MetalLBServiceName, Namespace: "kube-system", Labels: sliceLabels},
		Ports:    []endpointPort{{Name: "https", Protocol: "TCP", Port: c.port}}}
	if c.family == IPv6 {
		slice.AddressType = "IPv6"
	}
	for _, n := range c.controlPlanes {
		if n.Draining {
			continue
		}
		slice.Endpoints = append(slice.Endpoints, endpoint{Addresses: []string{n.accessIP.String()}, NodeName: n.Name,
			Conditions: endpointConditions{Ready: true}})
	}
	return marshalYAML(svc) + "---\n" + marshalYAML(slice)
}

func marshalYAML(v any) string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		panic("encoding a fixed structure as YAML failed: " + err.Error()) // no value can make it fail
	}
	return b.String()
}
