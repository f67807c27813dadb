package provider

import (
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
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

// Every state upgrader, and the schemas that read a state as it is, from
// the states earlier builds wrote (testdata/state-upgrade, README.md
// there): each instance upgrades without a diagnostic, and every attribute
// the schema still has keeps the value the build wrote, but for the
// computed values kha_cluster_endpoints' upgrade computes again, which
// must match too except where listed.
func TestUpgradeStateFromEarlierBuilds(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/state-upgrade/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no states in testdata/state-upgrade (%v)", err)
	}
	schemas := providerSchema(t).ResourceSchemas
	upgraded := map[string]map[int64]bool{} // type -> earlier versions tested
	for _, file := range files {
		var instances []struct {
			Type, Name    string
			SchemaVersion int64 `json:"schema_version"`
			Attributes    map[string]json.RawMessage
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &instances); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, i := range instances {
			t.Run(filepath.Base(file)+"/"+i.Type+"."+i.Name, func(t *testing.T) {
				schema := schemas[i.Type]
				if schema == nil {
					t.Fatalf("%s is no resource type of this build", i.Type)
				}
				if upgraded[i.Type] == nil {
					upgraded[i.Type] = map[int64]bool{}
				}
				upgraded[i.Type][i.SchemaVersion] = true
				raw, err := json.Marshal(i.Attributes)
				if err != nil {
					t.Fatal(err)
				}
				attrs := upgradedState(t, i.Type, i.SchemaVersion, string(raw))
				for name, written := range i.Attributes {
					now, ok := attrs[name]
					if to, moved := groupedSetting(i.Type, name); moved && !ok {
						checkGrouped(t, attrs, i.Attributes, name, to)
						continue
					}
					if !ok {
						if why := droppedAttributes[i.Type+"."+name]; why == "" {
							t.Errorf("%s, which version %d wrote, is gone from the upgraded state", name, i.SchemaVersion)
						}
						continue
					}
					var want any
					if err := json.Unmarshal(written, &want); err != nil {
						t.Fatal(err)
					}
					if got := jsonValueOf(t, now); !carriedOver(want, got) && recomputedDifferently[i.Type+"."+name] == "" {
						t.Errorf("%s: version %d wrote %v, the upgraded state has %v", name, i.SchemaVersion, want, got)
					}
				}
				for _, name := range newSinceClusterEndpoints[i.SchemaVersion] {
					if i.Type == "kha_cluster_endpoints" && attrs[name].IsNull() {
						t.Errorf("%s, computed since version %d, is null in the upgraded state", name, i.SchemaVersion)
					}
				}
			})
		}
	}
	// Every earlier version of every upgrader has a state.
	for name, s := range schemas {
		for v := range s.Version {
			if _, existed := firstSchemaVersion[name]; existed && v >= firstSchemaVersion[name] && !upgraded[name][v] {
				t.Errorf("%s: no state of schema version %d in testdata/state-upgrade", name, v)
			}
		}
	}
}

// firstSchemaVersion is the version each resource type's first state had:
// the types before versioned schemas started at 0, kha_kube_vip and
// kha_kubeconfig_server (still at 0) and the types since 0.1.0 have had
// no earlier version.
var firstSchemaVersion = map[string]int64{
	"kha_cluster_endpoints": 0, "kha_file": 0, "kha_haproxy_config": 0, "kha_nginx_config": 0,
	"kha_keepalived_config": 0, "kha_etcd_access": 0, "kha_hosts_entries": 0,
}

// newSinceClusterEndpoints are kha_cluster_endpoints' computed attributes
// a state of each version lacks, which its upgrade fills.
var newSinceClusterEndpoints = map[int64][]string{
	0: {"apiserver_backends", "local_lb_node_ips", "pod_network_endpoint", "cilium_values", "calico_kubernetes_services_endpoint", "health_check_spec"},
	1: {"apiserver_backends", "local_lb_node_ips", "pod_network_endpoint", "cilium_values", "calico_kubernetes_services_endpoint", "health_check_spec"},
	2: {"local_lb_node_ips", "pod_network_endpoint", "cilium_values", "calico_kubernetes_services_endpoint", "health_check_spec"},
	3: {"pod_network_endpoint", "cilium_values", "calico_kubernetes_services_endpoint", "health_check_spec"},
}

// recomputedDifferently are the computed values that kha_cluster_endpoints'
// upgrade computes again as this build does, and why they differ from what
// the release wrote: each is a change CHANGELOG.md announces, which shows
// in the plan of what reads it (TestReleaseUpgrade's outputs and
// kha_kubeconfig_server).
var recomputedDifferently = map[string]string{
	// "A control-plane node's node_endpoints entry ... is its own
	// apiserver"; endpoints.control_plane is the first node's.
	"kha_cluster_endpoints.node_endpoints": "own apiserver", "kha_cluster_endpoints.endpoints": "own apiserver",
	// "kubeadm_cluster_configuration sets 0.001 where a load balancer
	// spreads clients over two or more apiservers"
	"kha_cluster_endpoints.kubeadm_cluster_configuration": "goaway-chance",
	// A digest of the inputs, which include the attributes added since
	// (at their defaults); nothing reads it.
	"kha_cluster_endpoints.id": "digest of the inputs",
	// From the builds before versioned schemas, as 0.1.0's CHANGELOG says:
	// "anonymous_auth in local_lb_backends"; "hosts_entries carries the
	// external load balancer's name in every mode that has one".
	"kha_cluster_endpoints.local_lb_backends": "anonymous_auth", "kha_cluster_endpoints.hosts_entries": "the external name",
}

// carriedOver: got is want, but for the attributes objects gained since,
// which are null.
func carriedOver(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range g {
			if _, had := w[k]; !had && v != nil {
				return false
			}
		}
		for k, v := range w {
			if !carriedOver(v, g[k]) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for n := range w {
			if !carriedOver(w[n], g[n]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, got)
}

// droppedAttributes are attributes an earlier build wrote that this
// build's schema no longer has, and why.
var droppedAttributes = map[string]string{
	// 0.1.0's CHANGELOG: "idle_timeout is replaced by client_timeout and
	// server_timeout".
	"kha_haproxy_config.idle_timeout": "client_timeout and server_timeout", "kha_nginx_config.idle_timeout": "client_timeout and server_timeout",
}

// jsonValueOf is a state value as encoding/json decodes its JSON.
func jsonValueOf(t *testing.T, v tftypes.Value) any {
	t.Helper()
	if v.IsNull() {
		return nil
	}
	switch {
	case v.Type().Is(tftypes.String):
		var s string
		_ = v.As(&s)
		return s
	case v.Type().Is(tftypes.Bool):
		var b bool
		_ = v.As(&b)
		return b
	case v.Type().Is(tftypes.Number):
		var f big.Float
		_ = v.As(&f)
		n, _ := f.Float64()
		return n
	case v.Type().Is(tftypes.List{}), v.Type().Is(tftypes.Set{}), v.Type().Is(tftypes.Tuple{}):
		var elems []tftypes.Value
		_ = v.As(&elems)
		out := []any{}
		for _, e := range elems {
			out = append(out, jsonValueOf(t, e))
		}
		return out
	case v.Type().Is(tftypes.Map{}), v.Type().Is(tftypes.Object{}):
		var elems map[string]tftypes.Value
		_ = v.As(&elems)
		out := map[string]any{}
		for k, e := range elems {
			out[k] = jsonValueOf(t, e)
		}
		return out
	}
	t.Fatalf("a value of type %s", v.Type())
	return nil
}

// groupedSetting is where a load balancer's setting that moved into an
// object is now (groupedSettings).
func groupedSetting(typ, name string) ([2]string, bool) {
	if groupedSettings[typ] == nil {
		return [2]string{}, false
	}
	if to, ok := groupedSettings[typ][name]; ok {
		return to, true
	}
	to, ok := groupedSettings[""][name]
	return to, ok
}

// checkGrouped: a setting the earlier schema had at the top is in its
// object with the value it had, or, where that value is the one the
// earlier schema filled in when the configuration left it unset, null,
// as a configuration that leaves the object unset has it.
func checkGrouped(t *testing.T, attrs map[string]tftypes.Value, written map[string]json.RawMessage, name string, to [2]string) {
	t.Helper()
	var want, role any
	if err := json.Unmarshal(written[name], &want); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(written["role"], &role)
	filledIn := map[string]any{"metrics": true, "logs": true, "metrics_listen": "loopback", "healthcheck_listen": "loopback"}
	if role == "external" {
		filledIn["healthcheck_listen"] = "all"
	}
	if d, ok := filledIn[name]; ok && want == d {
		want = nil
	}
	var got any
	if object := jsonValueOf(t, attrs[to[0]]); object != nil {
		got = object.(map[string]any)[to[1]]
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: the earlier schema wrote %s, %s.%s in the upgraded state is %v, want %v", name, written[name], to[0], to[1], got, want)
	}
}

// A load balancer's state of schema version 1 as the last build at that
// version wrote it, with every setting that moved into an object set:
// each lands in its object with its value, and where the earlier schema
// filled a value in by itself (at the role's default), the object stays
// null, as a configuration without it has it.
func TestUpgradeLBStateGroupsSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		typ   string
		state map[string]any
		null  []string // objects the upgrade leaves null
	}{
		{"kha_haproxy_config", map[string]any{"role": "external", "connect_timeout": "2s", "client_timeout": "1h", "server_timeout": "2h",
			"healthcheck_listen": "loopback", "metrics": false, "metrics_listen": "all", "logs": false, "image": "haproxy:3.2",
			"pod_name": "lb", "cpu_request": "100m", "memory_request": "64M", "slowstart": "1m", "server_maxconn": 1000, "server_maxqueue": 256}, nil},
		{"kha_nginx_config", map[string]any{"role": "node_local", "client_timeout": "1h", "fail_timeout": "10s",
			"healthcheck_listen": "loopback", "metrics": true, "metrics_listen": "loopback", "logs": true}, []string{"monitoring", "static_pod"}},
		{"kha_haproxy_config", map[string]any{"role": "external", "healthcheck_listen": "all", "metrics": true, "metrics_listen": "loopback",
			"logs": true}, []string{"monitoring", "proxy_timeouts", "static_pod", "servers"}},
	} {
		raw := map[string]json.RawMessage{}
		for name, v := range tc.state {
			raw[name], _ = json.Marshal(v)
		}
		text, _ := json.Marshal(raw)
		attrs := upgradedState(t, tc.typ, 1, string(text))
		for name := range tc.state {
			if to, moved := groupedSetting(tc.typ, name); moved {
				checkGrouped(t, attrs, raw, name, to)
			} else if name != "role" {
				t.Errorf("%s: not a moved setting of %s", name, tc.typ)
			}
		}
		for _, object := range tc.null {
			if !attrs[object].IsNull() {
				t.Errorf("%s: %s is %v, want null", tc.typ, object, attrs[object])
			}
		}
	}
}
