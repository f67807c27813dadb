safe_path "${target%/*}" || echo "$WORD_UNSAFE $unsafe_at: $unsafe_why" >&2
[ -f "$target" ] || exit $EXIT_OK
awk -v b="# BEGIN kha $marker" -v e="# END kha $marker" -v damaged="$EXIT_DAMAGED" '
{ line = $0; sub(/\r$/, "", line) }
line == b { if (seen) bad = 1; seen = 1; inside = 1 }
inside { print line }
line == e { if (!inside) bad = 1; inside = 0 }
END { if (inside || bad) { print "the kha block \"" b "\" in " FILENAME " is damaged: its marker lines do not pair up" > "/dev/stderr"; exit damaged } }
' "$target" || exit $EXIT_DAMAGED
