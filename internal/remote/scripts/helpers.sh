regular_target() {
  set -- "${1-$target}"
  if [ -L "$1" ] || { [ -e "$1" ] && [ ! -f "$1" ]; }; then
    echo "refusing to manage $1: it is a symbolic link or not a regular file. Point the path at the file itself" >&2
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
# shellcheck disable=SC2154 # $rand is a parameter of each script that enters
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
  # Descriptor 6 holds the private directory: a return to it, and a path
  # into it from elsewhere ("$fds/6/<name>"), reach this directory and no
  # other, whatever is renamed on the way.
  exec 6<.
}
# back_to_work returns to the private directory from elsewhere (the
# record), or stops if what its path names is another directory.
back_to_work() {
  cd -- "$work" && [ . -ef "$fds/6" ] || replaced
}
# descriptor opens a file of the private directory on descriptor 7, which
# the commands run inherit, and names it in $descriptor: a command reads
# the file through the descriptor, so no rename of a directory on its
# path (a private directory swapped for a link) changes what it reads.
descriptor() {
  exec 7<"$1" || exit "$EXIT_UPLOAD"
  descriptor=$fds/7
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
# shellcheck disable=SC2154 # $limit is a parameter of each script that runs a command
run() {
  if [ "$limit" != 0 ] && command -v timeout >/dev/null; then
    (cd 2>/dev/null || cd /; umask "$umask0"; exec timeout -k 5 "$limit" sh -c "$1") </dev/null >log 2>&1 6<&-
  else
    (cd 2>/dev/null || cd /; umask "$umask0"; exec sh -c "$1") </dev/null >log 2>&1 6<&-
  fi
  status=$?
  while IFS= read -r line || [ -n "$line" ]; do printf '%s\n' "$line"; done <log >&2
  return "$status"
}
restore() {
  trap '' HUP INT TERM
  if [ -e previous ] || [ -L previous ]; then
    mv -fT -- previous "$target" || exit "$EXIT_ROLLBACK"
    failed=$EXIT_ROLLBACK
  else
    rm -f -- "$target" || exit "$EXIT_ROLLBACK"
    failed=$EXIT_REMOVED_NEW placed=0
  fi
  unclaim
  if [ -n "$reload" ]; then
    echo "--- the previous state was restored; running the reload command again:" >&2
    run "$reload" || exit "$failed"
  fi
  exit "$1"
}
# shellcheck disable=SC2154 # $rec is set by each script that keeps a record
into_record() {
  if not_kha_dir "$rec"; then
    echo "$rec, kha's record of $target, is not a directory that $(id -un) owns (it is $(owner_of "$rec")'s): kha did not make it and does not use it: remove it, or connect as its owner (ssh.sudo = true for root's), and apply again" >&2
    exit "$EXIT_RECORD"
  fi
  cd -- "$rec" && [ -O . ] && [ . -ef "$rec" ] && [ ! -L "$rec" ] || {
    echo "$rec, kha's record of $target, was replaced while in use (someone else can write to $dir); nothing was changed" >&2
    exit "$EXIT_REPLACED"
  }
}
record() {
  held='' held_note='' existed=0 made=''
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
