package provider

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// vipCheckTest is the first part of a VIP check's acceptance test, the
// same for every resource that claims a VIP: the node, a host with an sshd
// (selfNS, at selfIP), and another node (otherNS, at otherIP) share a
// segment with a stranger; vip is free on it.
type vipCheckTest struct {
	host                        *testhost.NetHost
	sshd                        *testhost.Server
	seg                         *testhost.Segment
	selfNS, otherNS, strangerNS string
	selfIP, otherIP, vip        string
	// The caller's: the nodes' names, and the resource that claims vip.
	node, other string
	address     string // the resource's address
	vipAttr     string // the attribute that sets the VIP
	path        string // a file the apply writes
	config      string // the configuration that claims vip
}

// newVIPCheckTest makes the node, the other node and the stranger.
func newVIPCheckTest(t *testing.T) vipCheckTest {
	v := vipCheckTest{host: testhost.NewNetHost(t), seg: testhost.NewSegment(t)}
	v.sshd = testhost.Start(t, testhost.Options{NetNS: v.host.NS, ListenAddress: v.host.Addr})
	v.selfNS, v.selfIP = v.host.NS, v.seg.Join(t, v.host.NS)
	v.otherNS, v.otherIP = v.seg.NewMember(t)
	v.strangerNS, _ = v.seg.NewMember(t)
	v.vip = v.seg.Prefix() + "100"
	return v
}

// steps are, in order: a stranger holds vip, and the apply is refused on
// node with the stranger's MAC address and other's beside it, before path
// is written. The stranger lets go and other holds vip, as in a running
// cluster: the apply goes through, and vip_holders is null until a
// refresh, which finds other. node takes vip too (a split brain): the next
// plan warns at the VIP's attribute, saying splitSays too, and plans
// vip_holders anew. Both let go: the next plan says no node holds it, and
// plans vip_holders anew. The test goes on with nobody holding vip.
func (v vipCheckTest) steps(t *testing.T, recorder *planRecorder, splitSays ...string) []resource.TestStep {
	var doubled time.Time
	holders := tfjsonpath.New("vip_holders")
	return []resource.TestStep{
		{
			PreConfig: func() { v.seg.Hold(t, v.strangerNS, v.vip) },
			Config:    v.config,
			ExpectError: regexp.MustCompile(`(?s)VIP Already in Use.*on ` + v.node + `,\s+` + regexp.QuoteMeta(v.vip) +
				`\s+is\s+answered\s+by\s+"([0-9a-f]{2}:){5}[0-9a-f]{2}",\s+which\s+is\s+none\s+of\s+the\s+nodes\s+of\s+` + "`nodes`" +
				`\s+\(` + v.other + `\s+is`),
		},
		{
			PreConfig: func() {
				if _, err := os.Stat(v.path); !os.IsNotExist(err) {
					t.Errorf("the refused apply wrote %s: %v", v.path, err)
				}
				v.seg.Release(t, v.strangerNS, v.vip)
				v.seg.Hold(t, v.otherNS, v.vip)
			},
			Config:            v.config,
			ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(v.address, holders, knownvalue.Null())},
		},
		{
			RefreshState: true,
			Check: resource.ComposeTestCheckFunc(resource.TestCheckResourceAttr(v.address, "vip_holders.#", "1"),
				resource.TestCheckResourceAttr(v.address, "vip_holders.0", v.other)),
		},
		{
			PreConfig: func() {
				recorder.reset()
				v.seg.Hold(t, v.selfNS, v.vip)
				doubled = time.Now()
			},
			Config: v.config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				planCheckFunc(func() error {
					t.Logf("the plan reported the double holder %d ms after it began", time.Since(doubled).Milliseconds())
					return nil
				}),
				expectWarnings(recorder, map[string][]string{v.vipAttr: append([]string{"VIP Held by More Than One Host",
					"is held by " + v.node + " and " + v.other}, splitSays...)}),
				plancheck.ExpectResourceAction(v.address, plancheck.ResourceActionUpdate),
				plancheck.ExpectKnownValue(v.address, holders, knownvalue.Null()),
			}},
			ExpectNonEmptyPlan: true,
		},
		{
			PreConfig: func() {
				recorder.reset()
				v.seg.Release(t, v.selfNS, v.vip)
				v.seg.Release(t, v.otherNS, v.vip)
			},
			Config: v.config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectWarnings(recorder, map[string][]string{v.vipAttr: {"VIP Held by No Node", "nobody answers for " + v.vip}}),
				plancheck.ExpectResourceAction(v.address, plancheck.ResourceActionUpdate),
				plancheck.ExpectKnownValue(v.address, holders, knownvalue.Null()),
			}},
			ExpectNonEmptyPlan: true,
		},
	}
}

// neighbourSteps follow steps (config applied, nobody holding vip): a
// neighbour on the link that answers for vip cannot turn the check into
// an outage. node holds vip and the neighbour adds it to its interface
// too: the plan warns of both holders, and its apply, which leaves the
// claim as it is, goes through with a warning that names check_vip =
// false, while changed, a configuration that claims vip otherwise, is
// refused. node lets vip go and the neighbour answers for other's address
// as well: the plan and the apply of changed warn at nodes[1].ip. The
// neighbour takes other's MAC address and answers for vip with it while
// node holds vip: the plan warns of other holding it too, as node hears
// it, and the apply goes through without a warning (the caller checks
// that it does not reload). Both let go, and the last apply puts config
// back in place.
func (v vipCheckTest) neighbourSteps(t *testing.T, recorder *planRecorder, changed string) []resource.TestStep {
	splitWith := func(holder string) plancheck.PlanCheck {
		return expectWarnings(recorder, map[string][]string{v.vipAttr: {"VIP Held by More Than One Host", "is held by " + v.node + " and " + holder}})
	}
	return []resource.TestStep{
		{
			PreConfig: func() {
				recorder.reset()
				v.seg.Hold(t, v.selfNS, v.vip)
				v.seg.Hold(t, v.strangerNS, v.vip)
			},
			Config: v.config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				splitWith(`"` + v.seg.MAC(t, v.strangerNS) + `"`),
				plancheck.ExpectResourceAction(v.address, plancheck.ResourceActionUpdate),
			}},
			Check: expectAppliedWarnings(recorder, map[string][]string{v.vipAttr: {"VIP Already in Use",
				"is answered by \"" + v.seg.MAC(t, v.strangerNS) + "\"", "the apply leaves it as it is", "check_vip = false"}}),
			ExpectNonEmptyPlan: true,
		},
		{
			Config: changed,
			ExpectError: regexp.MustCompile(`(?s)VIP Already in Use.*on ` + v.node + `,\s+` + regexp.QuoteMeta(v.vip) +
				`\s+is\s+answered\s+by.*nothing\s+was\s+changed\s+on\s+this\s+node.*check_vip\s+=\s+false`),
		},
		{
			PreConfig: func() {
				recorder.reset()
				v.seg.Release(t, v.selfNS, v.vip)
				v.seg.Hold(t, v.strangerNS, v.otherIP)
			},
			Config: changed,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectWarnings(recorder, map[string][]string{"nodes[1].ip": {"Node Address Answered by More Than One Host",
					v.other + "'s address " + v.otherIP + " is answered by", `"` + v.seg.MAC(t, v.strangerNS) + `"`}}),
			}},
			Check: expectAppliedWarnings(recorder, map[string][]string{"nodes[1].ip": {"Node Address Answered by More Than One Host"}}),
		},
		{
			PreConfig: func() {
				recorder.reset()
				v.seg.Release(t, v.strangerNS, v.vip)
				v.seg.Release(t, v.strangerNS, v.otherIP)
				v.seg.SetMAC(t, v.strangerNS, v.seg.MAC(t, v.otherNS))
				v.seg.Hold(t, v.strangerNS, v.vip)
				v.seg.Hold(t, v.selfNS, v.vip)
			},
			Config: changed,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				splitWith(v.other), plancheck.ExpectResourceAction(v.address, plancheck.ResourceActionUpdate),
			}},
			Check:              expectAppliedWarnings(recorder, nil),
			ExpectNonEmptyPlan: true,
		},
		{
			PreConfig: func() {
				v.seg.Release(t, v.strangerNS, v.vip)
				v.seg.Release(t, v.selfNS, v.vip)
			},
			Config:             v.config,
			ExpectNonEmptyPlan: true,
		},
	}
}

// expectAppliedWarnings checks the applies' diagnostics since the
// recorder's reset: exactly one warning at each path of want, mentioning
// its substrings, and nothing else.
func expectAppliedWarnings(recorder *planRecorder, want map[string][]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := map[string][]string{}
		for _, d := range recorder.takeApplied() {
			p := diagnosticPath(d)
			if d.Severity != tfprotov6.DiagnosticSeverityWarning {
				return fmt.Errorf("not a warning: %s: %s: %s", p, d.Summary, d.Detail)
			}
			got[p] = append(got[p], d.Summary+": "+d.Detail)
		}
		if len(got) != len(want) {
			return fmt.Errorf("the apply warned %v, want warnings at %d paths: %v", got, len(want), want)
		}
		for p, substrings := range want {
			if len(got[p]) != 1 {
				return fmt.Errorf("the apply warned %q at %s, want one warning", got[p], p)
			}
			for _, s := range substrings {
				if !strings.Contains(got[p][0], s) {
					return fmt.Errorf("the apply's warning at %s does not say %q: %s", p, s, got[p][0])
				}
			}
		}
		return nil
	}
}
