# Addresses are canonical (the engine's); only $others is split, into
# addresses, with globbing off.
set -f
route=$(ip route get "$vip" 2>&1)
echo "$WORD_ROUTE $(echo "$route" | head -n 1)"
if [ -z "$iface" ]; then
  # No interface given: the default route's, IPv4's first, as kube-vip
  # takes it. A multipath route names its devices on the lines after.
  iface=$({ ip -4 route show default; ip -6 route show default; } 2>/dev/null |
    awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
fi
echo "$WORD_INTERFACE $iface"
[ -n "$iface" ] || { echo "$WORD_UNPROBED there is no default route, so no interface to ask on"; exit $EXIT_OK; }
echo "$WORD_LINK $(ip -o link show dev "$iface" 2>/dev/null)"
if ip -o addr show dev "$iface" 2>/dev/null | grep -qF " $vip/"; then echo "$WORD_LOCAL 1"; else echo "$WORD_LOCAL 0"; fi
answers() { # each line of the probe of $a, as an answer for $a
  while IFS= read -r line; do echo "$WORD_ANSWER $a $line"; done
}
case $vip in
*:*)
  # NDP: the kernel asks, made to by a ping, and keeps who answered.
  command -v ping >/dev/null 2>&1 || { echo "$WORD_UNPROBED ping is not installed"; exit $EXIT_OK; }
  for a in $vip $others; do
    ip -6 neigh flush to "$a" dev "$iface" 2>/dev/null
    ping -6 -c 1 -W 1 -I "$iface" "$a" >/dev/null 2>&1 &
  done
  wait
  for a in $vip $others; do ip -6 neigh show to "$a" dev "$iface" | answers; done
  ;;
*)
  # ARP, every answer: iputils' arping (-I interface) or Habets' (-i).
  command -v arping >/dev/null 2>&1 || { echo "$WORD_UNPROBED arping is not installed"; exit $EXIT_OK; }
  if arping -V 2>&1 | grep -q iputils; then set -- -c 2 -w 2 -I "$iface"; else set -- -r -c 3 -W 0.2 -w 1 -i "$iface"; fi
  for a in $vip $others; do arping "$@" "$a" 2>/dev/null | answers & done
  wait
  ;;
esac
exit $EXIT_OK
