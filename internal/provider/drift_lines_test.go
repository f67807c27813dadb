package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestAccHost_driftShowsChangedLines: a load balancer's configuration
// changed by hand is named by host:port:path in the drift warning's
// summary, and the warning lists the changed lines; a kha_file's content
// (which may be secret) is never shown.
func TestAccHost_driftShowsChangedLines(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	dir := t.TempDir()
	recorder := &planRecorder{}
	vars := config.Variables{"host": config.StringVariable(s.Host), "port": config.IntegerVariable(s.Port),
		"private_key": config.StringVariable(s.ClientKey.PEM), "known_hosts": config.StringVariable(s.KnownHosts()),
		"dir": config.StringVariable(dir)}
	cfgPath, notesPath, hostsPath := filepath.Join(dir, "haproxy.cfg"), filepath.Join(dir, "notes"), filepath.Join(dir, "hosts")
	edit := func() {
		raw, err := os.ReadFile(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(string(raw), "127.0.0.1:16443", "127.0.0.1:9999", 1)
		if edited == string(raw) {
			t.Fatalf("the rendered configuration does not bind 127.0.0.1:16443:\n%s", raw)
		}
		if err := os.WriteFile(cfgPath, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(notesPath, []byte("secret by hand\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		raw, err = os.ReadFile(hostsPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hostsPath, []byte(strings.Replace(string(raw), "10.0.0.100 api", "10.6.6.6 api", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		recorder.reset()
	}
	lbID := fmt.Sprintf("%s:%s", s.Address(), cfgPath)
	notesID := fmt.Sprintf("%s:%s", s.Address(), notesPath)
	hostsID := fmt.Sprintf("%s:%s", s.Address(), hostsPath)
	shown := planCheckFunc(func() error {
		found := map[string]string{}
		for _, d := range recorder.take() {
			if d.Severity == tfprotov6.DiagnosticSeverityWarning {
				found[d.Summary] = d.Detail
			}
		}
		lb, ok := found["Changed Outside Terraform: "+lbID]
		if !ok {
			return fmt.Errorf("no drift warning names %s: %q", lbID, found)
		}
		if !regexp.MustCompile(`(?m)^\s*- \s*bind 127\.0\.0\.1:16443\n\s*\+ \s*bind 127\.0\.0\.1:9999$`).MatchString(lb) {
			return fmt.Errorf("the drift warning does not show the changed line:\n%s", lb)
		}
		hosts := found["Changed Outside Terraform: "+hostsID]
		if !regexp.MustCompile(`the block "entries" changed:\n\s*- \s*10\.0\.0\.100 api\.k8s\.example\.com\n\s*\+ \s*10\.6\.6\.6 api\.k8s\.example\.com$`).MatchString(hosts) {
			return fmt.Errorf("the hosts block's drift warning does not show the changed line:\n%s", hosts)
		}
		notes, ok := found["Changed Outside Terraform: "+notesID]
		if !ok || strings.Contains(notes, "secret") {
			return fmt.Errorf("the kha_file's drift warning is missing or shows its content: %q", notes)
		}
		return nil
	})
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		Steps: []resource.TestStep{
			{ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars},
			{
				PreConfig:       edit,
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{shown,
					plancheck.ExpectResourceAction("kha_haproxy_config.lb", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("kha_hosts_entries.api", plancheck.ResourceActionUpdate),
				}},
			},
		},
	}))
}
