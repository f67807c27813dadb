package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// A kha_file state written before schemas had versions (no timeouts, no
// content_wo) upgrades to the current schema with its values kept.
func TestUpgradeUnversionedState(t *testing.T) {
	t.Parallel()
	if v := schemaVersion(t, "kha_file"); v != 1 {
		t.Fatalf("kha_file schema version %d, want 1", v)
	}
	v0 := `{"id":"10.0.0.1:22:/etc/x","path":"/etc/x","content":"hello\n","mode":"0644","owner":null,"group":null,
"validate_command":null,"reload_command":"true","create_parent_dirs":true,"keep_on_destroy":false,
"ssh":{"host":"10.0.0.1"},"sha256":"abc","remote_sha256":"abc","trusted_host_key":null,"a_removed_attribute":"x"}`
	attrs := upgradedState(t, "kha_file", 0, v0)
	var content, reload string
	_ = attrs["content"].As(&content)
	_ = attrs["reload_command"].As(&reload)
	if content != "hello\n" || reload != "true" || !attrs["timeouts"].IsNull() || !attrs["content_wo"].IsNull() {
		t.Fatalf("upgraded state: %v", attrs)
	}
}

// A kha_cluster_endpoints state of version 1 (or 0) has local_lb_backends
// only, one of version 2 no local_lb_node_ips, one of version 3 no
// pod_network_endpoint: the upgrade fills apiserver_backends with the same
// value, local_lb_node_ips and pod_network_endpoint, so the first plan
// after it shows no change.
func TestUpgradeClusterEndpointsStateFillsAPIServerBackends(t *testing.T) {
	t.Parallel()
	if v := schemaVersion(t, "kha_cluster_endpoints"); v != 4 {
		t.Fatalf("kha_cluster_endpoints schema version %d, want 4", v)
	}
	prior := `{"id":"abc","control_plane_nodes":[{"name":"cp1","ip":"10.0.0.11"}],"worker_nodes":[{"name":"w1","ip":"10.0.0.21"}],"apiserver_port":6443,
"local_lb_backends":[{"name":"cp1","address":"10.0.0.11","port":6443,"anonymous_auth":true}]}`
	for _, version := range []int64{0, 1, 2, 3} {
		attrs := upgradedState(t, "kha_cluster_endpoints", version, prior)
		if attrs["local_lb_backends"].IsNull() || !attrs["apiserver_backends"].Equal(attrs["local_lb_backends"]) {
			t.Errorf("from version %d: apiserver_backends %v, local_lb_backends %v", version, attrs["apiserver_backends"], attrs["local_lb_backends"])
		}
		want := tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, map[string]tftypes.Value{"w1": tftypes.NewValue(tftypes.String, "10.0.0.21")})
		if !attrs["local_lb_node_ips"].Equal(want) {
			t.Errorf("from version %d: local_lb_node_ips %v", version, attrs["local_lb_node_ips"])
		}
		if want := tftypes.NewValue(tftypes.String, "https://10.0.0.11:6443"); !attrs["pod_network_endpoint"].Equal(want) {
			t.Errorf("from version %d: pod_network_endpoint %v", version, attrs["pod_network_endpoint"])
		}
	}
}

// A kha_apiserver_serving_certificate state written before not_after and
// live_sans (0.1.0's) reads with them null: the first refresh fills them,
// with the digest that keeps the live SANs.
func TestUpgradeServingCertificateStateWithoutLiveSANs(t *testing.T) {
	t.Parallel()
	prior := `{"id":"10.0.0.1:22:/etc/kubernetes/pki/apiserver.crt","sans":{"dns_names":["kubernetes"],"ip_addresses":["10.0.0.1"]},
"keep_live_sans":true,"certificate_path":"/etc/kubernetes/pki/apiserver.crt","sha256":"abc","remote_sha256":"abc",
"ssh":{"host":"10.0.0.1"}}`
	attrs := upgradedState(t, "kha_apiserver_serving_certificate", schemaVersion(t, "kha_apiserver_serving_certificate"), prior)
	var sha string
	_ = attrs["sha256"].As(&sha)
	if sha != "abc" || !attrs["live_sans"].IsNull() || !attrs["not_after"].IsNull() {
		t.Fatalf("upgraded state: %v", attrs)
	}
}

// schemaVersion is the version of typeName's schema in this build.
func schemaVersion(t *testing.T, typeName string) int64 {
	t.Helper()
	return providerSchema(t).ResourceSchemas[typeName].Version
}

// upgradedState is what a state of typeName written at version becomes
// when the CLI hands it to this build, attribute by attribute.
func upgradedState(t *testing.T, typeName string, version int64, prior string) map[string]tftypes.Value {
	t.Helper()
	ctx := context.Background()
	server := providerserver.NewProtocol6(New("test", "test")())()
	resp, err := server.UpgradeResourceState(ctx, &tfprotov6.UpgradeResourceStateRequest{
		TypeName: typeName, Version: version, RawState: &tfprotov6.RawState{JSON: []byte(prior)}})
	if err != nil || len(resp.Diagnostics) > 0 {
		t.Fatalf("upgrade from version %d: %v %+v", version, err, resp.Diagnostics)
	}
	value, err := resp.UpgradedState.Unmarshal(providerSchema(t).ResourceSchemas[typeName].ValueType())
	if err != nil {
		t.Fatal(err)
	}
	var attrs map[string]tftypes.Value
	if err := value.As(&attrs); err != nil {
		t.Fatal(err)
	}
	return attrs
}

func providerSchema(t *testing.T) *tfprotov6.GetProviderSchemaResponse {
	t.Helper()
	server := providerserver.NewProtocol6(New("test", "test")())()
	schemas, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return schemas
}
