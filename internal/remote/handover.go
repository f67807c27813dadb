package remote

import (
	_ "embed"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	stdpath "path"
	"strconv"
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
// the Handover that ends it, as JSON, in the record directory kha keeps
// of the file the resource's id names (".<name>.kha/handover": a
// directory of the connection's effective user with mode 0700, so no
// other local user can write or swap the record, which holds commands
// kha runs). A record anyone else could have written is never used.
type HandoverRecord struct {
	// Path is the configuration the handover changes.
	Path string `json:"path"`
	// At is the file the resource's id names, whose record directory
	// keeps this record: a record found elsewhere is not this one.
	At string `json:"at"`
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

// Seal is the digest of what the record makes kha do: the final
// configuration, where it goes and the commands that put it in place.
// The target computes it at plan time from Terraform's configuration
// (its handover_sha256), and Handover uses a record only when its seal is
// the one Terraform planned: nothing on the host chooses what kha runs
// or writes.
func (h HandoverRecord) Seal() string {
	sealed, err := json.Marshal([]any{h.Path, h.At, h.Final, h.ValidateCommand, h.ReloadCommand, h.Verification})
	if err != nil { // a verification that is not JSON: no seal matches
		return ""
	}
	return SHA256(sealed)
}

// HandoverRecordPath is where the record of a handover of the resource
// whose id names path is: "handover" in kha's record directory of path.
func HandoverRecordPath(path string) string {
	return stdpath.Join(stdpath.Dir(path), "."+stdpath.Base(path)+".kha", "handover")
}

// maxHandoverRecord bounds the record a read accepts.
const maxHandoverRecord = 4 << 20

// handoverScript keeps the record of a handover of the resource whose id
// names $target, in the path's record directory ($rec, made with mode
// 0700 when missing), by relative names from inside it:
//   - write replaces it with stdin's $size bytes;
//   - read prints it, nothing when there is none, and exits
//     $EXIT_FOREIGN with who owns it when $rec or the record is not the
//     effective user's own (kha did not write it);
//   - remove removes it, and $rec when nothing else is left in it; a
//     $rec that is not kha's is left alone.
var handoverScript = newScript[handoverArgs](scriptHelpers + handoverBody)

//go:embed scripts/handover.sh
var handoverBody string

// handoverArgs are handoverScript's parameters.
type handoverArgs struct {
	Target string `sh:"target"` // the file the resource's id names
	Op     string `sh:"op"`     // read, write or remove
	Size   int    `sh:"size"`   // write: of the record on stdin; read: at most
}

// PutHandoverRecord leaves h on the host, next to (in the record
// directory of) the file at, which the resource's id names.
func (c *Client) PutHandoverRecord(ctx context.Context, at string, h HandoverRecord) error {
	h.At = at
	raw, err := json.Marshal(h)
	if err == nil {
		err = checkPath(at)
	}
	if err != nil {
		return &StepError{Host: c.cfg.Address(), Step: "keep the handover's record", Path: at, Err: err}
	}
	return c.handoverRecord(ctx, at, "write", raw)
}

// RemoveHandoverRecord takes the record of a handover of the resource
// whose id names at off the host.
func (c *Client) RemoveHandoverRecord(ctx context.Context, at string) error {
	if err := checkPath(at); err != nil {
		return &StepError{Host: c.cfg.Address(), Step: "remove the handover's record", Path: at, Err: err}
	}
	return c.handoverRecord(ctx, at, "remove", nil)
}

// handoverRecord runs handoverScript's op other than read.
func (c *Client) handoverRecord(ctx context.Context, at, op string, content []byte) error {
	c.log(ctx, LevelDebug, op+" the handover's record", map[string]any{"path": at})
	_, stderr, exit, err := c.script(ctx, handoverScript.with(handoverArgs{Target: at, Op: op, Size: len(content)}), content)
	if err == nil && exit != exitOK {
		err = c.sudoHint(string(stderr), exit)
	}
	if err != nil {
		return &StepError{Host: c.cfg.Address(), Step: Step(op + " the handover's record"), Path: HandoverRecordPath(at),
			Output: trimOutput(stderr), Err: err}
	}
	return nil
}

// Handover ends the pending handover of the resource whose id names Path,
// if there is one: the host serves only the final configuration
// afterwards. Its digest is that of "no handover pending"; a record on the
// host is drift. Remove leaves the host as it is.
type Handover struct {
	Path string
	// Seal is the record's seal that Terraform planned (HandoverRecord.Seal):
	// a record with another is not used.
	Seal string
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

// observe reads the record. One that kha did not write is reported
// (Notice) and counts as none.
func (h Handover) observe(ctx context.Context, c *Client) (Observed, error) {
	record, raw, notice, err := h.read(ctx, c)
	if err != nil || record == nil {
		o := Observed{Exists: true, SHA256: h.Digest()}
		if notice != "" {
			o.Notice = Notice{Summary: "Not kha's, Not Used", Detail: notice}
		}
		return o, err
	}
	return Observed{Exists: true, SHA256: SHA256(raw), State: record.Path + ": a handover is pending: it still serves " +
		quotedList(record.Previous) + " besides its own address"}, nil
}

// quotedList quotes each of the host's one-line texts, so that none can
// start a line of its own in a diagnostic.
func quotedList(texts []string) string {
	q := make([]string, len(texts))
	for i, t := range texts {
		q[i] = strconv.Quote(t)
	}
	return strings.Join(q, ", ")
}

// read returns the record on the host, nil when there is none. A record
// that kha did not write (not the effective user's, not for this
// resource's file, not a record at all) is never used: read returns nil
// and says why in notice.
func (h Handover) read(ctx context.Context, c *Client) (record *HandoverRecord, raw []byte, notice string, err error) {
	path, _ := h.Place()
	if err := checkPath(h.Path); err != nil {
		return nil, nil, "", &StepError{Host: c.cfg.Address(), Step: StepRead, Path: path, Err: err}
	}
	stdout, stderr, exit, err := c.script(ctx, handoverScript.with(handoverArgs{Target: h.Path, Op: "read", Size: maxHandoverRecord + 1}), nil)
	switch {
	case err != nil:
		return nil, nil, "", &StepError{Host: c.cfg.Address(), Step: StepRead, Path: path, Err: err}
	case exit == exitForeign:
		notice = Printable(trimOutput(stderr)) + "; it is not used. Remove it: it was never kha's."
		c.log(ctx, LevelWarn, "a handover record kha did not write is not used", map[string]any{"path": path, "why": notice})
		return nil, nil, notice, nil
	case exit != exitOK:
		out := trimOutput(stderr)
		return nil, nil, "", &StepError{Host: c.cfg.Address(), Step: StepRead, Path: path, Output: out, Err: c.sudoHint(out, exit)}
	case len(stdout) == 0:
		return nil, nil, "", nil
	}
	var r HandoverRecord
	err = json.Unmarshal(stdout, &r)
	switch {
	case err != nil:
		notice = fmt.Sprintf("%s is not a handover record kha wrote (%v); it is not used. Remove it.", path, err)
	case r.At != h.Path:
		notice = fmt.Sprintf("%s is the record of a handover of %q, not of %s; it is not used. Remove it.", path, r.At, h.Path)
	case checkPath(r.Path) != nil:
		notice = fmt.Sprintf("%s names no configuration file (%q); it is not used. Remove it.", path, r.Path)
	default:
		return &r, stdout, "", nil
	}
	notice = Printable(notice)
	c.log(ctx, LevelWarn, "a handover record kha did not write is not used", map[string]any{"path": path, "why": notice})
	return nil, nil, notice, nil
}

// put ends a pending handover: the final configuration replaces the
// interim one (only that: a configuration changed since is left to its
// resource), is reloaded and verified, and the record goes. A failure
// puts the interim configuration back and keeps the record, so that the
// next apply tries again.
func (h Handover) put(ctx context.Context, c *Client) (Outcome, error) {
	record, _, _, err := h.read(ctx, c)
	if err != nil {
		return Outcome{}, err
	}
	if record == nil {
		c.log(ctx, LevelDebug, "no handover pending", map[string]any{"path": h.Path})
		return Outcome{Unchanged: true}, nil
	}
	if seal := record.Seal(); seal == "" || seal != h.Seal {
		return Outcome{}, &StepError{Host: c.cfg.Address(), Step: "check the handover's record", Path: HandoverRecordPath(h.Path),
			Err: fmt.Errorf("%w: its digest is %s, while target_sha256 is %s. Set target_sha256 to the target's handover_sha256; "+
				"if it is, the record was not written by this configuration's apply of the target: remove it, or apply the target again", ErrUnsealed, seal, h.Seal)}
	}
	seen, err := c.Observe(ctx, []Item{File{Path: record.Path}})
	if err != nil {
		return Outcome{}, err
	}
	switch seen[0].SHA256 {
	case SHA256([]byte(record.Final)):
		c.log(ctx, LevelInfo, "the final configuration is in place already; removing the handover's record", map[string]any{"path": record.Path})
		return Outcome{}, c.RemoveHandoverRecord(ctx, h.Path)
	case record.InterimSHA256:
	default:
		// Changed by its own resource since (or by hand): that resource's
		// drift check and next apply decide what it serves.
		c.log(ctx, LevelWarn, "the configuration changed since its handover began; leaving it to its resource", map[string]any{"path": record.Path})
		return Outcome{}, c.RemoveHandoverRecord(ctx, h.Path)
	}
	final := File{Path: record.Path, Content: []byte(record.Final), ValidateCommand: record.ValidateCommand,
		ReloadCommand: record.ReloadCommand, Claim: &Claim{ID: record.Claim}, keepModeOwner: true, expectSHA256: record.InterimSHA256}
	if h.Verifier != nil && len(record.Verification) > 0 && string(record.Verification) != "null" {
		if final.Verify, err = h.Verifier(record.Verification); err != nil {
			return Outcome{}, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: HandoverRecordPath(h.Path), Err: err}
		}
	}
	c.log(ctx, LevelInfo, "ending the handover: the previous places go", map[string]any{"path": record.Path,
		"previous": strings.Join(record.Previous, ",")})
	if _, err := final.put(ctx, c); err != nil {
		return Outcome{}, err
	}
	return Outcome{}, c.RemoveHandoverRecord(ctx, h.Path)
}

// ErrUnsealed means a handover's record is not the one Terraform
// planned: nothing of it was run or written.
var ErrUnsealed = errors.New("the handover's record on the host is not the one Terraform planned, and was not used")

// remove leaves the host as it is: the record, if any, is its
// configuration's resource's to remove.
//
//nolint:unparam // Item's signature: removing the other items can fail
func (h Handover) remove(context.Context, *Client, string) error { return nil }
