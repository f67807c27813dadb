# shellcheck shell=bash
# common.sh: what the end-to-end runs (run.sh, estate.sh) and hosts.sh
# share: test hosts in network namespaces, each node's kubeconfig as kubeadm
# writes it, requests with those kubeconfigs under load, the daemon
# commands given to kha, and the terraform CLI in a working copy. Source it
# after scripts/lib.sh; the functions below use T (the run's directory).

# The run's clock and verdict: log WHAT prints the seconds since $start.
log() { echo "== [$(($(date +%s) - start))s] $*"; }
fail() { # the evidence first: $on_fail, when a stage sets it, prints what it gathered
  [ -z "${on_fail:-}" ] || eval "$on_fail" >&2
  echo "${E2E_NAME:-E2E} FAILED: $*" >&2; exit 1
}
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# e2e_start LOCK WHAT: as root, holding LOCK (on fd 9) for the run, with the
# host's packages and the terraform CLI ($tf).
e2e_start() {
  [ "$(id -u)" -eq 0 ] || fail "run as root: the test makes network namespaces"
  exec 9>"$1"
  flock -n 9 || fail "another $2 run holds $1"
  scripts/setup-host.sh
  eval "$(scripts/tf-env.sh)"
  tf=$TF_ACC_TERRAFORM_PATH
}

# netns_switch NS: a namespace holding the bridge br0 of a test network.
netns_switch() {
  netns_add "$1"
  ip -n "$1" link add br0 type bridge
  ip -n "$1" link set br0 up
}

# netns_add NS: an empty network namespace, loopback up.
netns_add() {
  ip netns add "$1"
  ip -n "$1" link set lo up
}

# netns_link SWITCH NS ADDRESS/PREFIX PORT [IFACE]: a veth from NS into
# SWITCH's bridge, PORT its end there, IFACE (default eth0) its end in NS.
# NS "" is the root namespace.
netns_link() {
  local sw=$1 ns=$2 addr=$3 port=$4 iface=${5:-eth0}
  if [ -z "$ns" ]; then
    ip link add "$iface" type veth peer name "$port" netns "$sw"
    ip addr add "$addr" dev "$iface"
    ip link set "$iface" up
  else
    ip link add "$port" netns "$sw" type veth peer name "$iface" netns "$ns"
    ip -n "$ns" addr add "$addr" dev "$iface"
    ip -n "$ns" link set "$iface" up
  fi
  ip -n "$sw" link set "$port" master br0 up
}

# netns_sshd NS NAME DIR ADDRESS CLIENT_PUBKEY [SETUP [CONFIG]]: a test
# host's sshd on ADDRESS:22 in NS (sshd_files in DIR, with the sshd_config
# lines CONFIG), in a private mount and UTS namespace with hostname NAME
# where the shell commands SETUP ran first (the host's own mounts) and
# root's home is empty (this machine's dotfiles stay out of the hosts'
# shells). The host's known_hosts lines go to stdout.
netns_sshd() {
  local ns=$1 name=$2 d=$3 addr=$4
  sshd_files "$d" "$addr" 22 "$5" "${7:-}" || return 1
  ip netns exec "$ns" unshare --mount --uts --propagation private sh -c \
    "hostname $name; ${6:-:}; mount -t tmpfs -o mode=0700 tmpfs /root; exec /usr/sbin/sshd -D -e -f $d/sshd_config" > "$d/sshd.log" 2>&1 &
  disown
  known_hosts_lines "$d" "$addr"
}

# netns_down REGEX SSHD_CONFIGS: kill every process in the namespaces whose
# names match REGEX, and any test sshd whose config matches the pgrep
# pattern SSHD_CONFIGS (its namespace went away under it); delete the
# namespaces.
netns_down() {
  local ns pids p
  for ns in $(ip netns list 2>/dev/null | awk -v re="^($1)( |\$)" '$0 ~ re {print $1}'); do
    pids="${pids:-} $(ip netns pids "$ns" 2>/dev/null)"
  done
  pids="${pids:-} $(pgrep -f "sshd -D -e -f $2" || true)"
  for p in $pids; do kill -9 "$p" 2>/dev/null; done
  for p in $pids; do for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done; done
  for ns in $(ip netns list 2>/dev/null | awk -v re="^($1)( |\$)" '$0 ~ re {print $1}'); do
    ip netns del "$ns" 2>/dev/null
  done
  return 0
}

# on HOST COMMAND: run in a test host's network, mount and UTS namespaces
# (where its own files are), like a command given over SSH.
on() { nsenter -t "$(cat "$T/hosts/$1/sshd.pid")" -m -n -u -- sh -c "$2"; }

# kubeconfig PKI NAME SERVER: a node's kubeconfig as kubeadm init and join
# write it (kubelet.conf), with NAME's own client certificate, issued by
# PKI's CA, inline.
kubeconfig() {
  issue_cert "$1" "kubelet-$2" "system:node:$2" "DNS:$2" clientAuth system:nodes
  cat <<KUBECONFIG
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: $(base64 -w0 < "$1/ca.crt")
    server: $3
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: system:node:$2
  name: system:node:$2@kubernetes
current-context: system:node:$2@kubernetes
kind: Config
preferences: {}
users:
- name: system:node:$2
  user:
    client-certificate-data: $(base64 -w0 < "$1/kubelet-$2.crt")
    client-key-data: $(base64 -w0 < "$1/kubelet-$2.key")
KUBECONFIG
}

# The reload and destroy commands kha runs on the hosts for daemons with a
# pid file, where no init system runs.
start_or_reload() { # pidfile start-command reload-signal
  echo "if [ -s $1 ] && kill -0 \$(cat $1) 2>/dev/null; then kill -$3 \$(cat $1); else $2; fi"
}
stop() { # pidfile runtime-files...: stop the daemon, wait for it to exit, remove what it leaves
  echo "if [ -s $1 ]; then p=\$(cat $1); kill \$p 2>/dev/null; for i in \$(seq 100); do kill -0 \$p 2>/dev/null || break; sleep 0.05; done; fi; rm -f $*"
}

# tf_run COMMAND ARGS...: the terraform CLI ($tf) in the working copy
# ($work), bounded, its output in $T/COMMAND.log; returns the CLI's status.
tf_run() { (cd "$work" && timeout 900 "$tf" "$1" -no-color -input=false "${@:2}") > "$T/$1.log" 2>&1; }
# tf COMMAND ARGS...: tf_run, and the run fails (printing the log) if the CLI does.
tf() { tf_run "$@" || { cat "$T/$1.log"; fail "terraform $*"; }; }
out() { (cd "$work" && "$tf" output -json "$1"); }

# Requests with each node's own kubeconfig, read afresh for each request,
# every 100ms on a new connection, while a change runs: what a kubelet would
# see. (Every 50ms, the new TLS connections of seven clients kept the two
# cores the test hosts share so busy that keepalived timed out its own
# track scripts.) The script defines load_run HOST COMMAND...: COMMAND as HOST's
# kubelet, in its namespaces, with its kubeconfig's path appended.
# load_start HOSTS...; load_stop WHAT [FAILURES ALLOWED PER HOST]. LOAD_INTERVAL
# (default 100ms) spaces each client's requests: the stages with seven
# clients and a handover take 200ms, since at 100ms they held the two cores
# at 98% CPU pressure (load average 45), where keepalived's own timers fire
# seconds late and the VIP moves whatever the load balancers do.
load_pids=()
load_start() {
  rm -f "$T/load.stop" "$T"/load-*
  load_hosts=("$@")
  for h in "$@"; do
    load_run "$h" "$T/loadgen" -interval "${LOAD_INTERVAL:-100ms}" -stop "$T/load.stop" -kubeconfig > "$T/load-$h" 2> "$T/load-$h.err" &
    load_pids+=($!)
  done
  sleep 2
}
load_stop() {
  sleep 2
  touch "$T/load.stop"
  for p in "${load_pids[@]}"; do wait "$p"; done
  load_pids=()
  local h total failed slowest
  for h in "${load_hosts[@]}"; do
    read -r total failed slowest < <(awk '{n++; if ($2 != 0) f++; if ($3 > s) s = $3} END {printf "%d %d %d\n", n, f, s}' "$T/load-$h")
    printf '  %-7s %4d requests with its own kubeconfig, %d failed, slowest %d ms\n' "$h" "$total" "$failed" "$slowest"
    [ "$total" -ge 50 ] || fail "$h: too few requests during $1 to judge it"
    [ "$failed" -le "${2:-0}" ] || { tail -n 5 "$T/load-$h.err"; fail "$h: $failed requests failed during $1"; }
  done
}
