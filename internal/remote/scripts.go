package remote

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
const scriptHelpers = `umask0=$(umask)
safe_dir() {
  set -- $(stat -L -c '%a %u %g %U %G' -- "$dir") || exit $EXIT_DIRECTORY
  perm=$1 special=0 why=
  case $perm in ????) special=${perm%???} perm=${perm#?} ;; esac
  group=${perm#?} group=${group%?} other=${perm#??}
  if [ "$2" != 0 ] && [ ! -O "$dir" ]; then why="it is owned by $4, who can rename anything in it"
  elif [ $((special & 1)) = 0 ]; then
    if [ $((other & 2)) != 0 ]; then why="every local user can write to it (mode $1) and it has no sticky bit"
    elif [ $((group & 2)) != 0 ] && [ "$3" != 0 ] && [ "$3" != "$(id -g)" ]; then
      why="the members of group $5 can write to it (mode $1) and it has no sticky bit"
    fi
  fi
  [ -z "$why" ] && return 0
  echo "refusing to manage $target: another local user could swap what kha writes in $dir: $why. Make $dir $(id -un)'s and writable only by $(id -un) (chown; chmod go-w), or set its sticky bit (chmod +t) as /tmp has, or manage a file in another directory" >&2
  exit $EXIT_UNSAFE_DIR
}
regular_target() {
  if [ -L "$target" ] || { [ -e "$target" ] && [ ! -f "$target" ]; }; then
    echo "refusing to manage $target: it is a symbolic link or not a regular file. Point the path at the file itself" >&2
    exit $EXIT_NOT_FILE
  fi
}
owner_of() {
  stat -c %U -- "$1" 2>/dev/null || echo "an unknown user"
}
sweep() {
  for old in "$dir/.$base".kha-*; do
    [ -d "$old" ] && [ ! -L "$old" ] && [ -O "$old" ] || continue
    find "$old" -maxdepth 0 -mmin +10 -exec rm -rf -- {} + 2>/dev/null
  done
}
enter() {
  work=$dir/.$base.kha-$rand
  mkdir -m 0700 -- "$work" || exit $EXIT_WORK_DIR
  trap 'cd / && rm -rf -- "$work"; unmake' EXIT
  trap 'exit $EXIT_HANGUP' HUP; trap 'exit $EXIT_INTERRUPT' INT; trap 'exit $EXIT_BROKEN_PIPE' PIPE; trap 'exit $EXIT_TERMINATED' TERM
  if cd -- "$work" && [ -O . ] && [ ! -L "$work" ]; then
    set -- .[!.]* ..?* *
    for f; do [ -e "$f" ] || [ -L "$f" ] || continue; replaced; done
  else
    replaced
  fi
}
unmake() {
  [ -n "${newdirs-}" ] && [ "${placed-0}" != 1 ] || return 0
  set -f; IFS='
'
  for line in $newdirs; do rmdir -- "${line#made=}" 2>/dev/null || break; done
}
replaced() {
  trap - EXIT
  echo "the temporary directory $work was replaced while in use; nothing was changed" >&2
  exit $EXIT_REPLACED
}
run() {
  if [ "$limit" != 0 ] && command -v timeout >/dev/null; then
    (cd 2>/dev/null || cd /; umask "$umask0"; exec timeout -k 5 "$limit" sh -c "$1") </dev/null >log 2>&1
  else
    (cd 2>/dev/null || cd /; umask "$umask0"; exec sh -c "$1") </dev/null >log 2>&1
  fi
  status=$?
  while IFS= read -r line || [ -n "$line" ]; do printf '%s\n' "$line"; done <log >&2
  return $status
}
restore() {
  trap '' HUP INT TERM
  if [ -e previous ] || [ -L previous ]; then
    mv -fT -- previous "$target" || exit $EXIT_ROLLBACK
    failed=$EXIT_ROLLBACK
  else
    rm -f -- "$target" || exit $EXIT_ROLLBACK
    failed=$EXIT_REMOVED_NEW placed=0
  fi
  unclaim
  if [ -n "$reload" ]; then
    echo "--- the previous state was restored; running the reload command again:" >&2
    run "$reload" || exit $failed
  fi
  exit "$1"
}
into_record() {
  if [ -L "$rec" ] || [ ! -d "$rec" ] || [ ! -O "$rec" ]; then
    echo "$rec, kha's record of $target, is not a directory that $(id -un) owns (it is $(owner_of "$rec")'s): kha did not make it and does not use it: remove it, or connect as its owner (ssh.sudo = true for root's), and apply again" >&2
    exit $EXIT_RECORD
  fi
  cd -- "$rec" && [ -O . ] && [ . -ef "$rec" ] && [ ! -L "$rec" ] || {
    echo "$rec, kha's record of $target, was replaced while in use (someone else can write to $dir); nothing was changed" >&2
    exit $EXIT_REPLACED
  }
}
record() {
  held= held_note= existed=0 made=
  [ -e "$rec" ] || [ -L "$rec" ] || return 0
  into_record
  if [ ! -f record ]; then
    if [ -e original ] || [ -L original ]; then existed=1; fi
    cd /; return 0
  fi
  while IFS= read -r line; do
    case $line in
      claim=*) held=${line#claim=} ;;
      note=*) held_note=${line#note=} ;;
      existed=*) existed=${line#existed=} ;;
      made=*) made="$made$line
" ;;
    esac
  done <record
  cd /
}
`

// claimHelpers are applyScript's helpers for the record (see record):
//   - claim_record makes the record before the target changes, or puts
//     this claim in it (adopt): the first record of a path saves the file
//     already there (with capture: a create or the first apply after an
//     import; an update of a resource that kept no record finds its own
//     file there) and lists the directories made for the target. A record
//     that has this claim already costs no process.
//   - unclaim takes back what claim_record did, when the new file does not
//     stay (restore).
const claimHelpers = `claim_record() {
  [ -n "$claim" ] && [ "$held" != "$claim" ] || return 0
  if [ ! -e "$rec" ] && [ ! -L "$rec" ]; then
    mkdir -m 0700 rec || exit $EXIT_RECORD
    made=$newdirs
    if [ "$existed" = 1 ]; then
      ln -- "$target" rec/original 2>/dev/null || cp -p -- "$target" rec/original || exit $EXIT_RECORD
    fi
    printf 'claim=%s\nnote=%s\nexisted=%s\n%s' "$claim" "$note" "$existed" "$made" >rec/record || exit $EXIT_RECORD
    mv -T -- rec "$rec" || { echo "$rec appeared while kha made it; nothing was changed" >&2; exit $EXIT_RECORD; }
    fresh=1
    return 0
  fi
  into_record
  if [ -f record ]; then ln -- record "$work/held-record" || exit $EXIT_RECORD; fi
  printf 'claim=%s\nnote=%s\nexisted=%s\n%s' "$claim" "$note" "$existed" "$made" >record.new &&
    mv -fT -- record.new record || { cd -- "$work"; unclaim; exit $EXIT_RECORD; }
  cd -- "$work" || replaced
}
unclaim() {
  if [ "$fresh" = 1 ]; then
    rm -rf -- "$rec"
  elif [ -e held-record ]; then
    (into_record && mv -fT -- "$work/held-record" record)
  fi
}
`

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
var applyScript = newScript[applyArgs](scriptHelpers + claimHelpers + `dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
rec=$dir/.$base.kha fresh=0 newdirs= placed=0 held= existed=0
if [ ! -d "$dir" ]; then
  [ "$mkdirs" = 1 ] || { echo "directory $dir does not exist" >&2; exit $EXIT_DIRECTORY; }
  d=$dir
  while [ -n "$d" ] && [ ! -d "$d" ]; do newdirs="${newdirs}made=$d
"; d=${d%/*}; done
  mkdir -p -m 0755 -- "$dir" || exit $EXIT_DIRECTORY
fi
safe_dir
regular_target
if [ -n "$claim" ]; then
  record
  if [ -n "$held" ] && [ "$held" != "$claim" ] && [ "$adopt" != 1 ]; then
    echo "$target is managed by another kha resource: $held_note" >&2
    exit $EXIT_CLAIMED
  fi
fi
sweep
enter
if [ -n "$mask" ]; then umask "$mask"; else umask 077; fi
set -C
head -c "$size" >new || exit $EXIT_UPLOAD
set +C
if [ "$mode" = "$WORD_KEEP_MODE" ]; then
  chmod --reference="$target" new && chown --reference="$target" new || exit $EXIT_OWNER_MODE
else
  [ -n "$mask" ] || chmod "$mode" new || exit $EXIT_OWNER_MODE
fi
[ -z "$owner" ] || chown -- "$owner" new || exit $EXIT_OWNER_MODE
if [ -n "$claim" ] && [ ! -d "$rec" ] && [ "$capture" = 1 ] && { [ -e "$target" ] || [ -L "$target" ]; }; then existed=1; fi
if [ -f "$target" ] && [ ! -L "$target" ] && cmp -s new "$target" && meta=$(stat -c '%a %u %g' -- new "$target") &&
  [ "${meta%%
*}" = "${meta#*
}" ]; then
  claim_record
  echo "$WORD_UNCHANGED $existed"
  exit $EXIT_OK
fi
KHA_NEW=$work/new; export KHA_NEW
if [ -n "$validate" ]; then
  run "$validate"; rc=$?
  [ $rc = $EXIT_OK ] || [ $rc = $EXIT_TIMEOUT ] || [ -s log ] || [ -z "$explain" ] || {
    echo "--- the validate command printed no reason; running it again without -q:" >&2
    run "$explain"
  }
  [ $rc = $EXIT_OK ] || { [ $rc = $EXIT_TIMEOUT ] && exit $EXIT_VALIDATE_END; exit $EXIT_VALIDATE; }
fi
echo "$WORD_READY $existed"
IFS= read -r answer && [ "$answer" = "$WORD_COMMIT" ] || exit $EXIT_NO_COMMIT
if [ -n "$expect" ]; then
  sum=$(sha256sum <"$target") || exit $EXIT_CHANGED
  [ "${sum%% *}" = "$expect" ] || exit $EXIT_CHANGED
fi
if [ -e "$target" ] || [ -L "$target" ]; then
  ln -- "$target" previous 2>/dev/null || cp -p -- "$target" previous || exit $EXIT_BACKUP
fi
claim_record
mv -fT -- new "$target" || { unclaim; exit $EXIT_RENAME; }
placed=1
# The new file is in place: from here a client that is gone (a dropped
# connection makes writes fail and reads end) or a signal never stops the
# script half way. A failed reload, or with verify anything but the
# client's $WORD_KEEP, puts the previous file back and reloads it.
# (Traps that run a command, unlike ignored signals, leave the commands
# run the default dispositions.)
trap : PIPE
if [ "$verify" = 1 ]; then trap 'restore $EXIT_VERIFY' HUP INT TERM; else trap : HUP INT TERM; fi
rc=$EXIT_OK
if [ -n "$reload" ]; then run "$reload"; rc=$?; fi
if [ $rc = $EXIT_OK ]; then
  [ "$verify" = 1 ] || exit $EXIT_OK
  echo "$WORD_RELOADED" 2>/dev/null && IFS= read -r verdict && [ "$verdict" = "$WORD_KEEP" ] && exit $EXIT_OK
  restore $EXIT_VERIFY
fi
[ $rc = $EXIT_TIMEOUT ] && restore $EXIT_RELOAD_TIME
restore $EXIT_RELOAD
`)

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
	Size    int    `sh:"size"`  // of the content on stdin
	Limit   int    `sh:"limit"` // seconds a command may take; 0: no limit
	Rand    string `sh:"rand"`  // suffix of the private directory
	Verify  bool   `sh:"verify"`
	// ExpectSHA256 is the digest the target must still have to be
	// replaced; empty: any.
	ExpectSHA256 string `sh:"expect"`
	// Claim is the owner's claim in the path's record; empty keeps no
	// record (see Claim).
	Claim   string `sh:"claim"`
	Note    string `sh:"note"`
	Adopt   bool   `sh:"adopt"`
	Capture bool   `sh:"capture"`
}

// statScript prints a line $WORD_PRESENT or $WORD_MISSING for each path
// argument, then sha256sum's and stat's lines for the present ones: one
// sha256sum and one stat however many files there are, stat in the
// shell's own process.
var statScript = newScript[statArgs](`n=$#
for f; do
  if [ -f "$f" ]; then echo "$WORD_PRESENT"; set -- "$@" "$f"
  elif [ -e "$f" ] || [ -L "$f" ]; then echo "$f exists but is not a regular file" >&2; exit $EXIT_NOT_REGULAR
  else echo "$WORD_MISSING"
  fi
done
shift "$n"
[ $# = 0 ] && exit $EXIT_OK
sha256sum -- "$@" || exit $EXIT_DIGEST
exec stat -c '%a %U %G %u %g' -- "$@"
`)

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
var removeScript = newScript[removeArgs](scriptHelpers + `dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
rec=$dir/.$base.kha held= existed=0 made= changed=0
if [ -d "$dir" ]; then safe_dir; regular_target; fi
[ -z "$claim" ] || record
if [ -n "$held" ] && [ "$held" != "$claim" ]; then
  echo "$target is left as it is: another kha resource took it over ($held_note)" >&2
  exit $EXIT_CLAIMED
fi
if [ "$keep" = 1 ]; then
  [ -z "$held" ] || rm -rf -- "$rec" || exit $EXIT_RECORD
  exit $EXIT_OK
fi
if [ "$restore" = 1 ] && { [ "$existed" = 1 ] || [ "$saved" = 1 ]; }; then
  if { [ ! -e "$rec" ] && [ ! -L "$rec" ]; } || { into_record; [ ! -e original ] && [ ! -L original ]; }; then
    echo "the copy of the file that was at $target before kha, $rec/original, is gone (removed by hand?): nothing was removed. To let the file go, set on_destroy = \"delete\" (or \"keep\") and apply, then destroy" >&2
    exit $EXIT_NO_ORIGINAL
  fi
  mv -fT -- original "$target" || exit $EXIT_PUT_BACK
  cd /
  changed=1
elif [ -e "$target" ] || [ -L "$target" ]; then
  rm -f -- "$target" || exit $EXIT_REMOVE
  changed=1
fi
if [ -n "$claim" ] && [ -d "$rec" ]; then rm -rf -- "$rec" || exit $EXIT_RECORD; fi
rc=$EXIT_OK
if [ "$changed" = 1 ] && [ -n "$command" ]; then
  enter
  run "$command" || rc=$EXIT_RELOAD
  cd / && rm -rf -- "$work" && trap - EXIT
fi
# Last, once the private directory is gone too: the directories kha made
# for the target, deepest first, while they are empty.
set -f; IFS='
'
for line in $made; do rmdir -- "${line#made=}" 2>/dev/null || break; done
exit $rc
`)

// removeArgs are removeScript's parameters.
type removeArgs struct {
	Target  string `sh:"target"`
	Command string `sh:"command"`
	Limit   int    `sh:"limit"`
	Rand    string `sh:"rand"`
	// Claim is the owner's claim, to find the path's record; empty: the
	// resource kept none.
	Claim string `sh:"claim"`
	// Restore puts back the file the record saved instead of deleting;
	// Saved says the owner knows one was saved.
	Restore bool `sh:"restore"`
	Saved   bool `sh:"saved"`
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
var blockScript = newScript[blockArgs](scriptHelpers + `dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
if [ ! -e "$target" ] && [ ! -L "$target" ]; then
  [ "$apply" = 1 ] || exit $EXIT_OK
  [ -d "$dir" ] || { echo "directory $dir does not exist" >&2; exit $EXIT_DIRECTORY; }
fi
safe_dir
regular_target
locks=
if command -v flock >/dev/null; then
  locks=$dir/.kha-lock
  while :; do
    [ -e "$locks" ] || [ -L "$locks" ] || mkdir -m 0700 -- "$locks" 2>/dev/null || [ -d "$locks" ] ||
      mkdir -m 0700 -- "$locks" || exit $EXIT_MAKE_LOCK_DIR
    entered=0
    if [ ! -L "$locks" ]; then
      if cd -- "$locks" 2>/dev/null; then entered=1
      elif [ ! -e "$locks" ]; then continue # its holder removed it between the look and the cd: make it again
      fi
    fi
    if [ $entered = 0 ] || [ ! -O . ]; then
      echo "$locks, the lock of kha's changes in $dir, is not a directory that $(id -un) owns (it is $(owner_of "$locks")'s): kha did not make it and does not use it: remove it, or connect as its owner (ssh.sudo = true for root's), and apply again" >&2
      exit $EXIT_LOCK_DIR
    fi
    exec 9<. || exit $EXIT_OPEN_LOCK_DIR
    if [ "$limit" = 0 ]; then flock 9; else flock -w "$limit" 9; fi ||
      { echo "another kha run held the lock $locks for $limit s" >&2; exit $EXIT_LOCKED; }
    # Its holder removed the directory when done: lock the one there now.
    [ "$locks" -ef . ] && break
    exec 9<&-
  done
fi
sweep
enter
umask 022
cat >block || exit $EXIT_UPLOAD
new_file=0
if [ -e "$target" ]; then cp -p -- "$target" new || exit $EXIT_COPY; src=$target; else : >new; src=/dev/null new_file=1; fi
awk -v b="# BEGIN kha $marker" -v e="# END kha $marker" -v apply="$apply" -v damaged="$EXIT_DAMAGED" -v blockfile=block -v name="$target" '
function emit(  l) { while ((getline l < blockfile) > 0) print l (crlf ? "\r" : ""); close(blockfile); done = 1 }
NR == 1 && /\r$/ { crlf = 1 }
{ line = $0; sub(/\r$/, "", line) }
line == b {
  if (seen) bad = bad "\n  line " NR ": a second \"" b "\" line"
  seen = 1; inside = 1; start = NR; shown = 0
  if (apply == 1) emit()
  next
}
line == e {
  if (!inside) bad = bad "\n  line " NR ": \"" e "\" without a \"" b "\" line before it"
  inside = 0; next
}
inside { if (shown++ < 20) lines = lines "\n  line " NR ": " line; next }
{ print }
END {
  if (inside) bad = bad "\n  line " start ": \"" b "\" has no \"" e "\" line after it; the lines that follow it:" lines
  if (bad != "") {
    print "refusing to change " name ": its kha block is damaged (someone edited its marker lines). Put the marker " \
      "lines back, or delete the block with both markers, and apply again:" bad > "/dev/stderr"
    exit damaged
  }
  if (apply == 1 && !done) emit()
}' "$src" >new; rc=$?
[ $rc = $EXIT_OK ] || { [ $rc = $EXIT_DAMAGED ] && exit $EXIT_DAMAGED; exit $EXIT_EDIT_BLOCK; }
if [ "$apply" = 0 ] && [ "$created" = 1 ] && [ ! -s new ]; then
  rm -f -- "$target" || exit $EXIT_REMOVE
# A file that is a mount point (a container's /etc/hosts) cannot be
# renamed over: it is written in place, unless it became a link.
else mv -fT -- new "$target" 2>/dev/null || { [ ! -L "$target" ] && cat new >"$target"; } || exit $EXIT_RENAME
fi
[ "$new_file" != 1 ] || [ "$apply" != 1 ] || echo "$WORD_CREATED"
# The last step: a run waiting for the lock finds the directory gone and
# locks a new one, so nothing of the lock stays on the host.
[ -z "$locks" ] || rmdir -- "$locks" 2>/dev/null
exit $EXIT_OK
`)

// blockArgs are blockScript's parameters.
type blockArgs struct {
	Target string `sh:"target"`
	Marker string `sh:"marker"`
	Apply  bool   `sh:"apply"` // false removes the block
	Limit  int    `sh:"limit"`
	Rand   string `sh:"rand"`
	// Created: kha made the file for the block, so removing the block
	// removes a file it leaves empty.
	Created bool `sh:"created"`
}

// blockReadScript prints the marked block of the target (markers
// included, CRs dropped), nothing when there is none, and refuses a
// damaged block.
var blockReadScript = newScript[blockReadArgs](`[ -f "$target" ] || exit $EXIT_OK
awk -v b="# BEGIN kha $marker" -v e="# END kha $marker" -v damaged="$EXIT_DAMAGED" '
{ line = $0; sub(/\r$/, "", line) }
line == b { if (seen) bad = 1; seen = 1; inside = 1 }
inside { print line }
line == e { if (!inside) bad = 1; inside = 0 }
END { if (inside || bad) { print "the kha block \"" b "\" in " FILENAME " is damaged: its marker lines do not pair up" > "/dev/stderr"; exit damaged } }
' "$target" || exit $EXIT_DAMAGED
`)

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
var certScript = newScript[certArgs](scriptHelpers + `dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
if [ ! -f "$ca_cert" ] || [ ! -f "$ca_key" ]; then
  echo "the CA's certificate $ca_cert or key $ca_key is not on the host" >&2
  exit $EXIT_CA
fi
command -v openssl >/dev/null || { echo "openssl is not installed on the host" >&2; exit $EXIT_ISSUE; }
safe_dir
for t in "$target" "$key"; do (target=$t; regular_target) || exit $?; done
case $alg in
  RSA-2048|RSA-3072|RSA-4096) set -- -algorithm RSA -pkeyopt "rsa_keygen_bits:${alg#RSA-}" ;;
  ECDSA-P256) set -- -algorithm EC -pkeyopt ec_paramgen_curve:P-256 ;;
  ECDSA-P384) set -- -algorithm EC -pkeyopt ec_paramgen_curve:P-384 ;;
  *) echo "unknown key algorithm $alg" >&2; exit $EXIT_ISSUE ;;
esac
sweep
enter
umask 077
printf '%s' "$ext" >ext
if ! openssl x509 -in "$ca_cert" -noout -pubkey >ca.pub 2>/dev/null || ! openssl pkey -in "$ca_key" -pubout >key.pub 2>/dev/null ||
  ! cmp -s ca.pub key.pub; then
  echo "$ca_key is not the key of $ca_cert: they are not one CA's" >&2
  exit $EXIT_CA
fi
issue() { "$@" >log 2>&1 || { while IFS= read -r line; do printf '%s\n' "$line"; done <log >&2; exit $EXIT_ISSUE; }; }
issue openssl genpkey "$@" -out key.new
issue openssl req -new -key key.new -subj "$subject" -out csr
issue openssl x509 -req -in csr -CA "$ca_cert" -CAkey "$ca_key" -set_serial "0x$serial" -days "$days" -sha256 \
  -extfile ext -extensions v3 -out crt.new
openssl verify -CAfile "$ca_cert" crt.new >/dev/null 2>&1 || {
  echo "a certificate signed with $ca_key does not verify against $ca_cert: they are not one CA's" >&2
  exit $EXIT_CA
}
if [ -e "$key" ]; then chmod --reference="$key" key.new && chown --reference="$key" key.new || exit $EXIT_OWNER_MODE; fi
if [ -e "$target" ]; then
  chmod --reference="$target" crt.new && chown --reference="$target" crt.new || exit $EXIT_OWNER_MODE
else
  chmod 0644 crt.new || exit $EXIT_OWNER_MODE
fi
while IFS= read -r line; do printf '%s\n' "$line"; done <crt.new
echo "$WORD_READY"
IFS= read -r answer && [ "$answer" = "$WORD_COMMIT" ] || exit $EXIT_NO_COMMIT
for f in "$target:previous.crt" "$key:previous.key"; do
  [ -e "${f%:*}" ] || continue
  ln -- "${f%:*}" "${f##*:}" 2>/dev/null || cp -p -- "${f%:*}" "${f##*:}" || exit $EXIT_BACKUP
done
put_back() {
  trap '' HUP INT TERM
  [ -z "$watchdog" ] || kill "$watchdog" 2>/dev/null
  for f in "$key:previous.key" "$target:previous.crt"; do
    if [ -e "${f##*:}" ]; then mv -fT -- "${f##*:}" "${f%:*}" || exit $EXIT_ROLLBACK; else rm -f -- "${f%:*}" || exit $EXIT_ROLLBACK; fi
  done
  if [ -n "$reload" ]; then
    echo "--- the previous certificate and key were put back; running the reload command again:" >&2
    run "$reload" || exit $EXIT_ROLLBACK
  fi
  exit "$1"
}
watchdog=
trap 'put_back $EXIT_VERIFY' HUP INT TERM
trap : PIPE
mv -fT -- key.new "$key" || put_back $EXIT_RENAME
mv -fT -- crt.new "$target" || put_back $EXIT_RENAME
rc=$EXIT_OK
if [ -n "$reload" ]; then run "$reload"; rc=$?; fi
[ $rc = $EXIT_OK ] || { [ $rc = $EXIT_TIMEOUT ] && put_back $EXIT_RELOAD_TIME; put_back $EXIT_RELOAD; }
(sleep "$confirm" && kill -TERM $$) </dev/null >/dev/null 2>&1 &
watchdog=$!
echo "$WORD_RELOADED" 2>/dev/null && IFS= read -r verdict && [ "$verdict" = "$WORD_KEEP" ] || put_back $EXIT_VERIFY
trap '' HUP INT TERM
kill "$watchdog" 2>/dev/null
# The previous pair goes to a directory made here and renamed into
# place: nothing is written through a name someone else could swap.
kept=$dir/.$base.kha.previous original=$dir/.$base.kha.original
ours() {
  [ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ]
}
if ours "$kept" && [ ! -e "$original" ] && [ ! -L "$original" ]; then mv -T -- "$kept" "$original" || exit $EXIT_OK; fi
mkdir -m 0700 kept || exit $EXIT_OK
for f in "$base:previous.crt" "${key##*/}:previous.key"; do
  [ ! -e "${f##*:}" ] || mv -fT -- "${f##*:}" "kept/${f%:*}"
done
if ours "$kept"; then rm -rf -- "$kept"; fi
mv -T -- kept "$kept" 2>/dev/null
exit $EXIT_OK
`)

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
	Confirm    int    `sh:"confirm"` // seconds the verdict may take after the reload
	Limit      int    `sh:"limit"`   // seconds a command may take; 0: no limit
	Rand       string `sh:"rand"`    // suffix of the private directory
}
