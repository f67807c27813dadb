package provider

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/clusterconfig"
	"github.com/kha/terraform-provider-kha/internal/testhost"
)

const endpointConfigMapsAddr = "kha_endpoint_configmaps.cluster"

// kubeCluster is a real kube-apiserver with an admin kubeconfig as
// kubeadm writes it (a system:masters client certificate, inline) and an
// HTTP client with the same credentials for the test's own requests (what
// kubeadm and kubectl would do).
type kubeCluster struct {
	server    string // https://127.0.0.1:<port>
	adminConf string
	client    *http.Client
	secrets   []string // of adminConf, which must reach no state or plan
}

// testCluster is a kubeCluster with a control-plane node (sshd) whose
// /etc/kubernetes/admin.conf is the cluster's.
type testCluster struct {
	*kubeCluster
	node *testhost.Server
}

func startKubeCluster(t *testing.T) *kubeCluster {
	t.Helper()
	testhost.KubeDir(t)
	member := &testhost.EtcdMember{Name: "etcd1", IP: "127.0.0.1", ClientPort: testhost.FreePort(t, "127.0.0.1"), PeerPort: testhost.FreePort(t, "127.0.0.1")}
	etcd := testhost.StartEtcd(t, []*testhost.EtcdMember{member}, []string{"127.0.0.1"})
	kas := testhost.StartKubeAPIServer(t, etcd, "127.0.0.1", false)
	pki := testhost.TestPKI(t)
	cert, key := pki.ClientPEM(t, "kubernetes-admin", "system:masters")
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	c := &kubeCluster{server: "https://" + kas.Address, secrets: []string{strings.Split(string(key), "\n")[1], b64(key)[:40]}}
	c.adminConf = fmt.Sprintf(`apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: %s
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: kubernetes-admin
  name: kubernetes-admin@kubernetes
current-context: kubernetes-admin@kubernetes
kind: Config
users:
- name: kubernetes-admin
  user:
    client-certificate-data: %s
    client-key-data: %s
`, b64([]byte(pki.CAPEM)), c.server, b64(cert), b64(key))
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	c.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{pair}}}}
	return c
}

func startTestCluster(t *testing.T) *testCluster {
	t.Helper()
	c := &testCluster{kubeCluster: startKubeCluster(t), node: testhost.Start(t, testhost.Options{PrivateDir: "/etc/kubernetes"})}
	if err := os.WriteFile(c.node.HostPath("/etc/kubernetes/admin.conf"), []byte(c.adminConf), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// kubeadmInit makes the ConfigMaps (and kube-proxy's DaemonSet) as
// kubeadm init does on the first control-plane node, all pointing at it.
func (c *kubeCluster) kubeadmInit(t testing.TB, clusterConfiguration string, kubeProxy bool) {
	t.Helper()
	const server = "https://10.0.0.11:6443"
	c.create(t, clusterconfig.KubeadmConfig, map[string]string{"ClusterConfiguration": clusterConfiguration})
	c.create(t, clusterconfig.ClusterInfo, map[string]string{"kubeconfig": clusterInfoKubeconfig(server), "jws-kubeconfig-abcdef": testJWS})
	if !kubeProxy {
		return
	}
	c.create(t, clusterconfig.KubeProxy, map[string]string{"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n",
		"kubeconfig.conf": kubeProxyKubeconfig(server)})
	c.do(t, http.MethodPost, "/apis/apps/v1/namespaces/kube-system/daemonsets", map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet",
		"metadata": map[string]any{"name": "kube-proxy", "namespace": "kube-system"},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]string{"k8s-app": "kube-proxy"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]string{"k8s-app": "kube-proxy"}},
				"spec": map[string]any{"containers": []any{map[string]string{"name": "kube-proxy", "image": "registry.k8s.io/kube-proxy:v1.36.3"}}}}}},
		http.StatusCreated)
}

// testJWS stands for a bootstrap token's signature of cluster-info.
const testJWS = "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9..signed-by-the-bootstrap-signer"

// exampleEndpointCluster is a cluster for examples/resources/
// kha_endpoint_configmaps: kubeadm's ConfigMaps pointing at the example's
// first control-plane node, and the admin.conf its node has.
func exampleEndpointCluster(t *testing.T) string {
	c := startKubeCluster(t)
	c.kubeadmInit(t, readClusterConfigurationTestdata(t, "with-sans.yaml"), true)
	return c.adminConf
}

// do sends one request and wants one of the statuses.
func (c *kubeCluster) do(t testing.TB, method, path string, body any, want ...int) []byte {
	t.Helper()
	var reader *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		reader = bytes.NewReader(b)
	} else {
		reader = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, c.server+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	for _, w := range want {
		if resp.StatusCode == w {
			return out.Bytes()
		}
	}
	t.Fatalf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, out.String())
	return nil
}

func configMapPath(ref clusterconfig.Ref) string {
	return "/api/v1/namespaces/" + ref.Namespace + "/configmaps/" + ref.Name
}

// create makes a ConfigMap as kubeadm does; the namespaces the apiserver
// makes itself may take a moment.
func (c *kubeCluster) create(t testing.TB, ref clusterconfig.Ref, data map[string]string) {
	t.Helper()
	body := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": ref.Name, "namespace": ref.Namespace}, "data": data}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := json.Marshal(body)
		resp, err := c.client.Post(c.server+"/api/v1/namespaces/"+ref.Namespace+"/configmaps", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusCreated {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("creating ConfigMap %s: HTTP %d", ref, resp.StatusCode)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type testConfigMap struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
}

func (c *kubeCluster) get(t testing.TB, ref clusterconfig.Ref) testConfigMap {
	t.Helper()
	var cm testConfigMap
	if err := json.Unmarshal(c.do(t, http.MethodGet, configMapPath(ref), nil, http.StatusOK), &cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

// edit changes one key by hand, as kubectl edit would.
func (c *kubeCluster) edit(t testing.TB, ref clusterconfig.Ref, old, new string) {
	t.Helper()
	value := c.get(t, ref).Data[ref.Key]
	if !strings.Contains(value, old) {
		t.Fatalf("%s has no %q", ref, old)
	}
	c.do(t, http.MethodPatch, configMapPath(ref), map[string]any{"data": map[string]string{ref.Key: strings.Replace(value, old, new, 1)}}, http.StatusOK)
}

func (c *kubeCluster) serverOf(t testing.TB, ref clusterconfig.Ref) string {
	t.Helper()
	server, err := clusterconfig.KubeconfigServer(c.get(t, ref).Data[ref.Key])
	if err != nil {
		t.Fatal(err)
	}
	return server
}

func (c *testCluster) vars() config.Variables {
	return config.Variables{"host": config.StringVariable(c.node.Host), "port": config.IntegerVariable(c.node.Port),
		"host_key": config.StringVariable(c.node.HostKey.Public()), "private_key": config.StringVariable(c.node.ClientKey.PEM)}
}

// clusterInfoKubeconfig is cluster-info's kubeconfig as kubeadm writes it.
func clusterInfoKubeconfig(server string) string {
	return fmt.Sprintf(`apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: %s
  name: ""
contexts: null
current-context: ""
kind: Config
preferences: {}
users: null
`, base64.StdEncoding.EncodeToString([]byte("not a real CA, never sent anywhere")), server)
}

// kubeProxyKubeconfig is kube-proxy's kubeconfig.conf as kubeadm writes it.
func kubeProxyKubeconfig(server string) string {
	return `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: ` + server + `
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
`
}

func readClusterConfigurationTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "clusterconfig", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAccEndpointConfigMaps_lifecycle moves a kubeadm cluster (a real
// kube-apiserver, reached from its control-plane node through SSH with the
// node's admin.conf) to a load balancer's endpoint: kubeadm-config,
// cluster-info and kube-proxy's kubeconfig change in their values only, a
// write that races another is retried, an edit made by hand is drift that
// apply repairs, import reads what is there, destroy puts kubeadm's values
// back, and admin.conf's credentials reach neither state nor plan.
func TestAccEndpointConfigMaps_lifecycle(t *testing.T) {
	c := startTestCluster(t)
	work := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", work)
	const first, kubeadmEndpoint = "https://10.0.0.11:6443", "10.0.0.11:6443"
	kubeadmWrote := readClusterConfigurationTestdata(t, "with-sans.yaml")
	c.kubeadmInit(t, kubeadmWrote, true)
	restartedAt := func() string {
		var ds struct {
			Spec struct {
				Template struct {
					Metadata struct {
						Annotations map[string]string `json:"annotations"`
					} `json:"metadata"`
				} `json:"template"`
			} `json:"spec"`
		}
		_ = json.Unmarshal(c.do(t, http.MethodGet, "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy", nil, http.StatusOK), &ds)
		return ds.Spec.Template.Metadata.Annotations[clusterconfig.RestartedAtAnnotation]
	}

	// Someone else changes kubeadm-config between kha's read and write,
	// once: kha's write is refused (409) and made again on top of it.
	var raced, kubeadmReads atomic.Int32
	beforeConfigMapWrite = func(ref clusterconfig.Ref) {
		if ref != clusterconfig.KubeadmConfig {
			return
		}
		kubeadmReads.Add(1)
		if raced.CompareAndSwap(0, 1) {
			c.do(t, http.MethodPatch, configMapPath(ref), map[string]any{"metadata": map[string]any{"annotations": map[string]string{"example.com/edited": "meanwhile"}}}, http.StatusOK)
		}
	}
	t.Cleanup(func() { beforeConfigMapWrite = nil })

	vars := func(endpoint, kubeProxy string) config.Variables {
		v := c.vars()
		v["endpoint"], v["kube_proxy_server"] = config.StringVariable(endpoint), config.StringVariable(kubeProxy)
		return v
	}
	sans := "  - lb.example.com\n  - 10.0.0.11\n  - cp1\n"
	want := func(endpoint string) string {
		return strings.Replace(strings.Replace(kubeadmWrote, "  - 10.0.0.11\n  - cp1\n  - ::1\n", sans, 1),
			"controlPlaneEndpoint: "+kubeadmEndpoint, "controlPlaneEndpoint: "+endpoint, 1)
	}
	hasEndpoint := func(endpoint, clusterInfo, kubeProxy string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			if got := c.get(t, clusterconfig.KubeadmConfig).Data["ClusterConfiguration"]; got != want(endpoint) {
				return fmt.Errorf("kubeadm-config has\n%s\nwant\n%s", got, want(endpoint))
			}
			info := c.get(t, clusterconfig.ClusterInfo)
			if info.Data["kubeconfig"] != strings.Replace(clusterInfoKubeconfig(first), first, clusterInfo, 1) || info.Data["jws-kubeconfig-abcdef"] != testJWS {
				return fmt.Errorf("cluster-info has %v", info.Data)
			}
			if got := c.get(t, clusterconfig.KubeProxy).Data["kubeconfig.conf"]; got != kubeProxyKubeconfig(kubeProxy) {
				return fmt.Errorf("kube-proxy has\n%s", got)
			}
			return nil
		}
	}
	previous := statecheck.ExpectKnownValue(endpointConfigMapsAddr, tfjsonpath.New("previous"), knownvalue.ObjectExact(map[string]knownvalue.Check{
		"control_plane_endpoint": knownvalue.StringExact(kubeadmEndpoint),
		"cert_sans":              knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("10.0.0.11"), knownvalue.StringExact("cp1"), knownvalue.StringExact("::1")}),
		"cluster_info_server":    knownvalue.StringExact(first),
		"kube_proxy_server":      knownvalue.StringExact(first),
	}))
	const local = "https://127.0.0.1:6443"
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			if got := c.get(t, clusterconfig.KubeadmConfig).Data["ClusterConfiguration"]; got != kubeadmWrote {
				return fmt.Errorf("destroy left kubeadm-config as\n%s\nwant kubeadm's\n%s", got, kubeadmWrote)
			}
			if info, proxy := c.serverOf(t, clusterconfig.ClusterInfo), c.serverOf(t, clusterconfig.KubeProxy); info != first || proxy != first {
				return fmt.Errorf("destroy left cluster-info at %s and kube-proxy at %s, want %s", info, proxy, first)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("lb.example.com:6443", local),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{noSecretsInPlan(c.secrets),
					plancheck.ExpectUnknownValue(endpointConfigMapsAddr, tfjsonpath.New("previous")),
					plancheck.ExpectKnownValue(endpointConfigMapsAddr, tfjsonpath.New("cluster_info_server"), knownvalue.StringExact("https://lb.example.com:6443"))}},
				ConfigStateChecks: []statecheck.StateCheck{noSecretsInState(work, c.secrets), previous,
					statecheck.ExpectKnownValue(endpointConfigMapsAddr, tfjsonpath.New("id"), knownvalue.StringExact(c.node.Address()+":/etc/kubernetes/admin.conf"))},
				Check: resource.ComposeTestCheckFunc(hasEndpoint("lb.example.com:6443", "https://lb.example.com:6443", local), func(*terraform.State) error {
					if got := c.get(t, clusterconfig.KubeadmConfig).Metadata.Annotations["example.com/edited"]; got != "meanwhile" {
						return fmt.Errorf("the change made between kha's read and write was overwritten (annotation %q)", got)
					}
					if kubeadmReads.Load() < 2 {
						return fmt.Errorf("kubeadm-config was read %d times: the conflict was not retried", kubeadmReads.Load())
					}
					if restartedAt() == "" {
						return fmt.Errorf("kube-proxy's DaemonSet was not restarted")
					}
					return nil
				}),
			},
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("lb.example.com:6443", local),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// kubectl edit: cluster-info and kubeadm-config pointed back
				// by hand. The plan shows it; apply puts it right.
				PreConfig: func() {
					c.edit(t, clusterconfig.ClusterInfo, "https://lb.example.com:6443", first)
					c.edit(t, clusterconfig.KubeadmConfig, "controlPlaneEndpoint: lb.example.com:6443", "controlPlaneEndpoint: "+kubeadmEndpoint)
				},
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("lb.example.com:6443", local),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{noSecretsInPlan(c.secrets),
					plancheck.ExpectResourceAction(endpointConfigMapsAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(endpointConfigMapsAddr, tfjsonpath.New("control_plane_endpoint"), knownvalue.StringExact("lb.example.com:6443"))}},
				ConfigStateChecks: []statecheck.StateCheck{previous},
				Check:             hasEndpoint("lb.example.com:6443", "https://lb.example.com:6443", local),
			},
			{
				// A new endpoint, in place; previous stays kubeadm's.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("[fd00::100]:6443", "https://[::1]:6443"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(endpointConfigMapsAddr, plancheck.ResourceActionUpdate)}},
				ConfigStateChecks: []statecheck.StateCheck{noSecretsInState(work, c.secrets), previous},
				Check:             hasEndpoint("'[fd00::100]:6443'", "https://[fd00::100]:6443", "https://[::1]:6443"),
			},
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("[fd00::100]:6443", "https://[::1]:6443"),
				ResourceName: endpointConfigMapsAddr, ImportState: true, ImportStateId: c.node.Address(),
				ImportStateVerify: true, ImportStateVerifyIgnore: []string{"previous", "ssh", "timeouts", "restart_kube_proxy"},
			},
		},
	}))
}

// TestAccEndpointConfigMaps_withoutKubeProxy: a cluster without kube-proxy
// (Cilium's replacement) and kubeadm's defaults (no controlPlaneEndpoint,
// apiServer: {}): the endpoint and certSANs are added, kube-proxy is left
// alone, and destroy gives kubeadm's document back as it was.
func TestAccEndpointConfigMaps_withoutKubeProxy(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t)
	kubeadmWrote := readClusterConfigurationTestdata(t, "init-defaults.yaml")
	c.kubeadmInit(t, kubeadmWrote, false)
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			if got := c.get(t, clusterconfig.KubeadmConfig).Data["ClusterConfiguration"]; got != kubeadmWrote {
				return fmt.Errorf("destroy left kubeadm-config as\n%s\nwant kubeadm's\n%s", got, kubeadmWrote)
			}
			return nil
		},
		Steps: []resource.TestStep{{
			ConfigDirectory: config.TestNameDirectory(), ConfigVariables: c.vars(),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(endpointConfigMapsAddr, tfjsonpath.New("previous"), knownvalue.ObjectExact(map[string]knownvalue.Check{
					"control_plane_endpoint": knownvalue.Null(), "cert_sans": knownvalue.Null(),
					"cluster_info_server": knownvalue.StringExact("https://10.0.0.11:6443"), "kube_proxy_server": knownvalue.Null()}))},
			Check: func(*terraform.State) error {
				got := c.get(t, clusterconfig.KubeadmConfig).Data["ClusterConfiguration"]
				want := strings.Replace(strings.Replace(kubeadmWrote, "apiServer: {}\n", "apiServer:\n  certSANs:\n  - fd00::100\n  - 10.0.0.11\n", 1),
					"controllerManager:", "controlPlaneEndpoint: '[fd00::100]:6443'\ncontrollerManager:", 1)
				if got != want {
					return fmt.Errorf("kubeadm-config has\n%s\nwant\n%s", got, want)
				}
				if server := c.serverOf(t, clusterconfig.ClusterInfo); server != "https://[fd00::100]:6443" {
					return fmt.Errorf("cluster-info has %s", server)
				}
				return nil
			},
		}, {
			ConfigDirectory: config.TestNameDirectory(), ConfigVariables: c.vars(),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
		}},
	}))
}

// TestEndpointConfigMaps_planTimeChecks: the values are checked at
// validate time, each error naming its attribute and the fix.
func TestEndpointConfigMaps_planTimeChecks(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]string{
		"10.0.0.1:6443": "", "lb.example.com:6443": "", "[fd00::1]:6443": "", "localhost:8443": "",
		"fd00::1:6443":        "IPv6 address without brackets: write \\[<address>\\]:<port>",
		"fd00::1":             "IPv6 address without brackets",
		"https://lb:6443":     "is a URL",
		"lb.example.com":      "is not host:port",
		"lb:0":                "invalid port",
		"bad_name!:6443":      "neither an IP address nor a DNS name",
		"[lb.example.com]:64": "brackets are for IPv6 addresses only",
	} {
		err := checkHostPort(s)
		if want == "" && err != nil || want != "" && (err == nil || !regexp.MustCompile(want).MatchString(err.Error())) {
			t.Errorf("%q: got %v, want %q", s, err, want)
		}
	}
}

// switchedRelay forwards a port to a target until it is switched off:
// then nothing listens there and the connections it carried are cut, as
// when a host goes down; switched on, it listens on the same port again.
type switchedRelay struct {
	t      *testing.T
	target string
	port   int
	mu     sync.Mutex
	l      net.Listener
	conns  []net.Conn
}

func newSwitchedRelay(t *testing.T, target string) *switchedRelay {
	r := &switchedRelay{t: t, target: target, port: testhost.FreePort(t, "127.0.0.1")}
	r.on()
	t.Cleanup(r.off)
	return r
}

func (r *switchedRelay) on() {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)))
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.l = l
	r.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", r.target)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, c, up)
			r.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

func (r *switchedRelay) off() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.l != nil {
		r.l.Close()
		r.l = nil
	}
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

// TestAccEndpointConfigMaps_unreachableDuringRefresh: while the node does
// not answer, refresh warns, naming it, and keeps the prior state, so the
// plan goes on; once it answers again, destroy puts kubeadm's values back.
func TestAccEndpointConfigMaps_unreachableDuringRefresh(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t)
	kubeadmWrote := readClusterConfigurationTestdata(t, "with-sans.yaml")
	c.kubeadmInit(t, kubeadmWrote, false)
	relay := newSwitchedRelay(t, c.node.Address())
	vars := c.vars()
	vars["port"] = config.IntegerVariable(relay.port)
	recorder := &planRecorder{}
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(relay.port))
	warned := planCheckFunc(func() error {
		var n int
		for _, d := range recorder.take() {
			if d.Severity == tfprotov6.DiagnosticSeverityWarning && d.Summary == "Host Unreachable: "+address {
				if !strings.Contains(d.Detail, "connection refused") {
					return fmt.Errorf("the warning does not say why: %s", d.Detail)
				}
				n++
			}
		}
		if n == 0 {
			return fmt.Errorf("no warning named the unreachable node %s", address)
		}
		return nil
	})
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		CheckDestroy: func(*terraform.State) error {
			if got := c.get(t, clusterconfig.KubeadmConfig).Data["ClusterConfiguration"]; got != kubeadmWrote {
				return fmt.Errorf("destroy left kubeadm-config as\n%s", got)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars},
			{
				PreConfig:       func() { relay.off(); recorder.reset() },
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{warned, plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig:       relay.on,
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	}))
}

// TestEndpointConfigMaps_importOfAHostThatDoesNotAnswer: importing from a
// node where nothing listens fails with the host and why, instead of
// crashing the provider.
func TestEndpointConfigMaps_importOfAHostThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	port := testhost.FreePort(t, "127.0.0.1") // nothing listens there
	key := testhost.NewKey(t)
	vars := config.Variables{"host": config.StringVariable("127.0.0.1"), "port": config.IntegerVariable(port),
		"host_key": config.StringVariable(key.Public()), "private_key": config.StringVariable(key.PEM)}
	unitTest(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			ConfigDirectory: config.StaticDirectory("testdata/TestAccEndpointConfigMaps_unreachableDuringRefresh"),
			ConfigVariables: vars, ResourceName: "kha_endpoint_configmaps.cluster", ImportState: true,
			ImportStateId: fmt.Sprintf("127.0.0.1:%d:/etc/kubernetes/admin.conf", port),
			ExpectError:   regexp.MustCompile(`(?s)SSH Connection Failed.*127\.0\.0\.1:` + strconv.Itoa(port) + `.*connection\s+refused`),
		}},
	}))
}
