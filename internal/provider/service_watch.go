package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

// serviceWatch is what a model that configures a service keeps of
// whether it runs: kha configured it, so a stopped one shows in the plan
// and the apply starts it (with its reload command) as it would reload it.
type serviceWatch struct {
	RunningCommand types.String `tfsdk:"running_command"`
	ServiceRunning types.Bool   `tfsdk:"service_running"`
	// stopped is what the node said before an apply (readService).
	stopped bool
}

// watchedService is a model whose service kha watches.
type watchedService interface {
	// service says how to tell whether it runs; false when nothing can
	// (a static pod is the kubelet's, a reload command of the user's
	// names no unit kha knows).
	service() (remote.Service, bool)
	// serviceText is the service as the warning names it, the warning's
	// summary, and the reload command that starts it.
	serviceText() (name, summary, reload string)
	watchedService() *serviceWatch
}

func (w *serviceWatch) watchedService() *serviceWatch { return w }

// serviceOf is the Service of a service kha configured with systemd:
// running_command, else the process pidFile names, else the unit that
// the default reload command restarts (reload is the configured one).
func (w *serviceWatch) serviceOf(unit, process, pidFile, reload, defaultReload string) (remote.Service, bool) {
	switch {
	case known(w.RunningCommand) && w.RunningCommand.ValueString() != "":
		return remote.Service{Command: w.RunningCommand.ValueString()}, true
	case pidFile != "":
		return remote.Service{PIDFile: pidFile, Process: process}, true
	case reload == defaultReload:
		return remote.Service{Unit: unit}, true
	}
	return remote.Service{}, false
}

// planUnwatched plans service_running null where nothing can tell whether
// the service runs (a static pod, a reload command of the user's): no
// refresh or apply fills it, so no plan shows it known after apply.
func planUnwatched(m watchedService) {
	if _, ok := m.service(); !ok {
		m.watchedService().ServiceRunning = types.BoolNull()
	}
}

// readService is a watchedService's HostReader: before an apply it asks
// whether the service runs, so that the apply starts one that stopped.
func readService(ctx context.Context, c hostres.Host, destroying bool, m watchedService) error {
	s, ok := m.service()
	if destroying || !ok {
		return nil
	}
	state, err := c.ServiceState(ctx, s)
	if err != nil {
		return err
	}
	m.watchedService().stopped = state.Known && !state.Running
	return nil
}

// watchService is a watchedService's HostWatcher: at every refresh it asks
// whether the service runs (service_running), and warns when it does not.
func watchService(ctx context.Context, c hostres.Host, id string, m watchedService) diag.Diagnostics {
	var diags diag.Diagnostics
	w := m.watchedService()
	w.ServiceRunning = types.BoolNull()
	s, ok := m.service()
	if !ok {
		return diags
	}
	state, err := c.ServiceState(ctx, s)
	if err != nil {
		diags.AddWarning("Service Not Checked: "+id, err.Error())
		return diags
	}
	if !state.Known {
		return diags
	}
	w.ServiceRunning = types.BoolValue(state.Running)
	if !state.Running {
		name, summary, reload := m.serviceText()
		diags.AddWarning(summary+": "+id, fmt.Sprintf("%s is not running on %s: %s. kha configured it there, so the apply "+
			"starts it with reload_command (`%s`), with its configuration as planned, and verifies it as after any change.",
			name, c.Address(), state.Why, reload))
	}
	return diags
}

// serviceApplied fills service_running after an apply that the plan left
// it unknown for, and warns when the reload command did not start it.
func serviceApplied(ctx context.Context, c hostres.Host, id string, m watchedService) diag.Diagnostics {
	w := m.watchedService()
	if !w.ServiceRunning.IsUnknown() {
		return nil
	}
	if c == nil {
		w.ServiceRunning = types.BoolNull()
		return nil
	}
	diags := watchService(ctx, c, id, m)
	if w.ServiceRunning.IsUnknown() {
		w.ServiceRunning = types.BoolNull()
	}
	return diags
}

// serviceRunningAttribute is service_running's schema; asked says what it
// is asked of.
func serviceRunningAttribute(what, asked string) schema.BoolAttribute {
	return schema.BoolAttribute{Computed: true, PlanModifiers: []planmodifier.Bool{serviceRunningPlan{}},
		MarkdownDescription: "Whether " + what + " ran at the last refresh (and after the last apply): kha configured it, so " +
			"a stopped one is a warning naming the host and why, and a change of this attribute in the plan; the apply " +
			"then runs `reload_command` though the configuration is unchanged, which starts it (`systemctl " +
			"reload-or-restart` does), and verifies it as after any change. " + asked + " Unlike kubespray, which starts " +
			"the service when its playbook runs and not after, kha notices a stopped one at every plan."}
}

// runningCommandAttribute is running_command's schema.
func runningCommandAttribute(what string) schema.StringAttribute {
	return schema.StringAttribute{Optional: true,
		MarkdownDescription: "A command that exits 0 on the host when " + what + " runs, for a service kha cannot ask " +
			"otherwise (a supervisor of your own; e.g. `pgrep -x haproxy`). Run as the connection's user (root with " +
			"`ssh.sudo`) at every refresh and before every apply; see `service_running`. Default: none."}
}

// serviceRunningPlan plans service_running: what the last refresh saw
// while the service ran or nothing told, unknown where it did not (the
// apply starts it and asks again) and for a create.
type serviceRunningPlan struct{}

func (serviceRunningPlan) Description(context.Context) string {
	return "keeps whether the service runs while it does; unknown where it does not, so the plan is not empty"
}

func (p serviceRunningPlan) MarkdownDescription(ctx context.Context) string {
	return p.Description(ctx)
}

func (serviceRunningPlan) PlanModifyBool(_ context.Context, req planmodifier.BoolRequest, resp *planmodifier.BoolResponse) {
	switch {
	case req.State.Raw.IsNull() || req.StateValue.Equal(types.BoolValue(false)):
		resp.PlanValue = types.BoolUnknown()
	default:
		resp.PlanValue = req.StateValue
	}
}
