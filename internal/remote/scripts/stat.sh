n=$#
for f; do
  # What a refresh warns of before an apply refuses it: the path's
  # directories (safe_path), and a record of kha's that is not kha's.
  safe_path "${f%/*}" || echo "$WORD_UNSAFE $unsafe_at: $unsafe_why"
  rec=${f%/*}/.${f##*/}.kha
  if [ -L "$rec" ] || { [ -e "$rec" ] && { [ ! -d "$rec" ] || [ ! -O "$rec" ]; }; }; then
    echo "$WORD_FOREIGN_RECORD $rec"
  fi
  if [ -f "$f" ]; then echo "$WORD_PRESENT"; set -- "$@" "$f"
  elif [ -e "$f" ] || [ -L "$f" ]; then echo "$f exists but is not a regular file" >&2; exit $EXIT_NOT_REGULAR
  else echo "$WORD_MISSING"
  fi
done
shift "$n"
[ $# = 0 ] && exit $EXIT_OK
sha256sum -- "$@" || exit $EXIT_DIGEST
exec stat -c '%a %U %G %u %g' -- "$@"
