dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
safe_dir
if [ ! -e "$target" ] && [ ! -L "$target" ]; then
  [ "$apply" = 1 ] || exit $EXIT_OK
  [ -d "$dir" ] || { echo "directory $dir does not exist" >&2; exit $EXIT_DIRECTORY; }
fi
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
