package hostres

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"golang.org/x/crypto/ssh"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// TrustedKeyOf is the key the client's host presented, to record on
// first use. A connection lost (and not re-established) since has none:
// an error, never a key recorded from nothing.
func TrustedKeyOf(client Host) (types.String, diag.Diagnostics) {
	var diags diag.Diagnostics
	key := client.HostKey()
	if key == nil {
		diags.AddAttributeError(path.Root("ssh"), "Host Key Not Recorded", fmt.Sprintf("the connection to %s was lost before "+
			"its host key could be recorded (ssh.insecure_trust_on_first_use); nothing was recorded: run the command again",
			client.Address()))
		return types.StringUnknown(), diags
	}
	return types.StringValue(strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))), diags
}

// observation is what a read of the host found.
type observation struct {
	digest types.String // remote_sha256
	drift  []string
	client Host // the connection it read over
	// unreachable is why the host did not answer; nothing was read.
	unreachable error
}

// observe connects to read the files' digests and says how the host
// differs; with show, the drift of a whole file's content lists the
// changed lines (changedLines). applied is the digest of what the state
// says was put there ("" for none to judge by): a host that has exactly
// that has no drift. A host that does not answer is a warning
// (unreachable).
func (r *Resource[M, P]) observe(ctx context.Context, m ResolvedSSH, id string, files []remote.Item, applied string, show bool) (observation, diag.Diagnostics) {
	var diags diag.Diagnostics
	o := observation{digest: types.StringNull()}
	client, err := r.dial(ctx, m, ToRead)
	if remote.Unreachable(err) {
		o.unreachable = err
		return o, Unreachable(id, err)
	}
	if err != nil {
		diags.AddAttributeError(path.Root("ssh"), ConnectSummary(err), err.Error())
		return o, diags
	}
	o.client = client
	seen, err := client.Observe(ctx, files)
	if remote.Unreachable(err) { // it stopped answering on a connection made while it still did
		o.unreachable = err
		return o, Unreachable(id, err)
	}
	if err != nil {
		diags.AddError("Reading Remote Files Failed", err.Error())
		return o, diags
	}
	asApplied := hasApplied(files, seen, applied)
	digests := make([]string, len(files))
	for i, f := range files {
		digests[i] = seen[i].SHA256
		if n := seen[i].Notice; n.Detail != "" {
			diags.AddWarning(n.Summary+": "+id, n.Detail)
		}
		if asApplied {
			continue
		}
		if d := f.Drift(seen[i]); d != "" {
			if show {
				d += changedText(ctx, client, f, seen[i])
			}
			o.drift = append(o.drift, remote.Printable(d))      // the host's text, shown as text
			if seen[i].Exists && seen[i].SHA256 == f.Digest() { // the content is right, its metadata is not
				digests[i] = remote.SHA256([]byte(d))
			}
		}
	}
	if len(files) != 1 || seen[0].Exists { // a single missing file: null
		o.digest = types.StringValue(filesDigest(files, digests))
	}
	return o, diags
}

// hasApplied says whether the host has exactly the contents applied (their
// digest, as sha256 counts it) where this build renders the state
// otherwise than the one that applied it (an upgrade): no change by hand,
// and the plan updates the files to the new render.
func hasApplied(files []remote.Item, seen []remote.Observed, applied string) bool {
	if applied == "" || applied == DesiredDigest(files) {
		return false
	}
	contents := make([]string, len(files))
	for i := range files {
		if !seen[i].Exists {
			return false
		}
		contents[i] = seen[i].SHA256
	}
	return filesDigest(files, contents) == applied
}

// changedText is what a drift warning adds of an item whose content
// changed: the changed lines of a whole file or a block, indented under
// the drift's line; "" for other items and when nothing can be compared.
func changedText(ctx context.Context, client Host, f remote.Item, seen remote.Observed) string {
	if !seen.Exists || seen.SHA256 == f.Digest() {
		return ""
	}
	changed := ""
	switch it := f.(type) {
	case remote.File:
		if it.SHA256 == "" {
			changed = changedLines(ctx, client, it)
		}
	case remote.Block:
		if it.SHA256 == "" {
			changed = changedBlockLines(it, seen.State)
		}
	}
	if changed == "" {
		return ""
	}
	return ":\n    " + strings.ReplaceAll(changed, "\n", "\n    ")
}

func (r *Resource[M, P]) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state M
	out, m, rec, ok := r.loadState(ctx, req.State, req.Private, &state, &resp.Diagnostics)
	if !ok {
		return
	}
	h := P(&state).Fields()
	timeout, d := h.Timeouts.Read(ctx, DefaultReadTimeout)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := m.Config.Validate(); err != nil || len(m.Unknown) > 0 {
		// Write-only credentials are not stored: the plan looks instead.
		tflog.Info(ctx, "refresh cannot reach the host without the configuration's credentials; the plan will look", nil)
		rec.Unobserved = true
		resp.Diagnostics.Append(rec.write(ctx, resp.Private)...)
		return
	}
	o, d := r.observe(ctx, m, h.ID.ValueString(), out.Files, h.SHA256.ValueString(), showsDrift(P(&state)))
	resp.Diagnostics.Append(d...)
	if o.unreachable != nil {
		// The prior state and what it found stay; a destroy plan fails.
		rec.Unreachable = o.unreachable.Error()
		resp.Diagnostics.Append(rec.write(ctx, resp.Private)...)
		return
	}
	if !resp.Diagnostics.HasError() {
		r.recordObservation(ctx, m, &state, &rec, &o, resp)
	}
}

// recordObservation keeps what a refresh that reached the host found: the
// host key on first use, an interim configuration a handover left, what a
// HostWatcher sees, the digest and the drift.
func (r *Resource[M, P]) recordObservation(ctx context.Context, m ResolvedSSH, state *M, rec *privateRecord, o *observation,
	resp *resource.ReadResponse) {
	h := P(state).Fields()
	if m.Config.TrustsOnFirstUse() && h.TrustedHostKey.IsNull() {
		// Trust on first use turned on for an existing resource, or an
		// import: the connection that read the files records the key.
		var d diag.Diagnostics
		h.TrustedHostKey, d = TrustedKeyOf(o.client)
		if resp.Diagnostics.Append(d...); d.HasError() {
			return
		}
	}
	acceptInterim(ctx, rec, h, o)
	if watcher, ok := any(P(state)).(HostWatcher); ok {
		resp.Diagnostics.Append(watcher.WatchHost(ctx, o.client, h.ID.ValueString())...)
	}
	h.RemoteSHA256 = o.digest
	rec.observed(o.drift)
	resp.Diagnostics.Append(rec.write(ctx, resp.Private)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
}
