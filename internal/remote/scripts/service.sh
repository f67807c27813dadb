# Whether a service runs, in one line: $WORD_RUNNING, $WORD_STOPPED and
# why, or $WORD_UNKNOWN and why nothing can tell. The user's command
# decides alone; else the process its PID file names, when that process
# is $process; else the systemd unit.
if [ -n "$command" ]; then
  if [ "$limit" != 0 ] && command -v timeout >/dev/null; then
    (cd / && exec timeout -k 5 "$limit" sh -c "$command") </dev/null >/dev/null 2>&1
  else
    (cd / && exec sh -c "$command") </dev/null >/dev/null 2>&1
  fi
  rc=$?
  if [ $rc = 0 ]; then echo "$WORD_RUNNING"; else echo "$WORD_STOPPED running_command exited with status $rc"; fi
  exit $EXIT_OK
fi
if [ -n "$pidfile" ]; then
  pid=
  # A regular file only: a FIFO would hold the read.
  [ -f "$pidfile" ] && IFS= read -r pid <"$pidfile"
  case $pid in
  '' | *[!0-9]*) echo "$WORD_STOPPED $pidfile holds no process ID"; exit $EXIT_OK ;;
  esac
  comm=
  [ -r "/proc/$pid/comm" ] && IFS= read -r comm <"/proc/$pid/comm"
  if [ "$comm" = "$process" ]; then echo "$WORD_RUNNING"; else echo "$WORD_STOPPED no $process runs as process $pid, which $pidfile names"; fi
  exit $EXIT_OK
fi
command -v systemctl >/dev/null 2>&1 || { echo "$WORD_UNKNOWN systemctl is not installed"; exit $EXIT_OK; }
state=$(systemctl is-active -- "$unit" 2>/dev/null)
case $state in
active | reloading | activating) echo "$WORD_RUNNING" ;;
inactive | failed | deactivating) echo "$WORD_STOPPED the unit $unit is $state" ;;
*) echo "$WORD_UNKNOWN systemctl says ${state:-nothing} of $unit" ;;
esac
exit $EXIT_OK
