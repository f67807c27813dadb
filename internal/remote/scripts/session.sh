# The session's umask and effective user, from the kernel: $(umask) and
# $(id -u) would each start a process on every run. The connection user
# is the one sudo ran the script for, or the effective user without sudo
# (root's own environment is root's to set: SUDO_UID counts only for root).
umask0='' euid=''
while read -r status_key status_value status_effective _; do
  case $status_key in
    Umask:) umask0=$status_value ;;
    Uid:) euid=$status_effective; break ;;
  esac
done 2>/dev/null </proc/self/status
[ -n "$umask0" ] || umask0=$(umask)
[ -n "$euid" ] || euid=$(id -u)
conn_uid=$euid
[ "$euid" != 0 ] || conn_uid=${SUDO_UID:-0}
# Where a process finds its own open descriptors by number.
fds=/dev/fd
[ -e /dev/fd/0 ] || fds=/proc/self/fd
