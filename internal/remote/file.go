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
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/crypto/ssh"
)

// Item is one thing kha keeps on a host: a whole File, a Block within a
// file, or an EditedFile. Put, Remove and Observe take any of them.
type Item interface {
	// Place is where the item is: its file's path, and for a block its
	// marker ("" for the other kinds).
	Place() (path, marker string)
	// Digest is the digest Observe reports when the host has what the
	// item wants.
	Digest() string
	// Drift says how the host differs from the item, or "" when it has
	// what the item wants.
	Drift(o Observed) string
	// Reload is the command that reloads what reads the item ("" for a
	// block): what to run again when a change is put back after it ran.
	Reload() string

	put(ctx context.Context, c *Client) (Outcome, error)
	remove(ctx context.Context, c *Client, command string) error
}

// File is a whole file kha manages on a host.
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
	// ReloadAgain runs ReloadCommand where the host has the file already
	// (and nothing else happens): to bring back a service that should run
	// with it, e.g. a keepalived that does not hold its VIP. A failure
	// leaves the file as it is.
	ReloadAgain bool
	// CreateParentDirs creates missing parent directories (mode 0755).
	CreateParentDirs bool
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

	// Claim, when set, keeps a record of the path on the host (see
	// Claim): which resource owns it, and what to put back on Remove.
	Claim *Claim

	// keepModeOwner keeps the mode, owner and group of the file replaced;
	// expectSHA256 replaces it only if it still has that digest.
	keepModeOwner bool
	expectSHA256  string
}

// Claim is what kha records of a whole file it manages, in a private
// directory next to it (".<name>.kha", mode 0700): which resource owns
// the path, the file that was there before kha first wrote it (with its
// mode and owner), and the directories kha made for it. Put refuses a
// path another owner's record names; Remove puts the saved file back (or
// deletes the file) and removes the record and the directories it made
// that are empty then.
type Claim struct {
	// ID is the owner's, kept with the resource; Note says who that is
	// (one line), shown to another owner that Put refuses.
	ID, Note string
	// Adopt takes a path that another owner's record names.
	Adopt bool
	// Capture saves a file found where there is no record yet (a create,
	// or the first apply after an import), to put back on Remove;
	// without it such a file counts as the owner's own.
	Capture bool
	// OnRemove is what Remove does with the file.
	OnRemove OnRemove
	// Saved says the owner knows a file was saved, so a saved copy that
	// is gone fails a Remove that restores before anything is removed.
	Saved bool
	// Recorded says the owner knows the path has a record (a put of it
	// succeeded): a Remove that finds none, or one kha did not make,
	// leaves the file (ErrUnvouched).
	Recorded bool
}

// OnRemove is what Remove does with a claimed file.
type OnRemove int

const (
	// OnRemoveDelete deletes the path (the zero value).
	OnRemoveDelete OnRemove = iota
	// OnRemoveRestore puts the saved file back; without one it deletes.
	OnRemoveRestore
	// OnRemoveKeep leaves the file as it is and removes only the record.
	OnRemoveKeep
)

// Outcome is what Put found on the host.
type Outcome struct {
	// Unchanged: the host had the item already, and nothing was written
	// or reloaded.
	Unchanged bool
	// Saved: the path's record keeps a file that was there before kha
	// (File with a Claim).
	Saved bool
	// Created: there was no file for a Block; kha made it.
	Created bool
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

// Place is f's path; a whole file has no marker.
func (f File) Place() (path, marker string) { return f.Path, "" }

// Reload is f's ReloadCommand.
func (f File) Reload() string { return f.ReloadCommand }

// Digest is the digest Observe reports when the host has f's content.
func (f File) Digest() string {
	if f.SHA256 != "" {
		return f.SHA256
	}
	return SHA256(f.Content)
}

func (f File) mode() uint32 {
	if f.Mode == 0 {
		return 0o644
	}
	return f.Mode
}

// Observed is what a host has for an Item.
type Observed struct {
	Exists bool
	SHA256 string // of the content, or of the block with its markers
	// Mode, owner and group of a whole file.
	Mode         uint32
	Owner, Group string
	UID, GID     string
	// State is what an edited file has of the edit (see Edit.State).
	State string
	// Notice is something found at the item's place that the user should
	// hear of in a warning.
	Notice Notice
}

// Notice is a warning about what a read found; an empty Detail is none.
type Notice struct{ Summary, Detail string }

// Drift says how the host differs from f, or "" when it has what f
// wants: the content, its mode and the owner and group f names (by name
// or id).
func (f File) Drift(o Observed) string {
	if !o.Exists {
		return missing(f.Path, "file")
	}
	var diffs []string
	if o.SHA256 != f.Digest() {
		diffs = append(diffs, "the file's content changed")
	}
	if o.Mode != f.mode() {
		diffs = append(diffs, fmt.Sprintf("mode is %04o, want %04o", o.Mode, f.mode()))
	}
	if f.Owner != "" && f.Owner != o.Owner && f.Owner != o.UID {
		diffs = append(diffs, fmt.Sprintf("owner is %s, want %s", o.Owner, f.Owner))
	}
	if f.Group != "" && f.Group != o.Group && f.Group != o.GID {
		diffs = append(diffs, fmt.Sprintf("group is %s, want %s", o.Group, f.Group))
	}
	if len(diffs) == 0 {
		return ""
	}
	return f.Path + ": " + strings.Join(diffs, ", ")
}

// missing is the drift of an item the host lacks.
func missing(path, what string) string {
	return fmt.Sprintf("%s: the %s is missing", path, what)
}

// StepError reports which host and which step of an operation failed,
// with the remote command's output.
type StepError struct {
	Host   string
	Step   Step
	Path   string
	Output string
	Err    error
}

// Error says what failed, with the host's output; the control
// characters a host could print (an escape sequence that redraws the
// terminal) are escaped.
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
	return Printable(b.String())
}

// Step names what a StepError failed at, as its message says it: "read",
// "validate", "reload", "verify". The engine tells some failures apart
// by their step; those steps are constants.
type Step string

// The steps the engine and its callers tell apart.
const (
	StepConnect   Step = "connect"
	StepRead      Step = "read"
	StepPreflight Step = "preflight"
	StepReload    Step = "reload"
	StepVerify    Step = "verify"
	StepRemove    Step = "remove"
)

// Printable is s with every control character but newline and tab
// escaped as Go would quote it (\x1b, \r), and invalid UTF-8 as \ufffd:
// text from a host reaches a terminal as text, never as a command to it.
func Printable(s string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\ufffd") {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.In(r, unicode.Bidi_Control):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// OneLine is a one-line text of the host's as a diagnostic shows it:
// bare when it reads as itself, else quoted (%q), so that no newline or
// control character in it starts a line of its own.
func OneLine(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q
	}
	return s
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

// randomBytes are the random bytes of a work directory's name, in hex.
const randomBytes = 6

func randomSuffix() string {
	b := make([]byte, randomBytes)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// MaxManagedName is the longest name (in bytes) of a file kha manages:
// kha's longest private name beside it, the work directory
// .<name>.kha-<random hex>, must stay within NAME_MAX, the 255 bytes a
// file name has on Linux. The private names are found by the file's own
// name, so they cannot be shortened for a long one.
const MaxManagedName = 255 - len(".") - len(".kha-") - 2*randomBytes

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
	if stdin != nil || s.lines != nil {
		in = io.MultiReader(bytes.NewReader(s.lines), bytes.NewReader(stdin))
	}
	out, errOut, err := c.Run(ctx, c.command(s), in)
	if status, ok := exitStatus(err); ok {
		return out, errOut, status, nil
	}
	return out, errOut, exitOK, err
}

// conversation is a script that the engine talks with while it runs:
// lines on its stdin and stdout.
type conversation struct {
	session *ssh.Session
	release func() // gives the session's slot back
	stdin   io.WriteCloser
	lines   *bufio.Reader // the script's stdout
	stderr  bytes.Buffer
}

// converse starts a script and sends it content on stdin. A script that
// did not start changed nothing: its error is ErrNotCommitted too.
func (c *Client) converse(ctx context.Context, s invocation, content []byte) (*conversation, error) {
	session, release, err := c.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w; %w", err, ErrNotCommitted)
	}
	conv := &conversation{session: session, release: release}
	session.Stderr = &conv.stderr
	conv.stdin, err = session.StdinPipe()
	var stdout io.Reader
	if err == nil {
		stdout, err = session.StdoutPipe()
	}
	if err == nil {
		err = session.Start(c.command(s))
	}
	if err != nil {
		release()
		return nil, fmt.Errorf("starting the script: %w; %w", err, ErrNotCommitted)
	}
	conv.lines = bufio.NewReader(stdout)
	go func() { _, _ = conv.stdin.Write(append(s.lines, content...)) }()
	return conv, nil
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
			"sudo), or connect as a user who has it. If sudo is set, check its spelling: Terraform drops a key it does "+
			"not know inside ssh = { … } without a word", err, c.cfg.user())
	}
	return err
}

// Put puts the item on the host.
func (c *Client) Put(ctx context.Context, it Item) (Outcome, error) {
	return it.put(ctx, c)
}

// Remove takes the item off the host (deletes a file, the block only of
// a block, takes an edit back) and then runs command, if there was
// something to remove (not after a block or an edit).
func (c *Client) Remove(ctx context.Context, it Item, command string) error {
	return it.remove(ctx, c, command)
}

// readAlone is an item that Observe reads on its own; whole files are
// read together, in one session.
type readAlone interface {
	observe(ctx context.Context, c *Client) (Observed, error)
}

// Observe reports what the host has for each of items.
func (c *Client) Observe(ctx context.Context, items []Item) ([]Observed, error) {
	out := make([]Observed, len(items))
	var whole []int // indexes of whole files
	for i, it := range items {
		p, _ := it.Place()
		if err := checkPath(p); err != nil {
			return nil, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: p, Err: err}
		}
		alone, ok := it.(readAlone)
		if !ok {
			whole = append(whole, i)
			continue
		}
		o, err := alone.observe(ctx, c)
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	if len(whole) == 0 {
		return out, nil
	}
	paths, claimed := make([]string, len(whole)), make([]bool, len(whole))
	for j, i := range whole {
		paths[j], _ = items[i].Place()
		f, ok := items[i].(File)
		claimed[j] = ok && f.Claim != nil
	}
	c.log(ctx, LevelDebug, "reading digests", map[string]any{"paths": paths})
	stdout, stderr, exit, err := c.script(ctx, statScript.with(statArgs{Paths: paths}), nil)
	if err == nil && exit != exitOK {
		err = c.sudoHint(string(stderr), exit)
	}
	if err != nil {
		return nil, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: strings.Join(paths, ", "), Output: trimOutput(stderr), Err: err}
	}
	observed, err := parseStat(strings.Split(strings.TrimSuffix(string(stdout), "\n"), "\n"), paths, claimed)
	if err != nil {
		return nil, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: strings.Join(paths, ", "), Err: err}
	}
	for j, i := range whole {
		out[i] = observed[j]
	}
	return out, nil
}

// unsafeNotice is the warning of a read whose script said (a line
// "$WORD_UNSAFE <where>: <why>" in output) that an apply would refuse
// path's directory; none when it did not.
func unsafeNotice(path string, output []byte) Notice {
	for line := range strings.Lines(string(output)) {
		if text, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), wordUnsafe+" "); ok {
			return Notice{Summary: "Directory Not Safe", Detail: fmt.Sprintf("An apply or destroy will refuse %s: another "+
				"local user could change where a path through its directory leads: %s. Make every directory from / to it "+
				"root's (or the connection user's) and writable by no one else (chown root; chmod go-w; setfacl -b), or set "+
				"the sticky bit (chmod +t) of one everyone writes to.", path, Printable(text))}
		}
	}
	return Notice{}
}

// parseStat reads statScript's output for paths; a record not kha's is a
// notice only where claimed says kha keeps one.
func parseStat(lines []string, paths []string, claimed []bool) ([]Observed, error) {
	bad := fmt.Errorf("unexpected output %q", strings.Join(lines, "\n"))
	out := make([]Observed, len(paths))
	var present []int
	for i := range paths {
		for ; len(lines) > 0; lines = lines[1:] {
			word, text, _ := strings.Cut(lines[0], " ")
			if word != wordUnsafe && word != wordForeignRecord {
				break // the path's own line
			}
			switch {
			case word == wordUnsafe:
				out[i].Notice = unsafeNotice(paths[i], []byte(lines[0]))
			case claimed[i] && out[i].Notice.Detail == "":
				out[i].Notice = Notice{Summary: "Record Not kha's", Detail: fmt.Sprintf("%s, where kha keeps its record of %s, "+
					"is a link, not a directory, or another user's: kha did not make it (was it replaced?). An apply refuses "+
					"it, and destroy leaves %s as it is. Remove it, then apply again.", Printable(text), paths[i], paths[i])}
			}
		}
		if len(lines) == 0 {
			return nil, bad
		}
		switch lines[0] {
		case wordPresent:
			present = append(present, i)
		case wordMissing:
		default:
			return nil, bad
		}
		lines = lines[1:]
	}
	if len(lines) != 2*len(present) {
		return nil, bad
	}
	for j, i := range present {
		stat := strings.Fields(lines[j])
		sum := strings.TrimPrefix(lines[len(present)+j], `\`) // sha256sum escapes names with backslashes
		if len(sum) < 64 || len(stat) != 5 {
			return nil, bad
		}
		mode, err := strconv.ParseUint(stat[0], 8, 32)
		if err != nil {
			return nil, bad
		}
		out[i] = Observed{Exists: true, SHA256: sum[:64], Mode: uint32(mode), Owner: stat[1], Group: stat[2], UID: stat[3], GID: stat[4],
			Notice: out[i].Notice}
	}
	return out, nil
}

// ErrClaimedElsewhere means Remove left a file alone because another
// kha resource took it over (adopt): it is that resource's now.
var ErrClaimedElsewhere = errors.New("another kha resource took the file over; it is left as it is")

// ErrUnvouched means Remove left a file alone because kha's record of it,
// which the owner's state says there is, is gone or not kha's: nothing
// says the file there is the one kha wrote.
var ErrUnvouched = errors.New("kha cannot vouch that the file there is the one it wrote; it is left as it is")

// remove takes f off the host and then runs command, if that changed the
// file: with a Claim, the saved file is put back (Restore) and the record
// removed.
func (f File) remove(ctx context.Context, c *Client, command string) error {
	host := c.cfg.Address()
	if err := checkPath(f.Path); err != nil {
		return &StepError{Host: host, Step: StepRemove, Path: f.Path, Err: err}
	}
	args := removeArgs{Target: f.Path, Command: command, Limit: commandLimit(ctx), Rand: randomSuffix()}
	if f.Claim != nil {
		args.Claim, args.Saved, args.Recorded = f.Claim.ID, f.Claim.Saved, f.Claim.Recorded
		args.Restore, args.Keep = f.Claim.OnRemove == OnRemoveRestore, f.Claim.OnRemove == OnRemoveKeep
	}
	c.log(ctx, LevelDebug, "removing", map[string]any{"path": f.Path, "command": command != "", "restore": args.Restore})
	_, errOut, exit, err := c.script(ctx, removeScript.with(args), nil)
	if err == nil && exit == exitClaimed {
		c.log(ctx, LevelWarn, "left to the resource that took it over", map[string]any{"path": f.Path})
		return &StepError{Host: host, Step: StepRemove, Path: f.Path, Output: trimOutput(errOut), Err: ErrClaimedElsewhere}
	}
	if err == nil && exit == exitUnvouched {
		c.log(ctx, LevelWarn, "left: kha's record of it is gone or not kha's", map[string]any{"path": f.Path})
		return &StepError{Host: host, Step: StepRemove, Path: f.Path, Output: trimOutput(errOut), Err: ErrUnvouched}
	}
	if err == nil && exit != exitOK {
		step := StepRemove
		if exit == exitReload || exit == exitTimeout {
			step = "run the command after removing"
		}
		err = c.sudoHint(string(errOut), exit)
		return &StepError{Host: host, Step: step, Path: f.Path, Output: trimOutput(errOut), Err: err}
	}
	if err != nil {
		return &StepError{Host: host, Step: StepRemove, Path: f.Path, Err: err}
	}
	return nil
}
