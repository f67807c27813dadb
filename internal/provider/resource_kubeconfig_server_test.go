package provider

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/kubeconfig"
	"github.com/kha/terraform-provider-kha/internal/testhost"
)

const kubeconfigAddr = "kha_kubeconfig_server.node"

// nodeKubeconfig is a kubelet.conf as kubeadm writes one for a node, with
// the credentials inline so that any leak of its content shows.
func nodeKubeconfig(server, caPEM string, certPEM, keyPEM []byte) string {
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	return fmt.Sprintf(`apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: %s
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
    client-certificate-data: %s
    client-key-data: %s
`, b64([]byte(caPEM)), server, b64(certPEM), b64(keyPEM))
}

// TestAccKubeconfigServer_lifecycle moves a node's kubeconfig between two
// endpoints of a real, hardened kube-apiserver (anonymous requests
// refused), checked with the kubeconfig's own client certificate through
// the SSH connection.
func TestAccKubeconfigServer_lifecycle(t *testing.T) {
	testhost.KubeDir(t)
	member := &testhost.EtcdMember{Name: "etcd1", IP: "127.0.0.1", ClientPort: testhost.FreePort(t, "127.0.0.1"), PeerPort: testhost.FreePort(t, "127.0.0.1")}
	etcd := testhost.StartEtcd(t, []*testhost.EtcdMember{member}, []string{"127.0.0.1"})
	kas := testhost.StartKubeAPIServer(t, etcd, "127.0.0.1", false)
	_, port, _ := net.SplitHostPort(kas.Address)
	byIP, byName := "https://127.0.0.1:"+port, "https://localhost:"+port
	nowhere := "https://127.0.0.9:" + port // nothing listens there

	s := testhost.Start(t, testhost.Options{})
	work := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", work)
	dir := t.TempDir()
	target := filepath.Join(dir, "kubelet.conf")
	pki := testhost.TestPKI(t)
	issue := func(name string) (cert, key []byte) {
		c, k := pki.WriteClientFiles(t, t.TempDir(), name)
		cert, _ = os.ReadFile(c)
		key, _ = os.ReadFile(k)
		return cert, key
	}
	cert, key := issue("system:node:w1")
	kubeadmWrote := nodeKubeconfig(byIP, pki.CAPEM, cert, key)
	if err := os.WriteFile(target, []byte(kubeadmWrote), 0o600); err != nil {
		t.Fatal(err)
	}
	keyLine := strings.Split(string(key), "\n")[1]
	secrets := []string{keyLine, base64.StdEncoding.EncodeToString(key)[:40]}
	vars := func(server, restart string) config.Variables {
		return config.Variables{"host": config.StringVariable(s.Host), "port": config.IntegerVariable(s.Port),
			"host_key": config.StringVariable(s.RSAHostKey.Public()), "private_key": config.StringVariable(s.ClientKey.PEM),
			"path": config.StringVariable(target), "server": config.StringVariable(server), "restart_command": config.StringVariable(restart)}
	}
	serverIs := func(want string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			b, err := os.ReadFile(target)
			if err != nil {
				return err
			}
			servers, err := kubeconfig.Servers(b, "")
			if err != nil || servers["kubernetes"] != want {
				return fmt.Errorf("the host's kubeconfig has %v (%v), want %s", servers, err, want)
			}
			return nil
		}
	}
	var before []byte
	snapshot := func() { before, _ = os.ReadFile(target) }
	unchanged := func(*terraform.State) error {
		if after, _ := os.ReadFile(target); !bytes.Equal(after, before) {
			return fmt.Errorf("the kubeconfig changed:\n%s", after)
		}
		return nil
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             serverIs(byIP), // destroy puts kubeadm's value back
		Steps: []resource.TestStep{
			{
				// Create: only the server's bytes change.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(byName, "true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{noSecretsInPlan(secrets),
					plancheck.ExpectUnknownValue(kubeconfigAddr, tfjsonpath.New("previous_servers"))}},
				ConfigStateChecks: []statecheck.StateCheck{noSecretsInState(work, secrets),
					statecheck.ExpectKnownValue(kubeconfigAddr, tfjsonpath.New("previous_servers"), knownvalue.MapExact(map[string]knownvalue.Check{
						target: knownvalue.MapExact(map[string]knownvalue.Check{"kubernetes": knownvalue.StringExact(byIP)})}))},
				Check: resource.ComposeTestCheckFunc(serverIs(byName), func(*terraform.State) error {
					if got, _ := os.ReadFile(target); string(got) != strings.Replace(kubeadmWrote, byIP, byName, 1) {
						return fmt.Errorf("more than the server changed:\n%s", got)
					}
					return nil
				}),
			},
			{
				// The kubelet rotates its client certificate: not drift.
				PreConfig: func() {
					c, k := issue("system:node:w1")
					os.WriteFile(target, []byte(nodeKubeconfig(byName, pki.CAPEM, c, k)), 0o600)
				},
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(byName, "true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Someone points the kubelet elsewhere by hand: drift, put right.
				PreConfig: func() {
					b, _ := os.ReadFile(target)
					os.WriteFile(target, bytes.Replace(b, []byte(byName), []byte(byIP), 1), 0o600)
				},
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(byName, "true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{noSecretsInPlan(secrets),
					plancheck.ExpectResourceAction(kubeconfigAddr, plancheck.ResourceActionUpdate)}},
				Check: serverIs(byName),
			},
			{
				// An endpoint that does not answer: the file stays byte for byte.
				PreConfig:       snapshot,
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(nowhere, "true"),
				ExpectError: regexp.MustCompile(`(?s)check\s+of.*kubelet\.conf\s+failed.*not\s+put\s+in\s+place.*cluster\s+"kubernetes"\s+at\s+https://127\.0\.0\.9.*refused`),
			},
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(byName, "true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            unchanged,
			},
			{
				// The restart fails with the new server: the old file comes
				// back, and the restart runs again with it.
				PreConfig:       snapshot,
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(byIP, "! grep -q '"+byIP+"' "+target),
				ExpectError: regexp.MustCompile(`(?s)reload\s+of.*kubelet\.conf\s+failed.*previous\s+file\s+was\s+restored`),
			},
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(byName, "true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            unchanged,
			},
			{
				// Import by host:port:path.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(byName, "true"),
				ResourceName: kubeconfigAddr, ImportState: true, ImportStateId: fmt.Sprintf("%s:%d:%s", s.Host, s.Port, target),
				ImportStateVerify: true, ImportStateVerifyIgnore: []string{"previous_servers", "restart_command", "cluster_name", "ssh", "timeouts", "verify_timeout"},
			},
		},
	}))
}
