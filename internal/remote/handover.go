package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	stdpath "path"
	"strings"
)

// A handover moves where a service listens (a load balancer's port, a
// VIP's address) without a moment in which a client has nowhere to go:
// the apply that moves it puts an interim configuration in place that
// serves the previous places beside the new ones, and leaves a
// HandoverRecord with the final configuration next to the file that names
// the resource (its id's). Once the clients have
// moved, Handover (the item of kha_handover) puts the final one in place
// through the same steps as any file (validate, reload, verify) and
// removes the record.

// HandoverRecord is what an interim configuration leaves on the host for
// the Handover that ends it, as JSON, in the file HandoverRecordPath
// names (mode 0600: it holds the final configuration).
type HandoverRecord struct {
	// Path is the configuration the handover changes.
	Path string `json:"path"`
	// Claim is the owner's claim on the configuration's path.
	Claim string `json:"claim"`
	// InterimSHA256 is the digest of the interim configuration: the
	// final one replaces only that.
	InterimSHA256 string `json:"interim_sha256"`
	// Final is the configuration without the previous places.
	Final string `json:"final"`
	// ValidateCommand and ReloadCommand are the configuration file's; its
	// mode and owner stay those of the interim one.
	ValidateCommand string `json:"validate_command,omitempty"`
	ReloadCommand   string `json:"reload_command,omitempty"`
	// Verification is what proves the final configuration served, in the
	// owner's terms (decoded by Handover.Verifier); null proves nothing.
	Verification json.RawMessage `json:"verification,omitempty"`
	// Previous are the places the interim configuration serves besides
	// the final one's ("10.0.0.100:8443", "10.0.0.100"), for the logs.
	Previous []string `json:"previous"`
}

// HandoverRecordPath is where the record of a handover of the resource
// whose id names path is: ".<name>.kha.handover" next to it.
func HandoverRecordPath(path string) string {
	return stdpath.Join(stdpath.Dir(path), "."+stdpath.Base(path)+".kha.handover")
}

// RecordFile is the record as the file that keeps it, next to path (the
// file the resource's id names).
func (h HandoverRecord) RecordFile(path string) (File, error) {
	raw, err := json.Marshal(h)
	if err != nil {
		return File{}, err
	}
	return File{Path: HandoverRecordPath(path), Content: raw, Mode: 0o600}, nil
}

// Handover ends the pending handover of the resource whose id names Path,
// if there is one: the host serves only the final configuration
// afterwards. Its digest is that of "no handover pending"; a record on the
// host is drift. Remove leaves the host as it is.
type Handover struct {
	Path string
	// Verifier decodes a record's verification; nil, or a nil result,
	// proves nothing beyond the reload.
	Verifier func(raw json.RawMessage) (Verifier, error)
}

// Place is the record's path: one kha_handover per configuration.
func (h Handover) Place() (path, marker string) { return HandoverRecordPath(h.Path), "" }

// Reload is empty: a rollback of another item never reloads for this one.
func (h Handover) Reload() string { return "" }

// Digest is the digest of a host with no handover pending.
func (h Handover) Digest() string { return SHA256([]byte("no handover pending for " + h.Path)) }

// Drift says which handover is pending.
func (h Handover) Drift(o Observed) string {
	if o.SHA256 == h.Digest() {
		return ""
	}
	return o.State
}

// observe reads the record.
func (h Handover) observe(ctx context.Context, c *Client) (Observed, error) {
	record, raw, err := h.read(ctx, c)
	if err != nil || record == nil {
		return Observed{Exists: true, SHA256: h.Digest()}, err
	}
	return Observed{Exists: true, SHA256: SHA256(raw), State: record.Path + ": a handover is pending: it still serves " +
		strings.Join(record.Previous, ", ") + " besides its own address"}, nil
}

// read returns the record on the host, nil when there is none.
func (h Handover) read(ctx context.Context, c *Client) (*HandoverRecord, []byte, error) {
	path, _ := h.Place()
	raw, err := c.ReadFile(ctx, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var record HandoverRecord
	err = json.Unmarshal(raw, &record)
	if err == nil {
		err = checkPath(record.Path)
	}
	if err != nil {
		return nil, nil, &StepError{Host: c.cfg.Address(), Step: "read", Path: path, Err: fmt.Errorf("not a handover record: %w", err)}
	}
	return &record, raw, nil
}

// put ends a pending handover: the final configuration replaces the
// interim one (only that: a configuration changed since is left to its
// resource), is reloaded and verified, and the record goes. A failure
// puts the interim configuration back and keeps the record, so that the
// next apply tries again.
func (h Handover) put(ctx context.Context, c *Client) (Outcome, error) {
	record, _, err := h.read(ctx, c)
	if err != nil {
		return Outcome{}, err
	}
	if record == nil {
		c.log(ctx, LevelDebug, "no handover pending", map[string]any{"path": h.Path})
		return Outcome{Unchanged: true}, nil
	}
	recordFile := File{Path: HandoverRecordPath(h.Path)}
	seen, err := c.Observe(ctx, []Item{File{Path: record.Path}})
	if err != nil {
		return Outcome{}, err
	}
	switch seen[0].SHA256 {
	case SHA256([]byte(record.Final)):
		c.log(ctx, LevelInfo, "the final configuration is in place already; removing the handover's record", map[string]any{"path": record.Path})
		return Outcome{}, c.Remove(ctx, recordFile, "")
	case record.InterimSHA256:
	default:
		// Changed by its own resource since (or by hand): that resource's
		// drift check and next apply decide what it serves.
		c.log(ctx, LevelWarn, "the configuration changed since its handover began; leaving it to its resource", map[string]any{"path": record.Path})
		return Outcome{}, c.Remove(ctx, recordFile, "")
	}
	final := File{Path: record.Path, Content: []byte(record.Final), ValidateCommand: record.ValidateCommand,
		ReloadCommand: record.ReloadCommand, Claim: &Claim{ID: record.Claim}, keepModeOwner: true, expectSHA256: record.InterimSHA256}
	if h.Verifier != nil && len(record.Verification) > 0 && string(record.Verification) != "null" {
		if final.Verify, err = h.Verifier(record.Verification); err != nil {
			return Outcome{}, &StepError{Host: c.cfg.Address(), Step: "read", Path: recordFile.Path, Err: err}
		}
	}
	c.log(ctx, LevelInfo, "ending the handover: the previous places go", map[string]any{"path": record.Path,
		"previous": strings.Join(record.Previous, ",")})
	if _, err := final.put(ctx, c); err != nil {
		return Outcome{}, err
	}
	return Outcome{}, c.Remove(ctx, recordFile, "")
}

// remove leaves the host as it is: the record, if any, is its
// configuration's resource's to remove.
//
//nolint:unparam // Item's signature: removing the other items can fail
func (h Handover) remove(context.Context, *Client, string) error { return nil }
