package hostres

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// This file is the contract between the host lifecycle (Resource)
// and a resource's model: what every model gives, then each optional
// hook in the order the lifecycle calls it. A model's resource file
// asserts the hooks it implements (var _ HostReader = ...), so a changed
// signature fails to compile instead of turning the hook off.

// Model is what every resource's model gives the lifecycle.
type Model[M any] interface {
	*M
	// Fields are the attributes every host resource has.
	Fields() *Common
	// Render returns the files to keep, filling the attributes rendering
	// computes. It reads the plan (or the state); config carries the
	// write-only values and is nil when rendering a state. Attributes
	// that are optional and computed without a default read as unset
	// when unknown: the plan leaves them unknown exactly when the
	// configuration does not set them.
	Render(config *M) (Rendered, diag.Diagnostics)
	reserver
}

// reserver is a model as a plan's reservations of a host's files see it
// (reservations.go).
type reserver interface {
	// ConflictName names it in the plan error of another resource that
	// would manage one of its files: its type and the values that tell
	// it apart from others of its type, e.g. `kha_haproxy_config with
	// role = "external" listening on 10.0.0.100:8443`.
	ConflictName() string
	// PathSettings are the attributes that set its files' paths; a
	// conflict's error points at the one that sets the file.
	PathSettings() []PathSetting
}

// PathSetting is an attribute that sets the path of a file a model keeps.
type PathSetting struct {
	Attribute path.Path
	Value     types.String
}

// Plan (ModifyPlan), in this order.

// PlanChecker is a model whose plans warn of what its configuration does
// not make invalid (shown in every plan, not again at apply), and may set
// computed attributes its configuration alone decides.
type PlanChecker interface {
	CheckPlan() diag.Diagnostics
}

// ChangeChecker is a model whose plans fail on what the change from the
// prior state (nil on create) would break. Only for these models does a
// plan decode the whole prior state.
type ChangeChecker[M any] interface {
	CheckChange(prior *M) diag.Diagnostics
}

// HandingOver is a model that can hand over (handover.go): plan sets its
// handover_sha256, apply puts an interim configuration in place while its
// places move, destroy removes its record.
type HandingOver interface {
	// HandoverOn says whether an apply that moves it hands over.
	HandoverOn() bool
	// Places are where it serves, as a handover names them:
	// "address:port" of a listener, "address/prefix" of a VIP.
	Places() []string
	// RenderServing renders its files with extra places served beside its
	// own; it leaves the model as it was.
	RenderServing(extra []string) (Rendered, diag.Diagnostics)
	// HandoverPath is the configuration file that changes.
	HandoverPath() string
	// SetHandoverSHA256 sets handover_sha256.
	SetHandoverSHA256(types.String)
}

// DestroyLeaver is a model whose destroy always leaves the host as it is
// (on_destroy is always keep).
type DestroyLeaver interface{ LeavesOnDestroy() }

// ConflictMover is a model that says how it gives up the file that attr sets
// better than "set <attr> to another file", and which documentation
// shows it ("" for none).
type ConflictMover interface {
	ConflictMove(attr string) (move, see string)
}

// Apply (Create, Update) and destroy (Delete).

// HostReader is a model that reads its host before the lifecycle changes
// it (apply and destroy), and renders again from what it read: what to
// record of what was there, which steps the change needs, and, for a
// destroy, what cannot be given back.
type HostReader interface {
	ReadHost(ctx context.Context, c Host, destroying bool) error
}

// Refresh (Read).

// HostWatcher is a model that looks at its host at every refresh beyond
// its files, on the connection that read them, and keeps what it saw in
// its state; what is wrong there comes back as warnings, whose summaries
// end in id.
type HostWatcher interface {
	WatchHost(ctx context.Context, c Host, id string) diag.Diagnostics
}

// AppliedWatcher is a model whose state holds what only the apply makes
// (a certificate's end): once its files are in place, it looks at them on
// the connection that put them and fills in what the plan left unknown.
// c is nil where the apply did not reach the host (no ssh, a change of
// the state alone, a failure): what is unknown is then null.
type AppliedWatcher interface {
	WatchApplied(ctx context.Context, c Host) diag.Diagnostics
}

// DriftShower is a model whose files hold nothing secret: a refresh that
// finds one of them changed by hand reads it back and shows the changed
// lines in the drift warning. kha_file is not one (its content may come
// from a sensitive value, which a provider cannot tell), nor are
// kubeconfigs and keepalived's configuration (its auth_pass).
type DriftShower interface{ ShowsDrift() bool }
