package provider

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// hostPromise checks that an apply does on the hosts what its plan said.
// Its plan check (Planned, a PreApply check) reads, for each resource it
// watches, whether the plan changes the host, and what the host's file
// holds before the apply; its Check (Kept) then finds the file changed
// exactly where the plan said so. A plan changes the host where it
// creates the resource, or plans remote_sha256 other than the prior
// state's (unknown included), or plans a certificate's not_after unknown
// (a re-issue).
type hostPromise struct {
	files   map[string]string // resource address -> the file on the test host
	planned map[string]bool
	before  map[string][]byte
}

// promiseOn watches the files, by resource address.
func promiseOn(files map[string]string) *hostPromise { return &hostPromise{files: files} }

// Planned is the plan check that reads the plan and the files.
func (p *hostPromise) Planned() plancheck.PlanCheck { return promisePlanCheck{p} }

type promisePlanCheck struct{ p *hostPromise }

func (c promisePlanCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	p := c.p
	p.planned, p.before = map[string]bool{}, map[string][]byte{}
	for _, rc := range req.Plan.ResourceChanges {
		if _, watched := p.files[rc.Address]; watched {
			p.planned[rc.Address] = changesHost(rc.Change)
		}
	}
	for address, file := range p.files {
		if _, ok := p.planned[address]; !ok {
			resp.Error = fmt.Errorf("the plan has no %s", address)
			return
		}
		p.before[address], _ = os.ReadFile(file) // a missing file reads as empty
	}
}

// changesHost says whether a planned change changes the host.
func changesHost(ch *tfjson.Change) bool {
	if ch.Actions.NoOp() || ch.Actions.Read() {
		return false
	}
	if ch.Actions.Create() || ch.Actions.Replace() {
		return true
	}
	before, _ := ch.Before.(map[string]any)
	after, _ := ch.After.(map[string]any)
	unknown, _ := ch.AfterUnknown.(map[string]any)
	return unknown["remote_sha256"] == true || unknown["not_after"] == true || before["remote_sha256"] != after["remote_sha256"]
}

// Kept finds each file changed where the plan said the host changes, and
// unchanged elsewhere.
func (p *hostPromise) Kept() func(*terraform.State) error {
	return func(*terraform.State) error {
		var broken []string
		for address, file := range p.files {
			after, _ := os.ReadFile(file)
			if changed := !bytes.Equal(p.before[address], after); changed != p.planned[address] {
				broken = append(broken, fmt.Sprintf("%s: the plan changed the host: %v; the apply changed %s: %v", address,
					p.planned[address], file, changed))
			}
		}
		sort.Strings(broken)
		if len(broken) > 0 {
			return fmt.Errorf("the apply did not do what the plan said:\n%s", strings.Join(broken, "\n"))
		}
		return nil
	}
}
