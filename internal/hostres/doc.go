// Package hostres is the host lifecycle: the one plan, apply, refresh,
// destroy and import that every resource keeping files on a host goes
// through (kha_file, the load balancers, keepalived, kube-vip, etcd
// access, hosts entries, kubeconfigs, serving certificates, handovers).
// A resource in internal/provider embeds a Resource with its model; the
// model renders files, and this package does everything that touches the
// host through the SSH engine (internal/remote).
//
// # The contract
//
// hooks.go is the whole contract, in the order the lifecycle calls it.
// Every model gives Model: Fields (the attributes every host resource has,
// by embedding Common), Render, ConflictName and PathSettings. The rest
// are optional hooks (PlanChecker, ChangeChecker, HandingOver, DestroyLeaver,
// ConflictMover, HostReader, HostWatcher, DriftShower); a resource file
// asserts the ones its model implements (var _ hostres.HostReader =
// (*kubeconfigServerModel)(nil)), so a changed signature fails to compile
// instead of turning a hook off.
//
// # The host
//
// The lifecycle and the hooks reach a host through Host: the methods of
// remote.Client they use. ProviderData's dialer gets one for a resource's
// connection, from the run's SSH pool; a test hands the lifecycle hosts
// of its own (memhost_test.go), to run it without sshd.
//
// # One run per request
//
//   - Plan (plan.go, planRun): render from the configuration alone, so
//     sha256 and everything rendered is known at plan time; reserve the
//     host's files against the walk's other resources (reservations.go);
//     plan id, destroy_actions, trusted_host_key and remote_sha256 (drift
//     found by the last refresh shows as a change, with a warning).
//   - Apply (apply.go, applyRun): wait for the rollout's turn
//     (rollout.go), connect with a verified host key (connection.go), let
//     a HostReader read the host, put each file with the resource's claim
//     (remote.Claim: the host saves what it replaces; ownership.go) or a
//     handover's interim configuration (handover.go), roll back on
//     failure, remove what the plan no longer has.
//   - Refresh (read.go): read the files' digests; drift, an unreachable
//     host or write-only credentials are remembered, not errors. A
//     DriftShower's changed lines come from drift_lines.go.
//   - Destroy (destroy.go): put back or delete each file as
//     destroy_actions says, last first; on_destroy = "keep" drops only
//     kha's records.
//   - Import (import.go): connect, record the file found, and let the
//     next apply adopt it.
//
// # What each request decodes
//
// Decoding a whole model (Get) or encoding one (Set) walks every attribute
// of the schema, and it is most of the provider's CPU per host. A request
// decodes the plan or the state it works on, and sets the one it answers:
// the configuration is read as configOf says (the plan's values with the
// configuration's `ssh`, on_destroy and write-only attributes, each read
// alone), and a plan reads the prior state's few attributes it needs
// (priorFields) unless a ChangeChecker compares whole models. Apply
// decodes the prior state too: it renders what the update removes.
//
// # Private state
//
// Beside the state, each resource keeps one privateRecord in Terraform's
// private data under the key "kha" (private_record.go), read once and
// written once per request: its ownership claim, the last refresh's drift
// or unreachable host, and a pending handover. Its version field refuses
// a record written by a newer provider; the keys of earlier builds are
// read as they are and replaced by the first write.
//
// # A new host resource
//
// Write its model (embedding Common) with Fields, Render, ConflictName
// and PathSettings; build its schema with WithHostAttributes; embed
// Resource[yourModel, *yourModel] in the resource type; implement and
// assert the hooks it needs. ProviderData is what the provider's
// Configure gives it: the run's SSH pool and its dialer, default_ssh, the
// reservations and the rollout coordinators.
package hostres
