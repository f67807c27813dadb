package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// A kha_file state written before schemas had versions (no timeouts, no
// content_wo) upgrades to the current schema with its values kept.
func TestUpgradeUnversionedState(t *testing.T) {
	ctx := context.Background()
	server := providerserver.NewProtocol6(New("test", "test")())()
	schemas, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if v := schemas.ResourceSchemas["kha_file"].Version; v != 1 {
		t.Fatalf("kha_file schema version %d, want 1", v)
	}
	v0 := `{"id":"10.0.0.1:22:/etc/x","path":"/etc/x","content":"hello\n","mode":"0644","owner":null,"group":null,
"validate_command":null,"reload_command":"true","create_parent_dirs":true,"keep_on_destroy":false,
"ssh":{"host":"10.0.0.1"},"sha256":"abc","remote_sha256":"abc","trusted_host_key":null,"a_removed_attribute":"x"}`
	resp, err := server.UpgradeResourceState(ctx, &tfprotov6.UpgradeResourceStateRequest{
		TypeName: "kha_file", Version: 0, RawState: &tfprotov6.RawState{JSON: []byte(v0)}})
	if err != nil || len(resp.Diagnostics) > 0 {
		t.Fatalf("upgrade: %v %+v", err, resp.Diagnostics)
	}
	typ := schemas.ResourceSchemas["kha_file"].ValueType()
	value, err := resp.UpgradedState.Unmarshal(typ)
	if err != nil {
		t.Fatal(err)
	}
	var attrs map[string]tftypes.Value
	if err := value.As(&attrs); err != nil {
		t.Fatal(err)
	}
	var content, reload string
	_ = attrs["content"].As(&content)
	_ = attrs["reload_command"].As(&reload)
	if content != "hello\n" || reload != "true" || !attrs["timeouts"].IsNull() || !attrs["content_wo"].IsNull() {
		t.Fatalf("upgraded state: %v", value)
	}
}

// A kha_cluster_endpoints state of version 1 (or 0) has local_lb_backends
// only, one of version 2 no local_lb_node_ips, one of version 3 no
// pod_network_endpoint: the upgrade fills apiserver_backends with the same
// value, local_lb_node_ips and pod_network_endpoint, so the first plan
// after it shows no change.
func TestUpgradeClusterEndpointsStateFillsAPIServerBackends(t *testing.T) {
	ctx := context.Background()
	server := providerserver.NewProtocol6(New("test", "test")())()
	schemas, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if v := schemas.ResourceSchemas["kha_cluster_endpoints"].Version; v != 4 {
		t.Fatalf("kha_cluster_endpoints schema version %d, want 4", v)
	}
	prior := `{"id":"abc","control_plane_nodes":[{"name":"cp1","ip":"10.0.0.11"}],"worker_nodes":[{"name":"w1","ip":"10.0.0.21"}],"apiserver_port":6443,
"local_lb_backends":[{"name":"cp1","address":"10.0.0.11","port":6443,"anonymous_auth":true}]}`
	for _, version := range []int64{0, 1, 2, 3} {
		resp, err := server.UpgradeResourceState(ctx, &tfprotov6.UpgradeResourceStateRequest{
			TypeName: "kha_cluster_endpoints", Version: version, RawState: &tfprotov6.RawState{JSON: []byte(prior)}})
		if err != nil || len(resp.Diagnostics) > 0 {
			t.Fatalf("upgrade from %d: %v %+v", version, err, resp.Diagnostics)
		}
		value, err := resp.UpgradedState.Unmarshal(schemas.ResourceSchemas["kha_cluster_endpoints"].ValueType())
		if err != nil {
			t.Fatal(err)
		}
		var attrs map[string]tftypes.Value
		if err := value.As(&attrs); err != nil {
			t.Fatal(err)
		}
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

// TestAccFile_upgradeDropsWriteOnlyMarksInStateAlone: states written
// before write-only attributes lost their sensitive mark list them in
// every instance's sensitive_attributes. The first plan after the upgrade
// shows an update with no attribute changed, which the apply makes in the
// state alone: the host is down throughout, and afterwards the state lists
// only the marks of attributes that can hold a value and the plan is empty.
func TestAccFile_upgradeDropsWriteOnlyMarksInStateAlone(t *testing.T) {
	tf := terraformPath(t)
	bin := buildProvider(t)
	s := testhost.Start(t, testhost.Options{})
	work := t.TempDir()
	terraform := devTerraform(t, tf, work, bin)
	run := func(args ...string) string {
		t.Helper()
		out, err := terraform(args...).CombinedOutput()
		if err != nil && !(args[0] == "plan" && slices.Contains(args, "-detailed-exitcode") && strings.Contains(err.Error(), "exit status 2")) {
			t.Fatalf("terraform %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	main := fmt.Sprintf(`terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}
provider "kha" {
  default_ssh = { private_key = %q }
}
resource "kha_file" "f" {
  path    = %q
  content = "hello\n"
  # The host is down for the upgrade: the refreshes give up at once.
  ssh = { host = %q, port = %d, host_key = %q, refresh_timeout = "1s" }
}
`, s.ClientKey.PEM, filepath.Join(t.TempDir(), "f"), s.Host, s.Port, s.HostKey.Public())
	if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	run("apply", "-auto-approve")

	// The state as the earlier version wrote it.
	statePath := filepath.Join(work, "terraform.tfstate")
	writeOnly := [][]string{{"content_wo"}, {"ssh", "password_wo"}, {"ssh", "private_key_wo"}, {"ssh", "bastion_private_key_wo"}}
	editInstance(t, statePath, func(instance map[string]any) {
		marks, _ := instance["sensitive_attributes"].([]any)
		for _, p := range writeOnly {
			var steps []any
			for _, name := range p {
				steps = append(steps, map[string]any{"type": "get_attr", "value": name})
			}
			marks = append(marks, steps)
		}
		instance["sensitive_attributes"] = marks
	})

	s.Stop()
	if out := run("plan", "-detailed-exitcode"); !strings.Contains(out, "1 to change") {
		t.Fatalf("the first plan after the upgrade does not show the update:\n%s", out)
	}
	run("apply", "-auto-approve")
	editInstance(t, statePath, func(instance map[string]any) {
		text, _ := json.Marshal(instance["sensitive_attributes"])
		if strings.Contains(string(text), "_wo") {
			t.Errorf("the state still marks write-only attributes: %s", text)
		}
		if !strings.Contains(string(text), "private_key") {
			t.Errorf("the state lost the mark of ssh.private_key: %s", text)
		}
	})
	if out := run("plan", "-detailed-exitcode"); !strings.Contains(out, "No changes") {
		t.Fatalf("the plan after the upgrade's update is not empty:\n%s", out)
	}
}

// editInstance lets edit change the one resource instance of the state
// file at path, and writes it back.
func editInstance(t *testing.T, path string, edit func(instance map[string]any)) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Resources []struct {
			Instances []map[string]any `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(raw, &state); err != nil || len(state.Resources) != 1 || len(state.Resources[0].Instances) != 1 {
		t.Fatalf("the state is not one resource instance (%v):\n%s", err, raw)
	}
	edit(state.Resources[0].Instances[0])
	var whole map[string]any
	if err := json.Unmarshal(raw, &whole); err != nil {
		t.Fatal(err)
	}
	resource, _ := whole["resources"].([]any)[0].(map[string]any)
	resource["instances"] = []any{state.Resources[0].Instances[0]}
	text, err := json.MarshalIndent(whole, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, text, 0o600); err != nil {
		t.Fatal(err)
	}
}
