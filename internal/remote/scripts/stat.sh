n=$#
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
