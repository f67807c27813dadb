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
# shellcheck source=test/e2e/common.sh
. "$(dirname "$0")/common.sh"
T=${KHA_E2E_DIR:-/tmp/kha-e2e}
SUBNET=10.77.0

down() {
  netns_down 'kha-(h[0-9]+|sw|dns)' "$T/hosts/h[0-9]+/sshd_config"
  rm -rf /etc/netns/kha-dns # run.sh's DNS server's namespace resolver
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
  netns_switch kha-sw
  netns_link kha-sw "" $SUBNET.1/24 root-p kha-root
  install -d -m 0755 /etc/kha
  : > "$T/hosts/known_hosts"
  for i in $(seq 1 "$n"); do
    ns=kha-h$i addr=$SUBNET.$((10 + i)) d=$T/hosts/h$i
    netns_add "$ns"
    netns_link kha-sw "$ns" "$addr/24" "h$i-p"
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_nonlocal_bind=1   # a standby binds the VIP too
    mkdir -p "$d/etc-kha"
    # The hosts file has lines of its own that kha must leave alone.
    printf '127.0.0.1\tlocalhost\n%s\th%d\n# kept by the host\n' "$addr" "$i" > "$d/hosts"
    cp "$d/hosts" "$d/hosts.before"
    netns_sshd "$ns" "h$i" "$d" "$addr" "$T/client_ed25519.pub" \
      "mount --bind $d/etc-kha /etc/kha; mount --bind $d/hosts /etc/hosts" >> "$T/hosts/known_hosts" || return 1
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
