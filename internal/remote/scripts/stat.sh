n=$#
# One stat(1) for the files and every directory on the way to them: what
# a refresh warns of before an apply refuses it (safe_path), and the
# files' modes and owners.
set -f
want=
for f; do
  prefixes_of "${f%/*}"
  want=$want$sp_prefixes$nl$f$nl
done
IFS=$nl
# shellcheck disable=SC2086 # a path a line
stat_paths $want
IFS=' 	
'
for f; do
  safe_path "${f%/*}" || echo "$WORD_UNSAFE $unsafe_at: $unsafe_why"
  rec=${f%/*}/.${f##*/}.kha
  if { [ -e "$rec" ] || [ -L "$rec" ]; } && not_kha_dir "$rec"; then
    echo "$WORD_FOREIGN_RECORD $rec"
  fi
  if [ -f "$f" ]; then echo "$WORD_PRESENT"; set -- "$@" "$f"
  elif [ -e "$f" ] || [ -L "$f" ]; then echo "$f exists but is not a regular file" >&2; exit $EXIT_NOT_REGULAR
  else echo "$WORD_MISSING"
  fi
done
shift "$n"
[ $# = 0 ] && exit $EXIT_OK
# mode_line prints a file's permissions, owner and group (names, then
# ids) from what stat(1) said of it.
mode_line() {
  seen_of "$1"
  # shellcheck disable=SC2086 # the fields of stat's line
  set -- $sp_seen
  [ $# = 6 ] || return 1
  echo "$4 $5 $6 $2 $3"
}
for f; do mode_line "$f" || { echo "stat(1) could not read $f" >&2; exit $EXIT_MODE; }; done
# sha256sum in the shell's own process: a refresh starts two processes, the
# stat and the shell's, however many files it reads.
exec sha256sum -- "$@"
