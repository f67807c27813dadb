package remote

// The host-side scripts. Each runs under `sh -c` with its arguments after
// the script name, in one SSH session, and starts as few processes as the
// shell allows: the shell's builtins do the bookkeeping.
//
// Temporary files live in a private directory that the script creates
// next to the target (mode 0700, so nobody else can plant or swap
// anything in it) and works in by relative names. Nothing follows a
// symlink that a user who can write to the target's directory could
// plant: the backup of the old file is a hard link, the new file is
// renamed over the target, and the script checks that the directory it
// entered is the one it made.

// scriptPrelude defines the helpers every script shares:
//   - sweep removes private directories of the same target that earlier
//     runs left behind (a dropped connection, a killed shell) once they
//     are ten minutes old;
//   - enter makes and enters the private directory $work and cleans it
//     up on every exit path, signals included;
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
//     failed reload or verification, reloads, and exits with $1.
const scriptPrelude = `set -u
umask0=$(umask)
sweep() {
  for old in "$dir/.$base".kha-*; do
    [ -d "$old" ] && [ ! -L "$old" ] || continue
    find "$old" -maxdepth 0 -mmin +10 -exec rm -rf -- {} + 2>/dev/null
  done
}
enter() {
  work=$dir/.$base.kha-$rand
  mkdir -m 0700 -- "$work" || exit 11
  trap 'cd / && rm -rf -- "$work"' EXIT
  trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 141' PIPE; trap 'exit 143' TERM
  if cd -- "$work" && [ -O . ] && [ ! -L "$work" ]; then
    set -- .[!.]* ..?* *
    for f; do [ -e "$f" ] || [ -L "$f" ] || continue; replaced; done
  else
    replaced
  fi
}
replaced() {
  trap - EXIT
  echo "the temporary directory $work was replaced while in use; nothing was changed" >&2
  exit 18
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
  if [ -e previous ] || [ -L previous ]; then mv -f -- previous "$target"; else rm -f -- "$target"; fi || exit 21
  if [ -n "$reload" ]; then
    echo "--- the previous state was restored; running the reload command again:" >&2
    run "$reload" || exit 21
  fi
  exit "$1"
}
`

// Exit codes of the scripts; each names the step that failed.
const (
	exitDirectory   = 10
	exitUpload      = 11
	exitOwnerMode   = 12
	exitValidate    = 13
	exitRename      = 14
	exitReload      = 15
	exitNoCommit    = 16
	exitReloadTime  = 17
	exitReplaced    = 18
	exitLocked      = 19
	exitDamaged     = 20
	exitRollback    = 21
	exitVerify      = 22
	exitValidateEnd = 23
	exitLockDir     = 24
	exitChanged     = 26
	exitTimeout     = 124 // timeout(1)
)

// applyScript puts one file in place. It reads the content from stdin,
// validates it, prints "ready" and waits for the client's "commit" line:
// a client that is gone (a dropped connection, Ctrl-C) sends none, and
// the target is never touched. With verify set, after the reload it
// prints "reloaded" and waits for the client's verdict: anything but
// "keep" (a failed verification, a client that is gone) restores the
// previous file and reloads it. Arguments: target, mode ("keep": the
// replaced file's mode, owner and group), umask (empty when the mode
// needs chmod), owner[:group], create parent dirs (1/0), validate command,
// reload command, content size, time limit per command in seconds (0:
// none), random suffix, verify (1/0), and the digest the target must
// still have to be replaced (empty: any).
const applyScript = scriptPrelude + `target=$1 mode=$2 mask=$3 owner=$4 mkdirs=$5 validate=$6 reload=$7 size=$8 limit=$9 rand=${10} verify=${11} expect=${12}
dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
if [ ! -d "$dir" ]; then
  [ "$mkdirs" = 1 ] || { echo "directory $dir does not exist" >&2; exit 10; }
  mkdir -p -m 0755 -- "$dir" || exit 10
fi
sweep
enter
if [ -n "$mask" ]; then umask "$mask"; else umask 077; fi
set -C
head -c "$size" >new || exit 11
set +C
if [ "$mode" = keep ]; then
  chmod --reference="$target" new && chown --reference="$target" new || exit 12
else
  [ -n "$mask" ] || chmod "$mode" new || exit 12
fi
[ -z "$owner" ] || chown -- "$owner" new || exit 12
KHA_NEW=$work/new; export KHA_NEW
if [ -n "$validate" ]; then
  run "$validate"; rc=$?
  [ $rc = 0 ] || { [ $rc = 124 ] && exit 23; exit 13; }
fi
echo ready
IFS= read -r answer && [ "$answer" = commit ] || exit 16
if [ -n "$expect" ]; then
  sum=$(sha256sum <"$target") || exit 26
  [ "${sum%% *}" = "$expect" ] || exit 26
fi
if [ -e "$target" ] || [ -L "$target" ]; then
  ln -- "$target" previous 2>/dev/null || cp -p -- "$target" previous || exit 14
fi
mv -f -- new "$target" || exit 14
# The new file is in place: from here a client that is gone (a dropped
# connection makes writes fail and reads end) or a signal never stops the
# script half way. A failed reload, or with verify anything but the
# client's "keep", puts the previous file back and reloads it.
# (Traps that run a command, unlike ignored signals, leave the commands
# run the default dispositions.)
trap : PIPE
if [ "$verify" = 1 ]; then trap 'restore 22' HUP INT TERM; else trap : HUP INT TERM; fi
rc=0
if [ -n "$reload" ]; then run "$reload"; rc=$?; fi
if [ $rc = 0 ]; then
  [ "$verify" = 1 ] || exit 0
  echo reloaded 2>/dev/null && IFS= read -r verdict && [ "$verdict" = keep ] && exit 0
  restore 22
fi
[ $rc = 124 ] && restore 17
restore 15
`

// statScript prints a line "present" or "missing" for each path
// argument, then sha256sum's and stat's lines for the present ones: one
// sha256sum and one stat however many files there are, stat in the
// shell's own process.
const statScript = `set -u
n=$#
for f; do
  if [ -f "$f" ]; then echo present; set -- "$@" "$f"
  elif [ -e "$f" ] || [ -L "$f" ]; then echo "$f exists but is not a regular file" >&2; exit 2
  else echo missing
  fi
done
shift "$n"
[ $# = 0 ] && exit 0
sha256sum -- "$@" || exit 1
exec stat -c '%a %U %G %u %g' -- "$@"
`

// removeScript deletes $1 and then runs $2, if the file existed.
const removeScript = `set -u
target=$1 command=$2 limit=$3 rand=$4
dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
[ -e "$target" ] || [ -L "$target" ] || exit 0
rm -f -- "$target" || exit 1
[ -n "$command" ] || exit 0
` + scriptPrelude + `enter
run "$command" || exit 15
`

// blockScript rewrites the marked block in $1: the block on stdin takes
// the old one's place (or goes at the end), or the block is removed when
// $3 is "remove". Every other line stays byte for byte, a CRLF file gets
// CRLF block lines, and mode and owner are kept. A block whose markers do
// not pair up is refused, with its lines, rather than guessed at. Changes
// of one directory are serialised with flock on the directory .kha-lock in
// it, which the script makes with mode 0700: only the effective user (and
// root) can open it, so no other local user can hold the lock, as anyone
// could the target's directory. A .kha-lock that the effective user does
// not own, or a symlink, is refused: the lock would not be kha's. Where the
// file is a mount point (a container's /etc/hosts) it is written in place.
const blockScript = scriptPrelude + `target=$1 marker=$2 action=$3 limit=$4 rand=$5
dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
if [ ! -e "$target" ]; then
  [ "$action" = apply ] || exit 0
  [ -d "$dir" ] || { echo "directory $dir does not exist" >&2; exit 10; }
fi
if command -v flock >/dev/null; then
  locks=$dir/.kha-lock
  [ -e "$locks" ] || [ -L "$locks" ] || mkdir -m 0700 -- "$locks" 2>/dev/null || [ -d "$locks" ] ||
    mkdir -m 0700 -- "$locks" || exit 11
  if [ -L "$locks" ] || ! cd -- "$locks" 2>/dev/null || [ ! -O . ]; then
    echo "$locks, the lock of kha's changes in $dir, is not a directory that $(id -un) owns: remove it, or connect as its owner (ssh.sudo = true for root's), and apply again" >&2
    exit 24
  fi
  exec 9<. || exit 11
  if [ "$limit" = 0 ]; then flock 9; else flock -w "$limit" 9; fi ||
    { echo "another kha run held the lock $locks for $limit s" >&2; exit 19; }
fi
sweep
enter
umask 022
cat >block || exit 11
if [ -e "$target" ]; then cp -p -- "$target" new || exit 11; src=$target; else : >new; src=/dev/null; fi
awk -v b="# BEGIN kha $marker" -v e="# END kha $marker" -v action="$action" -v blockfile=block -v name="$target" '
function emit(  l) { while ((getline l < blockfile) > 0) print l (crlf ? "\r" : ""); close(blockfile); done = 1 }
NR == 1 && /\r$/ { crlf = 1 }
{ line = $0; sub(/\r$/, "", line) }
line == b {
  if (seen) bad = bad "\n  line " NR ": a second \"" b "\" line"
  seen = 1; inside = 1; start = NR; shown = 0
  if (action == "apply") emit()
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
    exit 3
  }
  if (action == "apply" && !done) emit()
}' "$src" >new; rc=$?
[ $rc = 0 ] || { [ $rc = 3 ] && exit 20; exit 11; }
mv -f -- new "$target" 2>/dev/null || cat new >"$target" || exit 14
`

// blockReadScript prints the marked block of $1 (markers included, CRs
// dropped), nothing when there is none, and refuses a damaged block.
const blockReadScript = `set -u
[ -f "$1" ] || exit 0
awk -v b="# BEGIN kha $2" -v e="# END kha $2" '
{ line = $0; sub(/\r$/, "", line) }
line == b { if (seen) bad = 1; seen = 1; inside = 1 }
inside { print line }
line == e { if (!inside) bad = 1; inside = 0 }
END { if (inside || bad) { print "the kha block \"" b "\" in " FILENAME " is damaged: its marker lines do not pair up" > "/dev/stderr"; exit 3 } }
' "$1" || exit 20
`
