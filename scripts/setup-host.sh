#!/usr/bin/env bash
# setup-host.sh: install what kha's demo and tests run for real (OpenSSH
# server, HAProxy, nginx with the stream module, etcd, keepalived; gnupg for
# the release snapshot's signature; shellcheck for make lint's check of the
# host scripts; arping and ping, which ask who answers for a VIP; acl, whose
# getfacl kha reads on a group-writable directory and whose setfacl gives the
# hostile neighbour an entry; BIND 9 and its nsupdate and dig, the DNS server
# make e2e updates the API name on) and the unprivileged test user.
# Idempotent; starts no service.
set -euo pipefail

PACKAGES=(openssh-server openssh-client sudo haproxy nginx libnginx-mod-stream
          etcd-server etcd-client keepalived socat curl iproute2 jq ca-certificates openssl procps
          gnupg shellcheck arping iputils-ping acl bind9 bind9-dnsutils)
TEST_USER=kha-test
# Another local user of the test hosts, with no sudo: the hostile
# neighbour who writes next to the files kha manages.
NEIGHBOUR_USER=kha-neighbour

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ "$(id -u)" -ne 0 ]; then
  if [ ${#missing[@]} -gt 0 ] || ! id "$TEST_USER" >/dev/null 2>&1 || ! id "$NEIGHBOUR_USER" >/dev/null 2>&1; then
    echo "setup-host.sh: run as root to install: ${missing[*]:-} (and create users $TEST_USER, $NEIGHBOUR_USER)" >&2
    exit 1
  fi
  exit 0
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-host.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  # Package scripts must not start daemons on a machine without an init system.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi

install -d -m 0755 /run/sshd   # sshd's privilege-separation directory

if ! id "$TEST_USER" >/dev/null 2>&1; then
  useradd -m -s /bin/bash "$TEST_USER"
fi
if ! id "$NEIGHBOUR_USER" >/dev/null 2>&1; then
  useradd -m -s /bin/sh "$NEIGHBOUR_USER"
fi
usermod -p '*' "$TEST_USER"    # no password, but not locked: sshd refuses locked accounts
echo "$TEST_USER ALL=(root) NOPASSWD: ALL" > "/etc/sudoers.d/$TEST_USER"
chmod 0440 "/etc/sudoers.d/$TEST_USER"
