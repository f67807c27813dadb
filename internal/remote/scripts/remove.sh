dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
rec=$dir/.$base.kha held='' existed=0 made='' changed=0
safe_dir
regular_target
# Where kha's state says it keeps a record of the path, a file without
# one, or with one kha did not make, is not known to be kha's: it stays.
if [ "$recorded" = 1 ] && [ "$keep" != 1 ] && [ -e "$target" ]; then
  if [ ! -e "$rec" ] && [ ! -L "$rec" ]; then
    echo "$target is left as it is: kha's record of it, $rec, is gone, so kha cannot vouch that the file there is the one it wrote (was its directory replaced, or the record removed by hand?)" >&2
    exit $EXIT_UNVOUCHED
  elif not_kha_dir "$rec"; then
    echo "$target is left as it is: $rec, where kha keeps its record of it, is not a directory that $(id -un) owns (it is $(owner_of "$rec")'s): kha did not make it, so it cannot vouch for the file" >&2
    exit $EXIT_UNVOUCHED
  fi
fi
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
