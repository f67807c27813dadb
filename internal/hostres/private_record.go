package hostres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// privateRecord is everything the lifecycle remembers of a resource
// beside its state, in the state's private data: one versioned JSON value
// under one key, read once at the start of a request and written once at
// its end. Terraform keeps it with the state but never shows it.
type privateRecord struct {
	Version int `json:"version"`
	// Ownership is the resource's claim on its host's paths.
	Ownership ownership `json:"ownership"`
	// Unobserved marks a state whose refresh could not reach the host
	// because its only credentials are write-only: the plan looks.
	Unobserved bool `json:"unobserved,omitempty"`
	// Drift is what the last refresh found changed on the host.
	Drift []string `json:"drift,omitempty"`
	// Unreachable is why the last refresh could not reach the host: a
	// plan to destroy the resource fails with it, before any host is
	// changed.
	Unreachable string `json:"unreachable,omitempty"`
	// Handover is the pending handover of a host that serves the interim
	// configuration; nil when none is.
	Handover *pendingHandover `json:"handover,omitempty"`
}

const (
	// privateRecordKey is the private-state key of the privateRecord.
	privateRecordKey = "kha"
	// privateRecordVersion is the layout written; a later layout bumps
	// it and reads this one.
	privateRecordVersion = 1
)

// Before privateRecord, releases kept five keys, each with its own
// encoding. readPrivateRecord reads them into a record when the record is
// missing, and write drops them.
const (
	legacyOwnershipKey   = "ownership"   // JSON ownership
	legacyUnobservedKey  = "unobserved"  // "true" or "false"
	legacyDriftKey       = "drift"       // JSON list of strings
	legacyUnreachableKey = "unreachable" // JSON string
	legacyHandoverKey    = "handover"    // JSON pendingHandover
)

// privateState is the part of a request's private state the lifecycle
// reads, and privateSetter the part of a response's it writes.
type privateState interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// readPrivateRecord reads the record, or builds it from a state written
// before it (the legacy keys). A state with neither has an empty record:
// a new resource, or one from before claims (Ownership.ID "").
func readPrivateRecord(ctx context.Context, private privateState) (privateRecord, diag.Diagnostics) {
	raw, diags := private.GetKey(ctx, privateRecordKey)
	if diags.HasError() {
		return privateRecord{}, diags
	}
	if len(raw) == 0 {
		rec, d := readLegacyRecord(ctx, private)
		diags.Append(d...)
		return rec, diags
	}
	var rec privateRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		diags.AddError("Internal Error", "decoding what kha keeps of the resource in private state: "+err.Error())
		return privateRecord{}, diags
	}
	if rec.Version > privateRecordVersion {
		diags.AddError("State Written by a Newer Provider", fmt.Sprintf("This resource's private state has layout %d; this "+
			"release of kha reads up to %d. Use the release of kha (or a later one) that last applied this state.",
			rec.Version, privateRecordVersion))
	}
	return rec, diags
}

// readLegacyRecord reads the keys of releases before privateRecord.
func readLegacyRecord(ctx context.Context, private privateState) (privateRecord, diag.Diagnostics) {
	var rec privateRecord
	var diags diag.Diagnostics
	decode := func(key string, into any) {
		raw, d := private.GetKey(ctx, key)
		diags.Append(d...)
		if len(raw) == 0 || d.HasError() {
			return
		}
		if err := json.Unmarshal(raw, into); err != nil {
			diags.AddError("Internal Error", fmt.Sprintf("decoding %q from a private state written by an earlier release: %v", key, err))
		}
	}
	decode(legacyOwnershipKey, &rec.Ownership)
	decode(legacyUnobservedKey, &rec.Unobserved)
	decode(legacyDriftKey, &rec.Drift)
	decode(legacyUnreachableKey, &rec.Unreachable)
	decode(legacyHandoverKey, &rec.Handover)
	return rec, diags
}

// write records rec under its key and drops the legacy keys.
func (rec privateRecord) write(ctx context.Context, private privateSetter) diag.Diagnostics {
	rec.Version = privateRecordVersion
	var diags diag.Diagnostics
	raw, err := json.Marshal(rec)
	if err != nil {
		diags.AddError("Internal Error", "encoding what kha keeps of the resource in private state: "+err.Error())
		return diags
	}
	diags.Append(private.SetKey(ctx, privateRecordKey, raw)...)
	for _, key := range []string{legacyOwnershipKey, legacyUnobservedKey, legacyDriftKey, legacyUnreachableKey, legacyHandoverKey} {
		diags.Append(private.SetKey(ctx, key, nil)...)
	}
	return diags
}

// observed notes a refresh that read the host: what it found changed,
// and nothing unobserved or unreachable.
func (rec *privateRecord) observed(drift []string) {
	rec.Unobserved, rec.Drift, rec.Unreachable = false, drift, ""
}
