#!/usr/bin/env bash
# hosts.sh up N | down: N test hosts kha-h1..kha-hN, network namespaces
# with addresses 10.77.0.(10+i)/24 on a bridge in namespace kha-sw. The root
# namespace reaches them through the veth kha-root (10.77.0.1). Each host
# runs its own sshd on <address>:22 inside a private mount namespace where
# /etc/kha is a directory of its own, /etc/hosts a file of its own (a bind
# mount, as in a container) and root's home is empty (this machine's
# dotfiles stay out of the hosts' shells). These addresses exist only inside the
# namespaces made here; hosts have no default route.
set -uo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/../../scripts/lib.sh"
T=${KHA_E2E_DIR:-/tmp/kha-e2e}
SUBNET=10.77.0

down() {
  local ns pids p
  for ns in $(ip netns list 2>/dev/null | awk '/^kha-(h[0-9]+|sw)( |$)/{print $1}'); do
    pids="${pids:-} $(ip netns pids "$ns" 2>/dev/null)"
  done
  # and any test sshd whose namespace went away under it
  pids="${pids:-} $(pgrep -f "sshd -D -e -f $T/hosts/h[0-9]+/sshd_config" || true)"
  for p in $pids; do kill -9 "$p" 2>/dev/null; done
  for p in $pids; do for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done; done
  for ns in $(ip netns list 2>/dev/null | awk '/^kha-(h[0-9]+|sw)( |$)/{print $1}'); do
    ip netns del "$ns" 2>/dev/null
  done
  ip link del kha-root 2>/dev/null
  ip route del unreachable $SUBNET.0/24 metric 4000 2>/dev/null
  [ ! -d /etc/kha ] || [ -n "$(ls -A /etc/kha)" ] || rmdir /etc/kha
  return 0
}

up() {
  local n=$1 i ns addr d
  down
  mkdir -p "$T/hosts"
  [ -f "$T/client_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C kha-e2e -f "$T/client_ed25519"
  # If kha-root vanished, 10.77.0.x must fail here rather than follow the default route.
  ip route add unreachable $SUBNET.0/24 metric 4000
  ip netns add kha-sw
  ip -n kha-sw link set lo up
  ip -n kha-sw link add br0 type bridge
  ip -n kha-sw link set br0 up
  ip link add kha-root type veth peer name root-p netns kha-sw
  ip -n kha-sw link set root-p master br0 up
  ip addr add $SUBNET.1/24 dev kha-root
  ip link set kha-root up
  install -d -m 0755 /etc/kha
  : > "$T/hosts/known_hosts"
  for i in $(seq 1 "$n"); do
    ns=kha-h$i addr=$SUBNET.$((10 + i)) d=$T/hosts/h$i
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add "h$i-p" netns kha-sw type veth peer name eth0 netns "$ns"
    ip -n kha-sw link set "h$i-p" master br0 up
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_nonlocal_bind=1   # a standby binds the VIP too
    mkdir -p "$d/etc-kha"
    # The hosts file has lines of its own that kha must leave alone.
    printf '127.0.0.1\tlocalhost\n%s\th%d\n# kept by the host\n' "$addr" "$i" > "$d/hosts"
    cp "$d/hosts" "$d/hosts.before"
    sshd_files "$d" "$addr" 22 "$T/client_ed25519.pub" || return 1
    ip netns exec "$ns" unshare --mount --uts --propagation private sh -c \
      "hostname h$i; mount --bind $d/etc-kha /etc/kha; mount --bind $d/hosts /etc/hosts; mount -t tmpfs -o mode=0700 tmpfs /root; exec /usr/sbin/sshd -D -e -f $d/sshd_config" > "$d/sshd.log" 2>&1 &
    known_hosts_lines "$d" "$addr" >> "$T/hosts/known_hosts"
  done
  for i in $(seq 1 "$n"); do
    addr=$SUBNET.$((10 + i))
    wait_port "$addr" 22 || { echo "h$i: sshd did not come up" >&2; cat "$T/hosts/h$i/sshd.log" >&2; return 1; }
  done
}

case ${1:-} in
  up) up "${2:-6}" || { down; exit 1; } ;;
  down) down ;;
  *) echo "usage: $0 up N | down" >&2; exit 2 ;;
esac
