dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
safe_dir "$dir" "run the preflight instance for $target"
if [ ! -d "$dir" ]; then
  [ "$mkdirs" = 1 ] || { echo "directory $dir does not exist" >&2; exit $EXIT_DIRECTORY; }
  # shellcheck disable=SC2174 # the parents get the host's umask, as with mkdir -p alone
  mkdir -p -m 0755 -- "$dir" || exit $EXIT_DIRECTORY
fi
command -v timeout >/dev/null || { echo "the host has no timeout(1), which bounds the throwaway instance" >&2; exit $EXIT_NO_TIMEOUT; }
sweep
enter
umask 077
head -c "$size" >candidate || exit $EXIT_UPLOAD
descriptor candidate
KHA_CANDIDATE=$descriptor; export KHA_CANDIDATE
exec 3<&0
(cd 2>/dev/null || cd /; umask "$umask0"; exec timeout -k 2 "$limit" sh -c "$command") </dev/null >plog 2>&1 6<&- &
pid=$!
echo "$WORD_STARTED"
(IFS= read -r stop <&3; kill "$pid" 2>/dev/null) &
wait "$pid"; rc=$?
echo "$WORD_EXITED $rc"
while IFS= read -r line || [ -n "$line" ]; do printf '%s\n' "$line"; done <plog >&2
