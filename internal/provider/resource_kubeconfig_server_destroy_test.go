package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/kha/terraform-provider-kha/internal/kubeconfig"
	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestKubeconfigServer_destroyCheckEndsAtOnceThroughTheNode: destroy's
// check of the server recorded before kha, dialled from the node through
// the SSH connection (where the node's sshd reports a failed dial as a
// rejected channel), ends at once for a port nobody listens on while its
// host answers. The kubeconfig keeps kha's server, with a warning that
// names the real cause (and not verify = false, which would put back a
// server that cannot work), long before verify_timeout. (A name the node
// does not resolve would need a query to a name server: TestAsHostDialError
// and TestKeptBecause take that case apart.)
func TestKubeconfigServer_destroyCheckEndsAtOnceThroughTheNode(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	client := clientOf(t, s)

	pki := testhost.TestPKI(t)
	cert, key := nodeCredentials(t, pki)
	khas := "https://127.0.0.3:6443" // what the kubeconfigs have now; destroy does not check it
	closedPort := strconv.Itoa(testhost.FreePort(t, "127.0.0.1"))
	retired := "https://127.0.0.1:" + closedPort
	dir := t.TempDir()
	kubelet := filepath.Join(dir, "kubelet.conf")
	if err := os.WriteFile(kubelet, []byte(nodeKubeconfig(khas, pki.CAPEM, cert, key)), 0o600); err != nil {
		t.Fatal(err)
	}
	const verifyTimeout = 30 * time.Second
	m := kubeconfigServerModel{Paths: []types.String{types.StringValue(kubelet)},
		Server: types.StringValue(khas), RestartCommand: types.StringValue("true"), VerifyTimeout: types.StringValue(verifyTimeout.String())}
	m.ID = types.StringValue(fmt.Sprintf("%s:%d:%s", s.Host, s.Port, kubelet))
	var diags diag.Diagnostics
	m.PreviousServers = previousServersValue(map[string]map[string]string{kubelet: {"kubernetes": retired}}, &diags)

	start := time.Now()
	if err := m.ReadHost(context.Background(), client, true); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= verifyTimeout {
		t.Fatalf("destroy's checks took %v: they waited out verify_timeout (%v)", took, verifyTimeout)
	}
	var unserved *kubeconfig.UnservedError
	if err := m.keptOnDestroy[kubelet]; !errors.As(err, &unserved) || unserved.Why != kubeconfig.PortClosed {
		t.Errorf("want an UnservedError (PortClosed), got %v", err)
	}

	out, d := m.Render(nil)
	diags.Append(d...)
	if diags.HasError() || len(diags.Warnings()) != 1 || len(out.Files) != 0 {
		t.Fatalf("want a warning and no file changed, got %v and %d files", diags, len(out.Files))
	}
	detail := diags.Warnings()[0].Detail()
	for _, s := range []string{"putting back server " + retired, kubelet + " keeps server " + khas, "the recorded server's port " +
		closedPort + " on 127.0.0.1 is no longer served (connection refused): nothing listens there any more"} {
		if !strings.Contains(detail, s) {
			t.Errorf("the warning lacks %q:\n%s", s, detail)
		}
	}
	if strings.Contains(detail, "still not ready") || strings.Contains(detail, "ssh: rejected") || strings.Contains(detail, "verify = false") {
		t.Errorf("the warning names the retries or the SSH channel, not the cause, or offers to put back, unchecked, a server "+
			"that cannot work:\n%s", detail)
	}
}

// TestKeptBecause: what destroy says of a recorded server that cannot
// work, by cause.
func TestKeptBecause(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err   error
		want  string
		final bool
	}{
		{&kubeconfig.UnservedError{Why: kubeconfig.NameUnknown, Host: "api.example", Port: "6443"}, "the name api.example does " +
			"not resolve on the node; if it came from a kha_hosts_entries block, this destroy removed that block first: give " +
			"kha_kubeconfig_server depends_on = [kha_hosts_entries.<name>] so kubeconfigs go back before the names", true},
		{&kubeconfig.UnservedError{Why: kubeconfig.PortClosed, Host: "10.0.0.5", Port: "6444"}, "the recorded server's port " +
			"6444 on 10.0.0.5 is no longer served (connection refused): nothing listens there any more", true},
		{errors.New("still not ready after 30s: 503"), `cluster "kubernetes": still not ready after 30s: 503`, false},
	} {
		if cause, final := keptBecause(fmt.Errorf("cluster %q: %w", "kubernetes", tc.err)); cause != tc.want || final != tc.final {
			t.Errorf("keptBecause(%v) = %q, %v; want %q, %v", tc.err, cause, final, tc.want, tc.final)
		}
	}
}

// TestAccKubeconfigServer_destroyOfARetiredPortEndsAtOnce: the server
// kubelet.conf had before kha stops serving before destroy (its port is
// retired: the host answers, nothing listens there any more). Destroy's
// check of it ends at once rather than after verify_timeout: kubelet.conf
// keeps kha's server, with a warning that names the retired port, and
// admin.conf, whose recorded server still works, is put back.
func TestAccKubeconfigServer_destroyOfARetiredPortEndsAtOnce(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	pki := testhost.TestPKI(t)
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	original := testhost.NewAPIServer("original", l.Addr().String(), pki.Server)
	go original.ServeTLS(l, "", "")
	t.Cleanup(func() { original.Close() })
	retired := "https://" + l.Addr().String()
	_, retiredPort, _ := net.SplitHostPort(l.Addr().String())
	stays := "https://" + testhost.StartAPIServer(t, "stays", "127.0.0.3")
	khas := "https://" + testhost.StartAPIServer(t, "kha", "127.0.0.4")
	dir := t.TempDir()
	kubelet, admin := filepath.Join(dir, "kubelet.conf"), filepath.Join(dir, "admin.conf")
	cert, key := nodeCredentials(t, pki)
	for path, server := range map[string]string{kubelet: retired, admin: stays} {
		if err := os.WriteFile(path, []byte(nodeKubeconfig(server, pki.CAPEM, cert, key)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const verifyTimeout = 40 * time.Second
	vars := kubeconfigPathsVars(s, khas, "true", kubelet, admin)
	vars["verify_timeout"] = config.StringVariable(verifyTimeout.String())
	recorder := &planRecorder{}
	var destroyStarted time.Time
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		CheckDestroy:             resource.ComposeTestCheckFunc(kubeconfigServersAre(khas, kubelet), kubeconfigServersAre(stays, admin)),
		Steps: []resource.TestStep{
			{
				ConfigDirectory: kubeconfigPathsFixture, ConfigVariables: vars,
				Check: resource.ComposeTestCheckFunc(kubeconfigServersAre(khas, kubelet, admin), expectAppliedWarnings(recorder, nil)),
			},
			{
				PreConfig: func() {
					original.Close() // the port is retired
					destroyStarted = time.Now()
				},
				Destroy: true, ConfigDirectory: kubeconfigPathsFixture, ConfigVariables: vars,
				Check: resource.ComposeTestCheckFunc(func(*terraform.State) error {
					if took := time.Since(destroyStarted); took >= verifyTimeout {
						return fmt.Errorf("destroy took %v: it waited out verify_timeout (%v) on a port nobody listens on", took, verifyTimeout)
					}
					return nil
				}, expectAppliedWarnings(recorder, map[string][]string{"": {"Kubeconfig Kept on Its Current Server",
					kubelet + " keeps server " + khas, "putting back server " + retired,
					"the recorded server's port " + retiredPort + " on 127.0.0.2 is no longer served (connection refused): nothing listens there any more"}})),
			},
		},
	}))
}
