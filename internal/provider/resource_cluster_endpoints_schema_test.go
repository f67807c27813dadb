package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

// local_lb_backends, deprecated, keeps the value of apiserver_backends,
// its new name, so configurations that read it keep working.
func TestClusterEndpointsBackendsUnderBothNames(t *testing.T) {
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
