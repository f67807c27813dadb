package endpoints

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// decodeAll parses YAML documents strictly into generic maps.
func decodeAll(t *testing.T, text string) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader([]byte(text)))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("not YAML: %v\n%s", err, text)
		}
		docs = append(docs, doc)
	}
}

func dig(doc map[string]any, keys ...string) any {
	var v any = doc
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func TestKubeadmClusterConfiguration(t *testing.T) {
	t.Parallel()
	r, ps := Compute(Input{IPFamily: DualStack, ControlPlaneNodes: []Node{{Name: "cp1", IP: "10.0.0.11", IP6: "fd00::11"}},
		LocalLB: LocalLB{EveryNode: true, Port: 3446},
		Kubeadm: KubeadmInput{EtcdEndpoints: []string{"https://10.0.0.11:2379"}, EtcdCAFile: "/etc/ssl/etcd/ssl/ca.pem", KubernetesVersion: "v1.36.3"}})
	if ps.HasErrors() {
		t.Fatal(ps)
	}
	docs := decodeAll(t, r.KubeadmClusterConfiguration)
	if len(docs) != 1 {
		t.Fatalf("%d documents", len(docs))
	}
	doc := docs[0]
	for path, want := range map[string]any{
		"apiVersion":                "kubeadm.k8s.io/v1beta4",
		"kind":                      "ClusterConfiguration",
		"controlPlaneEndpoint":      "localhost:3446",
		"kubernetesVersion":         "v1.36.3",
		"networking.serviceSubnet":  "10.233.0.0/18,fd85:ee78:d8a6:8607::1000/116",
		"networking.dnsDomain":      "cluster.local",
		"etcd.external.caFile":      "/etc/ssl/etcd/ssl/ca.pem",
		"etcd.external.endpoints.0": "https://10.0.0.11:2379",
		"apiServer.certSANs.0":      "kubernetes",
		"apiServer.certSANs.last":   r.CertSANs.IPAddresses[len(r.CertSANs.IPAddresses)-1],
		"apiServer.certSANs.count":  len(r.CertSANs.DNSNames) + len(r.CertSANs.IPAddresses),
	} {
		var got any
		switch path {
		case "etcd.external.endpoints.0":
			got = dig(doc, "etcd", "external", "endpoints").([]any)[0]
		case "apiServer.certSANs.0", "apiServer.certSANs.last", "apiServer.certSANs.count":
			sans := dig(doc, "apiServer", "certSANs").([]any)
			got = map[string]any{"apiServer.certSANs.0": sans[0], "apiServer.certSANs.last": sans[len(sans)-1], "apiServer.certSANs.count": len(sans)}[path]
		default:
			keys := []string{}
			for _, k := range bytes.Split([]byte(path), []byte(".")) {
				keys = append(keys, string(k))
			}
			got = dig(doc, keys...)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	// Stacked etcd: no etcd section.
	r, _ = Compute(Input{ControlPlaneNodes: threeCPs})
	doc = decodeAll(t, r.KubeadmClusterConfiguration)[0]
	if dig(doc, "etcd") != nil {
		t.Error("stacked etcd got an etcd section")
	}
	goaway := map[string]any{"name": "goaway-chance", "value": "0.001"} // three apiservers behind node-local load balancers
	if args := dig(doc, "apiServer", "extraArgs"); !reflect.DeepEqual(args, []any{goaway}) {
		t.Errorf("extraArgs = %v, want goaway-chance alone (anonymous auth is on by default)", args)
	}
	// A hardened cluster: kubeadm must be told, or the apiservers would
	// answer anonymous requests the load balancers no longer expect.
	r, _ = Compute(Input{ControlPlaneNodes: threeCPs, AnonymousAuthOff: true})
	args := dig(decodeAll(t, r.KubeadmClusterConfiguration)[0], "apiServer", "extraArgs")
	if want := []any{map[string]any{"name": "anonymous-auth", "value": "false"}, goaway}; !reflect.DeepEqual(args, want) {
		t.Errorf("extraArgs = %v, want %v", args, want)
	}
}

// apiserverFlags are a kubeadm configuration's apiServer.extraArgs as
// kubeadm passes them to kube-apiserver: --name=value, in order.
func apiserverFlags(t *testing.T, configuration string) []string {
	t.Helper()
	args, _ := dig(decodeAll(t, configuration)[0], "apiServer", "extraArgs").([]any)
	flags := make([]string, 0, len(args))
	for _, a := range args {
		m := a.(map[string]any)
		flags = append(flags, "--"+m["name"].(string)+"="+m["value"].(string))
	}
	return flags
}

// goawayArg is the --goaway-chance of a kubeadm configuration, "" when
// it has none.
func goawayArg(t *testing.T, configuration string) string {
	t.Helper()
	for _, f := range apiserverFlags(t, configuration) {
		if v, ok := strings.CutPrefix(f, "--goaway-chance="); ok {
			return v
		}
	}
	return ""
}

// TestGoawayChance: kubeadm's configuration sets --goaway-chance where a
// load balancer spreads clients over two or more apiservers, and what the
// user sets everywhere.
func TestGoawayChance(t *testing.T) {
	t.Parallel()
	off, some, tooMuch := 0.0, 0.01, 0.05
	draining := []Node{threeCPs[0], {Name: "cp2", IP: "10.0.0.12", Draining: true}, {Name: "cp3", IP: "10.0.0.13", Draining: true}}
	for _, c := range []struct {
		name string
		in   Input
		want string
	}{
		{"direct", Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{Enabled: new(bool)}}, ""},
		{"node-local load balancers", Input{ControlPlaneNodes: threeCPs}, "0.001"},
		{"on every node", Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{EveryNode: true, Port: 7445}}, "0.001"},
		{"an external load balancer", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100"}}, "0.001"},
		{"kube-vip's VIP on an apiserver's node", Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100", Nodes: []string{}}}, ""},
		{"one apiserver", Input{ControlPlaneNodes: threeCPs[:1]}, ""},
		{"two of three draining", Input{ControlPlaneNodes: draining}, ""},
		{"turned off", Input{ControlPlaneNodes: threeCPs, APIServer: APIServerFlags{GoawayChance: &off}}, ""},
		{"set, in direct mode too", Input{ControlPlaneNodes: threeCPs, LocalLB: LocalLB{Enabled: new(bool)}, APIServer: APIServerFlags{GoawayChance: &some}}, "0.01"},
	} {
		r, ps := Compute(c.in)
		if ps.HasErrors() {
			t.Fatalf("%s: %v", c.name, ps)
		}
		if got := goawayArg(t, r.KubeadmClusterConfiguration); got != c.want {
			t.Errorf("%s: goaway-chance %q, want %q", c.name, got, c.want)
		}
	}
	_, ps := Compute(Input{ControlPlaneNodes: threeCPs, APIServer: APIServerFlags{GoawayChance: &tooMuch}})
	if !ps.HasErrors() || ps[0].Path.String() != "apiserver_goaway_chance" || !strings.Contains(ps[0].Detail, "between 0 and 0.02") {
		t.Errorf("a chance kube-apiserver refuses: %v", ps)
	}
}

func TestMetalLBManifests(t *testing.T) {
	t.Parallel()
	in := Input{ControlPlaneNodes: threeCPs, WorkerNodes: twoWorkers,
		ExternalLB: &ExternalLB{Address: "192.168.56.42", Port: 443, DomainName: "api.example.com", MetalLB: &MetalLB{AddressPool: "apiserver"}}}
	r, ps := Compute(in)
	if ps.HasErrors() {
		t.Fatal(ps)
	}
	docs := decodeAll(t, r.MetalLBManifests)
	if len(docs) != 2 {
		t.Fatalf("%d documents, want a Service and an EndpointSlice:\n%s", len(docs), r.MetalLBManifests)
	}
	svc, slice := docs[0], docs[1]
	if svc["kind"] != "Service" || dig(svc, "spec", "type") != "LoadBalancer" || dig(svc, "spec", "selector") != nil ||
		dig(svc, "metadata", "annotations", "metallb.universe.tf/loadBalancerIPs") != "192.168.56.42" ||
		dig(svc, "metadata", "annotations", "metallb.universe.tf/address-pool") != "apiserver" {
		t.Errorf("service: %v", svc)
	}
	port := dig(svc, "spec", "ports").([]any)[0].(map[string]any)
	if port["port"] != 443 || port["name"] != "https" {
		t.Errorf("service port: %v", port)
	}
	if slice["kind"] != "EndpointSlice" || slice["apiVersion"] != "discovery.k8s.io/v1" || slice["addressType"] != "IPv4" ||
		dig(slice, "metadata", "labels", "kubernetes.io/service-name") != dig(svc, "metadata", "name") {
		t.Errorf("endpoint slice: %v", slice)
	}
	var addrs []any
	for _, e := range slice["endpoints"].([]any) {
		addrs = append(addrs, e.(map[string]any)["addresses"].([]any)[0])
	}
	if want := []any{"10.0.0.11", "192.0.2.12", "10.0.0.13"}; !reflect.DeepEqual(addrs, want) {
		t.Errorf("endpoints %v, want the control-plane nodes' access addresses %v", addrs, want)
	}
	if p := slice["ports"].([]any)[0].(map[string]any); p["port"] != 6443 || p["name"] != "https" {
		t.Errorf("slice port: %v", p)
	}
	// Selecting kubeadm's static pods: one Service, no EndpointSlice.
	in.ExternalLB.MetalLB.SelectStaticPods = true
	r, _ = Compute(in)
	docs = decodeAll(t, r.MetalLBManifests)
	if len(docs) != 1 || dig(docs[0], "spec", "selector", "component") != "kube-apiserver" ||
		dig(docs[0], "spec", "ports").([]any)[0].(map[string]any)["targetPort"] != 6443 {
		t.Errorf("static pod selection: %v", docs)
	}
	// Without MetalLB there is nothing to apply.
	if r, _ := Compute(Input{ControlPlaneNodes: threeCPs, ExternalLB: &ExternalLB{Address: "10.0.0.100", Nodes: []string{}}}); r.MetalLBManifests != "" {
		t.Error("manifests without MetalLB")
	}
}
