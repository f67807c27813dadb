package provider

import (
	"context"
	"testing"

	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// local_lb_backends, deprecated, keeps the value of apiserver_backends,
// its new name, so configurations that read it keep working.
func TestClusterEndpointsBackendsUnderBothNames(t *testing.T) {
	t.Parallel()
	m := clusterEndpointsModel{
		ControlPlaneNodes:      []nodeModel{{Name: types.StringValue("cp1"), IP: types.StringValue("10.0.0.11")}, {Name: types.StringValue("cp2"), IP: types.StringValue("10.0.0.12")}},
		APIServerPort:          types.Int64Value(6443),
		APIServerBindAddress:   types.StringValue("::"),
		APIServerAnonymousAuth: types.BoolValue(false),
		DNSDomain:              types.StringValue("cluster.local"),
		ServiceCIDR:            types.StringValue("10.233.0.0/18"),
		IPFamily:               types.StringValue("ipv4"),
	}
	if diags := m.compute(false); diags.HasError() {
		t.Fatal(diags)
	}
	if len(m.APIServerBackends.Elements()) != 2 || !m.LocalLBBackends.Equal(m.APIServerBackends) {
		t.Errorf("apiserver_backends %v, local_lb_backends %v", m.APIServerBackends, m.LocalLBBackends)
	}
}

// A state written before local_lb_node_ips (schema version 2) is upgraded
// with every computed value computed again from its inputs, so the first
// plan after the upgrade shows no change.
func TestClusterEndpointsUpgradeFillsLocalLBNodeIPs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	raw := `{"id":"old","control_plane_nodes":[{"name":"cp1","ip":"10.0.0.11"}],"worker_nodes":[{"name":"w1","ip":"10.0.0.21"}],` +
		`"apiserver_port":6443,"mode":"local_lb","local_lb_nodes":["w1"],` +
		`"local_lb_backends":[{"name":"cp1","address":"10.0.0.11","port":6443,"anonymous_auth":true}]}`
	resp := &fwresource.UpgradeStateResponse{State: tfsdk.State{Schema: clusterEndpointsSchema()}}
	upgradeClusterEndpointsState(ctx, fwresource.UpgradeStateRequest{RawState: &tfprotov6.RawState{JSON: []byte(raw)}}, resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	var got clusterEndpointsModel
	if d := resp.State.Get(ctx, &got); d.HasError() {
		t.Fatal(d)
	}
	want := got
	if d := want.compute(true); d.HasError() {
		t.Fatal(d)
	}
	if !got.LocalLBNodeIPs.Equal(stringMap(map[string]string{"w1": "10.0.0.21"})) {
		t.Errorf("local_lb_node_ips = %v", got.LocalLBNodeIPs)
	}
	for name, v := range got.computedValues() {
		if w := want.computedValues()[name]; !v.Equal(w) {
			t.Errorf("%s after the upgrade = %v, the plan computes %v", name, v, w)
		}
	}
}
