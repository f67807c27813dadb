package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// TestAccHost_unreachableDuringRefresh: with one of two hosts stopped, the
// plan completes within seconds (ssh.refresh_timeout 2s, while ssh.timeout
// is 2m), with a warning that names the dead host and its resource; the
// live host's resource is refreshed (its drift is seen and named by host
// and path) and updated; the dead host's resource stays in the state as
// it was. Letting it go with keep_on_destroy then needs no -refresh=false,
// and every retry shows in the info log.
func TestAccHost_unreachableDuringRefresh(t *testing.T) {
	g := newGoneForGood(t)
	logFile := filepath.Join(t.TempDir(), "provider.log")
	t.Setenv("TF_LOG", "INFO")
	t.Setenv("TF_ACC_LOG_PATH", logFile)
	recorder := &planRecorder{}
	vars := func(liveContent string, keep bool) config.Variables {
		v := g.vars(liveContent)
		v["gone_keep"] = config.BoolVariable(keep)
		v["timeout"], v["refresh_timeout"] = config.StringVariable("2m"), config.StringVariable("2s")
		return v
	}
	const liveAddr, goneAddr = "kha_file.live", "kha_file.gone"
	goneID := fmt.Sprintf("127.0.0.1:%d:%s", g.gone.Port, g.gonePath)
	liveID := fmt.Sprintf("127.0.0.1:%d:%s", g.live.Port, g.livePath)
	var planStart time.Time
	warned := planCheckFunc(func() error {
		took := time.Since(planStart)
		var unreachable, drift int
		for _, d := range recorder.take() {
			switch {
			case d.Severity == tfprotov6.DiagnosticSeverityWarning && d.Summary == "Host Unreachable: "+g.gone.Address():
				if !strings.Contains(d.Detail, goneID) || !strings.Contains(d.Detail, "connection refused") ||
					!strings.Contains(d.Detail, "ssh.refresh_timeout 2s") {
					return fmt.Errorf("the warning does not name the resource %s, why and the budget: %s", goneID, d.Detail)
				}
				unreachable++
			case d.Severity == tfprotov6.DiagnosticSeverityWarning && d.Summary == "Changed Outside Terraform: "+liveID:
				drift++
			default:
				return fmt.Errorf("unexpected diagnostic: %v %s: %s", d.Severity, d.Summary, d.Detail)
			}
		}
		if unreachable == 0 || drift == 0 {
			return fmt.Errorf("warnings: %d naming the unreachable host %s, %d the drift on the live host %s", unreachable,
				g.gone.Address(), drift, liveID)
		}
		if took > 20*time.Second {
			return fmt.Errorf("the plan took %s: the refresh waited on the dead host longer than ssh.refresh_timeout", took)
		}
		return nil
	})
	dir := config.StaticDirectory(filepath.Join("testdata", "TestAccHost_unreachableDuringRefresh"))
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: recorder.factories(),
		CheckDestroy:             g.untouched(""),
		Steps: []resource.TestStep{
			{ConfigDirectory: dir, ConfigVariables: vars("live\n", false), Check: g.untouched("live\n")},
			{
				// The gone host stops; the live host's file is changed by hand.
				PreConfig: func() {
					g.gone.Stop()
					if err := os.WriteFile(g.livePath, []byte("by hand\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					recorder.reset()
					planStart = time.Now()
				},
				ConfigDirectory: dir, ConfigVariables: vars("live, changed\n", false),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{warned,
					plancheck.ExpectResourceAction(liveAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction(goneAddr, plancheck.ResourceActionNoop),
				}},
				Check: resource.ComposeTestCheckFunc(g.untouched("live, changed\n"),
					// no drift claimed on the host that was not read
					resource.TestCheckResourceAttrPair(goneAddr, "remote_sha256", goneAddr, "sha256")),
			},
			{
				// Let go of it: a change of keep_on_destroy alone contacts no
				// host, and destroy's refresh only warns.
				PreConfig:       func() { recorder.reset(); planStart = time.Now() },
				ConfigDirectory: dir, ConfigVariables: vars("live, changed\n", true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(goneAddr, plancheck.ResourceActionUpdate),
				}},
			},
		},
	}))
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	// One line per retry, with the host, the attempt, why and how long is left.
	line := regexp.MustCompile(`\[INFO\][^\n]*connecting failed; retrying[^\n]*` + regexp.QuoteMeta("host="+g.gone.Address()) + `[^\n]*`)
	retries := line.FindAllString(string(raw), -1)
	if len(retries) < 2 {
		t.Fatalf("the info log shows %d retries of %s", len(retries), g.gone.Address())
	}
	for _, field := range []string{`why="connection refused"`, `left=`, `attempt=`, `budget="ssh.refresh_timeout 2s"`} {
		if !strings.Contains(retries[0], field) {
			t.Errorf("the info log's retries have no %s: %s", field, retries[0])
		}
	}
}

// TestAccHost_droppingHostWarns: a host that drops every packet (a
// powered-off VM behind a router: no refusal, a dial waits until its
// timeout) is a warning for each of its ten resources, of two types, as
// a host that refuses is, and the plan goes on: whether the plan's
// process dials it anew, as the CLI's does, or finds a connection it
// made while the host still answered.
func TestAccHost_droppingHostWarns(t *testing.T) {
	t.Parallel()
	for name, factories := range map[string]func(*planRecorder) map[string]func() (tfprotov6.ProviderServer, error){
		"a new provider process":    (*planRecorder).processPerCommand,
		"a connection made earlier": (*planRecorder).factories,
	} {
		t.Run(name, func(t *testing.T) {
			net := testhost.NewNetHost(t)
			s := testhost.Start(t, testhost.Options{NetNS: net.NS, ListenAddress: net.Addr})
			recorder := &planRecorder{}
			const files = 9
			vars := config.Variables{"host": config.StringVariable(s.Host), "private_key": config.StringVariable(s.ClientKey.PEM),
				"known_hosts": config.StringVariable(s.KnownHosts()), "dir": config.StringVariable(t.TempDir()),
				"files": config.IntegerVariable(files)}
			var planStart time.Time
			warned := planCheckFunc(func() error {
				took := time.Since(planStart)
				warnings := map[string]int{}
				diags := recorder.take()
				for _, d := range diags {
					if d.Severity != tfprotov6.DiagnosticSeverityWarning || d.Summary != "Host Unreachable: "+s.Address() {
						return fmt.Errorf("unexpected diagnostic: %v %s: %s", d.Severity, d.Summary, d.Detail)
					}
					warnings[regexp.MustCompile(regexp.QuoteMeta(s.Address())+`:/\S+`).FindString(d.Detail)]++
				}
				if len(warnings) != files+1 {
					var all []string
					for _, d := range diags {
						all = append(all, d.Summary+": "+d.Detail)
					}
					return fmt.Errorf("warnings for %d resources, want %d:\n%s", len(warnings), files+1, strings.Join(all, "\n\n"))
				}
				// The host costs the plan its refresh_timeout (12 s) about
				// once, not once for each resource.
				if took > 45*time.Second {
					return fmt.Errorf("the plan took %s", took)
				}
				t.Logf("the plan with %d resources on a host that drops packets took %s", files+1, took.Round(100*time.Millisecond))
				return nil
			})
			dir := config.StaticDirectory(filepath.Join("testdata", "TestAccHost_droppingHost"))
			resource.Test(t, stepProviders(resource.TestCase{
				ProtoV6ProviderFactories: factories(recorder),
				Steps: []resource.TestStep{
					{ConfigDirectory: dir, ConfigVariables: vars},
					{
						PreConfig:       func() { net.Drop(t); recorder.reset(); planStart = time.Now() },
						ConfigDirectory: dir, ConfigVariables: vars, PlanOnly: true,
						ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{warned}},
					},
					{PreConfig: func() { net.Answer(t) }, ConfigDirectory: dir, ConfigVariables: vars, PlanOnly: true},
				},
			}))
		})
	}
}
