package kubeconfig

import (
	"maps"
	"reflect"
	"strings"
	"testing"
)

// kubeletConf is a kubelet.conf as kubeadm writes it: the client
// certificate by path, so that the kubelet can rotate it.
const kubeletConf = `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=
    server: https://10.0.0.11:6443
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: system:node:w1
  name: system:node:w1@kubernetes
current-context: system:node:w1@kubernetes
kind: Config
preferences: {}
users:
- name: system:node:w1
  user:
    client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem
    client-key: /var/lib/kubelet/pki/kubelet-client-current.pem
`

func TestSetServersChangesOnlyTheServer(t *testing.T) {
	for name, tc := range map[string]struct {
		in, want string
		servers  map[string]string
	}{
		"kubeadm kubelet.conf": {kubeletConf, strings.Replace(kubeletConf, "https://10.0.0.11:6443", "https://localhost:6443", 1),
			map[string]string{"kubernetes": "https://localhost:6443"}},
		"quoted, with a comment and CRLF": {
			"clusters:\r\n- name: a\r\n  cluster:\r\n    server: \"https://10.0.0.11:6443\" # kubeadm\r\n",
			"clusters:\r\n- name: a\r\n  cluster:\r\n    server: \"https://[fd00::11]:6443\" # kubeadm\r\n",
			map[string]string{"a": "https://[fd00::11]:6443"}},
		"single-quoted, one of two clusters": {
			"clusters:\n- name: a\n  cluster: {server: 'https://a:1'}\n- name: b\n  cluster:\n    server: 'https://b:1'\n",
			"clusters:\n- name: a\n  cluster: {server: 'https://a:1'}\n- name: b\n  cluster:\n    server: 'https://127.0.0.1:6443'\n",
			map[string]string{"b": "https://127.0.0.1:6443"}},
		// Terraform's yamlencode quotes every key and value.
		"yamlencode's": {
			"\"clusters\":\n- \"cluster\":\n    \"server\": \"https://127.0.0.1:6443\"\n  \"name\": \"default\"\n",
			"\"clusters\":\n- \"cluster\":\n    \"server\": \"https://localhost:7445\"\n  \"name\": \"default\"\n",
			map[string]string{"default": "https://localhost:7445"}},
		"unchanged": {kubeletConf, kubeletConf, map[string]string{"kubernetes": "https://10.0.0.11:6443"}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := SetServers([]byte(tc.in), tc.servers)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// Setting a server and setting it back gives the kubeconfig back byte for
// byte, whatever the value's quoting: what destroy does after an apply.
func TestSetServersThereAndBack(t *testing.T) {
	for _, in := range []string{kubeletConf,
		"clusters:\n- name: a\n  cluster:\n    server: \"https://10.0.0.11:6443\"\n",
		"clusters:\n- name: a\n  cluster:\n    server: 'https://10.0.0.11:6443'\n",
	} {
		servers, err := Servers([]byte(in), "")
		if err != nil {
			t.Fatal(err)
		}
		// The second value needs quotes in YAML. Single ones, YAML's
		// own for it, cannot tell that the file chose them: a file
		// quoting its values with single quotes comes back plain.
		for _, value := range []string{"https://localhost:7445", "[fd00::11]:6443"} {
			if value[0] == '[' && strings.Contains(in, "'") {
				continue
			}
			there := map[string]string{}
			for name := range servers {
				there[name] = value
			}
			moved, err := SetServers([]byte(in), there)
			if err != nil {
				t.Fatal(err)
			}
			back, err := SetServers(moved, servers)
			if err != nil {
				t.Fatal(err)
			}
			if string(back) != in {
				t.Errorf("there (%s) and back:\n%q\nwant\n%q", value, back, in)
			}
		}
	}
}

// A server in a flow mapping on one line with another key after it is
// edited in place too: the value ends where the parser's value does, so
// the comment and the layout stay.
func TestSetServersInAFlowMapping(t *testing.T) {
	in := "# kha test\nclusters:\n- {name: a, cluster: {server: https://a:1, insecure-skip-tls-verify: true}}\nusers: [{name: u, user: {token: t0k}}]\n"
	out, err := SetServers([]byte(in), map[string]string{"a": "https://b:2"})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(in, "https://a:1", "https://b:2", 1); string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

// A server the plain-scalar rule cannot splice (a value folded over two
// lines) falls back to encoding the document anew, which keeps its
// meaning.
func TestSetServersFallsBackToEncoding(t *testing.T) {
	in := "clusters:\n- name: a\n  cluster:\n    server: https://a:1\n      /x\n    insecure-skip-tls-verify: true\nusers: [{name: u, user: {token: t0k}}]\n"
	out, err := SetServers([]byte(in), map[string]string{"a": "https://b:2"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(out)
	if err != nil || c.Clusters[0].Cluster.Server != "https://b:2" || !c.Clusters[0].Cluster.InsecureSkipTLSVerify || c.Users[0].User.Token != "t0k" {
		t.Fatalf("re-encoded kubeconfig lost meaning: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "/x") {
		t.Fatalf("the old value's second line is left:\n%s", out)
	}
}

func TestServersAndUsers(t *testing.T) {
	servers, err := Servers([]byte(kubeletConf), "")
	if err != nil || servers["kubernetes"] != "https://10.0.0.11:6443" || len(servers) != 1 {
		t.Fatalf("servers %v, %v", servers, err)
	}
	if _, err := Servers([]byte(kubeletConf), "other"); err == nil || !strings.Contains(err.Error(), `no cluster "other" (it has kubernetes)`) {
		t.Fatalf("unknown cluster: %v", err)
	}
	c, _ := Parse([]byte(kubeletConf))
	u, ok := c.UserFor("kubernetes")
	if !ok || u.ClientCertificate != "/var/lib/kubelet/pki/kubelet-client-current.pem" || u.UsesPlugin() {
		t.Fatalf("user %+v %v", u, ok)
	}
	ca, err := c.Clusters[0].Cluster.CertificateAuthorityData.Decode()
	if err != nil || !strings.HasPrefix(string(ca), "-----BEGIN CERTIFICATE-----") {
		t.Fatalf("CA %q %v", ca, err)
	}
	exec := "clusters: [{name: a, cluster: {server: https://a:1}}]\ncontexts: [{name: c, context: {cluster: a, user: u}}]\n" +
		"users: [{name: u, user: {exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}}}]\n"
	c, _ = Parse([]byte(exec))
	if u, _ := c.UserFor("a"); !u.UsesPlugin() {
		t.Error("an exec user is not reported as a plugin")
	}
}

// Errors never quote the content: a kubeconfig holds keys.
func TestErrorsDoNotQuoteTheContent(t *testing.T) {
	secret := "client-key-data: c2VjcmV0LWtleQ==\n  bad: [unclosed"
	for _, in := range []string{secret, "clusters: []\n" + secret, "just text c2VjcmV0LWtleQ"} {
		_, err1 := Parse([]byte(in))
		_, err2 := SetServers([]byte(in), map[string]string{"a": "https://x:1"})
		for _, err := range []error{err1, err2} {
			if err == nil || strings.Contains(err.Error(), "c2VjcmV0") {
				t.Errorf("error %v for %q", err, in)
			}
		}
	}
}

// adminConf is an admin.conf as kubeadm writes it (block mappings, the
// long lines of the CA and the client's key), with comments a person
// added.
var adminConf = `# The control plane, through its VIP.
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ` + strings.Repeat("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t", 40) + `
    server: https://10.0.0.11:6443 # the VIP
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: kubernetes-admin
  name: kubernetes-admin@kubernetes
current-context: kubernetes-admin@kubernetes
kind: Config
preferences: {}
users:
- name: kubernetes-admin
  user:
    client-certificate-data: ` + strings.Repeat("Y2xpZW50LWNlcnQ", 60) + `
    client-key-data: ` + strings.Repeat("Y2xpZW50LWtleQ", 60) + `
`

// twoClusters has two clusters, one with a tls-server-name placed before
// its server, in yamlencode's quotes.
const twoClusters = `clusters:
- name: a
  cluster:
    server: https://10.0.0.11:6443
    insecure-skip-tls-verify: false
- name: b
  cluster:
    "tls-server-name": "b.internal"
    "server": "https://10.0.0.12:6443"
contexts: [{name: a, context: {cluster: a, user: u}}]
`

// TestSetEndpoints: only the bytes of what changes change, a
// tls-server-name line added or removed whole.
func TestSetEndpoints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, out string
		want          map[string]Endpoint
	}{
		{"kubeadm admin.conf: one line added", adminConf,
			strings.Replace(adminConf, "# the VIP\n", "# the VIP\n    tls-server-name: kubernetes\n", 1),
			map[string]Endpoint{"kubernetes": {"https://10.0.0.11:6443", "kubernetes"}}},
		{"kubeadm admin.conf: server and tls-server-name", adminConf,
			strings.Replace(adminConf, "https://10.0.0.11:6443 # the VIP\n", "https://127.0.0.1:7445 # the VIP\n    tls-server-name: kubernetes\n", 1),
			map[string]Endpoint{"kubernetes": {"https://127.0.0.1:7445", "kubernetes"}}},
		{"changed in place, in the file's quotes", twoClusters,
			strings.Replace(twoClusters, `"b.internal"`, `"kubernetes"`, 1),
			map[string]Endpoint{"b": {"https://10.0.0.12:6443", "kubernetes"}}},
		{"removed, placed before the server", twoClusters,
			strings.Replace(twoClusters, "    \"tls-server-name\": \"b.internal\"\n", "", 1),
			map[string]Endpoint{"b": {"https://10.0.0.12:6443", ""}}},
		{"removed with its comment, the server changed",
			"clusters:\n- name: a\n  cluster:\n    server: https://a:1\n    tls-server-name: x # SNI\n    insecure-skip-tls-verify: true\n",
			"clusters:\n- name: a\n  cluster:\n    server: https://b:2\n    insecure-skip-tls-verify: true\n",
			map[string]Endpoint{"a": {"https://b:2", ""}}},
		{"both clusters, from the bottom up", twoClusters,
			strings.NewReplacer("    server: https://10.0.0.11:6443\n", "    server: https://10.0.0.11:6443\n    tls-server-name: kubernetes\n",
				"    \"tls-server-name\": \"b.internal\"\n", "").Replace(twoClusters),
			map[string]Endpoint{"a": {"https://10.0.0.11:6443", "kubernetes"}, "b": {"https://10.0.0.12:6443", ""}}},
		{"a value that needs quotes",
			"clusters:\n- name: a\n  cluster:\n    server: https://a:1\n",
			"clusters:\n- name: a\n  cluster:\n    server: https://a:1\n    tls-server-name: 'a: #b'\n",
			map[string]Endpoint{"a": {"https://a:1", "a: #b"}}},
		{"CRLF",
			"clusters:\r\n- name: a\r\n  cluster:\r\n    server: \"https://a:1\"\r\n  # end\r\n",
			"clusters:\r\n- name: a\r\n  cluster:\r\n    server: \"https://a:1\"\r\n    tls-server-name: kubernetes\r\n  # end\r\n",
			map[string]Endpoint{"a": {"https://a:1", "kubernetes"}}},
		{"the last line, without a line break",
			"clusters:\n- name: a\n  cluster:\n    server: https://a:1",
			"clusters:\n- name: a\n  cluster:\n    server: https://a:1\n    tls-server-name: kubernetes",
			map[string]Endpoint{"a": {"https://a:1", "kubernetes"}}},
		{"before a second document",
			"clusters:\n- name: a\n  cluster:\n    server: https://a:1\n---\nsecond: document\n",
			"clusters:\n- name: a\n  cluster:\n    server: https://a:1\n    tls-server-name: kubernetes\n---\nsecond: document\n",
			map[string]Endpoint{"a": {"https://a:1", "kubernetes"}}},
		{"unchanged", twoClusters, twoClusters,
			map[string]Endpoint{"a": {"https://10.0.0.11:6443", ""}, "b": {"https://10.0.0.12:6443", "b.internal"}}},
		{"a null tls-server-name is none",
			"clusters:\n- name: a\n  cluster:\n    server: https://a:1\n    tls-server-name:\n",
			"clusters:\n- name: a\n  cluster:\n    server: https://a:1\n    tls-server-name:\n",
			map[string]Endpoint{"a": {"https://a:1", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := SetEndpoints([]byte(tc.in), tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.out {
				t.Errorf("got\n%q\nwant\n%q", got, tc.out)
			}
			endpoints, err := Endpoints(got, "")
			if err != nil {
				t.Fatal(err)
			}
			for name, e := range tc.want {
				if endpoints[name] != e {
					t.Errorf("%s decodes to %+v, want %+v", name, endpoints[name], e)
				}
			}
		})
	}
}

// Setting endpoints and setting them back gives the kubeconfig back byte
// for byte: what destroy does after an apply.
func TestSetEndpointsThereAndBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in string }{
		{"kubeadm admin.conf", adminConf},
		{"two clusters, a tls-server-name before its server", twoClusters},
		{"CRLF", "clusters:\r\n- name: a\r\n  cluster:\r\n    server: https://a:1\r\n    tls-server-name: a.internal\r\n"},
	} {
		for _, there := range []Endpoint{
			{"https://127.0.0.1:7445", "kubernetes"},
			{"https://127.0.0.1:7445", ""},
			{"https://[fd00::11]:6443", "needs: quotes"},
		} {
			// A tls-server-name removed comes back after the server,
			// not where it was.
			if there.TLSServerName == "" && strings.Contains(tc.in, "tls-server-name\": \"b.internal\"\n    \"server") {
				continue
			}
			t.Run(tc.name+" "+there.Server+" "+there.TLSServerName, func(t *testing.T) {
				t.Parallel()
				back, err := Endpoints([]byte(tc.in), "")
				if err != nil {
					t.Fatal(err)
				}
				want := map[string]Endpoint{}
				for name := range back {
					want[name] = there
				}
				moved, err := SetEndpoints([]byte(tc.in), want)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := Endpoints(moved, ""); err != nil || !maps.Equal(got, want) {
					t.Fatalf("there: %v %v\n%q", got, err, moved)
				}
				returned, err := SetEndpoints(moved, back)
				if err != nil {
					t.Fatal(err)
				}
				if string(returned) != tc.in {
					t.Errorf("there and back:\n%q\nwant\n%q", returned, tc.in)
				}
			})
		}
	}
}

// Where a tls-server-name cannot be a line of its own (a flow mapping, a
// server over two lines), the document is encoded anew: it keeps its
// meaning, and the wanted endpoints.
func TestSetEndpointsFallsBackToEncoding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     Endpoint
	}{
		{"a flow mapping, added", "clusters:\n- name: a\n  cluster: {server: https://a:1}\nusers: [{name: u, user: {token: t0k}}]\n",
			Endpoint{"https://a:1", "kubernetes"}},
		{"a flow mapping, removed", "clusters:\n- name: a\n  cluster: {server: https://a:1, tls-server-name: x}\nusers: [{name: u, user: {token: t0k}}]\n",
			Endpoint{"https://a:1", ""}},
		{"a flow mapping on lines, removed", "clusters:\n- name: a\n  cluster: {\n    server: https://a:1,\n    tls-server-name: x\n  }\nusers: [{name: u, user: {token: t0k}}]\n",
			Endpoint{"https://a:1", ""}},
		{"a server over two lines", "clusters:\n- name: a\n  cluster:\n    server: https://a:1\n      /x\nusers: [{name: u, user: {token: t0k}}]\n",
			Endpoint{"https://a:1 /x", "kubernetes"}},
		{"a tls-server-name over two lines, removed", "clusters:\n- name: a\n  cluster:\n    server: https://a:1\n    tls-server-name: \"a\n      b\"\nusers: [{name: u, user: {token: t0k}}]\n",
			Endpoint{"https://a:1", ""}},
		{"a null tls-server-name, set", "clusters:\n- name: a\n  cluster:\n    server: https://a:1\n    tls-server-name:\nusers: [{name: u, user: {token: t0k}}]\n",
			Endpoint{"https://a:1", "kubernetes"}},
		{"a lone CR", "clusters:\r- name: a\r  cluster:\r    server: https://a:1\rusers: [{name: u, user: {token: t0k}}]\r",
			Endpoint{"https://a:1", "kubernetes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := SetEndpoints([]byte(tc.in), map[string]Endpoint{"a": tc.want})
			if err != nil {
				t.Fatal(err)
			}
			c, err := Parse(out)
			if err != nil || len(c.Users) != 1 || c.Users[0].User.Token != "t0k" {
				t.Fatalf("the encoded kubeconfig lost its meaning: %v\n%s", err, out)
			}
			if got, err := Endpoints(out, "a"); err != nil || got["a"] != tc.want {
				t.Fatalf("endpoint %+v %v, want %+v\n%s", got["a"], err, tc.want, out)
			}
		})
	}
}

// SetServers keeps each cluster's tls-server-name, wherever it is.
func TestSetServersKeepsTheTLSServerName(t *testing.T) {
	t.Parallel()
	out, err := SetServers([]byte(twoClusters), map[string]string{"a": "https://a:1", "b": "https://b:1"})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("https://10.0.0.11:6443", "https://a:1", "https://10.0.0.12:6443", "https://b:1").Replace(twoClusters)
	if string(out) != want {
		t.Errorf("got\n%q\nwant\n%q", out, want)
	}
}

func TestEndpoints(t *testing.T) {
	t.Parallel()
	got, err := Endpoints([]byte(twoClusters), "")
	want := map[string]Endpoint{"a": {"https://10.0.0.11:6443", ""}, "b": {"https://10.0.0.12:6443", "b.internal"}}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("endpoints %v %v, want %v", got, err, want)
	}
	if got, err := Endpoints([]byte(twoClusters), "b"); err != nil || len(got) != 1 || got["b"] != want["b"] {
		t.Fatalf("endpoints of b %v %v", got, err)
	}
}

func TestSetEndpointsRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, err string
		want          map[string]Endpoint
	}{
		{"no such cluster", twoClusters, `no cluster "c" with a server`,
			map[string]Endpoint{"a": {"https://x:1", ""}, "c": {"https://x:1", ""}}},
		{"no server", "clusters:\n- name: a\n  cluster:\n    insecure-skip-tls-verify: true\n", `no cluster "a" with a server`,
			map[string]Endpoint{"a": {"https://x:1", ""}}},
		{"a tls-server-name that is not a string", "clusters:\n- name: a\n  cluster:\n    server: https://a:1\n    tls-server-name: [c2VjcmV0]\n",
			`tls-server-name of cluster "a" is not a string`, map[string]Endpoint{"a": {"https://x:1", ""}}},
		// Encoding anew would lose the second document.
		{"a flow mapping before a second document", "clusters:\n- name: a\n  cluster: {server: https://a:1}\n---\nsecond: document\n",
			"changed more than", map[string]Endpoint{"a": {"https://a:1", "kubernetes"}}},
		// The cluster repeats another one: editing it would edit both.
		{"an alias", "clusters:\n- &a {name: a, cluster: {server: https://a:1}}\n- *a\n", `no cluster "a" with a server`,
			map[string]Endpoint{"a": {"https://x:1", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := SetEndpoints([]byte(tc.in), tc.want)
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "c2VjcmV0") {
				t.Fatalf("error %v, want one saying %s; got\n%s", err, tc.err, out)
			}
		})
	}
}

// FuzzSetServers: whatever the input, SetServers either fails or returns
// a kubeconfig whose selected server is the new one, with its
// tls-server-name, and whose every other value is unchanged.
func FuzzSetServers(f *testing.F) {
	f.Add(kubeletConf, "kubernetes", "https://localhost:6443")
	f.Add("clusters:\n- name: a\n  cluster:\n    server: \"x\" # c\n", "a", "https://[::1]:6443")
	f.Add("clusters: [{name: a, cluster: {server: 'y'}}]", "a", "it's: #odd")
	f.Add(twoClusters, "b", "https://b:1")
	f.Fuzz(func(t *testing.T, in, cluster, server string) {
		before, err := Endpoints([]byte(in), "")
		if err != nil {
			return
		}
		out, err := SetServers([]byte(in), map[string]string{cluster: server})
		if err != nil {
			return
		}
		checkEndpoints(t, in, out, cluster, Endpoint{server, before[cluster].TLSServerName})
	})
}

// FuzzSetEndpoints: whatever the input, SetEndpoints either fails or
// returns a kubeconfig whose selected endpoint is the wanted one and whose
// every other value is unchanged; it never panics.
func FuzzSetEndpoints(f *testing.F) {
	for _, in := range []string{kubeletConf, adminConf, twoClusters,
		"clusters:\r\n- name: a\r\n  cluster:\r\n    server: \"https://a:1\"\r\n  # end\r\n",
		"clusters:\n- name: a\n  cluster: {server: https://a:1, tls-server-name: x}\n",
		"clusters:\n- name: a\n  cluster:\n    server: https://a:1\n    tls-server-name: x # SNI\n    insecure-skip-tls-verify: true\n",
		"clusters:\n- name: a\n  cluster:\n    server: https://a:1",
	} {
		for _, e := range []Endpoint{{"https://127.0.0.1:7445", "kubernetes"}, {"https://a:1", ""}, {"x", "a: #b"}} {
			f.Add(in, "a", e.Server, e.TLSServerName)
			f.Add(in, "kubernetes", e.Server, e.TLSServerName)
		}
	}
	f.Fuzz(func(t *testing.T, in, cluster, server, tlsServerName string) {
		if _, err := Parse([]byte(in)); err != nil {
			return
		}
		want := Endpoint{server, tlsServerName}
		out, err := SetEndpoints([]byte(in), map[string]Endpoint{cluster: want})
		if err != nil {
			return
		}
		checkEndpoints(t, in, out, cluster, want)
	})
}

// checkEndpoints fails t unless out's endpoint of cluster is want, every
// other cluster's endpoint is in's, and out decodes to in but for the
// clusters' server and tls-server-name.
func checkEndpoints(t *testing.T, in string, out []byte, cluster string, want Endpoint) {
	t.Helper()
	before, err := Endpoints([]byte(in), "")
	if err != nil {
		t.Fatal(err)
	}
	after, err := Endpoints(out, "")
	if err != nil || after[cluster] != want {
		t.Fatalf("endpoint after the edit %+v %v, want %+v\n%q", after[cluster], err, want, out)
	}
	before[cluster] = want
	if !maps.Equal(before, after) {
		t.Fatalf("the edit changed other endpoints: %v, want %v\n%q", after, before, out)
	}
	a, okA := decodeAll([]byte(in))
	b, okB := decodeAll(out)
	if !okA || !okB || !reflect.DeepEqual(withoutEndpoints(a), withoutEndpoints(b)) {
		t.Fatalf("the edit changed more than the endpoint:\n%q\n%q", in, out)
	}
}

// withoutEndpoints is docs with no cluster's server or tls-server-name.
func withoutEndpoints(docs []any) []any {
	if len(docs) > 0 {
		root, _ := docs[0].(map[string]any)
		clusters, _ := root["clusters"].([]any)
		for _, entry := range clusters {
			m, _ := entry.(map[string]any)
			if cluster, ok := m["cluster"].(map[string]any); ok {
				delete(cluster, "server")
				delete(cluster, "tls-server-name")
			}
		}
	}
	return docs
}

// TestSetServersKeepsEveryDocument: a server over two lines is encoded
// anew; a document after the kubeconfig's was dropped then, without a
// word. Now the edit is refused and the content left as it was.
func TestSetServersKeepsEveryDocument(t *testing.T) {
	t.Parallel()
	in := "clusters:\n- name: a\n  cluster:\n    server: \"https://a:1\n      \"\n---\nsecond: document\n"
	out, err := SetServers([]byte(in), map[string]string{"a": "https://b:2"})
	if err == nil && !strings.Contains(string(out), "second: document") {
		t.Fatalf("the second document was dropped:\n%s", out)
	}
	if err == nil {
		t.Fatalf("an edit that must encode anew a file of two documents went through:\n%s", out)
	}
}
