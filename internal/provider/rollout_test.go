package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// Bad values of rollout and rollout_group fail the plan at their path
// (testdata/TestRollout_planTimeValidation/<case>); good ones plan.
func TestRollout_planTimeValidation(t *testing.T) {
	t.Parallel()
	expectPlanErrors(t, map[string]string{
		"batch_zero":      `Attribute rollout\.batch value must be at least 1, got: 0`,
		"canary_negative": `Attribute rollout\.canary value must be at least 0, got: -1`,
		"group_batch":     `Attribute rollout\.groups\["lb"\]\.batch value must be at\s+least 1`,
		"group_name":      `Attribute rollout\.groups\[""\] string length must be at least 1`,
		"rollout_group":   `Attribute rollout_group string length must be at least 1`,
	}, nil)
	unitTest(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{ConfigDirectory: config.StaticDirectory("testdata/TestRollout_planTimeValidation/valid"),
			PlanOnly: true, ExpectNonEmptyPlan: true}},
	}))
}

// A change of rollout_group alone is the state's: the apply neither
// contacts the host (stopped here) nor waits for a rollout.
func TestAccRollout_groupChangeLeavesTheHostAlone(t *testing.T) {
	t.Parallel()
	s := testhost.Start(t, testhost.Options{})
	target := filepath.Join(t.TempDir(), "lb.cfg")
	cfg := func(group, onDestroy string) string {
		return fmt.Sprintf(`
provider "kha" {
  default_ssh = { private_key = %q, known_hosts = %q, refresh_timeout = "1s" }
  rollout     = { canary = 1, batch = 1 }
}
resource "kha_file" "test" {
  path          = %q
  content       = "frontend kube\n"
  ssh           = { host = %q, port = %d }
  rollout_group = %s
  on_destroy    = %q
}`, s.ClientKey.PEM, s.KnownHosts(), target, s.Host, s.Port, group, onDestroy)
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: cfg("null", "restore"), Check: fileIs(target, "frontend kube\n")},
			{
				PreConfig: s.Stop,
				Config:    cfg(`"lb"`, "restore"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kha_file.test", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kha_file.test", tfjsonpath.New("rollout_group"), knownvalue.StringExact("lb")),
				},
			},
			// The host is gone: let it go without contacting it.
			{Config: cfg(`"lb"`, "keep")},
		},
	}))
}

// A host whose link goes dead in the middle of its upload holds the others
// of its rollout group no longer than its own update timeout (plus the
// few seconds the pool gives a silent connection): their timeouts count
// from their turn, so with stop_on_failure = false they then change their
// hosts, and only the dead host's resource fails, its host unchanged.
func TestAccRollout_deadLinkHoldsNoOtherHost(t *testing.T) {
	t.Parallel()
	const n, timeout, grace = 3, 10 * time.Second, 5 * time.Second
	servers, relays, dirs := make([]*testhost.Server, n), make([]*testhost.Relay, n), make([]string, n)
	knownHosts, key := "", testhost.NewKey(t)
	hostVars := make([]config.Variable, n)
	for i := range n {
		servers[i] = testhost.Start(t, testhost.Options{AuthorizedKeys: []string{key.Public()}})
		relays[i] = testhost.Delay(t, servers[i].Address(), 0)
		dirs[i] = t.TempDir()
		knownHosts += relays[i].KnownHostsName() + " " + servers[i].HostKey.Public() + "\n"
		hostVars[i] = config.ObjectVariable(map[string]config.Variable{
			"port": config.IntegerVariable(relays[i].Port), "dir": config.StringVariable(dirs[i])})
	}
	vars := func(content string) config.Variables {
		return config.Variables{"private_key": config.StringVariable(key.PEM),
			"known_hosts": config.StringVariable(knownHosts), "hosts": config.ListVariable(hostVars...),
			"content": config.StringVariable(content)}
	}
	big := strings.Repeat("x", 4<<20)
	dead, cut := -1, time.Time{}
	cutTheFirstUpload := func() {
		go func() {
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
				for i, dir := range dirs {
					if testhost.UploadStarted(dir, "lb.cfg") {
						if err := relays[i].SmallSendBuffers(); err != nil {
							t.Error(err)
						}
						relays[i].BlackHole()
						dead, cut = i, time.Now()
						return
					}
				}
			}
		}()
	}
	resource.Test(t, stepProviders(resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars("v1\n")},
			{
				PreConfig:       cutTheFirstUpload,
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(big),
				ExpectError: regexp.MustCompile(`(?s)the\s+operation\s+ended\s+before\s+the\s+new\s+file\s+was\s+put\s+in\s+place;\s+the\s+host\s+is\s+unchanged`),
			},
			{
				PreConfig: func() {
					if dead < 0 {
						t.Fatal("no upload started")
					}
					relays[dead].Heal()
					if err := fileIs(filepath.Join(dirs[dead], "lb.cfg"), "v1\n")(nil); err != nil {
						t.Errorf("the host whose link died: %v", err)
					}
					first := time.Time{}
					for i, dir := range dirs {
						if i == dead {
							continue
						}
						info, err := os.Stat(filepath.Join(dir, "lb.cfg"))
						if err != nil || info.Size() != int64(len(big)) {
							t.Fatalf("host %d did not get the change while the dead host's turn ended: %v", i, err)
						}
						if first.IsZero() || info.ModTime().Before(first) {
							first = info.ModTime()
						}
					}
					// The next host's own turn (connect, upload, rename) gets a
					// few seconds more on a loaded machine.
					if held := first.Sub(cut); held > timeout+grace+5*time.Second {
						t.Errorf("the next host's change was in place %s after the link died, past the dead host's %s timeout and %s", held, timeout, grace)
					} else {
						t.Logf("the next host's change was in place %s after the link died (update timeout %s)", held.Round(time.Millisecond), timeout)
					}
				},
				ConfigDirectory: config.TestNameDirectory(), ConfigVariables: vars(big),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					onlyUpdated(func() string { return fmt.Sprintf("kha_file.lb[%d]", dead) }),
				}},
			},
		},
	}))
}

// onlyUpdated checks that the plan updates the resource at address() and
// leaves every other resource as it is.
type onlyUpdated func() string

func (address onlyUpdated) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	want := address()
	for _, rc := range req.Plan.ResourceChanges {
		updates := rc.Change.Actions.Update()
		if updates != (rc.Address == want) || !updates && !rc.Change.Actions.NoOp() {
			resp.Error = fmt.Errorf("the plan has %s for %s; it should update %s alone", rc.Change.Actions, rc.Address, want)
			return
		}
	}
}
