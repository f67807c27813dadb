package remote

import (
	_ "embed"

	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
)

// Edit is a change kha makes within a file it does not own, such as the
// server of a kubeconfig whose credentials the kubelet rotates. Put reads
// the host's content and writes Apply's result back (only if the file did
// not change in between), Remove writes Undo's, and Observe reports State.
// The content never leaves the engine: not in logs, errors or results.
type Edit interface {
	// Apply returns the content with the change made.
	Apply(current []byte) ([]byte, error)
	// Undo returns the content with the change taken back.
	Undo(current []byte) ([]byte, error)
	// State says, without secrets, what content has of what the change
	// sets; Want is the State of content with the change made.
	State(current []byte) (string, error)
	Want() string
	// Check proves that content would work before it replaces the host's
	// (and again after the reload command), bounded by its own timeout;
	// nil checks nothing.
	Check(content []byte) Verifier
}

// maxEditSize bounds the files Edit reads.
const maxEditSize = 1 << 20

// readScript prints a regular file's permission bits (octal) on a line
// of their own, then its content, at most max bytes, or exits
// $EXIT_MISSING when there is no file. When an apply would refuse the
// file's directory (safe_path), a line "$WORD_UNSAFE <where>: <why>" on
// stderr says so.
var readScript = newScript[readArgs](pathCheck + readBody)

//go:embed scripts/read.sh
var readBody string

// readArgs are readScript's parameters.
type readArgs struct {
	Target string `sh:"target"`
	Max    int    `sh:"max"`
}

// ReadFile returns a file's content. It is the caller's to keep out of
// logs and state; the engine logs only the path and the size.
func (c *Client) ReadFile(ctx context.Context, path string) ([]byte, error) {
	content, _, _, err := c.readFile(ctx, path)
	return content, err
}

// readFile returns a file's content, its permission bits and, when an
// apply would refuse its directory, a notice that says why.
func (c *Client) readFile(ctx context.Context, path string) ([]byte, fs.FileMode, Notice, error) {
	if err := checkPath(path); err != nil {
		return nil, 0, Notice{}, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: path, Err: err}
	}
	stdout, stderr, exit, err := c.script(ctx, readScript.with(readArgs{Target: path, Max: maxEditSize + 1}), nil)
	switch {
	case err != nil:
		return nil, 0, Notice{}, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: path, Err: err}
	case exit == exitMissing:
		return nil, 0, Notice{}, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: path, Err: fs.ErrNotExist}
	case exit != exitOK:
		out := trimOutput(stderr)
		return nil, 0, Notice{}, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: path, Output: out, Err: c.sudoHint(out, exit)}
	}
	bits, content, _ := bytes.Cut(stdout, []byte("\n"))
	mode, err := strconv.ParseUint(string(bits), 8, 32)
	switch {
	case err != nil:
		return nil, 0, Notice{}, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: path, Err: fmt.Errorf("unexpected mode %q", Printable(string(bits)))}
	case len(content) > maxEditSize:
		return nil, 0, Notice{}, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: path, Err: fmt.Errorf("larger than %d bytes", maxEditSize)}
	}
	c.log(ctx, LevelDebug, "read", map[string]any{"path": path, "bytes": len(content)})
	if c.reads != nil {
		c.reads[path] = content
	}
	return content, fs.FileMode(mode) & fs.ModePerm, unsafeNotice(path, stderr), nil
}

// readForEdit is the content an edit of path starts from: what the
// client remembers of it (see RememberReads), or else what it reads now.
func (c *Client) readForEdit(ctx context.Context, path string) ([]byte, error) {
	current, ok := c.reads[path]
	if !ok {
		var err error
		if current, err = c.ReadFile(ctx, path); err != nil {
			return nil, err
		}
	}
	delete(c.reads, path) // the edit changes it
	return current, nil
}

// EditedFile is a file kha edits rather than owns (see Edit).
type EditedFile struct {
	Path string
	Edit Edit
	// ReloadCommand runs after the edit and after it is taken back; if it
	// fails, the previous content is restored and the command run again.
	ReloadCommand string
	// Credentials says the file holds secrets (a client key): a refresh
	// that finds other users may read it says so (Observed.Notice). kha
	// edits the file and never changes its mode.
	Credentials bool
}

// Place is the file's path; an edited file has no marker.
func (f EditedFile) Place() (path, marker string) { return f.Path, "" }

// Reload is f's ReloadCommand.
func (f EditedFile) Reload() string { return f.ReloadCommand }

// Digest is the digest of the State of content with the change made.
func (f EditedFile) Digest() string {
	return SHA256([]byte(f.Edit.Want()))
}

// Drift says what the host's file has of the change, when it is not the
// change.
func (f EditedFile) Drift(o Observed) string {
	switch {
	case !o.Exists:
		return missing(f.Path, "file")
	case o.SHA256 == f.Digest():
		return ""
	}
	return fmt.Sprintf("%s: %s, want %s", f.Path, o.State, f.Edit.Want())
}

func (f EditedFile) put(ctx context.Context, c *Client) (Outcome, error) {
	return c.putEdit(ctx, f, f.Edit.Apply, "edit")
}

// remove takes the change back, running ReloadCommand after it; command
// does not run.
func (f EditedFile) remove(ctx context.Context, c *Client, _ string) error {
	_, err := c.putEdit(ctx, f, f.Edit.Undo, "undo the edit")
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nothing left to take back
	}
	return err
}

// putEdit makes f's change on the host.
func (c *Client) putEdit(ctx context.Context, f EditedFile, change func([]byte) ([]byte, error), what Step) (Outcome, error) {
	current, err := c.readForEdit(ctx, f.Path)
	if err != nil {
		return Outcome{}, err
	}
	changed, err := change(current)
	if err != nil {
		return Outcome{}, &StepError{Host: c.cfg.Address(), Step: what, Path: f.Path, Err: err}
	}
	if bytes.Equal(changed, current) {
		c.log(ctx, LevelDebug, "nothing to change", map[string]any{"path": f.Path})
		return Outcome{Unchanged: true}, nil
	}
	edited := File{Path: f.Path, Content: changed, keepModeOwner: true, expectSHA256: SHA256(current), ReloadCommand: f.ReloadCommand}
	if check := f.Edit.Check(changed); check != nil {
		edited.Preflight = &Preflight{Candidate: func(string) ([]byte, Verifier, error) { return nil, check, nil }}
		if f.ReloadCommand != "" {
			edited.Verify = check
		}
	}
	outcome, err := edited.put(ctx, c)
	if err != nil && edited.Verify == nil && errors.Is(err, errLostAfterSwap) {
		// No verdict was awaited: the host keeps the change unless its
		// reload command fails.
		err = leftInPlace{err}
	}
	return outcome, err
}

// leftInPlace is the failure of an edit that the host may keep.
type leftInPlace struct{ error }

func (e leftInPlace) Unwrap() error { return e.error }

// LeftInPlace says whether a failed Put of an EditedFile may have left its
// change on the host: the connection was lost once the change was in
// place, and nothing waited for a verdict that would have put the file
// back. Taking the change back is then the caller's, with Edit.Undo.
func LeftInPlace(err error) bool {
	return errors.As(err, new(leftInPlace))
}

// observe reports what the host's file has of f's change.
func (f EditedFile) observe(ctx context.Context, c *Client) (Observed, error) {
	current, mode, unsafe, err := c.readFile(ctx, f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return Observed{}, nil
	}
	if err != nil {
		return Observed{}, err
	}
	state, err := f.Edit.State(current)
	if err != nil {
		return Observed{}, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: f.Path, Err: err}
	}
	o := Observed{Exists: true, SHA256: SHA256([]byte(state)), State: state, Notice: unsafe}
	if f.Credentials && mode&0o077 != 0 && unsafe.Detail == "" {
		o.Notice = Notice{Summary: "Credentials Readable by Other Users", Detail: fmt.Sprintf("%s holds credentials (a client key) "+
			"and has mode %04o: users other than its owner can read it. kha edits the file and keeps its mode; make it "+
			"private again with chmod 600 %s, as kubeadm writes it.", f.Path, mode, f.Path)}
	}
	return o, nil
}
