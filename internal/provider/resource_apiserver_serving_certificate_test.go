package provider

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/certissue"
	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// certNode is a control-plane node as kubeadm leaves it: the cluster CA's
// pair and the apiserver's serving pair in one directory, a real
// kube-apiserver serving that pair, and an sshd to reach the node.
type certNode struct {
	ip       string
	pki      string
	kas      *testhost.KubeAPIServer
	ssh      *testhost.Server
	original []byte // the serving certificate before kha
}

// startCertNodes starts a node on each loopback address, sharing one etcd
// and accepting clientKey.
func startCertNodes(t *testing.T, clientKey testhost.Key, ips ...string) []*certNode {
	testhost.KubeDir(t)
	member := &testhost.EtcdMember{Name: "etcd1", IP: "127.0.0.1", ClientPort: testhost.FreePort(t, "127.0.0.1"), PeerPort: testhost.FreePort(t, "127.0.0.1")}
	etcd := testhost.StartEtcd(t, []*testhost.EtcdMember{member}, []string{"127.0.0.1"})
	pki := testhost.TestPKI(t)
	var nodes []*certNode
	for _, ip := range ips {
		n := &certNode{ip: ip, pki: t.TempDir()}
		pki.WriteCAPair(t, n.pki)
		cert, key := pki.WriteServerFiles(t, n.pki)
		for from, to := range map[string]string{cert: "apiserver.crt", key: "apiserver.key"} {
			if err := os.Rename(from, filepath.Join(n.pki, to)); err != nil {
				t.Fatal(err)
			}
		}
		n.original = n.read(t, "apiserver.crt")
		n.kas = testhost.StartKubeAPIServerServing(t, etcd, ip, filepath.Join(n.pki, "apiserver.crt"), filepath.Join(n.pki, "apiserver.key"))
		n.ssh = testhost.Start(t, testhost.Options{AuthorizedKeys: []string{clientKey.Public()}})
		nodes = append(nodes, n)
	}
	return nodes
}

func (n *certNode) read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.pki, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// served is the certificate address presents.
func served(address string) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", address, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// waitServed waits up to a minute until the apiserver serves the
// certificate that pemText holds.
func (n *certNode) waitServed(pemText []byte) error {
	want, err := certissue.ParsePEM(pemText)
	if err != nil {
		return err
	}
	var got *x509.Certificate
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got, err = served(n.kas.Address); err == nil && bytes.Equal(got.Raw, want.Raw) {
			return nil
		}
	}
	if got != nil {
		err = fmt.Errorf("serial %x", got.SerialNumber)
	}
	return fmt.Errorf("%s does not serve the certificate with serial %x (it serves: %v)", n.kas.Address, want.SerialNumber, err)
}

// startRoundRobin runs HAProxy on address in TCP mode, round robin over
// the backends: a load balancer in front of the apiservers.
func startRoundRobin(t *testing.T, address string, backends []string) {
	cfg := "frontend apiserver\n  bind " + address + "\n  default_backend apiservers\nbackend apiservers\n  balance roundrobin\n"
	for i, b := range backends {
		cfg += fmt.Sprintf("  server cp%d %s\n", i+1, b)
	}
	startTCPHAProxy(t, cfg, address)
}

// startTCPHAProxy runs HAProxy with these proxies in TCP mode until the
// test ends, once it listens on address.
func startTCPHAProxy(t *testing.T, proxies, address string) {
	haproxy, err := exec.LookPath("haproxy")
	testhost.Require(t, err == nil, "haproxy is not installed")
	cfg := "defaults\n  mode tcp\n  timeout connect 2s\n  timeout client 30s\n  timeout server 30s\n" + proxies
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(haproxy, "-db", "-f", file)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", address); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy does not listen on %s", address)
		}
	}
}

// unconfirmedWindows watches the nodes' certificate directories for the
// time between a swap and its verdict (the private directory holds the
// previous pair) and records the most nodes ever in it at once, and the
// order in which nodes entered it.
type unconfirmedWindows struct {
	mu    sync.Mutex
	most  int
	order []string
	stop  chan struct{}
	done  chan struct{}
}

func watchUnconfirmed(nodes map[string]*certNode) *unconfirmedWindows {
	w := &unconfirmedWindows{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		inside := map[string]bool{}
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			now := 0
			for name, n := range nodes {
				found, _ := filepath.Glob(filepath.Join(n.pki, ".apiserver.crt.kha-*", "previous.crt"))
				in := len(found) > 0
				if in {
					now++
				}
				w.mu.Lock()
				if in && !inside[name] {
					w.order = append(w.order, name)
				}
				w.mu.Unlock()
				inside[name] = in
			}
			w.mu.Lock()
			w.most = max(w.most, now)
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *unconfirmedWindows) end() (most int, order []string) {
	close(w.stop)
	<-w.done
	return w.most, w.order
}

// keysStayOff fails when a line of a node's key is in the state.
func keysStayOff(work string, nodes []*certNode) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		raw, _ := json.Marshal(s)
		blobs := [][]byte{raw}
		_ = filepath.Walk(work, func(p string, info os.FileInfo, err error) error {
			if err == nil && strings.HasSuffix(p, ".tfstate") {
				b, _ := os.ReadFile(p)
				blobs = append(blobs, b)
			}
			return nil
		})
		for _, n := range nodes {
			key, err := os.ReadFile(filepath.Join(n.pki, "apiserver.key"))
			if err != nil {
				return err
			}
			line := strings.Split(string(key), "\n")[1]
			for _, b := range blobs {
				if bytes.Contains(b, []byte(line)) {
					return fmt.Errorf("a line of %s's key is in the state", n.ip)
				}
			}
		}
		return nil
	}
}

// TestAccAPIServerServingCertificate_nodeByNode re-issues the serving
// certificate of three real kube-apiservers for a new load balancer name
// and address, under Terraform's default parallelism: one node at a time,
// each served and verified through a round-robin HAProxy before the next
// starts; then drift, import and a destroy that leaves the certificates.
func TestAccAPIServerServingCertificate_nodeByNode(t *testing.T) {
	clientKey := testhost.NewKey(t)
	list := startCertNodes(t, clientKey, "127.0.0.1", "127.0.0.2", "127.0.0.3")
	nodes := map[string]*certNode{"cp1": list[0], "cp2": list[1], "cp3": list[2]}
	lb := net.JoinHostPort("127.0.0.5", strconv.Itoa(testhost.FreePort(t, "127.0.0.5")))
	var backends []string
	for _, n := range list {
		backends = append(backends, n.kas.Address)
	}
	startRoundRobin(t, lb, backends)
	work := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", work)

	var nodeVars []config.Variable
	knownHosts := ""
	for _, n := range list {
		knownHosts += n.ssh.KnownHosts()
		nodeVars = append(nodeVars, config.ObjectVariable(map[string]config.Variable{"port": config.IntegerVariable(n.ssh.Port),
			"pki":       config.StringVariable(n.pki),
			"apiserver": config.StringVariable(n.kas.Address)}))
	}
	sans := config.ObjectVariable(map[string]config.Variable{
		"dns_names":    config.ListVariable(config.StringVariable("kubernetes"), config.StringVariable("localhost"), config.StringVariable("api.kha.test")),
		"ip_addresses": config.ListVariable(config.StringVariable("127.0.0.1"), config.StringVariable("127.0.0.2"), config.StringVariable("127.0.0.3"), config.StringVariable("127.0.0.5")),
	})
	vars := config.Variables{"private_key": config.StringVariable(clientKey.PEM), "nodes": config.ListVariable(nodeVars...),
		"known_hosts": config.StringVariable(knownHosts),
		"sans":        sans, "load_balancer": config.StringVariable("https://" + lb)}
	addr := func(name string) string {
		return fmt.Sprintf("kha_apiserver_serving_certificate.cp[%d]", slices.Index([]string{"cp1", "cp2", "cp3"}, name))
	}

	// reissued checks every node: its apiserver serves a certificate with
	// the new SANs and the ones the live one had (::1), issued as the
	// live one was (ECDSA P-256), its key still 0600, the previous pair
	// kept next to it.
	reissued := func(*terraform.State) error {
		for name, n := range nodes {
			c, err := certissue.ParsePEM(n.read(t, "apiserver.crt"))
			if err != nil {
				return err
			}
			if err := n.waitServed(n.read(t, "apiserver.crt")); err != nil {
				return err
			}
			sans := certissue.SANsOf(c)
			if !slices.Contains(sans.DNSNames, "api.kha.test") || !slices.Contains(sans.IPAddresses, "127.0.0.5") || !slices.Contains(sans.IPAddresses, "::1") {
				return fmt.Errorf("%s's certificate has %v", name, sans.Strings())
			}
			if a := certissue.AlgorithmOf(c); a != certissue.ECDSAP256 || c.Subject.CommonName != "kube-apiserver" {
				return fmt.Errorf("%s's certificate is %s for %q, not as the live one", name, a, c.Subject.CommonName)
			}
			if err := certissue.VerifiesAgainst(c, mustParse(t, testhost.TestPKI(t).CAPEM)); err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
			if info, err := os.Stat(filepath.Join(n.pki, "apiserver.key")); err != nil || info.Mode().Perm() != 0o600 {
				return fmt.Errorf("%s's key: %v %v", name, info.Mode(), err)
			}
			if kept, err := os.ReadFile(filepath.Join(n.pki, ".apiserver.crt.kha.previous", "apiserver.crt")); err != nil || len(kept) == 0 {
				return fmt.Errorf("%s: the previous certificate was not kept: %v", name, err)
			}
			// kubeadm's certificate stays, whatever kha issued since: in
			// .original once kha has replaced its own.
			before, err := os.ReadFile(filepath.Join(n.pki, ".apiserver.crt.kha.original", "apiserver.crt"))
			if errors.Is(err, os.ErrNotExist) {
				before, err = os.ReadFile(filepath.Join(n.pki, ".apiserver.crt.kha.previous", "apiserver.crt"))
			}
			if err != nil || !bytes.Equal(before, n.original) {
				return fmt.Errorf("%s: the certificate found before kha was not kept: %v", name, err)
			}
		}
		return nil
	}
	var windows *unconfirmedWindows
	oneAtATime := func(*terraform.State) error {
		most, order := windows.end()
		t.Logf("nodes between swap and verdict, in order: %v; at most %d at once", order, most)
		if most > 1 {
			return fmt.Errorf("%d nodes were between swap and verdict at once (order %v)", most, order)
		}
		if len(order) == 0 {
			return fmt.Errorf("no node was seen between swap and verdict")
		}
		return nil
	}
	renewing := withVars(vars, "renew_before", "50h", "validity", "96h")
	files := map[string]string{}
	for name, n := range nodes {
		files[addr(name)] = filepath.Join(n.pki, "apiserver.crt")
	}
	promise := promiseOn(files)
	// What removing cp3 does to the other nodes' SANs: its address goes,
	// which each node's certificate keeps (keep_live_sans).
	varsWithoutCP3 := maps.Clone(vars)
	varsWithoutCP3["sans"] = config.ObjectVariable(map[string]config.Variable{
		"dns_names":    config.ListVariable(config.StringVariable("kubernetes"), config.StringVariable("localhost"), config.StringVariable("api.kha.test")),
		"ip_addresses": config.ListVariable(config.StringVariable("127.0.0.1"), config.StringVariable("127.0.0.2"), config.StringVariable("127.0.0.5")),
	})
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		// Destroy leaves the certificates as they are.
		CheckDestroy: func(*terraform.State) error {
			for name, n := range nodes {
				if c, err := certissue.ParsePEM(n.read(t, "apiserver.crt")); err != nil || !slices.Contains(certissue.SANsOf(c).DNSNames, "api.kha.test") {
					return fmt.Errorf("%s's certificate after destroy: %v", name, err)
				}
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				PreConfig:       func() { windows = watchUnconfirmed(nodes) },
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{promise.Planned()}},
				Check:            resource.ComposeTestCheckFunc(promise.Kept(), oneAtATime, reissued, keysStayOff(work, list)),
			},
			{
				// Someone puts the old certificate back on cp2: drift,
				// which the apply repairs.
				PreConfig:       func() { putPreviousBack(t, nodes["cp2"]) },
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr("cp2"), plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction(addr("cp1"), plancheck.ResourceActionNoop), promise.Planned()}},
				Check: resource.ComposeTestCheckFunc(promise.Kept(), reissued),
			},
			{
				// cp3 leaves the cluster: its address leaves sans, which
				// every certificate keeps. The plan changes sans alone
				// (no digest, no re-issue), and the apply issues nothing.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: varsWithoutCP3,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr("cp1"), plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr("cp1"), tfjsonpath.New("not_after"), knownvalue.StringRegexp(regexp.MustCompile(`^\d{4}-`))),
					plancheck.ExpectKnownValue(addr("cp1"), tfjsonpath.New("live_sans").AtMapKey("ip_addresses"), knownvalue.ListPartial(
						map[int]knownvalue.Check{2: knownvalue.StringExact("127.0.0.3")})),
					promise.Planned()}},
				Check: promise.Kept(),
			},
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: withVars(vars, "renew_before", "72h", "validity", "72h"),
				ExpectError: regexp.MustCompile(`Renewal Window Not Shorter Than Validity`),
			},
			{
				// The certificates kha issued last two days, as the test
				// CA's it replaced: within a renewal window of 50 hours,
				// every node renews, one at a time, for four days.
				// A window tightened over the certificates' ends: the plan
				// says the re-issues (not_after known after apply).
				PreConfig:       func() { windows = watchUnconfirmed(nodes) },
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: renewing,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(addr("cp1"), tfjsonpath.New("not_after")),
					plancheck.ExpectUnknownValue(addr("cp2"), tfjsonpath.New("not_after")),
					plancheck.ExpectUnknownValue(addr("cp3"), tfjsonpath.New("not_after")), promise.Planned()}},
				Check: resource.ComposeTestCheckFunc(promise.Kept(), oneAtATime, reissued, func(*terraform.State) error {
					for name, n := range nodes {
						c, err := certissue.ParsePEM(n.read(t, "apiserver.crt"))
						if err != nil || time.Until(c.NotAfter) < 90*time.Hour {
							return fmt.Errorf("%s's certificate ends on %v (%v), not in four days", name, c.NotAfter, err)
						}
					}
					return nil
				}),
			},
			{
				// Renewed past the window: nothing more to do; not_after is
				// each node's certificate's end.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: renewing,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            notAfterIsTheNodes(t, nodes, addr),
			},
			{
				// cp2 gets its two-day certificate back while the window is
				// loosened below its end: the plan re-issues nothing, as the
				// apply does not (the state's window would have).
				PreConfig:       func() { putPreviousBack(t, nodes["cp2"]) },
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: withVars(vars, "renew_before", "40h", "validity", "96h"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(addr("cp2"), tfjsonpath.New("not_after"), knownvalue.StringRegexp(regexp.MustCompile(`^\d{4}-`))),
					promise.Planned()}},
				Check: resource.ComposeTestCheckFunc(promise.Kept(), notAfterIsTheNodes(t, nodes, addr), func(*terraform.State) error {
					if c, err := certissue.ParsePEM(nodes["cp2"].read(t, "apiserver.crt")); err != nil || time.Until(c.NotAfter) > 49*time.Hour {
						return fmt.Errorf("cp2's two-day certificate was re-issued: it ends on %v (%v)", c.NotAfter, err)
					}
					return nil
				}),
			},
			{
				// The window tightened back over cp2's end: the refresh reads
				// it, and the plan renews it alone.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: renewing,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(addr("cp2"), tfjsonpath.New("not_after")),
					plancheck.ExpectKnownValue(addr("cp1"), tfjsonpath.New("not_after"), knownvalue.StringRegexp(regexp.MustCompile(`^\d{4}-`))),
					promise.Planned()}},
				Check: resource.ComposeTestCheckFunc(promise.Kept(), func(*terraform.State) error {
					c, err := certissue.ParsePEM(nodes["cp2"].read(t, "apiserver.crt"))
					if err != nil || time.Until(c.NotAfter) < 90*time.Hour {
						return fmt.Errorf("cp2's certificate ends on %v (%v), not in four days", c.NotAfter, err)
					}
					return nil
				}),
			},
			{
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars,
				ResourceName: addr("cp1"), ImportState: true,
				ImportStateId: fmt.Sprintf("127.0.0.1:%d:%s/apiserver.crt", nodes["cp1"].ssh.Port, nodes["cp1"].pki),
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if len(states) != 1 || states[0].Attributes["sans.dns_names.#"] == "" ||
						!slices.Contains(listOf(states[0].Attributes, "sans.dns_names"), "api.kha.test") {
						return fmt.Errorf("imported: %v", states)
					}
					return nil
				},
			},
		},
	}))
}

// putPreviousBack puts the pair kha kept as the previous one back in place
// on n, as someone rolling back by hand, and waits until it is served.
// notAfterIsTheNodes checks that each node's not_after in the state is
// the end of the certificate on the node.
func notAfterIsTheNodes(t *testing.T, nodes map[string]*certNode, addr func(string) string) resource.TestCheckFunc {
	var checks []resource.TestCheckFunc
	for name, n := range nodes {
		shimmed := strings.NewReplacer("[", ".", "]", "").Replace(addr(name)) // cp[0] is cp.0 in the checks' state
		checks = append(checks, resource.TestCheckResourceAttrWith(shimmed, "not_after", func(v string) error {
			c, err := certissue.ParsePEM(n.read(t, "apiserver.crt"))
			if err != nil || v != c.NotAfter.UTC().Format(time.RFC3339) {
				return fmt.Errorf("%s: not_after %q, the node's certificate ends %v (%v)", name, v, c.NotAfter, err)
			}
			return nil
		}))
	}
	return resource.ComposeTestCheckFunc(checks...)
}

func putPreviousBack(t *testing.T, n *certNode) {
	var cert []byte
	for _, f := range []string{"apiserver.crt", "apiserver.key"} {
		b, err := os.ReadFile(filepath.Join(n.pki, ".apiserver.crt.kha.previous", f))
		if err == nil {
			err = os.WriteFile(filepath.Join(n.pki, f+".tmp"), b, 0o600)
		}
		if err == nil {
			err = os.Rename(filepath.Join(n.pki, f+".tmp"), filepath.Join(n.pki, f))
		}
		if err != nil {
			t.Fatal(err)
		}
		if cert == nil {
			cert = b
		}
	}
	if err := n.waitServed(cert); err != nil {
		t.Fatal(err)
	}
}

// withVars is vars with more string variables, name then value.
func withVars(vars config.Variables, more ...string) config.Variables {
	out := maps.Clone(vars)
	for i := 0; i+1 < len(more); i += 2 {
		out[more[i]] = config.StringVariable(more[i+1])
	}
	return out
}

// listOf is a list attribute of a flat-mapped state.
func listOf(attrs map[string]string, name string) []string {
	n, _ := strconv.Atoi(attrs[name+".#"])
	out := make([]string, n)
	for i := range n {
		out[i] = attrs[fmt.Sprintf("%s.%d", name, i)]
	}
	return out
}

func mustParse(t *testing.T, pemText string) *x509.Certificate {
	t.Helper()
	c, err := certissue.ParsePEM([]byte(pemText))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAccAPIServerServingCertificate_rollsBack fails a re-issue in each
// way a node can, against a real kube-apiserver: each leaves the previous
// certificate on disk and served. A wrong CA key and an endpoint the new
// certificate does not verify for are refused or rolled back by kha; an
// apiserver that does not take the certificate up is rolled back after
// serving_timeout; a connection dropped after the swap makes the node put
// the previous pair back at once, and one that hangs (a partition neither
// end notices) when the node's own deadline passes. Then the re-issue
// succeeds.
func TestAccAPIServerServingCertificate_rollsBack(t *testing.T) {
	t.Parallel()
	clientKey := testhost.NewKey(t)
	n := startCertNodes(t, clientKey, "127.0.0.1")[0]
	_, otherKey := testhost.WriteOtherCAPair(t, t.TempDir())
	// A copy of the pki that the apiserver does not read.
	unread := t.TempDir()
	for _, f := range []string{"ca.crt", "ca.key", "apiserver.crt", "apiserver.key"} {
		if err := os.WriteFile(filepath.Join(unread, f), n.read(t, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// An endpoint that accepts connections and never answers.
	hung, err := net.Listen("tcp", "127.0.0.6:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	var held []net.Conn
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	_, port, _ := net.SplitHostPort(n.kas.Address)
	sans := func(dns ...string) config.Variable {
		d := make([]config.Variable, len(dns))
		for i, s := range dns {
			d[i] = config.StringVariable(s)
		}
		return config.ObjectVariable(map[string]config.Variable{"dns_names": config.ListVariable(d...),
			"ip_addresses": config.ListVariable(config.StringVariable("127.0.0.1"), config.StringVariable("127.0.0.7"))})
	}
	vars := func(pki, caKey string, names config.Variable, keep bool, endpoints ...string) config.Variables {
		e := make([]config.Variable, len(endpoints))
		for i, s := range endpoints {
			e[i] = config.StringVariable(s)
		}
		return config.Variables{"host": config.StringVariable(n.ssh.Host), "port": config.IntegerVariable(n.ssh.Port),
			"host_key": config.StringVariable(n.ssh.RSAHostKey.Public()), "private_key": config.StringVariable(clientKey.PEM),
			"pki": config.StringVariable(pki), "ca_key": config.StringVariable(caKey), "apiserver": config.StringVariable(n.kas.Address),
			"sans": names, "keep_live_sans": config.BoolVariable(keep), "verify_endpoints": config.ListVariable(e...)}
	}
	caKey := filepath.Join(n.pki, "ca.key")
	promise := promiseOn(map[string]string{"kha_apiserver_serving_certificate.cp": filepath.Join(n.pki, "apiserver.crt")})
	// unchanged fails unless dir holds the certificate and key kubeadm
	// left and the apiserver serves that certificate.
	key := n.read(t, "apiserver.key")
	unchanged := func(dir string) func() {
		return func() {
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				crt, _ := os.ReadFile(filepath.Join(dir, "apiserver.crt"))
				k, _ := os.ReadFile(filepath.Join(dir, "apiserver.key"))
				if bytes.Equal(crt, n.original) && bytes.Equal(k, key) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s does not have the previous pair back", dir)
				}
			}
			if err := n.waitServed(n.original); err != nil {
				t.Fatal(err)
			}
			// The script on the node removes its work directory as it
			// exits, a moment after the pair is back.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				left, _ := filepath.Glob(filepath.Join(dir, ".apiserver.crt.kha-*"))
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("left behind: %v", left)
				}
			}
		}
	}
	// during runs fault once the swap is made on the node.
	during := func(fault func()) func() {
		return func() {
			go func() {
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					if found, _ := filepath.Glob(filepath.Join(n.pki, ".apiserver.crt.kha-*", "previous.crt")); len(found) > 0 {
						fault()
						return
					}
				}
			}()
		}
	}
	var thaw func()
	// A failure while the connection hangs must not hang the test.
	t.Cleanup(func() {
		if thaw != nil {
			thaw()
		}
	})
	withPartition := vars(n.pki, caKey, sans("localhost", "api.kha.test"), true, "https://127.0.0.6:"+port)
	withPartition["create_timeout"] = config.StringVariable("20s")
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				// The CA key on the node is another CA's: refused before
				// anything changes.
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(n.pki, otherKey, sans("localhost", "api.kha.test"), true),
				ExpectError: regexp.MustCompile(`(?s)not\s+one\s+CA's`),
			},
			{
				// The new certificate lacks localhost, which an endpoint
				// uses: rolled back once the apiserver served it.
				PreConfig:       unchanged(n.pki),
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(n.pki, caKey, sans("api.kha.test"), false, "https://localhost:"+port),
				ExpectError: regexp.MustCompile(`(?s)valid\s+for.*not\s+localhost.*apiserver\s+serves\s+the\s+previous\s+certificate\s+again`),
			},
			{
				// The apiserver reads other files: it never serves the new
				// certificate, which goes back.
				PreConfig:       unchanged(n.pki),
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(unread, filepath.Join(unread, "ca.key"), sans("localhost", "api.kha.test"), true),
				ExpectError: regexp.MustCompile(`(?s)did\s+not\s+serve\s+the\s+new\s+certificate`),
			},
			{
				// The connection drops after the swap: the node puts the
				// previous pair back at once.
				PreConfig: func() {
					unchanged(unread)()
					during(n.ssh.DropConnections)()
				},
				ConfigDirectory: config.TestNameDirectory(),
				ConfigVariables: vars(n.pki, caKey, sans("localhost", "api.kha.test"), true, "https://127.0.0.6:"+port),
				ExpectError:     regexp.MustCompile(`.`),
			},
			{
				// The connection hangs after the swap: kha gives up at its
				// timeout, and the node puts the previous pair back when
				// no verdict came in time.
				PreConfig: func() {
					unchanged(n.pki)()
					during(func() { thaw = n.ssh.FreezeConnections() })()
				},
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: withPartition,
				ExpectError: regexp.MustCompile(`.`),
			},
			{
				// The node put the previous pair back on its own, while
				// the connection still hung.
				PreConfig: func() {
					unchanged(n.pki)()
					thaw()
				},
				ConfigDirectory:  config.TestNameDirectory(),
				ConfigVariables:  vars(n.pki, caKey, sans("localhost", "api.kha.test"), true, "https://localhost:"+port),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{promise.Planned()}},
				Check: resource.ComposeTestCheckFunc(promise.Kept(), func(*terraform.State) error {
					c, err := certissue.ParsePEM(n.read(t, "apiserver.crt"))
					if err != nil {
						return err
					}
					if !slices.Contains(certissue.SANsOf(c).DNSNames, "api.kha.test") {
						return fmt.Errorf("the certificate has %v", certissue.SANsOf(c).Strings())
					}
					return n.waitServed(n.read(t, "apiserver.crt"))
				}),
			},
		},
	}))
	for _, c := range held {
		c.Close()
	}
}
