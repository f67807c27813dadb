package hostres

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"golang.org/x/crypto/ssh"
)

// TestReach: a resource with a lifecycle of its own reaches its host as
// the lifecycle does. A refresh that cannot connect keeps the state (a
// host that does not answer warns, write-only credentials say nothing);
// an import or a change fails at ssh; the host key is recorded on first
// use.
func TestReach(t *testing.T) {
	ctx := context.Background()
	f := fleet{hosts: map[string]*memHost{}}
	up := newMemHost(t, "cp1:22")
	f.hosts[up.address] = up
	data, d := NewProviderData(ctx, nil, types.ObjectNull(objectTypes(ProviderSSHAttribute())), types.ObjectNull(objectTypes(RolloutAttribute())))
	if d.HasError() {
		t.Fatal(d)
	}
	data.dial = f.dial
	sshOf := func(host string, password string) types.Object {
		m := SSHModel{Host: types.StringValue(host), InsecureTrustOnFirstUse: types.BoolValue(true)}
		if password != "" {
			m.Password = types.StringValue(password)
		}
		obj, d := types.ObjectValueFrom(ctx, objectTypes(ResourceSSHAttribute()), m)
		if d.HasError() {
			t.Fatal(d)
		}
		return obj
	}
	summaries := func(diags diag.Diagnostics) (errors, warnings []string) {
		for _, d := range diags.Errors() {
			errors = append(errors, d.Summary())
		}
		for _, d := range diags.Warnings() {
			warnings = append(warnings, d.Summary())
		}
		return errors, warnings
	}
	tests := []struct {
		name             string
		ssh              types.Object
		to               Purpose
		reached          bool
		errors, warnings []string
	}{
		{"a change", sshOf("cp1", "secret"), ToChange, true, nil, nil},
		{"a refresh of a host that does not answer", sshOf("cp2", "secret"), ToRead, false, nil, []string{"Host Unreachable: cp2:22"}},
		{"an import of a host that does not answer", sshOf("cp2", "secret"), ToImport, false, []string{"SSH Connection Failed"}, nil},
		{"a change of a host that does not answer", sshOf("cp2", "secret"), ToChange, false, []string{"SSH Connection Failed"}, nil},
		{"a refresh without the write-only credentials", sshOf("cp1", ""), ToRead, false, nil, nil},
		{"a change without credentials", sshOf("cp1", ""), ToChange, false, []string{"Invalid Connection"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dialled := len(f.dialled)
			trusted := types.StringUnknown()
			host, diags := Reach(ctx, data, tc.ssh, &trusted, tc.to, "cp2:22:/etc/kubernetes/admin.conf")
			errors, warnings := summaries(diags)
			if (host != nil) != tc.reached || !slices.Equal(errors, tc.errors) || !slices.Equal(warnings, tc.warnings) {
				t.Fatalf("host %v, errors %q, warnings %q; want reached %t, errors %q, warnings %q", host, errors, warnings,
					tc.reached, tc.errors, tc.warnings)
			}
			if want := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(up.HostKey()))); tc.reached && trusted.ValueString() != want {
				t.Errorf("trusted_host_key %s, want the host's key", trusted)
			}
			if tc.ssh.Attributes()["password"].IsNull() && len(f.dialled) != dialled {
				t.Error("dialled without credentials")
			}
		})
	}
}
