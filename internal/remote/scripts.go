package remote

import _ "embed"

// The host-side scripts. Each runs under `sh -c` with its arguments after
// the script name, in one SSH session, and starts as few processes as the
// shell allows: the shell's builtins do the bookkeeping. A script reads
// its parameters, exit codes and protocol words from the variables that
// newScript's header assigns (protocol.go); the Args struct next to each
// script declares its parameters.
//
// Temporary files live in a private directory that the script creates
// next to the target (mode 0700, so nobody else can plant or swap
// anything in it) and works in by relative names. Nothing follows a
// symlink that a user who can write to the target's directory could
// plant: the backup of the old file is a hard link, the new file is
// renamed over the target, and the script checks that the directory it
// entered is the one it made.

// scriptHelpers defines the helpers the scripts share:
//   - sweep removes private directories of the same target that earlier
//     runs left behind (a dropped connection, a killed shell) once they
//     are ten minutes old;
//   - enter makes and enters the private directory $work and cleans it
//     up on every exit path, signals included, and with it (unmake) the
//     directories the script made for a target it did not leave in place
//     ($newdirs, unless $placed);
//   - run runs a user's command in the login directory (as a plain SSH
//     command runs; a daemon it starts must not sit in the private
//     directory, which goes away), with its output in a file that is
//     printed after it exits (the daemon inherits nothing of the session),
//     bounded by $limit seconds when `timeout` exists, and with the umask
//     the script started with ($umask0: the host's own, as a plain SSH
//     command has), not the 077 the scripts set for their own files, so
//     that what a reload creates (a socket, a PID file) gets the modes the
//     service expects.
//   - restore puts the previous file back (or removes a new one) after a
//     failed reload or verification, takes back what this run did to the
//     record, reloads, and exits with $1; a reload that fails again exits
//     with $EXIT_ROLLBACK, or on a first create (no previous file) with
//     $EXIT_REMOVED_NEW.
//   - record reads the record kha keeps of a whole file it manages, in the
//     private directory $rec next to it (".<name>.kha"; the sweep's
//     ".<name>.kha-*" never matches it): the owner's claim ($held) and who
//     that is ($held_note), whether a file was there before kha first wrote
//     the path ($existed: then $rec/original is that file, with its mode and
//     owner), and the directories kha made for it ($made: "made=<dir>"
//     lines, deepest first). A $rec that is not a directory of the
//     effective user's is refused: it would not be kha's.
var scriptHelpers = pathCheck + helpersBody

//go:embed scripts/helpers.sh
var helpersBody string

// pathCheck is what every script that touches a path as root starts
// with: the session's umask, effective and connection users
// (session.sh), and safe_path, the one rule for a directory kha works in
// (safepath.sh): every directory from / to it, links and ACLs included.
var pathCheck = sessionBody + safePathBody

//go:embed scripts/session.sh
var sessionBody string

//go:embed scripts/safepath.sh
var safePathBody string

// claimHelpers are applyScript's helpers for the record (see record):
//   - claim_record makes the record before the target changes, or puts
//     this claim in it (adopt): the first record of a path saves the file
//     already there (with capture: a create or the first apply after an
//     import; an update of a resource that kept no record finds its own
//     file there) and lists the directories made for the target. A record
//     that has this claim already costs no process.
//   - unclaim takes back what claim_record did, when the new file does not
//     stay (restore).
//
//go:embed scripts/claim.sh
var claimHelpers string

// applyScript puts one file in place. It refuses a path whose record
// names another owner's claim (unless adopt), reads the content from
// stdin, and when the target has it already (content, mode, owner) only
// claims the path and prints $WORD_UNCHANGED: nothing is written,
// validated or reloaded. Otherwise it validates the new file, prints
// $WORD_READY and waits for the client's $WORD_COMMIT line: a client that
// is gone (a dropped connection, Ctrl-C) sends none, and the target is
// never touched. Both words are followed by whether the record saved a
// file that was there before kha. With verify set, after the reload it
// prints $WORD_RELOADED and waits for the client's verdict: anything but
// $WORD_KEEP (a failed verification, a client that is gone) restores the
// previous file and reloads it.
var applyScript = newScript[applyArgs](scriptHelpers + claimHelpers + applyBody)

//go:embed scripts/apply.sh
var applyBody string

// applyArgs are applyScript's parameters.
type applyArgs struct {
	Target string `sh:"target"`
	// Mode is the octal mode of the new file, or WORD_KEEP_MODE: the
	// replaced file's mode, owner and group.
	Mode string `sh:"mode"`
	// Mask is the umask the new file is created with; empty when Mode
	// needs a chmod.
	Mask  string `sh:"mask"`
	Owner string `sh:"owner"` // owner[:group]; empty keeps the connecting user
	// CreateParentDirs makes a missing directory of Target.
	CreateParentDirs bool   `sh:"mkdirs"`
	Validate         string `sh:"validate"` // a command, run on "$KHA_NEW"
	// Explain is Validate without its -q, run when Validate failed and
	// printed nothing (haproxy -c -q), so the failure says why; empty
	// when Validate has no -q.
	Explain string `sh:"explain"`
	Reload  string `sh:"reload"`
	Size    int    `sh:"size"`       // of the content on stdin
	Limit   int    `sh:"limit"`      // seconds a command may take; 0: no limit
	Rand    string `sh:"rand,stdin"` // suffix of the private directory
	Verify  bool   `sh:"verify"`
	// ReloadAgain runs Reload where the host has the file already.
	ReloadAgain bool `sh:"reload_again"`
	// ExpectSHA256 is the digest the target must still have to be
	// replaced; empty: any.
	ExpectSHA256 string `sh:"expect"`
	// Claim is the owner's claim in the path's record; empty keeps no
	// record (see Claim).
	Claim   string `sh:"claim,stdin"`
	Note    string `sh:"note,stdin"`
	Adopt   bool   `sh:"adopt"`
	Capture bool   `sh:"capture"`
}

// statScript prints a line $WORD_PRESENT or $WORD_MISSING for each path
// argument, then the modes and owners of the present ones ("%a %U %G %u
// %g") and sha256sum's lines: one stat and one sha256sum however many
// files there are, sha256sum in the shell's own process. Before a path's line come its warnings, a line
// each: $WORD_UNSAFE and why, when an apply would refuse its directory
// (safe_path: one more stat for all the paths' directories), and
// $WORD_FOREIGN_RECORD, when what is at its record's place is not a
// directory of the effective user's.
var statScript = newScript[statArgs](pathCheck + statBody)

//go:embed scripts/stat.sh
var statBody string

// statArgs are statScript's parameters.
type statArgs struct {
	Paths []string
}

// removeScript takes the target off the host and then runs the command, if
// that changed the file; with keep it removes only the record of the
// claim. With a record (claim set) it puts back the file
// that was there before kha when restore is set, removes the record and
// the directories kha made that are empty now; a record of another
// owner's claim leaves everything as it is. A saved file that is gone
// while the record or the owner (saved) says there was one removes
// nothing. The helpers' processes run only after the checks: a file that
// is already gone, with no record, costs none.
var removeScript = newScript[removeArgs](scriptHelpers + removeBody)

//go:embed scripts/remove.sh
var removeBody string

// removeArgs are removeScript's parameters.
type removeArgs struct {
	Target  string `sh:"target"`
	Command string `sh:"command"`
	Limit   int    `sh:"limit"`
	Rand    string `sh:"rand,stdin"`
	// Claim is the owner's claim, to find the path's record; empty: the
	// resource kept none.
	Claim string `sh:"claim,stdin"`
	// Restore puts back the file the record saved instead of deleting;
	// Saved says the owner knows one was saved.
	Restore bool `sh:"restore"`
	Saved   bool `sh:"saved"`
	// Recorded says the owner's state has the path's record: a target
	// found without it, or with one kha did not make, is left as it is.
	Recorded bool `sh:"recorded"`
	// Keep leaves the target as it is and removes only the record.
	Keep bool `sh:"keep"`
}

// blockScript rewrites the marked block in the target: the block on stdin
// takes the old one's place (or goes at the end), or without apply the
// block is removed. Every other line stays byte for byte, a CRLF file gets
// CRLF block lines, and mode and owner are kept. A block whose markers do
// not pair up is refused, with its lines, rather than guessed at. Changes
// of one directory are serialised with flock on the directory .kha-lock in
// it, which the script makes with mode 0700: only the effective user (and
// root) can open it, so no other local user can hold the lock, as anyone
// could the target's directory. A .kha-lock that the effective user does
// not own, or a symlink, is refused: the lock would not be kha's. The
// directory lives only while a change runs: its holder removes it last,
// and a run that waited for it locks again if it is gone. Where the file
// is a mount point (a container's /etc/hosts) it is written in place. A
// block written where there was no file prints $WORD_CREATED; removing
// the block with created set removes the file too when nothing else is
// left in it.
var blockScript = newScript[blockArgs](scriptHelpers + blockBody)

//go:embed scripts/block.sh
var blockBody string

// blockArgs are blockScript's parameters.
type blockArgs struct {
	Target string `sh:"target"`
	Marker string `sh:"marker"`
	Apply  bool   `sh:"apply"` // false removes the block
	Limit  int    `sh:"limit"`
	Rand   string `sh:"rand,stdin"`
	// Created: kha made the file for the block, so removing the block
	// removes a file it leaves empty.
	Created bool `sh:"created"`
}

// blockReadScript prints the marked block of the target (markers
// included, CRs dropped), nothing when there is none, and refuses a
// damaged block; like readScript, it says on stderr when an apply would
// refuse the target's directory.
var blockReadScript = newScript[blockReadArgs](pathCheck + blockReadBody)

//go:embed scripts/block_read.sh
var blockReadBody string

// blockReadArgs are blockReadScript's parameters.
type blockReadArgs struct {
	Target string `sh:"target"`
	Marker string `sh:"marker"`
}

// certScript issues a serving certificate on the host (IssuedCertificate):
// a new key and a certificate signed by the CA's key, both made in a
// private directory next to the target, never leaving the host. It checks
// that the CA's key signed something its certificate verifies, gives the
// new pair the mode and owner of the pair in place, prints the new
// certificate (public) and $WORD_READY, and waits for $WORD_COMMIT. Then
// it keeps hard links of the previous pair, renames key and certificate
// into place, runs the reload command, prints $WORD_RELOADED and waits
// for the verdict: anything but $WORD_KEEP (a failed check, a lost
// connection), or no verdict within $confirm seconds of the reload, puts the previous
// pair back and runs the reload command again. A kept change leaves the
// previous pair in .<name>.kha.previous next to the target, for a
// rollback by hand. The second change moves the first's .previous, the
// pair found before kha, to .<name>.kha.original, which later changes
// never replace.
var certScript = newScript[certArgs](scriptHelpers + certBody)

//go:embed scripts/cert.sh
var certBody string

// certArgs are certScript's parameters.
type certArgs struct {
	Target     string `sh:"target"` // the certificate
	Key        string `sh:"key"`    // in the certificate's directory
	CACert     string `sh:"ca_cert"`
	CAKey      string `sh:"ca_key"`
	Algorithm  string `sh:"alg"`     // a certissue algorithm
	Subject    string `sh:"subject"` // openssl's -subj
	Extensions string `sh:"ext"`     // openssl's extension section v3
	Serial     string `sh:"serial"`  // hex
	Days       int    `sh:"days"`
	Reload     string `sh:"reload"`
	Confirm    int    `sh:"confirm"`    // seconds the verdict may take after the reload
	Limit      int    `sh:"limit"`      // seconds a command may take; 0: no limit
	Rand       string `sh:"rand,stdin"` // suffix of the private directory
}
