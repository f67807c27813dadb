package clusterconfig

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// edit is one of the three edits, as the resource makes them.
type editFunc func([]byte) ([]byte, error)

func setEndpoint(endpoint string) editFunc {
	return func(b []byte) ([]byte, error) { return SetControlPlaneEndpoint(b, endpoint) }
}

func setSANs(sans ...string) editFunc {
	return func(b []byte) ([]byte, error) { return SetCertSANs(b, sans) }
}

// TestClusterConfigurationEdits: each edit changes the lines of its value
// and nothing else, byte for byte, in kubeadm's own output and in
// hand-written variants with comments, flow style and odd indentation.
func TestClusterConfigurationEdits(t *testing.T) {
	t.Parallel()
	initDefaults := readTestdata(t, "init-defaults.yaml")
	withSANs := readTestdata(t, "with-sans.yaml")
	cases := []struct {
		name, in string
		edits    []editFunc
		want     string
	}{
		{
			name: "kubeadm init-defaults: endpoint and SANs added in kubeadm's order", in: initDefaults,
			edits: []editFunc{setEndpoint("lb.example.com:8443"), setSANs("lb.example.com", "10.0.0.100")},
			want: strings.Replace(strings.Replace(initDefaults, "apiServer: {}\n",
				"apiServer:\n  certSANs:\n  - lb.example.com\n  - 10.0.0.100\n", 1),
				"controllerManager: {}\n", "controlPlaneEndpoint: lb.example.com:8443\ncontrollerManager: {}\n", 1),
		},
		{
			name: "live cluster: the values' lines change, the rest stays", in: withSANs,
			edits: []editFunc{setEndpoint("[fd00::100]:6443"), setSANs("10.0.0.11", "cp1", "fd00::100")},
			want: strings.Replace(strings.Replace(withSANs, "controlPlaneEndpoint: 10.0.0.11:6443", `controlPlaneEndpoint: '[fd00::100]:6443'`, 1),
				"  - ::1\n", "  - fd00::100\n", 1),
		},
		{
			name: "no change writes nothing", in: withSANs,
			edits: []editFunc{setEndpoint("10.0.0.11:6443"), setSANs("10.0.0.11", "cp1", "::1")},
			want:  withSANs,
		},
		{
			name: "comments and quoting around the values stay",
			in: "# kubeadm-config, edited by hand\napiServer:\n  # the SANs\n  certSANs:   # inline\n    - 'a'   # first\n    - \"b\"\n  # after\n  timeoutForControlPlane: 4m0s\n" +
				"controlPlaneEndpoint: \"old:6443\"   # keep me\nkind: ClusterConfiguration\n",
			edits: []editFunc{setEndpoint("new:6443"), setSANs("c")},
			want: "# kubeadm-config, edited by hand\napiServer:\n  # the SANs\n  certSANs:   # inline\n    - c\n  # after\n  timeoutForControlPlane: 4m0s\n" +
				"controlPlaneEndpoint: \"new:6443\"   # keep me\nkind: ClusterConfiguration\n",
		},
		{
			name:  "flow sequence on one line stays flow",
			in:    "apiServer:\n    certSANs: [a, \"b]\", c]  # flow\n    extraArgs: {}\nkind: ClusterConfiguration\n",
			edits: []editFunc{setSANs("x", "z")},
			want:  "apiServer:\n    certSANs: [x, z]  # flow\n    extraArgs: {}\nkind: ClusterConfiguration\n",
		},
		{
			name:  "apiServer absent: added before the keys after it",
			in:    "# header\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n",
			edits: []editFunc{setSANs("a")},
			want:  "# header\napiServer:\n  certSANs:\n  - a\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n",
		},
		{
			name:  "certSANs absent in a block apiServer",
			in:    "apiServer:\n  extraArgs:\n  - name: a\n    value: b\nkind: ClusterConfiguration",
			edits: []editFunc{setSANs("a", "b")},
			want:  "apiServer:\n  certSANs:\n  - a\n  - b\n  extraArgs:\n  - name: a\n    value: b\nkind: ClusterConfiguration",
		},
		{
			name:  "endpoint absent and no key after it: appended, no newline at the end",
			in:    "apiVersion: kubeadm.k8s.io/v1beta4\nclusterName: kubernetes",
			edits: []editFunc{setEndpoint("lb:6443")},
			want:  "apiVersion: kubeadm.k8s.io/v1beta4\nclusterName: kubernetes\ncontrolPlaneEndpoint: lb:6443\n",
		},
		{
			name:  "empty certSANs",
			in:    "apiServer:\n  certSANs:\n  - a\n  - b\n  timeoutForControlPlane: 4m0s\n",
			edits: []editFunc{setSANs()},
			want:  "apiServer:\n  certSANs: []\n  timeoutForControlPlane: 4m0s\n",
		},
		{
			name:  "CRLF line ends stay",
			in:    "apiServer:\r\n  certSANs:\r\n  - a\r\ncontrolPlaneEndpoint: old:6443\r\n",
			edits: []editFunc{setEndpoint("new:6443")},
			want:  "apiServer:\r\n  certSANs:\r\n  - a\r\ncontrolPlaneEndpoint: new:6443\r\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := []byte(tc.in)
			for _, e := range tc.edits {
				var err error
				if got, err = e(got); err != nil {
					t.Fatal(err)
				}
			}
			if string(got) != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestClusterConfigurationRoundTrip: destroy's edits (the endpoint back,
// certSANs removed where kha added it) give kubeadm's text back byte for
// byte.
func TestClusterConfigurationRoundTrip(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"init-defaults.yaml", "with-sans.yaml"} {
		t.Run(name, func(t *testing.T) {
			in := readTestdata(t, name)
			before, err := ReadClusterConfiguration(in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := SetControlPlaneEndpoint([]byte(in), "lb.example.com:6443")
			if err == nil {
				out, err = SetCertSANs(out, []string{"lb.example.com"})
			}
			if err != nil {
				t.Fatal(err)
			}
			after, _ := ReadClusterConfiguration(string(out))
			if after.ControlPlaneEndpoint != "lb.example.com:6443" || !reflect.DeepEqual(after.CertSANs, []string{"lb.example.com"}) {
				t.Fatalf("read back %+v", after)
			}
			if !before.HasControlPlaneEndpoint {
				out, err = RemoveControlPlaneEndpoint(out)
			} else {
				out, err = SetControlPlaneEndpoint(out, before.ControlPlaneEndpoint)
			}
			if err == nil && before.CertSANs == nil {
				out, err = RemoveCertSANs(out)
			} else if err == nil {
				out, err = SetCertSANs(out, before.CertSANs)
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != in {
				t.Errorf("got:\n%s\nwant:\n%s", out, in)
			}
		})
	}
}

func TestReadClusterConfiguration(t *testing.T) {
	t.Parallel()
	c, err := ReadClusterConfiguration(readTestdata(t, "with-sans.yaml"))
	if err != nil || c.ControlPlaneEndpoint != "10.0.0.11:6443" || !reflect.DeepEqual(c.CertSANs, []string{"10.0.0.11", "cp1", "::1"}) {
		t.Fatalf("%+v %v", c, err)
	}
	c, err = ReadClusterConfiguration(readTestdata(t, "init-defaults.yaml"))
	if err != nil || c.ControlPlaneEndpoint != "" || c.HasControlPlaneEndpoint || c.CertSANs != nil {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := ReadClusterConfiguration("apiServer: [\nkey: secret-value"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("want an error that quotes nothing, got %v", err)
	}
}

// FuzzClusterConfigurationEdits: whatever the document, an edit either
// fails or gives a document that decodes to the original with only the
// edited value changed; editing again to the same value changes nothing.
func FuzzClusterConfigurationEdits(f *testing.F) {
	for _, name := range []string{"init-defaults.yaml", "with-sans.yaml"} {
		f.Add(readTestdata(f, name), "lb.example.com:6443", "10.0.0.100")
	}
	f.Add("apiServer:\n    certSANs: [a, 'b', \"c\"]  # x\nkind: ClusterConfiguration\n", "[::1]:6443", "::1")
	f.Add("# c\napiServer: {}  # empty\ncontrolPlaneEndpoint: 'x:1'\n", "y: 2", "#")
	f.Add("apiServer:\n  certSANs:\n  - |\n    multi\n    line\n", "a\nb", "-")
	f.Add("a: &x {certSANs: [a]}\napiServer: *x\n", "", "")
	f.Fuzz(func(t *testing.T, doc, endpoint, san string) {
		var before any
		if yaml.Unmarshal([]byte(doc), &before) != nil {
			return
		}
		if _, ok := before.(map[string]any); !ok {
			return
		}
		check := func(what string, out []byte, want func(map[string]any)) {
			var got, expected any
			_ = yaml.Unmarshal([]byte(doc), &expected)
			m, ok := expected.(map[string]any)
			if !ok {
				t.Fatalf("%q decoded once as a mapping, then not", doc)
			}
			want(m)
			if err := yaml.Unmarshal(out, &got); err != nil || !reflect.DeepEqual(got, expected) {
				t.Fatalf("%s of\n%q\ngave\n%q", what, doc, out)
			}
		}
		if out, err := SetControlPlaneEndpoint([]byte(doc), endpoint); err == nil {
			check("controlPlaneEndpoint", out, func(m map[string]any) { m["controlPlaneEndpoint"] = endpoint })
			if removed, err := RemoveControlPlaneEndpoint(out); err == nil {
				var got map[string]any
				if yaml.Unmarshal(removed, &got) != nil {
					t.Fatalf("removing controlPlaneEndpoint gave YAML that does not decode: %q", removed)
				}
				if _, still := got["controlPlaneEndpoint"]; still {
					t.Fatalf("controlPlaneEndpoint still in %q", removed)
				}
			}
			if again, err := SetControlPlaneEndpoint(out, endpoint); err != nil || string(again) != string(out) {
				t.Fatalf("setting the same endpoint again changed %q to %q (%v)", out, again, err)
			}
		}
		sans := []string{san, "kubernetes"}
		if out, err := SetCertSANs([]byte(doc), sans); err == nil {
			check("certSANs", out, func(m map[string]any) {
				api, ok := m["apiServer"].(map[string]any)
				if !ok {
					api = map[string]any{}
					m["apiServer"] = api
				}
				api["certSANs"] = []any{san, "kubernetes"}
			})
			if removed, err := RemoveCertSANs(out); err == nil {
				var got any
				if yaml.Unmarshal(removed, &got) != nil {
					t.Fatalf("removing certSANs gave YAML that does not decode: %q", removed)
				}
				root, _ := got.(map[string]any)
				if api, ok := root["apiServer"].(map[string]any); ok {
					if _, still := api["certSANs"]; still {
						t.Fatalf("certSANs still in %q", removed)
					}
				}
			}
		}
	})
}
