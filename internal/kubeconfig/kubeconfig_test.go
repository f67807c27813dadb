package kubeconfig

import (
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

// FuzzSetServers: whatever the input, SetServers either fails or returns
// a kubeconfig whose selected servers are the new ones and whose every
// other value is unchanged.
func FuzzSetServers(f *testing.F) {
	f.Add(kubeletConf, "kubernetes", "https://localhost:6443")
	f.Add("clusters:\n- name: a\n  cluster:\n    server: \"x\" # c\n", "a", "https://[::1]:6443")
	f.Add("clusters: [{name: a, cluster: {server: 'y'}}]", "a", "it's: #odd")
	f.Fuzz(func(t *testing.T, in, cluster, server string) {
		out, err := SetServers([]byte(in), map[string]string{cluster: server})
		if err != nil {
			return
		}
		got, err := Servers(out, cluster)
		if err != nil || got[cluster] != server {
			t.Fatalf("servers after the edit: %v %v\n%q", got, err, out)
		}
		if !sameExceptServers([]byte(in), out, map[string]string{cluster: server}) {
			t.Fatalf("the edit changed more than the server:\n%q\n%q", in, out)
		}
	})
}
