package provider

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// haClusterExample copies examples/ha-cluster to a directory of its own,
// naming the provider as the test framework serves it (hashicorp/kha) and
// reading no live certificate, and writes an SSH key and known_hosts. make
// e2e applies the example to real hosts; this plans it in the fast tier.
func haClusterExample(t *testing.T) (dir, keyFile, knownHosts string) {
	t.Helper()
	src := filepath.Join(examplesDir, "ha-cluster")
	files, err := filepath.Glob(filepath.Join(src, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no configuration in %s (%v)", src, err)
	}
	dir = t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(`source = "kha/kha"`), []byte(`source = "hashicorp/kha"`))
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// No live certificate to read: that data source would contact a host.
	if err := os.WriteFile(filepath.Join(dir, "zz_test.auto.tfvars.json"), []byte(`{"apiserver_certificate_path": null}`), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := t.TempDir()
	keyFile, knownHosts = filepath.Join(keys, "id_ed25519"), filepath.Join(keys, "known_hosts")
	if err := os.WriteFile(keyFile, []byte(testhost.NewKey(t).PEM), 0o600); err != nil {
		t.Fatal(err)
	}
	// The hosts' keys: checked for form at plan time, never met.
	hostKey := testhost.NewKey(t).Public()
	if err := os.WriteFile(knownHosts, []byte("10.64.0.11,10.64.0.21,10.64.0.22 "+hostKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, keyFile, knownHosts
}

// noChangeOf fails a plan that changes addr.
type noChangeOf string

func (addr noChangeOf) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address == string(addr) {
			resp.Error = fmt.Errorf("the plan has %s (%v)", addr, rc.Change.Actions)
		}
	}
}

// TestExampleHACluster_plansTheAPIRecord: with dns, the ha-cluster example
// plans the API name's record (dns.tf) with the VIP's address, to be
// replaced when either the name or the address changes; without dns,
// none. The plan contacts no host.
func TestExampleHACluster_plansTheAPIRecord(t *testing.T) {
	t.Parallel()
	dir, key, knownHosts := haClusterExample(t)
	node := func(name, ip string) config.Variable {
		return config.ObjectVariable(map[string]config.Variable{"name": config.StringVariable(name), "ip": config.StringVariable(ip)})
	}
	lbNode := func(name, ip string, priority int) config.Variable {
		return config.ObjectVariable(map[string]config.Variable{"name": config.StringVariable(name), "ip": config.StringVariable(ip),
			"priority": config.IntegerVariable(priority)})
	}
	const record, vip = "terraform_data.api_record[0]", "10.64.0.100"
	vars := func(dns bool) config.Variables {
		v := config.Variables{
			"control_plane_nodes":  config.ListVariable(node("cp1", "10.64.0.11")),
			"worker_nodes":         config.ListVariable(node("w1", "10.64.0.21"), node("w2", "10.64.0.22")),
			"lb_nodes":             config.ListVariable(lbNode("w1", "10.64.0.21", 150), lbNode("w2", "10.64.0.22", 100)),
			"vip":                  config.StringVariable(vip),
			"ssh_private_key_file": config.StringVariable(key),
			"ssh_known_hosts_file": config.StringVariable(knownHosts),
		}
		if dns {
			v["dns"] = config.ObjectVariable(map[string]config.Variable{"server": config.StringVariable("10.64.0.53"),
				"key_file": config.StringVariable("/etc/kha/dns-tsig.key"), "ttl": config.IntegerVariable(30)})
		}
		return v
	}
	unitTest(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				ConfigDirectory: config.StaticDirectory(dir), ConfigVariables: vars(true), PlanOnly: true, ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(record, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(record, tfjsonpath.New("input"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"server": knownvalue.StringExact("10.64.0.53"), "key_file": knownvalue.StringExact("/etc/kha/dns-tsig.key"),
						"name": knownvalue.StringExact("api.k8s.example.com"), "address": knownvalue.StringExact(vip),
						"type": knownvalue.StringExact("A"), "ttl": knownvalue.Int64Exact(30),
					})),
					plancheck.ExpectKnownValue(record, tfjsonpath.New("triggers_replace"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("api.k8s.example.com"), knownvalue.StringExact(vip)})),
				}},
			},
			{
				ConfigDirectory: config.StaticDirectory(dir), ConfigVariables: vars(false), PlanOnly: true, ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{noChangeOf(record)}},
			},
		},
	}))
}
