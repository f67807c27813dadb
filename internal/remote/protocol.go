package remote

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The seam between the engine and its host-side scripts is declared here
// once: each script's parameters (a struct whose fields are the
// parameters, in argument order), the exit codes and the words the two
// sides exchange. The shell side is generated from these declarations as
// plain assignments, which cost the shell no process.

// exitCode is a script's exit status; each names the step that failed.
type exitCode int

const (
	exitOK          exitCode = 0
	exitDirectory   exitCode = 10
	exitUpload      exitCode = 11
	exitOwnerMode   exitCode = 12
	exitValidate    exitCode = 13
	exitRename      exitCode = 14
	exitReload      exitCode = 15
	exitNoCommit    exitCode = 16
	exitReloadTime  exitCode = 17
	exitReplaced    exitCode = 18
	exitLocked      exitCode = 19
	exitDamaged     exitCode = 20
	exitRollback    exitCode = 21
	exitVerify      exitCode = 22
	exitValidateEnd exitCode = 23
	exitLockDir     exitCode = 24
	exitNoTimeout   exitCode = 25
	exitChanged     exitCode = 26
	exitWorkDir     exitCode = 27
	exitMakeLockDir exitCode = 28
	exitOpenLockDir exitCode = 29
	exitCopy        exitCode = 30
	exitEditBlock   exitCode = 31
	exitBackup      exitCode = 32
	exitMissing     exitCode = 33
	exitNotRegular  exitCode = 34
	exitRemove      exitCode = 36
	exitRemovedNew  exitCode = 37
	exitClaimed     exitCode = 38
	exitRecord      exitCode = 39
	exitNoOriginal  exitCode = 40
	exitPutBack     exitCode = 41
	exitCA          exitCode = 42
	exitIssue       exitCode = 43
	exitUnsafeDir   exitCode = 44
	exitNotFile     exitCode = 45
	exitForeign     exitCode = 46
	exitMode        exitCode = 47
	exitReloadAgain exitCode = 48
	exitUnvouched   exitCode = 49
	exitTimeout     exitCode = 124 // timeout(1)'s, when the command ran out of time
	exitHangup      exitCode = 129 // 128 + the signal, as a shell reports it
	exitInterrupt   exitCode = 130
	exitBrokenPipe  exitCode = 141
	exitTerminated  exitCode = 143
)

// exitMeaning is what an exit code says: the shell variable the scripts
// exit with, the step that failed, and what the host has after it.
type exitMeaning struct {
	shell string
	step  Step
	left  string
}

const (
	untouched = "the previous file is untouched"
	restored  = "the previous file was restored (on a first create: the new file removed) and the reload command run again"
)

// exitCodes is the one table of exit codes.
var exitCodes = map[exitCode]exitMeaning{
	exitOK:          {"EXIT_OK", "", ""},
	exitDirectory:   {"EXIT_DIRECTORY", "create directory", untouched},
	exitWorkDir:     {"EXIT_WORK_DIR", "create the private temporary directory", untouched},
	exitUpload:      {"EXIT_UPLOAD", "upload", untouched},
	exitOwnerMode:   {"EXIT_OWNER_MODE", "set owner and mode", untouched},
	exitValidate:    {"EXIT_VALIDATE", "validate", "the validate command rejected the new file; " + untouched},
	exitValidateEnd: {"EXIT_VALIDATE_END", "validate", "the validate command did not finish within the operation's timeout; " + untouched},
	exitNoCommit:    {"EXIT_NO_COMMIT", "commit", ErrNotCommitted.Error()},
	exitChanged:     {"EXIT_CHANGED", "commit", "the file changed on the host after kha read it (a credential rotation?); nothing was changed: apply again"},
	exitBackup:      {"EXIT_BACKUP", "back up the previous file", untouched},
	exitRename:      {"EXIT_RENAME", "rename into place", untouched},
	exitReload:      {"EXIT_RELOAD", "reload", "the reload command failed with the new file; " + restored},
	exitReloadTime:  {"EXIT_RELOAD_TIME", "reload", "the reload command did not finish within the operation's timeout; " + restored},
	exitReloadAgain: {"EXIT_RELOAD_AGAIN", "reload", "the host had the file already, and the reload command, run to bring the " +
		"service back to it, failed or did not finish within the operation's timeout; the file is untouched"},
	exitRollback: {"EXIT_ROLLBACK", "reload", "the reload command failed with the new file, and restoring the previous file or reloading it failed too: check the host"},
	exitRemovedNew: {"EXIT_REMOVED_NEW", "reload", "there was no previous file: the new file was removed again; the reload " +
		"command failed with it, and again without it. Check that the reload command works on the host (does the " +
		"service or unit it names exist?), then apply again"},
	exitVerify: {"EXIT_VERIFY", "verify", "the service did not work with the new file; " + restored},
	exitClaimed: {"EXIT_CLAIMED", "claim", "another kha resource manages the file (its record follows); " + untouched +
		". Two resources that write one file overwrite each other on every apply: give one of them another path, or, " +
		"if that resource is gone (destroyed with on_destroy = \"keep\", or its state lost), set adopt = true to take the " +
		"file over"},
	exitRecord:     {"EXIT_RECORD", "keep kha's record of the file", untouched},
	exitNoOriginal: {"EXIT_NO_ORIGINAL", "put back the file that was there before kha", "the saved copy is gone; nothing was removed"},
	exitPutBack:    {"EXIT_PUT_BACK", "put back the file that was there before kha", "the file kha wrote is still in place"},
	exitReplaced:   {"EXIT_REPLACED", "upload", "the private temporary directory was replaced while in use (someone else can write to the target's directory); nothing was changed"},
	exitCA: {"EXIT_CA", "issue the certificate", "the CA's certificate or key is missing on the host, or the two are not " +
		"one CA's; the certificate in place is untouched"},
	exitIssue: {"EXIT_ISSUE", "issue the certificate", "openssl failed (its output follows); the certificate in place is untouched"},
	exitUnsafeDir: {"EXIT_UNSAFE_DIR", "check the directory", "another local user can rename or replace files in it, " +
		"so kha cannot keep what it writes there safe; nothing was changed"},
	exitNotFile: {"EXIT_NOT_FILE", "check the target", "it is a symbolic link or a directory, not a file kha replaces; " +
		"nothing was changed"},
	exitUnvouched: {"EXIT_UNVOUCHED", "vouch for the file", "kha's record of it is gone or not kha's, so kha cannot vouch " +
		"that the file there is the one it wrote; it is left as it is"},
	exitForeign:     {"EXIT_FOREIGN", "read kha's record", "what is at kha's record's place was not written by kha; it was not used"},
	exitNoTimeout:   {"EXIT_NO_TIMEOUT", "find timeout(1)", "the host has no timeout(1)"},
	exitMakeLockDir: {"EXIT_MAKE_LOCK_DIR", "create the lock directory", "the file is untouched"},
	exitLockDir:     {"EXIT_LOCK_DIR", "lock", "the lock directory is not this user's; the file is untouched"},
	exitOpenLockDir: {"EXIT_OPEN_LOCK_DIR", "open the lock directory", "the file is untouched"},
	exitLocked:      {"EXIT_LOCKED", "lock", "timed out waiting for the lock; the file is untouched"},
	exitCopy:        {"EXIT_COPY", "copy the file", "the file is untouched"},
	exitDamaged:     {"EXIT_DAMAGED", "check the block's markers", "they do not pair up; the file is untouched"},
	exitEditBlock:   {"EXIT_EDIT_BLOCK", "edit block", "the file is untouched"},
	exitMissing:     {"EXIT_MISSING", "read", "the file does not exist"},
	exitNotRegular:  {"EXIT_NOT_REGULAR", "read", "not a regular file"},
	exitMode:        {"EXIT_MODE", "read", "stat(1) could not read the file's mode"},
	exitRemove:      {"EXIT_REMOVE", "remove", "the file could not be removed"},
	exitTimeout:     {"EXIT_TIMEOUT", "run the command", "it did not finish within the operation's timeout"},
	exitHangup:      {"EXIT_HANGUP", "run", "the connection hung up"},
	exitInterrupt:   {"EXIT_INTERRUPT", "run", "interrupted"},
	exitBrokenPipe:  {"EXIT_BROKEN_PIPE", "run", "the connection was lost"},
	exitTerminated:  {"EXIT_TERMINATED", "run", "terminated"},
}

// Error says what the exit means, or its number when nothing declares it.
func (e exitCode) Error() string {
	m, ok := exitCodes[e]
	if !ok || e == exitOK {
		return fmt.Sprintf("exit status %d", int(e))
	}
	return fmt.Sprintf("%s failed: %s (exit status %d)", m.step, m.left, int(e))
}

// The words the engine and a script exchange, one a line.
const (
	wordReady    = "ready"    // applyScript: the new file is uploaded and validated
	wordCommit   = "commit"   // the engine: put it in place
	wordReloaded = "reloaded" // applyScript: in place and reloaded; awaiting the verdict
	wordKeep     = "keep"     // the engine: verified, keep the new file
	wordRollback = "rollback" // the engine: not verified, put the previous file back
	wordStarted  = "started"  // preflightScript: the throwaway instance runs
	wordStop     = "stop"     // the engine: stop the throwaway instance
	wordExited   = "exited"   // preflightScript: the instance ended, with its status after the word
	wordPresent  = "present"  // statScript: a regular file is there
	wordMissing  = "missing"  // statScript: nothing is there
	wordKeepMode = "keep"     // applyArgs.Mode: the replaced file's mode, owner and group
	wordCreated  = "created"  // blockScript: there was no file; it made one for the block
	// applyScript: the host has the file already (content, mode, owner):
	// nothing was written or reloaded. Like wordReady, it is followed by
	// 1 when the path's record saved a file that was there before kha, 0
	// when not.
	wordUnchanged = "unchanged"
	// statScript: before a path's line, what a refresh warns of.
	wordUnsafe        = "unsafe"         // followed by the directory or link and why an apply would refuse it
	wordForeignRecord = "foreign-record" // followed by the record's path: not a directory of the effective user's
	// vipScript: what the host sees of a VIP, a line each.
	wordRoute     = "route"     // followed by `ip route get`'s first line
	wordInterface = "interface" // followed by the interface asked on ("" for none)
	wordLink      = "link"      // followed by `ip -o link show` of the interface, which has its MAC address
	wordLocal     = "local"     // followed by 1 when the interface has the VIP, else 0
	wordAnswer    = "answer"    // followed by the address asked about and a line of the probe's output
	wordUnprobed  = "unprobed"  // followed by why nobody could be asked
	// serviceScript: whether a service runs, in one line.
	wordRunning = "running" // it runs
	wordStopped = "stopped" // followed by why it does not
	wordUnknown = "unknown" // followed by why nothing can tell
)

var protocolWords = map[string]string{
	"WORD_READY":          wordReady,
	"WORD_COMMIT":         wordCommit,
	"WORD_RELOADED":       wordReloaded,
	"WORD_KEEP":           wordKeep,
	"WORD_ROLLBACK":       wordRollback,
	"WORD_STARTED":        wordStarted,
	"WORD_STOP":           wordStop,
	"WORD_EXITED":         wordExited,
	"WORD_PRESENT":        wordPresent,
	"WORD_MISSING":        wordMissing,
	"WORD_KEEP_MODE":      wordKeepMode,
	"WORD_CREATED":        wordCreated,
	"WORD_UNCHANGED":      wordUnchanged,
	"WORD_UNSAFE":         wordUnsafe,
	"WORD_FOREIGN_RECORD": wordForeignRecord,
	"WORD_ROUTE":          wordRoute,
	"WORD_INTERFACE":      wordInterface,
	"WORD_LINK":           wordLink,
	"WORD_LOCAL":          wordLocal,
	"WORD_ANSWER":         wordAnswer,
	"WORD_UNPROBED":       wordUnprobed,
	"WORD_RUNNING":        wordRunning,
	"WORD_STOPPED":        wordStopped,
	"WORD_UNKNOWN":        wordUnknown,
}

// shellDefinitions assigns the exit codes and the words to shell
// variables, at the top of every script.
var shellDefinitions = func() string {
	var exits, words []string
	for _, code := range slices.Sorted(maps.Keys(exitCodes)) {
		exits = append(exits, fmt.Sprintf("%s=%d", exitCodes[code].shell, code))
	}
	for _, name := range slices.Sorted(maps.Keys(protocolWords)) {
		words = append(words, name+"="+protocolWords[name])
	}
	return strings.Join(exits, " ") + "\n" + strings.Join(words, " ") + "\n"
}()

// script is a host-side script whose parameters are the fields of A, in
// argument order, each named in its `sh` tag by the shell variable that
// holds it. A string field is passed as it is, a bool as 1 or 0, an int in
// decimal; a []string field, which must be A's only one, passes its
// elements as the arguments ("$@"). A string field tagged `sh:"name,stdin"`
// is not an argument but a line on stdin, before the content: every local
// user can read a command line (ps), and such a field is no one else's
// business (the private directory's suffix, the owner's claim and who
// that is); a newline in it becomes a space.
type script[A any] struct {
	text string
}

// newScript makes a script from its body, under a header that sets -u,
// defines the exit codes and the words, and assigns each parameter to
// its variable.
func newScript[A any](body string) script[A] {
	t := reflect.TypeFor[A]()
	var params, reads []string
	for i := range t.NumField() {
		field := t.Field(i)
		switch field.Type.Kind() {
		case reflect.String, reflect.Bool, reflect.Int:
		case reflect.Slice:
			if field.Type.Elem().Kind() != reflect.String || t.NumField() != 1 {
				panic(fmt.Sprintf("%s: a []string parameter must be the script's only one", t))
			}
			continue
		default:
			panic(fmt.Sprintf("%s.%s: a parameter is a string, bool, int or []string", t, field.Name))
		}
		name, where := parameter(field)
		switch {
		case name == "":
			panic(fmt.Sprintf("%s.%s has no sh tag", t, field.Name))
		case where == fromStdin && field.Type.Kind() != reflect.String:
			panic(fmt.Sprintf("%s.%s: a parameter on stdin is a string", t, field.Name))
		case where == fromStdin:
			reads = append(reads, "IFS= read -r "+name+" || exit \"$EXIT_UPLOAD\"\n")
		default:
			params = append(params, fmt.Sprintf("%s=${%d}", name, len(params)+1))
		}
	}
	header := "set -u\n" + shellDefinitions
	if len(params) > 0 {
		header += strings.Join(params, " ") + "\n"
	}
	header += strings.Join(reads, "")
	scripts = append(scripts, generated{header: header, body: body})
	return script[A]{text: header + body}
}

// fromStdin is the tag option of a parameter read from stdin.
const fromStdin = "stdin"

// parameter is a field's shell variable and, for one read from stdin,
// fromStdin.
func parameter(field reflect.StructField) (name, where string) {
	name, where, _ = strings.Cut(field.Tag.Get("sh"), ",")
	return name, where
}

// generated is a script's generated header and its hand-written body.
type generated struct{ header, body string }

// scripts lists every script, for the test that checks their bodies.
var scripts []generated

// invocation is a script with its arguments and the lines its stdin
// starts with.
type invocation struct {
	text  string
	args  []string
	lines []byte
}

// with returns the script with a's fields as its arguments and stdin
// lines (newScript checked their kinds).
func (s script[A]) with(a A) invocation {
	v := reflect.ValueOf(a)
	var args []string
	var lines []byte
	for i := range v.NumField() {
		switch field := v.Field(i); field.Kind() {
		case reflect.String:
			if _, where := parameter(v.Type().Field(i)); where == fromStdin {
				lines = append(lines, strings.NewReplacer("\n", " ", "\r", " ").Replace(field.String())+"\n"...)
				continue
			}
			args = append(args, field.String())
		case reflect.Bool:
			args = append(args, map[bool]string{false: "0", true: "1"}[field.Bool()])
		case reflect.Int:
			args = append(args, strconv.Itoa(int(field.Int())))
		case reflect.Slice:
			for i := range field.Len() {
				args = append(args, field.Index(i).String())
			}
		}
	}
	return invocation{text: s.text, args: args, lines: lines}
}
