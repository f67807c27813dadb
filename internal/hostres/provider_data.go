package hostres

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// ProviderData is what the provider's Configure gives every resource and
// data source that reaches a host: one per walk.
type ProviderData struct {
	// pool is shared by the whole Terraform run, so each host gets one SSH
	// connection however many resources write to it.
	pool *remote.Pool
	// dial is how the lifecycle reaches a host: through pool (poolDialer),
	// or a test's hosts.
	dial     Dialer
	defaults *SSHModel
	// reservations records which resource keeps which file on which
	// host, so that a second one fails its plan; new in every walk.
	reservations *reservations
	// rollout admits the walk's changes to their hosts; nil without the
	// provider's `rollout`.
	rollout *rollout
	// clusters admits the walk's certificate changes, one cluster (CA)
	// at a time (clusterTurn).
	clusters *rollout
}

// NewProviderData reads the provider's default_ssh and rollout.
func NewProviderData(ctx context.Context, pool *remote.Pool, defaultSSH, rolloutConfig types.Object) (*ProviderData, diag.Diagnostics) {
	data := &ProviderData{pool: pool, dial: poolDialer(pool), reservations: newReservations(), clusters: newRollout(clusterPolicy, nil)}
	var diags diag.Diagnostics
	if data.rollout, diags = rolloutFrom(ctx, rolloutConfig); diags.HasError() {
		return nil, diags
	}
	if !defaultSSH.IsNull() {
		defaults, d := SSHFrom(ctx, defaultSSH)
		diags.Append(d...)
		if diags.HasError() {
			return nil, diags
		}
		data.defaults = &defaults
	}
	return data, diags
}

// SSHDefaults is default_ssh; nil before Configure ran.
func (d *ProviderData) SSHDefaults() *SSHModel {
	if d == nil {
		return nil
	}
	return d.defaults
}

// ImportedSSH is the `ssh` an import records for host and port (null:
// the ID named none). The port the configuration leaves out stays out (22
// without a default port, or default_ssh's port), so the plan after the
// import does not change it.
func (d *ProviderData) ImportedSSH(ctx context.Context, host string, port types.Int64) (types.Object, diag.Diagnostics) {
	if defaults := d.SSHDefaults(); port.ValueInt64() == 22 && (defaults == nil || defaults.Port.IsNull()) ||
		defaults != nil && defaults.Port.ValueInt64() == port.ValueInt64() {
		port = types.Int64Null()
	}
	return types.ObjectValueFrom(ctx, objectTypes(ResourceSSHAttribute()), SSHModel{Host: types.StringValue(host), Port: port})
}

// Pool is the run's SSH connections, for a data source that reads a host.
func (d *ProviderData) Pool() *remote.Pool { return d.pool }
