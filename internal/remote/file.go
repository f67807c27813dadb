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

	"golang.org/x/crypto/ssh"
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
// minus a margin, in whole seconds; 0 without a deadline.
func commandLimit(ctx context.Context) int {
	deadline, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	return max(1, int((time.Until(deadline)-5*time.Second)/time.Second))
}

// command builds the command line of a script with its arguments, through
// sudo when the connection asks for it. The script arrives in the command
// line, so stdin stays free for content.
func (c *Client) command(s invocation) string {
	cmd := "sh -c " + ShellQuote(s.text) + " kha"
	for _, a := range s.args {
		cmd += " " + ShellQuote(a)
	}
	if c.sudo {
		cmd = "sudo -n " + cmd
	}
	return cmd
}

// script runs a script to its end and returns its output and exit status.
func (c *Client) script(ctx context.Context, s invocation, stdin []byte) (stdout, stderr []byte, exit exitCode, err error) {
	var in io.Reader
	if stdin != nil {
		in = bytes.NewReader(stdin)
	}
	out, errOut, err := c.Run(ctx, c.command(s), in)
	if status, ok := exitStatus(err); ok {
		return out, errOut, status, nil
	}
	return out, errOut, exitOK, err
}

// exitStatus is the exit status that err reports, if it reports one.
func exitStatus(err error) (exitCode, bool) {
	var exitErr interface{ ExitStatus() int }
	if errors.As(err, &exitErr) {
		return exitCode(exitErr.ExitStatus()), true
	}
	return exitOK, false
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
// when this client then commits, rename over the target and reload. On
// any failure the previous file stays (or is restored) byte for byte and
// no temporary file is left behind.
func (c *Client) putFile(ctx context.Context, f File) error {
	a := &applySession{ctx: ctx, c: c, f: f, fields: map[string]any{"path": f.Path, "bytes": len(f.Content), "sha256": f.Digest()}}
	if err := checkPath(f.Path); err != nil {
		return a.fail("configure", "", err)
	}
	if err := a.start(); err != nil {
		return err
	}
	defer a.release()
	if err := a.awaitReady(); err != nil {
		return err
	}
	if err := a.preflight(); err != nil {
		return err
	}
	if err := a.commit(); err != nil {
		return err
	}
	return a.result(a.verify())
}

// applySession is one run of applyScript, step by step.
type applySession struct {
	ctx     context.Context // the operation's
	c       *Client
	f       File
	fields  map[string]any // what the log says of f
	session *ssh.Session
	release func()
	stdin   io.WriteCloser
	lines   *bufio.Reader // the script's stdout
	stderr  bytes.Buffer
	exited  chan error // the script's end, once wait runs
}

// fail logs and returns the failure of a step.
func (a *applySession) fail(step, output string, err error) error {
	a.c.log(a.ctx, LevelWarn, step+" failed", map[string]any{"path": a.f.Path, "error": err.Error()})
	return &StepError{Host: a.c.cfg.Address(), Step: step, Path: a.f.Path, Output: output, Err: err}
}

// start starts applyScript and sends it the content.
func (a *applySession) start() error {
	a.c.log(a.ctx, LevelDebug, "uploading and validating", a.fields)
	session, release, err := a.c.session(a.ctx)
	if err != nil {
		return a.fail("run", "", err)
	}
	session.Stderr = &a.stderr
	stdin, err := session.StdinPipe()
	var stdout io.Reader
	if err == nil {
		stdout, err = session.StdoutPipe()
	}
	if err == nil {
		err = session.Start(a.c.command(applyScript.with(a.f.applyArgs(commandLimit(a.ctx)))))
	}
	if err != nil {
		release()
		return a.fail("run", "", err)
	}
	a.session, a.release, a.stdin, a.lines, a.exited = session, release, stdin, bufio.NewReader(stdout), make(chan error, 1)
	go func() { _, _ = stdin.Write(a.f.Content) }()
	return nil
}

// applyArgs are the arguments that put f in place, each command bounded
// by limit seconds.
func (f File) applyArgs(limit int) applyArgs {
	args := applyArgs{Target: f.Path, Mode: strconv.FormatUint(uint64(f.mode()), 8), Owner: f.Owner,
		CreateParentDirs: f.CreateParentDirs, Validate: strings.ReplaceAll(f.ValidateCommand, "%s", `"$KHA_NEW"`),
		Reload: f.ReloadCommand, Size: len(f.Content), Limit: limit, Rand: randomSuffix(),
		Verify: f.Verify != nil, ExpectSHA256: f.expectSHA256}
	if f.keepModeOwner {
		args.Mode = wordKeepMode
	} else if f.mode()&^0o666 == 0 { // a mode a new file can be created with
		args.Mask = strconv.FormatUint(uint64(0o777&^f.mode()), 8)
	}
	if f.Group != "" {
		args.Owner += ":" + f.Group
	}
	return args
}

// wait passes on the script's end.
func (a *applySession) wait() { a.exited <- a.session.Wait() }

// awaitReady waits for WORD_READY: the copy is in place and validated.
func (a *applySession) awaitReady() error {
	ready := make(chan bool, 1)
	go func() {
		line, _ := a.lines.ReadString('\n')
		ready <- line == wordReady+"\n"
	}()
	select {
	case ok := <-ready:
		if !ok {
			go a.wait()
			return a.applyResult(<-a.exited)
		}
		return nil
	case <-a.ctx.Done():
		a.session.Close() // the script sees its stdin and stdout go: it never renames
		a.c.log(a.ctx, LevelWarn, "cancelled before commit; the host is unchanged", a.fields)
		return a.fail("commit", "", fmt.Errorf("%w (%v)", ErrNotCommitted, a.ctx.Err()))
	}
}

// preflight runs f's throwaway instance, if it has one, while the script
// waits for the commit, which a failure never sends.
func (a *applySession) preflight() error {
	if a.f.Preflight == nil {
		return nil
	}
	if err := a.c.preflight(a.ctx, a.f, a.fail); err != nil {
		a.session.Close()
		return err
	}
	return nil
}

// commit tells the script to put the new file in place and reload.
func (a *applySession) commit() error {
	if a.ctx.Err() != nil {
		a.session.Close()
		return a.fail("commit", "", fmt.Errorf("%w (%v)", ErrNotCommitted, a.ctx.Err()))
	}
	a.c.log(a.ctx, LevelDebug, "validated; committing: rename into place and reload", a.fields)
	if _, err := io.WriteString(a.stdin, wordCommit+"\n"); err != nil {
		return a.fail("commit", trimOutput(a.stderr.Bytes()), fmt.Errorf("%w: %v", ErrNotCommitted, err))
	}
	return nil
}

// verify awaits WORD_RELOADED (or the end of the output, when the reload
// failed), verifies the service and sends the verdict. It returns the
// verification's error.
func (a *applySession) verify() error {
	if a.f.Verify == nil {
		return nil
	}
	if line, _ := a.lines.ReadString('\n'); line != wordReloaded+"\n" {
		return nil
	}
	a.c.log(a.ctx, LevelDebug, "reloaded; verifying", a.fields)
	start := time.Now()
	verdict := wordKeep + "\n"
	err := a.f.Verify.Verify(a.ctx, a.c)
	if err != nil {
		verdict = wordRollback + "\n"
		a.c.log(a.ctx, LevelWarn, "verification failed; rolling back", map[string]any{"path": a.f.Path, "error": err.Error()})
	} else {
		a.c.log(a.ctx, LevelDebug, "verified", map[string]any{"path": a.f.Path, "took": time.Since(start).String()})
	}
	_, _ = io.WriteString(a.stdin, verdict)
	return err
}

// result waits for the script's end after the commit and reports it,
// with verifyErr, the verification's failure.
func (a *applySession) result(verifyErr error) error {
	a.stdin.Close()
	go a.wait()
	result := lostAfterCommit(a.exited, a.f.Verify != nil)
	if verifyErr != nil {
		if stepErr := a.applyResult(<-result); stepErr != nil {
			var se *StepError
			if errors.As(stepErr, &se) && se.Step == "verify" {
				se.Err = fmt.Errorf("%w: %v", se.Err, verifyErr)
			}
			return stepErr
		}
		return a.fail("verify", trimOutput(a.stderr.Bytes()), verifyErr)
	}
	select {
	case err := <-result:
		return a.applyResult(err)
	case <-a.ctx.Done():
		// The host finishes the reload (bounded by the script's own
		// limit) or restores the previous file; wait a little for which.
		select {
		case err := <-result:
			return a.applyResult(err)
		case <-time.After(15 * time.Second):
			return a.fail("reload", trimOutput(a.stderr.Bytes()), fmt.Errorf("lost track of the host after the new file was "+
				"put in place (%v); the next refresh shows what it has", a.ctx.Err()))
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
		if _, exited := exitStatus(err); err != nil && !exited {
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

// applyResult turns applyScript's end into the result of putFile.
func (a *applySession) applyResult(err error) error {
	output := trimOutput(a.stderr.Bytes())
	if err == nil {
		a.c.log(a.ctx, LevelDebug, "in place and reloaded", map[string]any{"path": a.f.Path, "sha256": a.f.Digest(),
			"reload_command": a.f.ReloadCommand != ""})
		return nil
	}
	exit, ok := exitStatus(err)
	if !ok {
		return a.fail("run", output, err)
	}
	step, what := "apply", fmt.Sprintf("exit status %d; the previous file is untouched", exit)
	if meaning, ok := exitCodes[exit]; ok {
		step, what = meaning.step, meaning.left
	}
	if exit == exitReload || exit == exitReloadTime || exit == exitRollback {
		a.c.log(a.ctx, LevelWarn, "reload failed; rolled back to the previous file", map[string]any{"path": a.f.Path})
	}
	return a.fail(step, output, a.c.sudoHint(output, errors.New(what)))
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
	stdout, stderr, exit, err := c.script(ctx, statScript.with(statArgs{Paths: paths}), nil)
	if err == nil && exit != exitOK {
		err = c.sudoHint(string(stderr), exit)
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
		case wordPresent:
			present = append(present, i)
		case wordMissing:
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
	args := removeArgs{Target: f.Path, Command: command, Limit: commandLimit(ctx), Rand: randomSuffix()}
	_, errOut, exit, err := c.script(ctx, removeScript.with(args), nil)
	if err == nil && exit != exitOK {
		step := "remove"
		if exit == exitReload || exit == exitTimeout {
			step = "run the command after removing"
		}
		err = c.sudoHint(string(errOut), exit)
		return &StepError{Host: host, Step: step, Path: f.Path, Output: trimOutput(errOut), Err: err}
	}
	if err != nil {
		return &StepError{Host: host, Step: "remove", Path: f.Path, Err: err}
	}
	return nil
}
