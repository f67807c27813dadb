package hostres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// This file is the lifecycle's side of a handover (remote.Handover): an
// apply that moves where a model serves (a load balancer's listen, a
// VIP) with handover = true puts an interim configuration in place that
// also serves the previous places, and a record of the final one that
// kha_handover puts in place once the clients have moved. The state
// always holds the final configuration; the interim one counts as in
// sync while its record is pending.

// HandoverSHA256Attribute is handover_sha256 of a model that hands over.
var HandoverSHA256Attribute = schema.StringAttribute{Computed: true,
	MarkdownDescription: "Digest of the record a handover of this resource leaves on the host: the final configuration, its " +
		"path and the commands that put it in place, known at plan time. Pass it to `kha_handover`'s `target_sha256`: " +
		"`kha_handover` uses a record only when it has this digest, so what kha runs and writes when it ends a handover " +
		"comes from this configuration, never from a file on the host. It changes with every change of the configuration."}

// planHandoverSHA256 sets handover_sha256 of a model that hands over
// (HandingOver) from what it renders.
func planHandoverSHA256(model any, out Rendered) diag.Diagnostics {
	ho, ok := model.(HandingOver)
	if !ok {
		return nil
	}
	record, diags := finalRecord(ho, out)
	if !diags.HasError() {
		ho.SetHandoverSHA256(types.StringValue(record.Seal()))
	}
	return diags
}

// finalRecord is the record of a handover whose final configuration is
// final: what it puts where, with which commands, and what proves it
// served, sealed (HandoverRecord.Seal) before anything of the host is
// known.
func finalRecord(ho HandingOver, final Rendered) (remote.HandoverRecord, diag.Diagnostics) {
	var diags diag.Diagnostics
	path := ho.HandoverPath()
	finalFile, ok := fileAt(final.Files, path)
	if !ok {
		diags.AddError("Internal Error", fmt.Sprintf("%s is not among the files rendered. This is always a bug in the provider.", path))
		return remote.HandoverRecord{}, diags
	}
	record := remote.HandoverRecord{Path: path, At: idPath(final.Files), Final: string(finalFile.Content),
		ValidateCommand: finalFile.ValidateCommand, ReloadCommand: finalFile.ReloadCommand}
	if v, ok := finalFile.Verify.(json.Marshaler); ok {
		raw, err := v.MarshalJSON()
		if err != nil {
			diags.AddError("Internal Error", "encoding the final configuration's verification: "+err.Error())
			return remote.HandoverRecord{}, diags
		}
		record.Verification = raw
	}
	return record, diags
}

// pendingHandover is what the lifecycle remembers of a handover until the
// host serves the final configuration.
type pendingHandover struct {
	// Previous are the places the interim configuration serves besides
	// the final one's.
	Previous []string `json:"previous"`
	// Interim is the digest of the interim files, as the drift check
	// computes it (filesDigest).
	Interim string `json:"interim"`
}

// previousPlaces are the places an apply keeps serving beside the plan's:
// those of the prior state and of a pending handover that the plan no
// longer has, in order, once each.
func previousPlaces(pending *pendingHandover, prior, planned []string) []string {
	var was []string
	if pending != nil {
		was = append(was, pending.Previous...)
	}
	var out []string
	for _, p := range append(was, prior...) {
		if !slices.Contains(planned, p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// interimPlan is an apply's interim configuration: the files that serve
// the previous places too, and the record that ends it.
type interimPlan struct {
	out Rendered
	// record is what ends it; putRecord fills in the claim.
	record remote.HandoverRecord
	// at is the file the resource's id names, which the record sits next
	// to (kha_handover finds it by the id).
	at string
}

// planInterim returns the interim configuration of an apply of model
// (the plan's) from prior (the prior state's), or nil when the apply
// hands nothing over. pending is the handover the host may serve the
// interim configuration of already; final is what the plan renders.
func planInterim(model, prior any, pending *pendingHandover, final Rendered) (*interimPlan, diag.Diagnostics) {
	ho, ok := model.(HandingOver)
	if !ok || !ho.HandoverOn() {
		return nil, nil
	}
	var diags diag.Diagnostics
	var priorPlaces []string
	if p, ok := prior.(HandingOver); ok {
		priorPlaces = p.Places()
	}
	previous := previousPlaces(pending, priorPlaces, ho.Places())
	if len(previous) == 0 {
		return nil, diags
	}
	out, d := ho.RenderServing(previous)
	diags.Append(d...)
	if diags.HasError() {
		return nil, diags
	}
	record, d := finalRecord(ho, final)
	diags.Append(d...)
	interimFile, interimOK := fileAt(out.Files, record.Path)
	if diags.HasError() || !interimOK || len(out.Files) != len(final.Files) {
		diags.AddError("Internal Error", fmt.Sprintf("the interim configuration of %s does not match the final one. This is always a bug in the provider.", record.Path))
		return nil, diags
	}
	record.InterimSHA256, record.Previous = interimFile.Digest(), previous
	return &interimPlan{out: out, record: record, at: record.At}, diags
}

// fileAt is the whole file at path among files.
func fileAt(files []remote.Item, path string) (remote.File, bool) {
	for _, it := range files {
		if f, ok := it.(remote.File); ok && f.Path == path {
			return f, true
		}
	}
	return remote.File{}, false
}

// putRecord puts the record, with the claim of the resource that owns
// the configuration, before the interim configuration goes in place: a
// host never serves an interim configuration without one.
func (p *interimPlan) putRecord(ctx context.Context, client Host, claim string) error {
	p.record.Claim = claim
	tflog.Info(ctx, "handing over: the previous places stay served until kha_handover ends it", map[string]any{
		"path": p.record.Path, "previous": p.record.Previous})
	return client.PutHandoverRecord(ctx, p.at, p.record)
}

// removeRecord takes the record of a handover of the resource whose id
// names at off the host: after a failed interim configuration, and on
// destroy.
func removeRecord(ctx context.Context, client Host, at string) error {
	return client.RemoveHandoverRecord(ctx, at)
}

// pending is what the lifecycle remembers of the interim configuration.
func (p *interimPlan) pending() pendingHandover {
	return pendingHandover{Previous: p.record.Previous, Interim: DesiredDigest(p.out.Files)}
}

// acceptInterim counts a host that has the interim configuration of a
// pending handover as in sync with the state's final one. The pending
// handover is forgotten once the host has the final configuration.
func acceptInterim(ctx context.Context, rec *privateRecord, h *Common, o *observation) {
	pending := rec.Handover
	switch {
	case pending == nil:
	case o.digest.ValueString() == pending.Interim:
		tflog.Debug(ctx, "the host serves a handover's interim configuration", map[string]any{"previous": pending.Previous})
		o.digest, o.drift = h.SHA256, nil
	case o.digest.Equal(h.SHA256):
		rec.Handover = nil
	}
}

// warnPendingHandover warns of a handover that the host still serves the
// interim configuration of: without a kha_handover applied after the
// clients, the previous places stay served.
func warnPendingHandover(pending *pendingHandover, id string) diag.Diagnostics {
	var diags diag.Diagnostics
	if pending != nil {
		diags.AddWarning("Handover Pending: "+id, fmt.Sprintf("The host still serves %s beside the configuration's own "+
			"address, so that clients not yet moved keep working. A kha_handover with target_id = this resource's id, "+
			"applied after those clients (depends_on), drops it.", strings.Join(pending.Previous, ", ")))
	}
	return diags
}
