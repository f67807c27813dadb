package hostres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

func (r *Resource[M, P]) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state M
	out, m, rec, ok := r.loadState(ctx, req.State, req.Private, &state, &resp.Diagnostics)
	h, own := P(&state).Fields(), rec.Ownership
	if !ok {
		return
	}
	timeout, d := h.Timeouts.Delete(ctx, DefaultApplyTimeout)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if h.keeps() {
		r.dropRecords(ctx, rec.Unreachable != "", m, r.owned(out.Files, own, h, false), &resp.Diagnostics)
		return
	}
	client := r.connectToRemove(ctx, m, h.ID.ValueString(), &resp.Diagnostics)
	if client == nil {
		return
	}
	out, d = r.readHost(ctx, client, &state, nil, out)
	if resp.Diagnostics.Append(d...); d.HasError() {
		return
	}
	if !removeAll(ctx, client, r.owned(out.Files, own, h, false), out.RemoveCommand, &resp.Diagnostics) {
		return
	}
	if _, ok := any(P(&state)).(HandingOver); ok && len(out.Files) > 0 {
		if err := removeRecord(ctx, client, idPath(out.Files)); err != nil {
			resp.Diagnostics.AddWarning("Handover Record Left on the Host", err.Error())
		}
	}
}

// connectToRemove connects for a destroy; nil when it cannot, with an
// error that says the way out (on_destroy = "keep").
func (r *Resource[M, P]) connectToRemove(ctx context.Context, m ResolvedSSH, id string, diags *diag.Diagnostics) Host {
	if err := m.Config.Validate(); err != nil {
		diags.AddAttributeError(path.Root("ssh"), "No Credentials to Remove Files",
			err.Error()+". Destroy runs without the resource's configuration, so write-only secrets are not available: "+
				"set them on the provider's default_ssh or use the SSH agent, or set on_destroy = \"keep\".")
		return nil
	}
	client, d := r.connect(ctx, m, ToChange)
	if d.HasError() {
		for _, e := range d.Errors() {
			diags.AddAttributeError(path.Root("ssh"), e.Summary(), e.Detail()+hostGoneHint(e.Detail())+
				destroyWayOut("kha_"+r.Name, id))
		}
		return nil
	}
	return client
}

// removeAll removes files from the host, last first, running
// removeCommand after the first one's removal; it stops at the first
// failure.
func removeAll(ctx context.Context, client Host, files []remote.Item, removeCommand string, diags *diag.Diagnostics) bool {
	for i := len(files) - 1; i >= 0; i-- {
		command := ""
		if i == 0 {
			command = removeCommand
		}
		if err := client.Remove(ctx, files[i], command); !leftToItsOwner(err, diags) {
			diags.AddError("Removing File Failed", err.Error())
			return false
		}
	}
	return true
}

// hostGoneHint is the way out that a destroy which cannot reach its host
// adds, unless the engine's error says it already (a host given up on).
func hostGoneHint(detail string) string {
	if strings.Contains(detail, remote.GoneHint) {
		return ""
	}
	return "\n\n" + remote.GoneHint
}

// destroyWayOut names the resource whose destroy cannot reach its host,
// which Terraform's error for a destroy does not (it has no configuration
// to point at), and the ways to let it go that need no host.
func destroyWayOut(typeName, id string) string {
	return fmt.Sprintf("\n\nThis is %s %q. To let it go without its host: terraform state rm <address> (OpenTofu: tofu "+
		"state rm <address>), where terraform state list -id=%s prints <address>; or set on_destroy = \"keep\" on it and "+
		"apply with -refresh=false first, then destroy with -refresh=false.", typeName, id, remote.ShellQuote(id))
}

// dropRecords leaves the files on the host and removes kha's records of
// them, so that a later resource may write them without adopt. It never
// fails a destroy: a host that did not answer the refresh is not
// contacted, and any failure is a warning that the records stay.
func (r *Resource[M, P]) dropRecords(ctx context.Context, unreachable bool, m ResolvedSSH, files []remote.Item, diags *diag.Diagnostics) {
	var records []remote.File
	for _, it := range files {
		if f, ok := it.(remote.File); ok && f.Claim != nil {
			f.Claim.OnRemove = remote.OnRemoveKeep
			records = append(records, f)
		}
	}
	if len(records) == 0 || unreachable || m.Config.Validate() != nil {
		return
	}
	tflog.Info(ctx, "on_destroy = keep: leaving the files, removing kha's records of them")
	client, err := r.dial(ctx, m, ToRead)
	for _, f := range records {
		if err == nil {
			err = client.Remove(ctx, f, "")
		}
		if err != nil {
			diags.AddWarning("Record Left on the Host", fmt.Sprintf("%s stays as on_destroy = \"keep\" asks, and so does kha's "+
				"record of it (%v): a resource that writes the file later needs adopt = true.", f.Path, err))
			return
		}
	}
}

// leftToItsOwner says whether a removal is done: it succeeded, or the file
// was another resource's (adopt) or not known to be kha's, which a warning
// says.
func leftToItsOwner(err error, diags *diag.Diagnostics) bool {
	if err == nil {
		return true
	}
	if errors.Is(err, remote.ErrClaimedElsewhere) {
		diags.AddWarning("File Left to Its New Owner", err.Error())
		return true
	}
	if errors.Is(err, remote.ErrUnvouched) {
		diags.AddWarning("File Left on the Host", err.Error()+". Remove it by hand if it is the file kha wrote.")
		return true
	}
	return false
}
