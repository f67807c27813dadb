package remote

import (
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
)

// File is a file kha manages on a host.
type File struct {
	Path    string
	Content []byte
	Mode    uint32 // permission bits; 0 means 0644
	Owner   string // user name or id; empty keeps the connecting user
	Group   string
	// ValidateCommand runs before the file is put in place, with every
	// "%s" replaced by the quoted path of the uploaded copy, e.g.
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
}

// Digest is what Observe reports when the host has f as wanted.
func (f File) Digest() string {
	if f.Block != "" {
		return BlockDigest(f.Block, string(f.Content))
	}
	sum := sha256.Sum256(f.Content)
	return hex.EncodeToString(sum[:])
}

// Put applies f, as a whole file or as a block, and returns its digest on
// the host.
func (c *Client) Put(ctx context.Context, f File) (string, error) {
	if f.Block != "" {
		return c.ApplyBlock(ctx, f.Path, f.Block, string(f.Content))
	}
	rf, err := c.ApplyFile(ctx, f)
	return rf.SHA256, err
}

// Observe returns the digest of f on the host, "" when it is missing.
func (c *Client) Observe(ctx context.Context, f File) (string, error) {
	if f.Block != "" {
		return c.ReadBlock(ctx, f.Path, f.Block)
	}
	rf, err := c.ReadFile(ctx, f.Path)
	return rf.SHA256, err
}

// Remove deletes f from the host (the block only, for blocks) and runs
// reloadCommand after a removed file.
func (c *Client) Remove(ctx context.Context, f File, reloadCommand string) error {
	if f.Block != "" {
		return c.RemoveBlock(ctx, f.Path, f.Block)
	}
	return c.RemoveFile(ctx, f.Path, reloadCommand)
}

// RemoteFile is what a host has at a path.
type RemoteFile struct {
	Exists bool
	SHA256 string
	Mode   uint32
	Owner  string
	Group  string
	Size   int64
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

// Steps of ApplyFile, by the exit code the remote script uses for them.
var applySteps = map[int]string{
	10: "create directory", 11: "upload", 12: "set owner and mode",
	13: "validate", 14: "rename into place", 15: "reload",
}

// runCommand is the scripts' way to run a user's command. Its output goes
// to a file first: a daemon the command starts (nginx, haproxy -D) inherits
// stdout and stderr, and holding them would keep the SSH session open for
// as long as the daemon lives.
const runCommand = `run() {
  log=$(mktemp) || return 1
  sh -c "$1" </dev/null >"$log" 2>&1; rc=$?
  cat -- "$log" >&2; rm -f -- "$log"; return $rc
}
`

// The remote scripts run under `sh -c` with their arguments after the
// script name. Each is one round trip.
const applyScript = `set -u
` + runCommand + `
target=$1 tmp=$2 sum=$3 mode=$4 owner=$5 mkdirs=$6 validate=$7 reload=$8
dir=$(dirname -- "$target")
if [ ! -d "$dir" ]; then
  [ "$mkdirs" = 1 ] || { echo "directory $dir does not exist" >&2; exit 10; }
  mkdir -p -m 0755 -- "$dir" || exit 10
fi
backup=
cleanup() { rm -f -- "$tmp"; [ -z "$backup" ] || rm -f -- "$backup"; }
trap cleanup EXIT
(umask 077; set -C; head -c "$9" > "$tmp") || exit 11
got=$(sha256sum < "$tmp") && [ "${got%% *}" = "$sum" ] || { echo "uploaded content does not match its sha256" >&2; exit 11; }
chmod "$mode" -- "$tmp" || exit 12
if [ -n "$owner" ]; then chown -- "$owner" "$tmp" || exit 12; fi
if [ -n "$validate" ]; then run "$validate" || exit 13; fi
if [ -e "$target" ]; then
  backup=$tmp.previous
  cp -p -- "$target" "$backup" || exit 14
fi
mv -f -- "$tmp" "$target" || exit 14
if [ -n "$reload" ] && ! run "$reload"; then
  if [ -n "$backup" ]; then mv -f -- "$backup" "$target" && backup=; else rm -f -- "$target"; fi
  run "$reload" 2>/dev/null
  exit 15
fi
set -- "$target"
` + statScript

// statScript prints "sha256 mode owner group size" of $1, or "missing".
const statScript = `if [ -f "$1" ]; then
  sum=$(sha256sum < "$1") || exit 1
  printf '%s ' "${sum%% *}"; stat -c '%a %U %G %s' -- "$1"
elif [ -e "$1" ]; then echo "$1 exists but is not a regular file" >&2; exit 2
else echo missing; fi
`

const removeScript = runCommand + `if [ -e "$1" ]; then
  rm -f -- "$1" || exit 1
  if [ -n "$2" ]; then run "$2" || exit 15; fi
fi
`

// checkPath refuses paths the scripts cannot carry safely.
func checkPath(p string) error {
	switch {
	case p == "" || !path.IsAbs(p):
		return fmt.Errorf("path %q is not absolute", p)
	case strings.ContainsAny(p, "\x00\n"):
		return fmt.Errorf("path %q contains a NUL or newline", p)
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("path %q names a directory", p)
	}
	return nil
}

// ShellQuote quotes s for POSIX sh.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// script runs a shell script with positional arguments, through sudo when
// the connection asks for it. The script arrives in the command line, so
// stdin stays free for file content.
func (c *Client) script(ctx context.Context, body string, stdin []byte, args ...string) (stdout, stderr []byte, exit int, err error) {
	cmd := "sh -c " + ShellQuote(body) + " kha"
	for _, a := range args {
		cmd += " " + ShellQuote(a)
	}
	if c.sudo {
		cmd = "sudo -n " + cmd
	}
	var in io.Reader
	if stdin != nil {
		in = bytes.NewReader(stdin)
	}
	out, errOut, err := c.Run(ctx, cmd, in)
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

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ApplyFile puts f on the host: upload next to the target, set owner and
// mode, validate, rename over the target, reload. On any failure the
// previous file stays (or is restored) byte for byte and no temporary file
// is left behind.
func (c *Client) ApplyFile(ctx context.Context, f File) (RemoteFile, error) {
	host := c.cfg.Address()
	fail := func(step, output string, err error) (RemoteFile, error) {
		return RemoteFile{}, &StepError{Host: host, Step: step, Path: f.Path, Output: output, Err: err}
	}
	if err := checkPath(f.Path); err != nil {
		return fail("configure", "", err)
	}
	mode := f.Mode
	if mode == 0 {
		mode = 0o644
	}
	owner := f.Owner
	if f.Group != "" {
		owner += ":" + f.Group
	}
	tmp := path.Join(path.Dir(f.Path), "."+path.Base(f.Path)+".kha-"+randomSuffix())
	sum := sha256.Sum256(f.Content)
	validate := strings.ReplaceAll(f.ValidateCommand, "%s", ShellQuote(tmp))
	mkdirs := "0"
	if f.CreateParentDirs {
		mkdirs = "1"
	}
	out, errOut, exit, err := c.script(ctx, applyScript, f.Content,
		f.Path, tmp, hex.EncodeToString(sum[:]), strconv.FormatUint(uint64(mode), 8), owner, mkdirs, validate, f.ReloadCommand,
		strconv.Itoa(len(f.Content)))
	output := trimOutput(errOut)
	switch {
	case err != nil:
		return fail("run", output, err)
	case exit == 15:
		return fail("reload", output, errors.New("the reload command failed with the new file; the previous state was restored and the reload command run again"))
	case exit == 13:
		return fail("validate", output, errors.New("the validate command rejected the new file; the previous file is untouched"))
	case exit != 0:
		step, ok := applySteps[exit]
		if !ok {
			step = "apply"
		}
		if c.sudo && strings.Contains(output, "sudo:") {
			return fail(step, output, errors.New("sudo -n failed: the connection user needs passwordless sudo (NOPASSWD) for ssh.sudo"))
		}
		return fail(step, output, fmt.Errorf("exit status %d; the previous file is untouched", exit))
	}
	rf, err := parseStat(strings.TrimSpace(string(out)))
	if err != nil {
		return fail("read back", output, err)
	}
	return rf, nil
}

// ReadFile reports what the host has at p; a missing file is not an error.
func (c *Client) ReadFile(ctx context.Context, p string) (RemoteFile, error) {
	host := c.cfg.Address()
	if err := checkPath(p); err != nil {
		return RemoteFile{}, &StepError{Host: host, Step: "read", Path: p, Err: err}
	}
	out, errOut, exit, err := c.script(ctx, statScript, nil, p)
	if err != nil || exit != 0 {
		if err == nil {
			err = fmt.Errorf("exit status %d", exit)
		}
		return RemoteFile{}, &StepError{Host: host, Step: "read", Path: p, Output: trimOutput(errOut), Err: err}
	}
	return parseStat(strings.TrimSpace(string(out)))
}

func parseStat(line string) (RemoteFile, error) {
	if line == "missing" {
		return RemoteFile{}, nil
	}
	fields := strings.Fields(line)
	if len(fields) != 5 {
		return RemoteFile{}, fmt.Errorf("unexpected stat output %q", line)
	}
	mode, err1 := strconv.ParseUint(fields[1], 8, 32)
	size, err2 := strconv.ParseInt(fields[4], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return RemoteFile{}, fmt.Errorf("unexpected stat output %q: %v", line, err)
	}
	return RemoteFile{Exists: true, SHA256: fields[0], Mode: uint32(mode), Owner: fields[2], Group: fields[3], Size: size}, nil
}

// RemoveFile deletes p and then runs reloadCommand, if the file existed.
// A missing file is success.
func (c *Client) RemoveFile(ctx context.Context, p, reloadCommand string) error {
	host := c.cfg.Address()
	if err := checkPath(p); err != nil {
		return &StepError{Host: host, Step: "remove", Path: p, Err: err}
	}
	_, errOut, exit, err := c.script(ctx, removeScript, nil, p, reloadCommand)
	if err == nil && exit != 0 {
		step := "remove"
		if exit == 15 {
			step = "reload"
		}
		err = fmt.Errorf("exit status %d", exit)
		return &StepError{Host: host, Step: step, Path: p, Output: trimOutput(errOut), Err: err}
	}
	if err != nil {
		return &StepError{Host: host, Step: "remove", Path: p, Err: err}
	}
	return nil
}

// FetchFile returns the content of p, for adopting an existing file.
func (c *Client) FetchFile(ctx context.Context, p string) ([]byte, error) {
	host := c.cfg.Address()
	if err := checkPath(p); err != nil {
		return nil, &StepError{Host: host, Step: "fetch", Path: p, Err: err}
	}
	out, errOut, exit, err := c.script(ctx, `cat -- "$1"`, nil, p)
	if err == nil && exit != 0 {
		err = fmt.Errorf("exit status %d", exit)
	}
	if err != nil {
		return nil, &StepError{Host: host, Step: "fetch", Path: p, Output: trimOutput(errOut), Err: err}
	}
	return out, nil
}
