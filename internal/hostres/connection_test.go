package hostres

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// TestTrustOnFirstUseIsNeverInherited is the audit of every connection a
// resource's `ssh` makes besides the host's own: trust on first use on
// default_ssh reaches the host (whose resource records the key) and never
// the bastion, which must be pinned; the verification tunnels, the
// kubeconfig check and the preflight ride the host's verified connection.
func TestTrustOnFirstUseIsNeverInherited(t *testing.T) {
	t.Parallel()
	defaults := &SSHModel{InsecureTrustOnFirstUse: types.BoolValue(true), Password: types.StringValue("pw")}
	var r SSHModel
	r.Host, r.BastionHost, r.PrivateKey = types.StringValue("10.0.0.11"), types.StringValue("10.0.0.1"), types.StringNull()
	m, err := ResolveSSH(r, defaults, "")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Config.TrustsOnFirstUse() {
		t.Errorf("the host does not inherit trust on first use")
	}
	if m.Config.Bastion == nil || m.Config.Bastion.InsecureTrustOnFirstUse {
		t.Fatalf("the bastion inherits trust on first use: %+v", m.Config.Bastion)
	}
	m.Config.Bastion.Password = "pw"
	if err := m.Config.Bastion.Validate(); !errors.Is(err, remote.ErrNoHostKey) {
		t.Errorf("an unpinned bastion validates: %v", err)
	}
	if err := m.Config.Validate(); err == nil || !strings.Contains(err.Error(), "bastion") {
		t.Errorf("a host behind an unpinned bastion validates: %v", err)
	}
}
