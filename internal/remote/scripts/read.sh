safe_path "${target%/*}" || echo "$WORD_UNSAFE $unsafe_at: $unsafe_why" >&2
[ -e "$target" ] || [ -L "$target" ] || exit $EXIT_MISSING
[ -f "$target" ] || { echo "$target is not a regular file" >&2; exit $EXIT_NOT_REGULAR; }
stat -c %a -- "$target" || exit $EXIT_MODE
head -c "$max" -- "$target"
