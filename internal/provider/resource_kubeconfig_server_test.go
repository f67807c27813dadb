package provider

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/kubeconfig"
	"github.com/kha/terraform-provider-kha/internal/remote"
	"github.com/kha/terraform-provider-kha/internal/testhost"
)

const kubeconfigAddr = "kha_kubeconfig_server.node"

// nodeCredentials are the client certificate and key (PEM) pki issues
// to the node w1's kubelet.
func nodeCredentials(t *testing.T, pki testhost.PKI) (certPEM, keyPEM []byte) {
	t.Helper()
	certFile, keyFile := pki.WriteClientFiles(t, t.TempDir(), "system:node:w1")
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err = os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

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

// kubeconfigPathsFixture is a kha_kubeconfig_server of several paths
// (testdata/TestAccKubeconfigServer_failuresPutBackWhatChanged), and
// kubeconfigPathsVars its variables.
var kubeconfigPathsFixture = config.StaticDirectory("testdata/TestAccKubeconfigServer_failuresPutBackWhatChanged")

func kubeconfigPathsVars(s *testhost.Server, server, restart string, paths ...string) config.Variables {
	list := make([]config.Variable, len(paths))
	for i, p := range paths {
		list[i] = config.StringVariable(p)
	}
	return config.Variables{"host": config.StringVariable(s.Host), "port": config.IntegerVariable(s.Port),
		"host_key": config.StringVariable(s.HostKey.Public()), "private_key": config.StringVariable(s.ClientKey.PEM),
		"paths": config.ListVariable(list...), "server": config.StringVariable(server), "restart_command": config.StringVariable(restart)}
}

// kubeconfigServersAre checks that each of paths names want as its
// cluster's server.
func kubeconfigServersAre(want string, paths ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, p := range paths {
			b, _ := os.ReadFile(p)
			if servers, err := kubeconfig.Servers(b, ""); err != nil || servers["kubernetes"] != want {
				return fmt.Errorf("%s has %v (%v), want %s", p, servers, err, want)
			}
		}
		return nil
	}
}

// dropDuring is a restart command that, the first time it runs, waits
// until arm's watcher has killed the sshd processes serving the
// connection (files named name in dir tell one from the other): the
// connection is lost while the restart runs, whatever the machine's load.
func dropDuring(s *testhost.Server, dir, name string) (command string, arm func()) {
	restarting, dropped := filepath.Join(dir, name+".restarting"), filepath.Join(dir, name+".dropped")
	command = fmt.Sprintf("[ -e %[2]s ] || { touch %[1]s; i=0; while [ ! -e %[2]s ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; }",
		restarting, dropped)
	arm = func() {
		go func() {
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(restarting); err == nil {
					s.DropConnections()
					_ = os.WriteFile(dropped, nil, 0o600)
					return
				}
			}
		}()
	}
	return command, arm
}

// TestAccKubeconfigServer_failuresPutBackWhatChanged: a create that fails
// on its second kubeconfig (its check, or a connection lost while the
// kubelet restarts) puts the first one back and records nothing; a path
// added later is recorded before it is first changed, so destroy puts it
// back too; and the kubelet restarts once per apply, after the last
// kubeconfig that changes.
func TestAccKubeconfigServer_failuresPutBackWhatChanged(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	pki := testhost.TestPKI(t)
	serverA := "https://" + testhost.StartAPIServer(t, "a", "127.0.0.2")
	serverB := "https://" + testhost.StartAPIServer(t, "b", "127.0.0.3")
	dir := t.TempDir()
	kubelet, admin := filepath.Join(dir, "kubelet.conf"), filepath.Join(dir, "admin.conf")
	restarts := filepath.Join(dir, "restarts")
	lostRestart, armLost := dropDuring(s, dir, "lost")
	cert, key := nodeCredentials(t, pki)
	write := func(path, caPEM string) []byte {
		b := []byte(nodeKubeconfig(serverA, caPEM, cert, key))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return b
	}
	wantKubelet, wantAdmin := write(kubelet, pki.CAPEM), write(admin, testhost.OtherCAPEM(t))
	vars := func(server, restart string, paths ...string) config.Variables {
		return kubeconfigPathsVars(s, server, restart, paths...)
	}
	count := "echo restart >> " + restarts
	restartsSoFar := 0
	restartedOnce := func(*terraform.State) error {
		b, _ := os.ReadFile(restarts)
		n := strings.Count(string(b), "restart\n")
		defer func() { restartsSoFar = n }()
		if n != restartsSoFar+1 {
			return fmt.Errorf("the restart command ran %d times in this apply, want once", n-restartsSoFar)
		}
		return nil
	}
	// asBefore waits for the host (which may still be rolling back on its
	// own) to have both kubeconfigs as they were, byte for byte.
	asBefore := func() {
		deadline := time.Now().Add(20 * time.Second)
		for {
			k, _ := os.ReadFile(kubelet)
			a, _ := os.ReadFile(admin)
			if bytes.Equal(k, wantKubelet) && bytes.Equal(a, wantAdmin) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the kubeconfigs were not put back:\nkubelet.conf:\n%s\nadmin.conf:\n%s", k, a)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	notInState := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(kubeconfigAddr, plancheck.ResourceActionCreate)}}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             kubeconfigServersAre(serverA, kubelet, admin),
		Steps: []resource.TestStep{
			{
				// admin.conf's CA did not sign the apiserver: its check fails
				// after kubelet.conf was switched.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(serverB, count, kubelet, admin),
				ExpectError: regexp.MustCompile(`(?s)check\s+of\s+\S*admin\.conf\s+failed`),
			},
			{
				// The connection is lost while the kubelet restarts.
				PreConfig: func() {
					asBefore()
					wantAdmin = write(admin, pki.CAPEM)
					armLost()
				},
				ConfigPlanChecks: notInState,
				ConfigDirectory:  config.TestNameDirectory(), ConfigVariables: vars(serverB, lostRestart, kubelet, admin),
				ExpectError: regexp.MustCompile(`(?s)lost\s+after\s+the\s+new\s+file\s+was\s+put\s+in\s+place`),
			},
			{
				PreConfig:        asBefore,
				ConfigPlanChecks: notInState,
				ConfigDirectory:  config.TestNameDirectory(), ConfigVariables: vars(serverB, count, kubelet),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(kubeconfigAddr, tfjsonpath.New("previous_servers"),
					knownvalue.MapExact(map[string]knownvalue.Check{kubelet: knownvalue.MapExact(map[string]knownvalue.Check{"kubernetes": knownvalue.StringExact(serverA)})}))},
				Check: resource.ComposeTestCheckFunc(kubeconfigServersAre(serverB, kubelet), kubeconfigServersAre(serverA, admin), restartedOnce),
			},
			{
				// A path added later: recorded before its first change.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(serverB, count, kubelet, admin),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(kubeconfigAddr, tfjsonpath.New("previous_servers").AtMapKey(admin)),
					plancheck.ExpectKnownValue(kubeconfigAddr, tfjsonpath.New("previous_servers").AtMapKey(kubelet),
						knownvalue.MapExact(map[string]knownvalue.Check{"kubernetes": knownvalue.StringExact(serverA)}))}},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(kubeconfigAddr, tfjsonpath.New("previous_servers").AtMapKey(admin),
					knownvalue.MapExact(map[string]knownvalue.Check{"kubernetes": knownvalue.StringExact(serverA)}))},
				Check: resource.ComposeTestCheckFunc(kubeconfigServersAre(serverB, kubelet, admin), restartedOnce),
			},
			{
				// Both change: one restart.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(serverA, count, kubelet, admin),
				Check: resource.ComposeTestCheckFunc(kubeconfigServersAre(serverA, kubelet, admin), restartedOnce),
			},
			{
				// Destroy (CheckDestroy) finds both on serverA already.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(serverB, count, kubelet, admin),
				Check: resource.ComposeTestCheckFunc(kubeconfigServersAre(serverB, kubelet, admin), restartedOnce),
			},
		},
	}))
}

// TestAccKubeconfigServer_lostConnectionKeepsOriginal: with verify = false
// no verdict is awaited after the restart, so a connection lost while
// restart_command runs leaves kha's server on the host. The failed create
// stays in state, tainted, with the server found before it; a failed
// update keeps the path it added with that path's server. The applies
// after them record no server of kha's as a previous one, and destroy puts
// the originals back.
func TestAccKubeconfigServer_lostConnectionKeepsOriginal(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	pki := testhost.TestPKI(t)
	original, khas := "https://127.0.0.2:6443", "https://127.0.0.3:6443" // nothing checks them: verify = false
	dir := t.TempDir()
	kubelet, admin := filepath.Join(dir, "kubelet.conf"), filepath.Join(dir, "admin.conf")
	cert, key := nodeCredentials(t, pki)
	for _, p := range []string{kubelet, admin} {
		if err := os.WriteFile(p, []byte(nodeKubeconfig(original, pki.CAPEM, cert, key)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	vars := func(restart string, paths ...string) config.Variables {
		v := kubeconfigPathsVars(s, khas, restart, paths...)
		v["verify"] = config.BoolVariable(false)
		return v
	}
	createDrop, armCreate := dropDuring(s, dir, "create")
	updateDrop, armUpdate := dropDuring(s, dir, "update")
	lost := regexp.MustCompile(`(?s)lost\s+after\s+the\s+new\s+file\s+was\s+put\s+in\s+place`)
	hostKeptKhas := func() {
		if err := kubeconfigServersAre(khas, kubelet)(nil); err != nil {
			t.Fatalf("the lost connection did not leave kha's server on the host: %v", err)
		}
	}
	originals := func(paths ...string) map[string]map[string]string {
		m := map[string]map[string]string{}
		for _, p := range paths {
			m[p] = map[string]string{"kubernetes": original}
		}
		return m
	}
	recorded := func(want map[string]map[string]string) statecheck.StateCheck {
		paths := map[string]knownvalue.Check{}
		for p, servers := range want {
			clusters := map[string]knownvalue.Check{}
			for name, server := range servers {
				clusters[name] = knownvalue.StringExact(server)
			}
			paths[p] = knownvalue.MapExact(clusters)
		}
		return statecheck.ExpectKnownValue(kubeconfigAddr, tfjsonpath.New("previous_servers"), knownvalue.MapExact(paths))
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             kubeconfigServersAre(original, kubelet, admin),
		Steps: []resource.TestStep{
			{
				PreConfig:       armCreate,
				ConfigDirectory: kubeconfigPathsFixture, ConfigVariables: vars(createDrop, kubelet),
				ExpectError: lost,
			},
			{
				// The create stayed, tainted, with the server it found: the
				// replacement puts it back, then records it again.
				PreConfig:       hostKeptKhas,
				ConfigDirectory: kubeconfigPathsFixture, ConfigVariables: vars("true", kubelet),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(kubeconfigAddr, plancheck.ResourceActionDestroyBeforeCreate),
					priorStateHas{addr: kubeconfigAddr, tainted: true, paths: []string{kubelet}, previous: originals(kubelet)}}},
				ConfigStateChecks: []statecheck.StateCheck{recorded(originals(kubelet))},
				Check:             kubeconfigServersAre(khas, kubelet),
			},
			{
				// An update that adds admin.conf loses its connection too.
				PreConfig:       armUpdate,
				ConfigDirectory: kubeconfigPathsFixture, ConfigVariables: vars(updateDrop, kubelet, admin),
				ExpectError: lost,
			},
			{
				// The state kept admin.conf with the server it had.
				ConfigDirectory: kubeconfigPathsFixture, ConfigVariables: vars("true", kubelet, admin),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(kubeconfigAddr, plancheck.ResourceActionUpdate),
					priorStateHas{addr: kubeconfigAddr, paths: []string{kubelet, admin}, previous: originals(kubelet, admin)}}},
				ConfigStateChecks: []statecheck.StateCheck{recorded(originals(kubelet, admin))},
				Check:             kubeconfigServersAre(khas, kubelet, admin),
			},
		},
	}))
}

// priorStateHas checks the state a plan starts from: the resource at addr,
// tainted or not, with these paths and previous_servers.
type priorStateHas struct {
	addr     string
	tainted  bool
	paths    []string
	previous map[string]map[string]string
}

func (c priorStateHas) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	if prior := req.Plan.PriorState; prior != nil && prior.Values != nil && prior.Values.RootModule != nil {
		for _, r := range prior.Values.RootModule.Resources {
			if r.Address != c.addr {
				continue
			}
			var got struct {
				Paths    []string                     `json:"paths"`
				Previous map[string]map[string]string `json:"previous_servers"`
			}
			raw, err := json.Marshal(r.AttributeValues)
			if err == nil {
				err = json.Unmarshal(raw, &got)
			}
			if err != nil || r.Tainted != c.tainted || !slices.Equal(got.Paths, c.paths) || !reflect.DeepEqual(got.Previous, c.previous) {
				resp.Error = fmt.Errorf("%s before the plan: tainted %v, paths %v, previous_servers %v (%v); want tainted %v, paths %v, "+
					"previous_servers %v", c.addr, r.Tainted, got.Paths, got.Previous, err, c.tainted, c.paths, c.previous)
			}
			return
		}
	}
	resp.Error = fmt.Errorf("%s is not in the state the plan starts from", c.addr)
}

// TestKubeconfigServer_adoptedServerIsPutBack: a cluster that already has
// `server` when its path is first recorded (kubeadm's own server, where the
// first mode is direct) is recorded with it, so destroy puts it back after
// later applies moved the node elsewhere; what was recorded before stays.
func TestKubeconfigServer_adoptedServerIsPutBack(t *testing.T) {
	t.Parallel()
	kubeadms, later, original := "https://127.0.0.3:6443", "https://localhost:7445", "https://127.0.0.2:6443"
	m := kubeconfigServerModel{Paths: []types.String{types.StringValue("/etc/kubernetes/kubelet.conf"),
		types.StringValue("/etc/kubernetes/admin.conf")}, Server: types.StringValue(kubeadms)}
	m.found = map[string]map[string]kubeconfig.Endpoint{
		"/etc/kubernetes/kubelet.conf": {"kubernetes": {Server: kubeadms}, "other": {Server: original}},
		"/etc/kubernetes/admin.conf":   {"kubernetes": {Server: kubeadms}},
	}
	var diags diag.Diagnostics
	m.PreviousServers = previousServersValue(map[string]map[string]string{"/etc/kubernetes/admin.conf": {"kubernetes": original}}, &diags)
	config := m
	out, d := m.Render(&config)
	diags.Append(d...)
	if diags.HasError() {
		t.Fatal(diags)
	}
	got := recordedValues(m.PreviousServers, "previous_servers", &diags)
	want := map[string]map[string]string{
		"/etc/kubernetes/kubelet.conf": {"kubernetes": kubeadms, "other": original},
		"/etc/kubernetes/admin.conf":   {"kubernetes": original},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("previous_servers = %v, want %v", got, want)
	}
	// Destroy, after a later apply moved the node to another server, puts
	// kubeadm's back.
	undo := out.Files[0].(*remote.EditedFile).Edit.(*kubeconfigEdit)
	moved := []byte(nodeKubeconfig(later, "ca", []byte("cert"), []byte("key")))
	back, err := undo.Undo(moved)
	if err != nil {
		t.Fatal(err)
	}
	if servers, err := kubeconfig.Servers(back, ""); err != nil || servers["kubernetes"] != kubeadms {
		t.Errorf("destroy left %v (%v), want kubeadm's %s back:\n%s", servers, err, kubeadms, back)
	}
}

// TestAccKubeconfigServer_readableByOthersWarns: a managed kubeconfig
// made readable by other users (chmod 644) holds a client key: the next
// plan warns with the path, the mode and the fix, and changes nothing.
func TestAccKubeconfigServer_readableByOthersWarns(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	pki := testhost.TestPKI(t)
	kubelet := filepath.Join(t.TempDir(), "kubelet.conf")
	cert, key := nodeCredentials(t, pki)
	if err := os.WriteFile(kubelet, []byte(nodeKubeconfig("https://127.0.0.2:6443", pki.CAPEM, cert, key)), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := kubeconfigPathsVars(s, "https://127.0.0.3:6443", "true", kubelet)
	vars["verify"] = config.BoolVariable(false) // nothing serves either address
	recorder := &planRecorder{}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		Steps: []resource.TestStep{
			{ConfigDirectory: kubeconfigPathsFixture, ConfigVariables: vars},
			{
				PreConfig: func() {
					if err := os.Chmod(kubelet, 0o644); err != nil {
						t.Fatal(err)
					}
					recorder.reset()
				},
				ConfigDirectory: kubeconfigPathsFixture, ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
					expectWarnings(recorder, map[string][]string{"": {"Credentials Readable by Other Users", kubelet, "mode 0644", "chmod 600 " + kubelet}}),
				}},
			},
		},
	}))
}

// TestAccKubeconfigServer_destroyKeepsAServerThatWorks: destroy puts back
// each server recorded before kha only where it still works. admin.conf's
// was an endpoint that no longer answers (a port a handover retired): it
// keeps kha's server, which works, and the destroy completes. The kubelet
// restarts once, after the last kubeconfig put back, so it starts on its
// recorded server.
func TestAccKubeconfigServer_destroyKeepsAServerThatWorks(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	pki := testhost.TestPKI(t)
	serverA := "https://" + testhost.StartAPIServer(t, "a", "127.0.0.2")
	serverB := "https://" + testhost.StartAPIServer(t, "b", "127.0.0.3")
	retired := fmt.Sprintf("https://127.0.0.1:%d", testhost.FreePort(t, "127.0.0.1")) // nothing listens there
	dir := t.TempDir()
	kubelet, admin, scheduler := filepath.Join(dir, "kubelet.conf"), filepath.Join(dir, "admin.conf"), filepath.Join(dir, "scheduler.conf")
	restarts := filepath.Join(dir, "restarts")
	cert, key := nodeCredentials(t, pki)
	for path, server := range map[string]string{kubelet: serverA, admin: retired, scheduler: serverA} {
		if err := os.WriteFile(path, []byte(nodeKubeconfig(server, pki.CAPEM, cert, key)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The restart records the server kubelet.conf has when it runs.
	restart := fmt.Sprintf("grep -h 'server:' %s >> %s", kubelet, restarts)
	restartsLogged := func() []string {
		b, _ := os.ReadFile(restarts)
		return strings.Fields(strings.ReplaceAll(string(b), "server:", ""))
	}
	var afterApply int
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: resource.ComposeTestCheckFunc(kubeconfigServersAre(serverA, kubelet, scheduler), kubeconfigServersAre(serverB, admin),
			func(*terraform.State) error {
				if got := restartsLogged()[afterApply:]; !slices.Equal(got, []string{serverA}) {
					return fmt.Errorf("destroy's restarts saw kubelet.conf on %v, want one restart on %s", got, serverA)
				}
				return nil
			}),
		Steps: []resource.TestStep{{
			ConfigDirectory: kubeconfigPathsFixture, ConfigVariables: kubeconfigPathsVars(s, serverB, restart, kubelet, admin, scheduler),
			ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(kubeconfigAddr, tfjsonpath.New("previous_servers").AtMapKey(admin),
				knownvalue.MapExact(map[string]knownvalue.Check{"kubernetes": knownvalue.StringExact(retired)}))},
			Check: resource.ComposeTestCheckFunc(kubeconfigServersAre(serverB, kubelet, admin, scheduler), func(*terraform.State) error {
				afterApply = len(restartsLogged())
				return nil
			}),
		}},
	}))
}

// TestKubeconfigServer_keptOnDestroyWarns: a kubeconfig whose recorded
// server would not work is left out of destroy's changes, with a warning
// that names the resource, the file, both servers, the reason and the
// ways out; the restart moves to the kubeconfig that is put back.
func TestKubeconfigServer_keptOnDestroyWarns(t *testing.T) {
	t.Parallel()
	kubelet, outside := "/etc/kubernetes/kubelet.conf", "/etc/kubernetes/admin-vip.conf"
	current, retired, original := "https://10.0.0.100:9443", "https://10.0.0.100:8443", "https://10.0.0.11:6443"
	m := kubeconfigServerModel{Paths: []types.String{types.StringValue(kubelet), types.StringValue(outside)},
		Server: types.StringValue(current), RestartCommand: types.StringValue("systemctl restart kubelet")}
	m.ID = types.StringValue("10.0.0.11:22:" + kubelet)
	var diags diag.Diagnostics
	m.PreviousServers = previousServersValue(map[string]map[string]string{kubelet: {"kubernetes": original}, outside: {"kubernetes": retired}}, &diags)
	m.found = map[string]map[string]kubeconfig.Endpoint{kubelet: {"kubernetes": {Server: current}}, outside: {"kubernetes": {Server: current}}}
	m.keptOnDestroy = map[string]error{outside: errors.New("dial tcp 10.0.0.100:8443: connection refused")}
	out, d := m.Render(nil)
	diags.Append(d...)
	if diags.HasError() || len(diags.Warnings()) != 1 {
		t.Fatalf("want one warning, got %v", diags)
	}
	detail := diags.Warnings()[0].Detail()
	for _, want := range []string{`kha_kubeconfig_server "10.0.0.11:22:/etc/kubernetes/kubelet.conf"`, outside + " keeps server " + current,
		"putting back server " + retired, "connection refused", "set `server` to an endpoint that stays", "verify = false"} {
		if !strings.Contains(detail, want) {
			t.Errorf("the warning lacks %q:\n%s", want, detail)
		}
	}
	if len(out.Files) != 1 {
		t.Fatalf("destroy changes %d files, want kubelet.conf alone", len(out.Files))
	}
	if f := out.Files[0].(*remote.EditedFile); f.Path != kubelet || f.ReloadCommand != "systemctl restart kubelet" {
		t.Errorf("destroy changes %s with restart %q, want %s with the restart", f.Path, f.ReloadCommand, kubelet)
	}
}

// TestAccKubeconfigServer_tlsServerNameThroughSNIRouter: a kubelet on a
// node-local load balancer (https://localhost:<port>) whose hop goes to a
// load balancer routing by SNI, here the real HAProxy with req.ssl_sni.
// Without tls_server_name the kubeconfig would send SNI localhost, which
// the router drops: the check refuses it and the file stays. With it the
// kubeconfig gets tls-server-name and works; unset again, the name it had
// before (none) comes back, byte for byte. A client reading the file
// every 20 ms through all of it, until the test breaks the file itself,
// never fails.
func TestAccKubeconfigServer_tlsServerNameThroughSNIRouter(t *testing.T) {
	testhost.KubeDir(t)
	member := &testhost.EtcdMember{Name: "etcd1", IP: "127.0.0.1", ClientPort: testhost.FreePort(t, "127.0.0.1"), PeerPort: testhost.FreePort(t, "127.0.0.1")}
	kas := testhost.StartKubeAPIServer(t, testhost.StartEtcd(t, []*testhost.EtcdMember{member}, []string{"127.0.0.1"}), "127.0.0.1", false)
	// "kubernetes" is one of the test apiserver certificate's DNS names.
	router, local := fmt.Sprintf("127.0.0.1:%d", testhost.FreePort(t, "127.0.0.1")), testhost.FreePort(t, "127.0.0.1")
	startTCPHAProxy(t, "frontend sni_router\n  bind "+router+"\n  tcp-request inspect-delay 5s\n"+
		"  tcp-request content accept if { req.ssl_hello_type 1 }\n  use_backend apiserver if { req.ssl_sni -i kubernetes }\n"+
		"backend apiserver\n  server kas "+kas.Address+"\n"+
		fmt.Sprintf("frontend node_local\n  bind 127.0.0.1:%d\n  default_backend fallback\nbackend fallback\n  server router %s\n", local, router),
		router)
	direct, viaLocal := "https://"+kas.Address, fmt.Sprintf("https://localhost:%d", local)

	s := testhost.Start(t, testhost.Options{})
	t.Setenv("TF_ACC_TEMP_DIR", t.TempDir())
	target := filepath.Join(t.TempDir(), "kubelet.conf")
	pki := testhost.TestPKI(t)
	certFile, keyFile := pki.WriteClientFiles(t, t.TempDir(), "system:node:w1")
	cert, _ := os.ReadFile(certFile)
	key, _ := os.ReadFile(keyFile)
	kubeadmWrote := nodeKubeconfig(direct, pki.CAPEM, cert, key)
	if err := os.WriteFile(target, []byte(kubeadmWrote), 0o600); err != nil {
		t.Fatal(err)
	}
	// vars sets tls_server_name when given one.
	vars := func(server string, tlsServerName ...string) config.Variables {
		v := config.Variables{"host": config.StringVariable(s.Host), "port": config.IntegerVariable(s.Port),
			"host_key": config.StringVariable(s.RSAHostKey.Public()), "private_key": config.StringVariable(s.ClientKey.PEM),
			"path": config.StringVariable(target), "server": config.StringVariable(server)}
		for _, name := range tlsServerName {
			v["tls_server_name"] = config.StringVariable(name)
		}
		return v
	}
	has := func(want kubeconfig.Endpoint) resource.TestCheckFunc {
		return func(*terraform.State) error {
			b, _ := os.ReadFile(target)
			if got, err := kubeconfig.Endpoints(b, ""); err != nil || got["kubernetes"] != want {
				return fmt.Errorf("the kubeconfig has %v (%v), want %v", got, err, want)
			}
			return nil
		}
	}
	asClient := kubeconfigClient(t, target)
	var requests int
	var failed []error
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             has(kubeconfig.Endpoint{Server: direct}),
		Steps: []resource.TestStep{
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(viaLocal, "10.0.0.100"),
				ExpectError: regexp.MustCompile(`(?s)tls_server_name.*must\s+be\s+a\s+DNS\s+name`),
			},
			{
				// The SNI router drops SNI localhost: the check fails, the file stays.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(viaLocal),
				ExpectError: regexp.MustCompile(`(?s)check\s+of.*kubelet\.conf\s+failed.*not\s+put\s+in\s+place.*closed\s+before\s+TLS\s+completed.*sends\s+SNI\s+"localhost"`),
			},
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(viaLocal, "kubernetes"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(kubeconfigAddr, tfjsonpath.New("previous_tls_server_names"))}},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(kubeconfigAddr, tfjsonpath.New("previous_tls_server_names"),
					knownvalue.MapExact(map[string]knownvalue.Check{target: knownvalue.MapExact(map[string]knownvalue.Check{"kubernetes": knownvalue.StringExact("")})}))},
				Check: has(kubeconfig.Endpoint{Server: viaLocal, TLSServerName: "kubernetes"}),
			},
			{
				// Back to the apiserver without a name: the file kubeadm wrote.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(direct),
				Check: func(*terraform.State) error {
					if got, _ := os.ReadFile(target); string(got) != kubeadmWrote {
						return fmt.Errorf("the kubeconfig is not what kubeadm wrote:\n%s", got)
					}
					return nil
				},
			},
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(viaLocal, "kubernetes"),
				Check: has(kubeconfig.Endpoint{Server: viaLocal, TLSServerName: "kubernetes"}),
			},
			{
				// Someone removes the name by hand (the client stops first: the
				// file they write cannot work): drift, put right.
				PreConfig: func() {
					requests, failed = asClient()
					b, _ := os.ReadFile(target)
					out, err := kubeconfig.SetEndpoints(b, map[string]kubeconfig.Endpoint{"kubernetes": {Server: viaLocal}})
					if err != nil {
						t.Fatal(err)
					}
					os.WriteFile(target, out, 0o600)
				},
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(viaLocal, "kubernetes"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(kubeconfigAddr, plancheck.ResourceActionUpdate)}},
				Check:            has(kubeconfig.Endpoint{Server: viaLocal, TLSServerName: "kubernetes"}),
			},
		},
	}))
	if failed != nil || requests == 0 {
		t.Errorf("a client of the kubeconfig: %d requests, failures: %v", requests, failed)
	} else {
		t.Logf("a client of the kubeconfig: %d requests, 0 failed", requests)
	}
}

// kubeconfigClient asks /readyz every 20 ms with the kubeconfig at path as
// it is at that moment, until the returned function is called; that
// returns how many requests it made and the failures.
func kubeconfigClient(t *testing.T, path string) func() (int, []error) {
	stop, done := make(chan struct{}), make(chan struct{})
	var requests int
	var failed []error
	read := func(_ context.Context, p string) ([]byte, error) { return os.ReadFile(p) }
	dial := func(ctx context.Context, address string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", address)
	}
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			content, err := os.ReadFile(path)
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				err = kubeconfig.Probe(ctx, content, "", read, dial)
				cancel()
			}
			requests++
			if err != nil {
				failed = append(failed, err)
			}
		}
	}()
	var once sync.Once
	finish := func() (int, []error) {
		once.Do(func() { close(stop); <-done })
		return requests, failed
	}
	t.Cleanup(func() { finish() })
	return finish
}

// TestKubeconfigEdit_hostTextStaysOnItsLine: a server or cluster name the
// host's kubeconfig spells with a newline is quoted in the drift it shows,
// so that it cannot start a line of its own in a diagnostic; plain ones
// read as before, so a host in sync keeps its digest.
func TestKubeconfigEdit_hostTextStaysOnItsLine(t *testing.T) {
	t.Parallel()
	e := &kubeconfigEdit{server: "https://127.0.0.1:6443"}
	for content, want := range map[string]string{
		"clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:6443\n":                                                                    "server https://127.0.0.1:6443",
		"clusters:\n- name: k\n  cluster:\n    server: \"https://10.0.0.11:6443\\nError: forged\"\n":                                                `server "https://10.0.0.11:6443\nError: forged"`,
		"clusters:\n- name: k\n  cluster:\n    server: https://10.0.0.11:6443\n- name: \"a\\nb\"\n  cluster:\n    server: https://10.0.0.12:6443\n": `servers "a\nb"=https://10.0.0.12:6443, k=https://10.0.0.11:6443`,
	} {
		got, err := e.State([]byte(content))
		if err != nil || got != want {
			t.Errorf("State(%q) = %q, %v; want %q", content, got, err, want)
		}
	}
	if e.Want() != "server https://127.0.0.1:6443" {
		t.Errorf("Want() = %q", e.Want())
	}
}
