dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
rec=$dir/.$base.kha fresh=0 newdirs='' placed=0 held='' existed=0
safe_dir
if [ ! -d "$dir" ]; then
  [ "$mkdirs" = 1 ] || { echo "directory $dir does not exist" >&2; exit $EXIT_DIRECTORY; }
  d=$dir
  while [ -n "$d" ] && [ ! -d "$d" ]; do newdirs="${newdirs}made=$d
"; d=${d%/*}; done
  # shellcheck disable=SC2174 # the parents get the host's umask, as with mkdir -p alone
  mkdir -p -m 0755 -- "$dir" || exit $EXIT_DIRECTORY
fi
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
  if [ "$reload_again" = 1 ] && [ -n "$reload" ]; then run "$reload" || exit $EXIT_RELOAD_AGAIN; fi
  exit $EXIT_OK
fi
if [ -n "$validate" ]; then
  descriptor new
  KHA_NEW=$descriptor; export KHA_NEW
  run "$validate"; rc=$?
  [ $rc = $EXIT_OK ] || [ $rc = $EXIT_TIMEOUT ] || [ -s log ] || [ -z "$explain" ] || {
    echo "--- the validate command printed no reason; running it again without -q:" >&2
    run "$explain"
  }
  [ $rc = $EXIT_OK ] || { [ $rc = $EXIT_TIMEOUT ] && exit $EXIT_VALIDATE_END; exit $EXIT_VALIDATE; }
  exec 7<&-
fi
echo "$WORD_READY $existed"
IFS= read -r answer && [ "$answer" = "$WORD_COMMIT" ] || exit $EXIT_NO_COMMIT
if [ -n "$expect" ]; then
  sum=$(sha256sum <"$target") || exit $EXIT_CHANGED
  [ "${sum%% *}" = "$expect" ] || exit $EXIT_CHANGED
fi
# The backup is what restore puts back after a failed reload or
# verification; without either nothing restores it.
if { [ -n "$reload" ] || [ "$verify" = 1 ]; } && { [ -e "$target" ] || [ -L "$target" ]; }; then
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
