package remote

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

// File is a file kha manages on a host, or with Block set, a marked block
// within one.
type File struct {
	Path    string
	Content []byte
	Mode    uint32 // permission bits; 0 means 0644
	Owner   string // user name or id; empty keeps the connecting user
	Group   string
	// ValidateCommand runs before the file is put in place, with every
	// "%s" replaced by the path of the uploaded copy, e.g.
	// "haproxy -c -f %s". A non-zero exit keeps the previous file.
	ValidateCommand string
	// ReloadCommand runs after the file is in place, e.g. "systemctl
	// reload haproxy". If it fails, the previous file is restored and the
	// command run again.
	ReloadCommand string
	// CreateParentDirs creates missing parent directories (mode 0755).
	CreateParentDirs bool
	// Block, when set, makes Content a marked block within Path (see
	// BlockLines): the rest of the file is left as it is. Mode, owner and
	// the commands do not apply to blocks.
	Block string
	// SHA256, when set, is the digest of content that is not at hand (a
	// write-only secret, known only while applying): what Digest reports
	// for drift checks and removal.
	SHA256 string
	// Verify, when set, checks the service once the file is in place and
	// reloaded; an error restores the previous file and reloads it.
	Verify Verifier
	// Preflight, when set, first runs the new configuration in a
	// throwaway instance of the service; if it does not serve, nothing on
	// the host changes.
	Preflight *Preflight
	// Edit, when set, makes the file one kha edits rather than owns (see
	// Edit): Content, Mode, Owner and Group do not apply, and Remove
	// takes the change back instead of deleting the file, running
	// ReloadCommand after it.
	Edit Edit

	// keepModeOwner keeps the mode, owner and group of the file replaced;
	// expectSHA256 replaces it only if it still has that digest.
	keepModeOwner bool
	expectSHA256  string
}

// Verifier checks a service after its new configuration is in place and
// reloaded, through the connection to its host.
type Verifier interface {
	Verify(ctx context.Context, c *Client) error
}

// SHA256 is the hex SHA-256 digest of b.
func SHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Digest is the digest Observe reports when the host has the content f
// wants.
func (f File) Digest() string {
	if f.Edit != nil {
		return SHA256([]byte(f.Edit.Want()))
	}
	if f.SHA256 != "" {
		return f.SHA256
	}
	if f.Block != "" {
		return SHA256([]byte(BlockLines(f.Block, string(f.Content))))
	}
	return SHA256(f.Content)
}

func (f File) mode() uint32 {
	if f.Mode == 0 {
		return 0o644
	}
	return f.Mode
}

// Observed is what a host has for a File.
type Observed struct {
	Exists bool
	SHA256 string // of the content, or of the block with its markers
	// Mode, owner and group of a whole file.
	Mode         uint32
	Owner, Group string
	UID, GID     string
	// State is what an edited file has of the edit (see Edit.State).
	State string
}

// Drift says how the host differs from f, or "" when it has what f
// wants: the content, and for a whole file its mode and the owner and
// group f names (by name or id).
func (f File) Drift(o Observed) string {
	what := "file"
	if f.Block != "" {
		what = "block " + f.Block
	}
	if !o.Exists {
		return fmt.Sprintf("%s: the %s is missing", f.Path, what)
	}
	if f.Edit != nil {
		if o.SHA256 == f.Digest() {
			return ""
		}
		return fmt.Sprintf("%s: %s, want %s", f.Path, o.State, f.Edit.Want())
	}
	var diffs []string
	if o.SHA256 != f.Digest() {
		diffs = append(diffs, fmt.Sprintf("the %s's content changed", what))
	}
	if f.Block == "" {
		if o.Mode != f.mode() {
			diffs = append(diffs, fmt.Sprintf("mode is %04o, want %04o", o.Mode, f.mode()))
		}
		if f.Owner != "" && f.Owner != o.Owner && f.Owner != o.UID {
			diffs = append(diffs, fmt.Sprintf("owner is %s, want %s", o.Owner, f.Owner))
		}
		if f.Group != "" && f.Group != o.Group && f.Group != o.GID {
			diffs = append(diffs, fmt.Sprintf("group is %s, want %s", o.Group, f.Group))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	return f.Path + ": " + strings.Join(diffs, ", ")
}

// StepError reports which host and which step of an operation failed,
// with the remote command's output.
type StepError struct {
	Host   string
	Step   string
	Path   string
	Output string
	Err    error
}

func (e *StepError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Host, e.Step)
	if e.Path != "" {
		fmt.Fprintf(&b, " of %s", e.Path)
	}
	fmt.Fprintf(&b, " failed: %v", e.Err)
	if e.Output != "" {
		fmt.Fprintf(&b, "\n%s", e.Output)
	}
	return b.String()
}

func (e *StepError) Unwrap() error { return e.Err }

// ErrNotCommitted means the operation ended before the new file was put
// in place: the host has what it had.
var ErrNotCommitted = errors.New("the operation ended before the new file was put in place; the host is unchanged")

// applyOutcomes names each exit of applyScript.
var applyOutcomes = map[int]struct{ step, what string }{
	exitDirectory:   {"create directory", "the previous file is untouched"},
	exitUpload:      {"upload", "the previous file is untouched"},
	exitOwnerMode:   {"set owner and mode", "the previous file is untouched"},
	exitValidate:    {"validate", "the validate command rejected the new file; the previous file is untouched"},
	exitValidateEnd: {"validate", "the validate command did not finish within the operation's timeout; the previous file is untouched"},
	exitNoCommit:    {"commit", ErrNotCommitted.Error()},
	exitRename:      {"rename into place", "the previous file is untouched"},
	exitReload:      {"reload", "the reload command failed with the new file; the previous file was restored and the reload command run again"},
	exitReloadTime:  {"reload", "the reload command did not finish within the operation's timeout; the previous file was restored and the reload command run again"},
	exitRollback:    {"reload", "the reload command failed with the new file, and restoring the previous file or reloading it failed too: check the host"},
	exitVerify:      {"verify", "the service did not work with the new file; the previous file was restored and the reload command run again"},
	exitReplaced:    {"upload", "the private temporary directory was replaced while in use (someone else can write to the target's directory); nothing was changed"},
	exitChanged:     {"commit", "the file changed on the host after kha read it (a credential rotation?); nothing was changed: apply again"},
}

// ShellQuote quotes s for POSIX sh.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// checkPath refuses paths the scripts cannot carry safely.
func checkPath(p string) error {
	switch {
	case p == "" || !path.IsAbs(p):
		return fmt.Errorf("path %q is not absolute", p)
	case strings.ContainsAny(p, "\x00\n"):
		return fmt.Errorf("path %q contains a NUL or newline", p)
	case strings.HasSuffix(p, "/") || path.Clean(p) != p:
		return fmt.Errorf("path %q is not a clean path to a file", p)
	}
	return nil
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// commandLimit is the time a host-side command may take so that the
// script can still undo its step before ctx ends: what is left of ctx
// minus a margin, in whole seconds; "0" without a deadline.
func commandLimit(ctx context.Context) string {
	deadline, ok := ctx.Deadline()
	if !ok {
		return "0"
	}
	return strconv.Itoa(max(1, int((time.Until(deadline)-5*time.Second)/time.Second)))
}

// command builds the command line of a script with its arguments, through
// sudo when the connection asks for it. The script arrives in the command
// line, so stdin stays free for content.
func (c *Client) command(script string, args ...string) string {
	cmd := "sh -c " + ShellQuote(script) + " kha"
	for _, a := range args {
		cmd += " " + ShellQuote(a)
	}
	if c.sudo {
		cmd = "sudo -n " + cmd
	}
	return cmd
}

// script runs a script to its end and returns its output and exit status.
func (c *Client) script(ctx context.Context, body string, stdin []byte, args ...string) (stdout, stderr []byte, exit int, err error) {
	var in io.Reader
	if stdin != nil {
		in = bytes.NewReader(stdin)
	}
	out, errOut, err := c.Run(ctx, c.command(body, args...), in)
	var exitErr interface{ ExitStatus() int }
	if errors.As(err, &exitErr) {
		return out, errOut, exitErr.ExitStatus(), nil
	}
	return out, errOut, 0, err
}

func trimOutput(b []byte) string {
	const max = 4000
	s := strings.TrimSpace(string(b))
	if len(s) > max {
		s = s[:max] + "\n[output truncated]"
	}
	return s
}

// sudoHint explains a failure of sudo -n, and a step that the host refused
// to a user other than root for lack of permission (EACCES, EPERM in the
// output) while ssh.sudo is off.
func (c *Client) sudoHint(output string, err error) error {
	switch {
	case c.sudo && strings.Contains(output, "sudo:"):
		return errors.New("sudo -n failed: the connection user needs passwordless sudo (NOPASSWD) for ssh.sudo")
	case !c.sudo && c.cfg.user() != "root" &&
		(strings.Contains(output, "Permission denied") || strings.Contains(output, "Operation not permitted")):
		return fmt.Errorf("%w: %s lacks the permission on the host: set ssh.sudo = true (the user needs passwordless "+
			"sudo), or connect as a user who has it", err, c.cfg.user())
	}
	return err
}

// Put applies f, as a whole file or as a block.
func (c *Client) Put(ctx context.Context, f File) error {
	if f.Block != "" {
		return c.putBlock(ctx, f)
	}
	if f.Edit != nil {
		return c.putEdit(ctx, f, f.Edit.Apply, "edit")
	}
	return c.putFile(ctx, f)
}

// putFile puts f on the host: upload into a private directory next to
// the target, set owner and mode, validate, run the preflight, and only
// when this client then commits, rename over the target and reload. On any failure the
// previous file stays (or is restored) byte for byte and no temporary
// file is left behind.
func (c *Client) putFile(ctx context.Context, f File) error {
	fail := func(step, output string, err error) error {
		c.log(ctx, LevelWarn, step+" failed", map[string]any{"path": f.Path, "error": err.Error()})
		return &StepError{Host: c.cfg.Address(), Step: step, Path: f.Path, Output: output, Err: err}
	}
	if err := checkPath(f.Path); err != nil {
		return fail("configure", "", err)
	}
	mask, mode := "", strconv.FormatUint(uint64(f.mode()), 8)
	if f.keepModeOwner {
		mode = "keep"
	} else if f.mode()&^0o666 == 0 { // a mode a new file can be created with
		mask = strconv.FormatUint(uint64(0o777&^f.mode()), 8)
	}
	owner := f.Owner
	if f.Group != "" {
		owner += ":" + f.Group
	}
	mkdirs := map[bool]string{false: "0", true: "1"}[f.CreateParentDirs]
	validate := strings.ReplaceAll(f.ValidateCommand, "%s", `"$KHA_NEW"`)
	rnd := randomSuffix()
	fields := map[string]any{"path": f.Path, "bytes": len(f.Content), "sha256": f.Digest()}
	c.log(ctx, LevelDebug, "uploading and validating", fields)

	session, release, err := c.session(ctx)
	if err != nil {
		return fail("run", "", err)
	}
	defer release()
	stdin, err := session.StdinPipe()
	if err != nil {
		return fail("run", "", err)
	}
	stdout, err := session.StdoutPipe()
	if err != nil {
		return fail("run", "", err)
	}
	var stderr bytes.Buffer
	session.Stderr = &stderr
	verify := map[bool]string{false: "0", true: "1"}[f.Verify != nil]
	cmd := c.command(applyScript, f.Path, mode, mask, owner, mkdirs, validate,
		f.ReloadCommand, strconv.Itoa(len(f.Content)), commandLimit(ctx), rnd, verify, f.expectSHA256)
	if err := session.Start(cmd); err != nil {
		return fail("run", "", err)
	}
	go func() { _, _ = stdin.Write(f.Content) }()

	// Wait for "ready": the copy is in place and validated.
	lines := bufio.NewReader(stdout)
	ready := make(chan bool, 1)
	go func() {
		line, _ := lines.ReadString('\n')
		ready <- line == "ready\n"
	}()
	exited := make(chan error, 1)
	wait := func() { exited <- session.Wait() }
	select {
	case ok := <-ready:
		if !ok {
			go wait()
			return c.applyResult(ctx, f, <-exited, &stderr, fail)
		}
	case <-ctx.Done():
		session.Close() // the script sees its stdin and stdout go: it never renames
		c.log(ctx, LevelWarn, "cancelled before commit; the host is unchanged", fields)
		return fail("commit", "", fmt.Errorf("%w (%v)", ErrNotCommitted, ctx.Err()))
	}
	if f.Preflight != nil {
		// Validated; the throwaway instance runs while the script waits
		// for the commit, which a failure never sends.
		if err := c.preflight(ctx, f, fail); err != nil {
			session.Close()
			return err
		}
	}
	if ctx.Err() != nil {
		session.Close()
		return fail("commit", "", fmt.Errorf("%w (%v)", ErrNotCommitted, ctx.Err()))
	}
	c.log(ctx, LevelDebug, "validated; committing: rename into place and reload", fields)
	if _, err := io.WriteString(stdin, "commit\n"); err != nil {
		return fail("commit", trimOutput(stderr.Bytes()), fmt.Errorf("%w: %v", ErrNotCommitted, err))
	}
	var verifyErr error
	if f.Verify != nil {
		// "reloaded", or the end of the output when the reload failed.
		if line, _ := lines.ReadString('\n'); line == "reloaded\n" {
			c.log(ctx, LevelDebug, "reloaded; verifying", fields)
			start := time.Now()
			verdict := "keep\n"
			if verifyErr = f.Verify.Verify(ctx, c); verifyErr != nil {
				verdict = "rollback\n"
				c.log(ctx, LevelWarn, "verification failed; rolling back", map[string]any{"path": f.Path, "error": verifyErr.Error()})
			} else {
				c.log(ctx, LevelDebug, "verified", map[string]any{"path": f.Path, "took": time.Since(start).String()})
			}
			_, _ = io.WriteString(stdin, verdict)
		}
	}
	stdin.Close()
	go wait()
	result := lostAfterCommit(exited, f.Verify != nil)
	if verifyErr != nil {
		err := <-result
		if stepErr := c.applyResult(ctx, f, err, &stderr, fail); stepErr != nil {
			var se *StepError
			if errors.As(stepErr, &se) && se.Step == "verify" {
				se.Err = fmt.Errorf("%w: %v", se.Err, verifyErr)
			}
			return stepErr
		}
		return fail("verify", trimOutput(stderr.Bytes()), verifyErr)
	}
	select {
	case err := <-result:
		return c.applyResult(ctx, f, err, &stderr, fail)
	case <-ctx.Done():
		// The host finishes the reload (bounded by the script's own
		// limit) or restores the previous file; wait a little for which.
		select {
		case err := <-result:
			return c.applyResult(ctx, f, err, &stderr, fail)
		case <-time.After(15 * time.Second):
			return fail("reload", trimOutput(stderr.Bytes()), fmt.Errorf("lost track of the host after the new file was "+
				"put in place (%v); the next refresh shows what it has", ctx.Err()))
		}
	}
}

// errLostAfterSwap means the connection was lost once the new file was in
// place, while the reload ran or its verdict was awaited.
var errLostAfterSwap = errors.New("the connection was lost after the new file was put in place")

// ReloadedAfterSwap says whether a failed Put had put its file in place
// and run the reload command (the host then restores the previous file
// and reloads again): what was changed before it needs a reload too when
// it is put back.
func ReloadedAfterSwap(err error) bool {
	var se *StepError
	return errors.As(err, &se) && (se.Step == "reload" || se.Step == "verify" || errors.Is(err, errLostAfterSwap))
}

// lostAfterCommit passes on the script's end, but says what the host does
// when the connection was lost after the commit (no exit status came).
func lostAfterCommit(exited <-chan error, verify bool) chan error {
	out := make(chan error, 1)
	go func() {
		err := <-exited
		var exitErr interface{ ExitStatus() int }
		if err != nil && !errors.As(err, &exitErr) {
			what := "it keeps the new file unless the reload command fails"
			if verify {
				what = "no verdict can reach it, so it puts the previous file back and reloads it"
			}
			err = fmt.Errorf("%w (%v); the host goes on alone: %s. The next refresh shows what it has", errLostAfterSwap, err, what)
		}
		out <- err
	}()
	return out
}

// applyResult turns applyScript's exit into the result of putFile.
func (c *Client) applyResult(ctx context.Context, f File, err error, stderr *bytes.Buffer, fail func(step, output string, err error) error) error {
	output := trimOutput(stderr.Bytes())
	var exitErr interface{ ExitStatus() int }
	switch {
	case err == nil:
		c.log(ctx, LevelDebug, "in place and reloaded", map[string]any{"path": f.Path, "sha256": f.Digest(),
			"reload_command": f.ReloadCommand != ""})
		return nil
	case errors.As(err, &exitErr):
		exit := exitErr.ExitStatus()
		outcome, ok := applyOutcomes[exit]
		if !ok {
			outcome.step, outcome.what = "apply", fmt.Sprintf("exit status %d; the previous file is untouched", exit)
		}
		if exit == exitReload || exit == exitReloadTime || exit == exitRollback {
			c.log(ctx, LevelWarn, "reload failed; rolled back to the previous file", map[string]any{"path": f.Path})
		}
		return fail(outcome.step, output, c.sudoHint(output, errors.New(outcome.what)))
	}
	return fail("run", output, err)
}

// Observe reports what the host has for each of files, in one session.
func (c *Client) Observe(ctx context.Context, files []File) ([]Observed, error) {
	out := make([]Observed, len(files))
	var whole []int // indexes of whole files
	for i, f := range files {
		if err := checkPath(f.Path); err != nil {
			return nil, &StepError{Host: c.cfg.Address(), Step: "read", Path: f.Path, Err: err}
		}
		if f.Block != "" || f.Edit != nil {
			read := c.readBlock
			if f.Edit != nil {
				read = c.observeEdit
			}
			o, err := read(ctx, f)
			if err != nil {
				return nil, err
			}
			out[i] = o
			continue
		}
		whole = append(whole, i)
	}
	if len(whole) == 0 {
		return out, nil
	}
	paths := make([]string, len(whole))
	for j, i := range whole {
		paths[j] = files[i].Path
	}
	c.log(ctx, LevelDebug, "reading digests", map[string]any{"paths": paths})
	stdout, stderr, exit, err := c.script(ctx, statScript, nil, paths...)
	if err == nil && exit != 0 {
		err = c.sudoHint(string(stderr), fmt.Errorf("exit status %d", exit))
	}
	if err != nil {
		return nil, &StepError{Host: c.cfg.Address(), Step: "read", Path: strings.Join(paths, ", "), Output: trimOutput(stderr), Err: err}
	}
	observed, err := parseStat(strings.Split(strings.TrimSuffix(string(stdout), "\n"), "\n"), len(paths))
	if err != nil {
		return nil, &StepError{Host: c.cfg.Address(), Step: "read", Path: strings.Join(paths, ", "), Err: err}
	}
	for j, i := range whole {
		out[i] = observed[j]
	}
	return out, nil
}

// parseStat reads statScript's output for n paths.
func parseStat(lines []string, n int) ([]Observed, error) {
	bad := fmt.Errorf("unexpected output %q", strings.Join(lines, "\n"))
	if len(lines) < n {
		return nil, bad
	}
	out := make([]Observed, n)
	var present []int
	for i := range n {
		switch lines[i] {
		case "present":
			present = append(present, i)
		case "missing":
		default:
			return nil, bad
		}
	}
	rest := lines[n:]
	if len(rest) != 2*len(present) {
		return nil, bad
	}
	for j, i := range present {
		sum := strings.TrimPrefix(rest[j], `\`) // sha256sum escapes names with backslashes
		stat := strings.Fields(rest[len(present)+j])
		if len(sum) < 64 || len(stat) != 5 {
			return nil, bad
		}
		mode, err := strconv.ParseUint(stat[0], 8, 32)
		if err != nil {
			return nil, bad
		}
		out[i] = Observed{Exists: true, SHA256: sum[:64], Mode: uint32(mode), Owner: stat[1], Group: stat[2], UID: stat[3], GID: stat[4]}
	}
	return out, nil
}

// Remove deletes f from the host (the block only, for blocks) and then
// runs command, if there was something to remove.
func (c *Client) Remove(ctx context.Context, f File, command string) error {
	if f.Block != "" {
		return c.removeBlock(ctx, f)
	}
	if f.Edit != nil {
		err := c.putEdit(ctx, f, f.Edit.Undo, "undo the edit")
		if errors.Is(err, fs.ErrNotExist) {
			return nil // nothing left to take back
		}
		return err
	}
	host := c.cfg.Address()
	if err := checkPath(f.Path); err != nil {
		return &StepError{Host: host, Step: "remove", Path: f.Path, Err: err}
	}
	c.log(ctx, LevelDebug, "removing", map[string]any{"path": f.Path, "command": command != ""})
	_, errOut, exit, err := c.script(ctx, removeScript, nil, f.Path, command, commandLimit(ctx), randomSuffix())
	if err == nil && exit != 0 {
		step := "remove"
		if exit == exitReload || exit == exitTimeout {
			step = "run the command after removing"
		}
		err = c.sudoHint(string(errOut), fmt.Errorf("exit status %d", exit))
		return &StepError{Host: host, Step: step, Path: f.Path, Output: trimOutput(errOut), Err: err}
	}
	if err != nil {
		return &StepError{Host: host, Step: "remove", Path: f.Path, Err: err}
	}
	return nil
}
