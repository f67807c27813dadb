package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// put puts f on the host: upload into a private directory next to
// the target, set owner and mode, validate, run the preflight, and only
// when this client then commits, rename over the target and reload. On
// any failure the previous file stays (or is restored) byte for byte and
// no temporary file is left behind.
//
// With a Claim, a path whose record names another owner is refused before
// anything is uploaded, and the first apply records what it replaces. A
// host that has the file already (content, mode and owner) is left as it
// is: nothing is validated, written or reloaded.
func (f File) put(ctx context.Context, c *Client) (Outcome, error) {
	a := &applySession{ctx: ctx, c: c, f: f, fields: map[string]any{"path": f.Path, "bytes": len(f.Content), "sha256": f.Digest()}}
	if err := checkPath(f.Path); err != nil {
		return Outcome{}, a.fail("configure", "", err)
	}
	if err := a.start(); err != nil {
		return Outcome{}, err
	}
	defer a.release()
	if err := a.awaitReady(); err != nil || a.outcome.Unchanged {
		return a.outcome, err
	}
	if err := a.preflight(); err != nil {
		return Outcome{}, err
	}
	if err := a.commit(); err != nil {
		return Outcome{}, err
	}
	return a.outcome, a.result(a.verify())
}

// applySession is one run of applyScript, step by step.
type applySession struct {
	*conversation
	ctx    context.Context // the operation's
	c      *Client
	f      File
	fields map[string]any // what the log says of f
	exited chan error     // the script's end, once wait runs
	// outcome is what the script found: the file there already, a file
	// saved in the record.
	outcome Outcome
}

// fail logs and returns the failure of a step.
func (a *applySession) fail(step Step, output string, err error) error {
	err = missingProgramHint(output, nonlocalBindHint(output, err))
	a.c.log(a.ctx, LevelWarn, string(step)+" failed", map[string]any{"path": a.f.Path, "error": err.Error()})
	return &StepError{Host: a.c.cfg.Address(), Step: step, Path: a.f.Path, Output: output, Err: err}
}

// start starts applyScript and sends it the content.
func (a *applySession) start() error {
	a.c.log(a.ctx, LevelDebug, "uploading and validating", a.fields)
	conv, err := a.c.converse(a.ctx, applyScript.with(a.f.applyArgs(commandLimit(a.ctx))), a.f.Content)
	if err != nil {
		return a.fail("run", "", err)
	}
	a.conversation, a.exited = conv, make(chan error, 1)
	return nil
}

// applyArgs are the arguments that put f in place, each command bounded
// by limit seconds.
func (f File) applyArgs(limit int) applyArgs {
	args := applyArgs{Target: f.Path, Mode: strconv.FormatUint(uint64(f.mode()), 8), Owner: f.Owner,
		CreateParentDirs: f.CreateParentDirs, Validate: strings.ReplaceAll(f.ValidateCommand, "%s", `"$KHA_NEW"`),
		Explain: strings.ReplaceAll(withoutQuiet(f.ValidateCommand), "%s", `"$KHA_NEW"`),
		Reload:  f.ReloadCommand, Size: len(f.Content), Limit: limit, Rand: randomSuffix(),
		Verify: f.Verify != nil, ReloadAgain: f.ReloadAgain, ExpectSHA256: f.expectSHA256}
	if f.keepModeOwner {
		args.Mode = wordKeepMode
	} else if f.mode()&^0o666 == 0 { // a mode a new file can be created with
		args.Mask = strconv.FormatUint(uint64(0o777&^f.mode()), 8)
	}
	if f.Group != "" {
		args.Owner += ":" + f.Group
	}
	if f.Claim != nil {
		args.Claim, args.Note, args.Adopt, args.Capture = f.Claim.ID, oneLine(f.Claim.Note), f.Claim.Adopt, f.Claim.Capture
	}
	return args
}

// oneLine is s with its control characters as spaces: a record's note is
// one line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// nonlocalBindHint names the fix when a load balancer could not bind its
// address (HAProxy's "cannot bind socket (Cannot assign requested
// address)", nginx's "bind() ... failed (99: Cannot assign requested
// address)"): on the first apply of a VIP pair no node holds the VIP yet.
func nonlocalBindHint(output string, err error) error {
	if !strings.Contains(output, "Cannot assign requested address") {
		return err
	}
	return fmt.Errorf("%w. The address to bind is not on this host: a load balancer on a VIP binds it on every node of "+
		"the pair, and on the first apply no node holds it yet. Run `sysctl -w net.ipv4.ip_nonlocal_bind=1` (and "+
		"`net.ipv6.ip_nonlocal_bind=1` for an IPv6 VIP) on every node of the pair, persist it in /etc/sysctl.d (the "+
		"kha_file recipe `nonlocal_bind` in the kha_file documentation does both), then apply again", err)
}

// missingProgramHint says that a command's program is not installed on
// the host, when the shell said it could not find it (dash's "sh: 1:
// haproxy: not found", bash's "haproxy: command not found"): the failure
// is the host's, not the configuration's.
func missingProgramHint(output string, err error) error {
	m := notFound.FindStringSubmatch(output)
	if m == nil {
		return err
	}
	// The shell's line is in the step's output, shown once below the
	// message; err is what the step's failure means for the file.
	return fmt.Errorf("%s is not installed on the host, or not on the PATH of the user the command runs as: install it "+
		"(the guide \"What a host needs\" lists what each resource runs), or set the command to one the host has (%w)", m[1], err)
}

// notFound is a shell's line for a command it cannot find.
var notFound = regexp.MustCompile(`(?m)^\S*sh: (?:line )?\d+: ([^\s:]+): (?:command )?not found$`)

// withoutQuiet is the command without its -q words (haproxy -c -q
// prints no reason for a rejection), or "" when it has none.
func withoutQuiet(command string) string {
	loud := quietWord.ReplaceAllString(command, "$1")
	if loud == command {
		return ""
	}
	return loud
}

// quietWord is a -q word with the blank before it.
var quietWord = regexp.MustCompile(`(\s)-q(?:\s+|$)`)

// wait passes on the script's end.
func (a *applySession) wait() { a.exited <- a.session.Wait() }

// awaitReady waits for WORD_READY: the copy is in place and validated;
// or for WORD_UNCHANGED and the script's end: the host has the file.
func (a *applySession) awaitReady() error {
	ready := make(chan string, 1)
	go func() {
		line, _ := a.lines.ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		word, saved, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		a.outcome.Saved = saved == "1"
		switch word {
		case wordReady:
			return nil
		case wordUnchanged:
			a.outcome.Unchanged = true
			if a.f.ReloadAgain && a.f.ReloadCommand != "" {
				a.c.log(a.ctx, LevelInfo, "the host has the file already: reloading again", a.fields)
			} else {
				a.c.log(a.ctx, LevelDebug, "the host has the file already: nothing written or reloaded", a.fields)
			}
		}
		go a.wait()
		err := <-a.exited
		if _, exited := exitStatus(err); err != nil && !exited {
			// No word and no exit status: the connection died before
			// the commit, which the script never got.
			return a.fail("upload", trimOutput(a.stderr.Bytes()), fmt.Errorf("the connection was lost before the new file "+
				"was put in place (%v): %w; apply again", err, ErrNotCommitted))
		}
		return a.applyResult(err)
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
			if errors.As(stepErr, &se) && se.Step == StepVerify {
				se.Err = fmt.Errorf("%w: %v", se.Err, verifyErr)
			}
			return stepErr
		}
		return a.fail(StepVerify, trimOutput(a.stderr.Bytes()), verifyErr)
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
			return a.fail(StepReload, trimOutput(a.stderr.Bytes()), fmt.Errorf("%w: lost track of the host (%v); the next "+
				"refresh shows what it has", errLostAfterSwap, a.ctx.Err()))
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
	return errors.As(err, &se) && (se.Step == StepReload || se.Step == StepVerify || errors.Is(err, errLostAfterSwap))
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

// applyResult turns applyScript's end into the result of put.
func (a *applySession) applyResult(err error) error {
	output := trimOutput(a.stderr.Bytes())
	if err == nil && a.outcome.Unchanged {
		return nil
	}
	if err == nil {
		a.c.log(a.ctx, LevelDebug, "in place and reloaded", map[string]any{"path": a.f.Path, "sha256": a.f.Digest(),
			"reload_command": a.f.ReloadCommand != ""})
		return nil
	}
	exit, ok := exitStatus(err)
	if !ok {
		return a.fail("run", output, err)
	}
	step, what := Step("apply"), fmt.Sprintf("exit status %d; the previous file is untouched", exit)
	if meaning, ok := exitCodes[exit]; ok {
		step, what = meaning.step, meaning.left
	}
	if exit == exitValidate && output == "" {
		what += "; the validate command printed no reason: run it on the host without its quiet flags to see one"
	}
	if exit == exitReload || exit == exitReloadTime || exit == exitRollback || exit == exitRemovedNew {
		a.c.log(a.ctx, LevelWarn, "reload failed; rolled back to the previous file", map[string]any{"path": a.f.Path})
	}
	return a.fail(step, output, a.c.sudoHint(output, errors.New(what)))
}
