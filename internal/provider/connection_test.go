package provider

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
	defaults := &sshModel{InsecureTrustOnFirstUse: types.BoolValue(true), Password: types.StringValue("pw")}
	var r sshModel
	r.Host, r.BastionHost, r.PrivateKey = types.StringValue("10.0.0.11"), types.StringValue("10.0.0.1"), types.StringNull()
	m, err := resolveSSH(r, defaults, "")
	if err != nil {
		t.Fatal(err)
	}
	if !m.cfg.TrustsOnFirstUse() {
		t.Errorf("the host does not inherit trust on first use")
	}
	if m.cfg.Bastion == nil || m.cfg.Bastion.InsecureTrustOnFirstUse {
		t.Fatalf("the bastion inherits trust on first use: %+v", m.cfg.Bastion)
	}
	m.cfg.Bastion.Password = "pw"
	if err := m.cfg.Bastion.Validate(); !errors.Is(err, remote.ErrNoHostKey) {
		t.Errorf("an unpinned bastion validates: %v", err)
	}
	if err := m.cfg.Validate(); err == nil || !strings.Contains(err.Error(), "bastion") {
		t.Errorf("a host behind an unpinned bastion validates: %v", err)
	}
}
