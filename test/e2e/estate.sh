#!/usr/bin/env bash
# estate.sh: the second end-to-end test, a cluster's whole life on hosts
# set up the way real ones are:
#   * only a bastion is reachable from Terraform's machine: the cluster's
#     hosts are on a network that only the bastion is on (proved: a direct
#     connection to a host fails), and kha connects through it;
#   * kha logs in as the unprivileged kha-test with passwordless sudo (the
#     hosts' sshd lets no one else in);
#   * every host has Debian's stock /etc/haproxy/haproxy.cfg and
#     /etc/nginx/nginx.conf and kubeadm's leftovers /etc/kubernetes/pki/ca.crt
#     and /etc/kubernetes/kubelet.conf before the first apply: each host's /etc
#     is an overlay of this machine's (nothing of it changes), and a listing
#     of those files (checksum, mode, owner) is taken first.
# Hosts (namespaces kha-e*, 10.78.0.0/24 behind the bastion, whose other leg
# is 10.78.1.2): control-plane nodes cp1-cp3 with stand-in apiservers that
# verify client certificates (test/e2e/apiserver), workers w1 (node-local
# HAProxy and, beside it, the external HAProxy) and w2 (node-local nginx);
# cp4 replaces cp3. test/e2e/estate is applied by the real terraform CLI while
# every node sends requests with its own kubeconfig, and the bastion through
# the external load balancer by name:
#   a. apply (0 failed requests);
#   b. drift repair: a hand edit shows in the plan by host:port:path, the
#      apply puts the file back;
#   c. import of kubeadm's ca.crt on every host into kha_file;
#   d. cp3 taken off the network: the plan that removes it finishes in
#      under 60 s with a warning (and, told to go from three control-plane
#      nodes to two, one of etcd's quorum); cp3's resources let go of, the apply takes
#      it out of every load balancer (0 failed requests on the other nodes);
#      then cp4, its certificate issued for the planned SANs, joins them
#      (0 failed requests);
#   e. destroy: every pre-existing file is back byte for byte, with its mode
#      and owner, and nothing kha made is left (files, directories, daemons).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export KHA_ESTATE_DIR=${KHA_ESTATE_DIR:-/tmp/kha-estate}
T=$KHA_ESTATE_DIR
E2E_NAME=ESTATE
start=$(date +%s)

cd "$root"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
# shellcheck source=test/e2e/common.sh
. test/e2e/common.sh
e2e_start /run/kha-estate.lock estate
user=kha-test # setup-host.sh's unprivileged user, with passwordless sudo

NET=10.78.0 FRONT=10.78.1
BASTION=$FRONT.2
declare -A ip=([cp1]=$NET.11 [cp2]=$NET.12 [cp3]=$NET.13 [cp4]=$NET.14 [w1]=$NET.21 [w2]=$NET.22 [bastion]=$NET.2)
nodes=(cp1 cp2 cp3 cp4 w1 w2)
# The files kha is given to manage, and the trees around them: their
# listing before the first apply is what destroy must give back.
trees="/etc/hosts /etc/haproxy /etc/nginx /etc/kubernetes"

estate_down() {
  netns_down 'kha-e(bastion|cp[0-9]+|w[0-9]+|sw)' "$T/hosts/[a-z0-9]+/sshd_config"
  ip link del kha-eroot 2>/dev/null || true
  ip route del unreachable 10.78.0.0/16 metric 4000 2>/dev/null || true
  return 0
}
cleanup() {
  set +e
  touch "$T/load.stop"
  for p in "${load_pids[@]}"; do wait "$p"; done
  [ -n "${keep:-}" ] && return
  estate_down
}
trap cleanup EXIT

# host NAME ADDRESS SSHD_ADDRESS [HOSTS_LINE]: NAME's sshd, with its /etc an
# overlay of this machine's (its changes, and the files put there before, in
# $T/hosts/NAME/etc), a /run of its own, and /etc/hosts naming it.
host() {
  local d=$T/hosts/$1
  mkdir -p "$d/etc" "$d/etc-work"
  printf '127.0.0.1\tlocalhost\n%s\t%s\n# kept by the host\n%s' "$2" "$1" "${4:-}" > "$d/etc/hosts"
  netns_sshd "kha-e$1" "$1" "$d" "$3" "$T/client_ed25519.pub" \
    "mount -t overlay overlay -o lowerdir=/etc,upperdir=$d/etc,workdir=$d/etc-work /etc; mount -t tmpfs -o mode=0755 tmpfs /run; mkdir -p /run/sshd /run/haproxy" \
    "AllowUsers $user" >> "$T/hosts/known_hosts"
}

estate_up() {
  estate_down
  mkdir -p "$T/hosts"
  ssh-keygen -q -t ed25519 -N '' -C kha-estate -f "$T/client_ed25519"
  chmod 644 "$T/client_ed25519.pub"
  # Nothing of 10.78.0.0/16 follows the default route; the bastion's leg is the one way in.
  ip route add unreachable 10.78.0.0/16 metric 4000
  : > "$T/hosts/known_hosts"
  netns_add kha-ebastion
  ip link add kha-eroot type veth peer name eth1 netns kha-ebastion
  ip addr add $FRONT.1/24 dev kha-eroot && ip link set kha-eroot up
  ip -n kha-ebastion addr add $BASTION/24 dev eth1 && ip -n kha-ebastion link set eth1 up
  ip netns exec kha-ebastion sysctl -qw net.ipv4.ip_forward=0 # a jump host, not a router
  netns_switch kha-esw
  netns_link kha-esw kha-ebastion "${ip[bastion]}/24" bastion-p
  for n in "${nodes[@]}"; do
    netns_add "kha-e$n"
    netns_link kha-esw "kha-e$n" "${ip[$n]}/24" "$n-p"
  done
}

rm -rf "$T" && mkdir -p "$T/pki"
chmod 755 "$T"
log "the estate: a bastion on $BASTION, the only address this machine reaches; cp1-cp4, w1 and w2 on $NET.0/24 behind it"
estate_up

# Kubeadm left these on every node: the cluster CA and kubelet.conf, with
# the node's own client certificate, pointing at its own apiserver
# (control-plane nodes) or the first control-plane node's (workers).
pki=$T/pki
new_ca "$pki" kha-estate-ca
for n in "${nodes[@]}"; do
  d=$T/hosts/$n/etc/kubernetes
  mkdir -p "$d/pki"
  install -m 0644 "$pki/ca.crt" "$d/pki/ca.crt"
  server=https://${ip[cp1]}:6443
  case $n in cp*) server=https://${ip[$n]}:6443 ;; esac
  kubeconfig "$pki" "$n" "$server" > "$d/kubelet.conf" && chmod 600 "$d/kubelet.conf"
  host "$n" "${ip[$n]}" "${ip[$n]}"
done
# A client outside the cluster: the bastion's admin kubeconfig, through the
# external load balancer by name.
mkdir -p "$T/hosts/bastion/etc/kubernetes"
kubeconfig "$pki" admin https://api.estate.example:8443 > "$T/hosts/bastion/etc/kubernetes/kubelet.conf"
host bastion "${ip[bastion]}" $BASTION "$(printf '%s\tapi.estate.example' "${ip[w1]}")"
wait_port $BASTION 22
for n in "${nodes[@]}"; do
  ip netns exec kha-ebastion bash -c "$(declare -f wait_port); wait_port ${ip[$n]} 22" || { cat "$T/hosts/$n/sshd.log"; fail "$n: sshd did not come up"; }
done
if timeout 3 bash -c "exec 3<>/dev/tcp/${ip[cp1]}/22" 2>/dev/null; then fail "this machine reaches cp1 directly, not only through the bastion"; fi
echo "  a direct connection from this machine to cp1 (${ip[cp1]}:22) fails; the bastion ($BASTION) answers"
on cp1 "sudo -n -u $user sudo -n true" || fail "$user has no passwordless sudo on the hosts"

listing() { # HOST: every file of the trees kha writes in, with its type, mode, owner and checksum
  on "$1" "find $trees \\( -type f -printf '%y %m %u:%g %p ' -exec sha256sum {} \\; \\) -o \\( ! -type f -printf '%y %m %u:%g %p\\n' \\)" |
    awk 'NF == 6 {print $1, $2, $3, $4, $5; next} {print}' | sort -k4
}
for n in "${nodes[@]}"; do listing "$n" > "$T/hosts/$n/listing.before"; done
log "before the first apply: $(wc -l < "$T/hosts/w1/listing.before") files and directories listed on each host (checksum, mode, owner), among them:"
grep -E ' (/etc/haproxy/haproxy.cfg|/etc/nginx/nginx.conf|/etc/kubernetes/pki/ca.crt|/etc/kubernetes/kubelet.conf|/etc/hosts) ' "$T/hosts/w1/listing.before" |
  awk '{printf "    %s %s %-32s %s\n", $2, $3, $4, substr($5, 1, 16)}'

dev_provider "$T"
go build -o "$T/loadgen" ./test/e2e/loadgen
go build -o "$T/apiserver" ./test/e2e/apiserver
work=$T/tf && cp -r test/e2e/estate "$work"
load_run() { on "$1" "exec ${*:2} /etc/kubernetes/kubelet.conf"; }

# vars CONTROL_PLANE_NODES ADOPT_CA: terraform.tfvars.json; every node but
# the workers and the named control-plane nodes has left the estate.
vars() {
  local cps=$1
  jq -n --argjson cps "$(for n in $cps; do jq -n --arg n "$n" --arg ip "${ip[$n]}" '{name: $n, ip: $ip}'; done | jq -s .)" \
    --argjson adopt "$2" --argjson allow_quorum_risk "${allow_quorum_risk:-false}" --arg w1 "${ip[w1]}" --arg w2 "${ip[w2]}" --arg bastion $BASTION --arg user $user \
    --arg key "$T/client_ed25519" --arg kh "$T/hosts/known_hosts" --arg ca "$pki/ca.crt" \
    --arg hl "$(start_or_reload /run/haproxy.pid 'haproxy -W -D -f /etc/haproxy/haproxy.cfg' USR2)" \
    --arg hls "$(stop /run/haproxy.pid /run/haproxy/admin.sock)" \
    --arg he "$(start_or_reload /run/haproxy-external.pid 'haproxy -W -D -f /etc/haproxy/haproxy-external.cfg' USR2)" \
    --arg hes "$(stop /run/haproxy-external.pid /run/haproxy/external.sock)" \
    --arg ng "$(start_or_reload /run/nginx.pid 'nginx -c /etc/nginx/nginx.conf' HUP)" --arg ngs "$(stop /run/nginx.pid)" '{
    control_plane_nodes: $cps,
    worker_nodes: [{name: "w1", ip: $w1, local_lb: "haproxy"}, {name: "w2", ip: $w2, local_lb: "nginx"}],
    hosts: (([$cps[] | {key: .name, value: .ip}] | from_entries) + {w1: $w1, w2: $w2}),
    external_lb_node: {name: "w1", ip: $w1},
    bastion: $bastion, ssh_user: $user, ssh_private_key_file: $key, ssh_known_hosts_file: $kh,
    adopt_kubeadm_ca: $adopt, allow_quorum_risk: $allow_quorum_risk, ca_file: $ca,
    commands: {haproxy_local_reload: $hl, haproxy_local_stop: $hls, haproxy_external_reload: $he, haproxy_external_stop: $hes,
               nginx_reload: $ng, nginx_stop: $ngs, kubelet_restart: "echo restarted >> /run/kubelet-restarts"}
  }' > "$work/terraform.tfvars.json"
}
# sans PLAN: the apiserver certificate SANs a saved plan knows
sans() {
  (cd "$work" && "$tf" show -json "$1") |
    jq -r '.planned_values.outputs.apiserver_cert_sans.value // error("SANs not known at plan time")
           | [(.dns_names[] | "DNS:" + .), (.ip_addresses[] | "IP:" + .)] | join(",")'
}
# apiserver NODE: its stand-in on :6443 with a certificate for $sans
apiserver() {
  issue_cert "$pki" "apiserver-$1" kube-apiserver "$sans" serverAuth
  ip netns exec "kha-e$1" "$T/apiserver" -name "$1" -cert "$pki/apiserver-$1.crt" -key "$pki/apiserver-$1.key" \
    -client-ca "$pki/ca.crt" >> "$T/apiserver-$1.log" 2>&1 &
  disown
  wait_ready "$1"
}
wait_ready() { # NODE: its apiserver answers, with a certificate verified against the cluster CA
  for _ in $(seq 1 100); do
    ip netns exec "kha-e$1" curl -sf --max-time 1 --cacert "$pki/ca.crt" https://127.0.0.1:6443/readyz >/dev/null && return 0
    sleep 0.1
  done
  cat "$T/apiserver-$1.log"; fail "$1's apiserver does not answer"
}
server_of() { on "$1" "grep '^    server:' /etc/kubernetes/kubelet.conf" | awk '{print $2}'; }
lb_files() { # the load balancers' configs on the workers
  on w1 'cat /etc/haproxy/haproxy.cfg /etc/haproxy/haproxy-external.cfg'
  on w2 'cat /etc/nginx/nginx.conf'
}
daemons() { # HOST: the load balancers running there
  ip netns pids "kha-e$1" | xargs -r ps -o comm= -p | grep -E '^(haproxy|nginx|keepalived)' | sort | uniq -c | awk '{printf "%s %s ", $1, $2}'
}

log "a. the first apply: node-local HAProxy (w1) and nginx (w2) in place of the stock files, w1's external HAProxy beside its node-local one, /etc/hosts, kubelet.conf; every node sends requests meanwhile"
vars "cp1 cp2 cp3" false
tf plan -out=tfplan
sans=$(sans tfplan)
for n in cp1 cp2 cp3; do apiserver "$n"; done
echo "  stand-in apiservers on cp1-cp3, each with its own certificate for the planned SANs: $sans"
# They check client certificates as kube-apiserver does: one the cluster CA did not sign fails the handshake.
mkdir -p "$T/other" && new_ca "$T/other" another-ca && issue_cert "$T/other" intruder system:node:cp9 DNS:cp9 clientAuth system:nodes
if ip netns exec kha-ecp1 curl -sf --max-time 2 --cacert "$pki/ca.crt" --cert "$T/other/intruder.crt" --key "$T/other/intruder.key" \
  https://127.0.0.1:6443/readyz >/dev/null 2>&1; then fail "cp1's apiserver accepted a client certificate of another CA"; fi
load_start cp1 cp2 cp3 w1 w2 # the bastion's requests need the external load balancer: from the next phase on
tf apply -auto-approve
load_stop "the first apply"
for n in w1 w2; do [ "$(server_of $n)" = https://localhost:6443 ] || fail "$n's kubeconfig points at $(server_of $n)"; done
on w1 'kill -0 $(cat /run/haproxy.pid) && kill -0 $(cat /run/haproxy-external.pid)' || fail "w1 does not run its two HAProxies"
on w2 'kill -0 $(cat /run/nginx.pid)' || fail "w2 does not run nginx"
on w1 'grep -q "^# BEGIN kha" /etc/hosts' || fail "w1's /etc/hosts has no block of kha's"
echo "  w1 runs $(daemons w1)(node-local on 127.0.0.1:6443 and external on ${ip[w1]}:8443), w2 runs $(daemons w2)"

log "b. drift repair: w1's haproxy.cfg edited by hand"
on w1 'echo "# hand edit" >> /etc/haproxy/haproxy.cfg'
tf plan
plan=$(tr -s ' \n│' ' ' < "$T/plan.log")
echo "$plan" | grep -q "${ip[w1]}:22:/etc/haproxy/haproxy.cfg" || { cat "$T/plan.log"; fail "the plan does not name the edited file by host:port:path"; }
echo "  the plan: $(echo "$plan" | grep -o "Warning: [^:]*: ${ip[w1]}:22:/etc/haproxy/haproxy.cfg[^.]*" | head -1)"
tf apply -auto-approve
! on w1 'grep -q "hand edit" /etc/haproxy/haproxy.cfg' || fail "the apply left the hand edit"
echo "  the apply put the rendered file back"

log "c. import: kubeadm's /etc/kubernetes/pki/ca.crt on every host adopted into kha_file by import blocks"
vars "cp1 cp2 cp3" true
tf plan -out=tfplan-import
cp "$T/plan.log" "$T/plan-import.log"
summary=$(grep -E '^Plan:' "$T/plan.log")
if [[ $summary == *" 0 to add, 0 to change, 0 to destroy."* ]]; then
  echo "  the import plan imports and changes nothing: $summary"
else
  # Issue item 10: an import records the file's digest and mode, not the
  # inputs, so the plan fills them in. Recorded here, not failed on.
  echo "  KNOWN ISSUE (item 10): the import plan is not only imports: $summary"
  (cd "$work" && "$tf" show -no-color tfplan-import) | awk '/^  # kha_file/ {r = $2} /^      [+~-] [a-z_]+ +=/ && r {print r, $1, $2}' |
    awk '{a[$1] = a[$1] " " $2 $3} END {for (r in a) print r ":" a[r]}' | sort | sed 's/^/    /'
fi
tf apply tfplan-import
set +e; (cd "$work" && "$tf" plan -no-color -input=false -detailed-exitcode) > "$T/plan-after-import.log" 2>&1; code=$?; set -e
case $code in
  0) echo "  the plan after the import is empty" ;;
  2) echo "  KNOWN ISSUE (item 10): the plan after the import is not empty:"
     grep -E '^  # |^      [~+-] |^Plan:' "$T/plan-after-import.log" | sed 's/^/    /' ;;
  *) cat "$T/plan-after-import.log"; fail "the plan after the import" ;;
esac
on cp1 'cmp -s /etc/kubernetes/pki/ca.crt -' < "$pki/ca.crt" || fail "the import changed cp1's ca.crt"

log "d. cp3 goes off the network while every other node sends requests"
load_start cp1 cp2 w1 w2 bastion
ip -n kha-ecp3 link set eth0 down
listing cp3 > "$T/hosts/cp3/listing.dark"
sleep 3
load_stop "cp3's fall off the network" 1
log "the plan that takes cp3 out of the cluster, while its host does not answer"
# Two control-plane nodes tolerate no failure: the plan refuses to go from
# three to two unless told (allow_quorum_risk), and then warns.
allow_quorum_risk=true
vars "cp1 cp2" true
load_start cp1 cp2 w1 w2 bastion
t0=$(date +%s%N)
if [[ "$("$tf" version)" == *OpenTofu* ]]; then
  # Terraform's plan goes on past cp3's resources with the warning below;
  # OpenTofu's fails at their destroy instead, and its error names the same
  # way out that follows (state rm).
  ! tf_run plan ||
    { cat "$T/plan.log"; fail "OpenTofu planned to destroy cp3's resources while cp3 does not answer"; }
  tr -s ' \n│' ' ' < "$T/plan.log" | grep -q "Error: SSH Connection Failed.*tofu state rm" ||
    { cat "$T/plan.log"; fail "OpenTofu's plan error does not name the way out (tofu state rm)"; }
else
  tf plan
fi
plan_ms=$(ms_since "$t0")
cp "$T/plan.log" "$T/plan-cp3-dead.log"
plan=$(tr -s ' \n│' ' ' < "$T/plan.log")
echo "$plan" | grep -q "Warning: Host Unreachable: ${ip[cp3]}:22" || { cat "$T/plan.log"; fail "the plan does not warn that cp3 is unreachable"; }
warned=$(awk '/Warning: Host Unreachable/ {w = 1; next} w && /^  with / {sub(/^  with /, ""); sub(/,$/, ""); print; w = 0}' "$T/plan.log" | paste -sd ' ')
more=$(grep -o 'and [0-9]* more similar warnings' "$T/plan.log" | head -1 || true)
printf '  the plan took %d.%01d s with cp3 dead (under 60 s): "Host Unreachable: %s" for %s%s; %s\n' $((plan_ms / 1000)) $((plan_ms % 1000 / 100)) \
  "${ip[cp3]}:22" "$warned" "${more:+ ($more)}" "$(grep -E '^Plan:' "$T/plan.log" || echo 'OpenTofu: the plan fails at their destroy, naming state rm')"
[ "$plan_ms" -lt 60000 ] || fail "the plan took ${plan_ms} ms with cp3 dead"
echo "$plan" | grep -q "Warning: Fewer Than Three etcd Members" || { cat "$T/plan.log"; fail "the plan does not warn that two control-plane nodes tolerate no failure"; }
gone=$(cd "$work" && "$tf" state list | grep '\["cp3"\]')
# The troubleshooting guide's way for instances of a for_each: take them
# out of the state; nothing is done on any host.
(cd "$work" && xargs -d '\n' "$tf" state rm) <<< "$gone" > "$T/state-rm.log"
echo "  let go of without touching a host (terraform state rm): $(echo "$gone" | tr '\n' ' ')"
tf apply -auto-approve
load_stop "the apply that removes cp3"
! lb_files | grep -q "${ip[cp3]}" || fail "a load balancer still has cp3"
echo "  cp3 is in no load balancer: w1's node-local and external HAProxy, w2's nginx"

log "cp4 replaces cp3: its apiserver certificate is issued for the planned SANs before it joins"
allow_quorum_risk=false
vars "cp1 cp2 cp4" true
tf plan -out=tfplan-cp4
sans=$(sans tfplan-cp4)
apiserver cp4
load_start cp1 cp2 cp4 w1 w2 bastion
tf apply -auto-approve
load_stop "cp4's join"
for f in "w1 /etc/haproxy/haproxy.cfg" "w1 /etc/haproxy/haproxy-external.cfg" "w2 /etc/nginx/nginx.conf"; do
  on "${f% *}" "grep -q '${ip[cp4]}:6443' ${f#* }" || fail "${f% *}'s ${f#* } lacks cp4"
done
echo "  cp4 is in every load balancer"
tf plan -detailed-exitcode

log "e. destroy: every file as it was before the first apply, nothing of kha's left"
tf destroy -auto-approve
sleep 1 # the destroy commands wait for the daemons; their pid files are gone already
compare() { # BEFORE AFTER: a line for each path whose listing differs
  diff "$1" "$2" | awk '/^[<>]/ {v = $2 " " $3 " " $4 (NF > 5 ? " sha256 " substr($6, 1, 12) : ""); if ($1 == "<") b[$5] = v; else a[$5] = v; p[$5] = 1}
    END {for (f in p) print f ": " (!(f in a) ? "gone (was " b[f] ")" : !(f in b) ? "not there before (" a[f] ")" : a[f] ", was " b[f])}' | sort
}
failures=()
for n in cp1 cp2 cp4 w1 w2; do
  listing "$n" > "$T/hosts/$n/listing.after"
  while read -r d; do failures+=("$n: $d"); done < <(compare "$T/hosts/$n/listing.before" "$T/hosts/$n/listing.after")
  # Whatever changed in the host's /etc is in its overlay's upper directory: only the trees above
  # (a whiteout, a character device 0/0 there, is a file of this machine's /etc removed on the host).
  extra=$(cd "$T/hosts/$n/etc" && find . -mindepth 1 -printf '%y %p\n' | sed 's#^\(.\) \.#\1 /etc#' |
    grep -v -E '^. /etc/(hosts|haproxy|nginx|kubernetes)(/|$)' | sed 's#^c #removed #; s#^[a-z] #left #' | tr '\n' ' ' || true)
  [ -z "$extra" ] || failures+=("$n: in /etc besides the trees listed: $extra")
  [ -z "$(daemons "$n")" ] || failures+=("$n: still runs $(daemons "$n")")
done
while read -r d; do failures+=("cp3, gone, changed after it went off the network: $d"); done < <(compare "$T/hosts/cp3/listing.dark" <(listing cp3))
if [ ${#failures[@]} -gt 0 ]; then printf '  %s\n' "${failures[@]}"; fail "the destroy did not give the hosts back as they were"; fi
echo "  cp1, cp2, cp4, w1, w2: every file of $trees as listed before the first apply (checksum, mode, owner), none added; no daemon left"
echo "  cp3, gone: its files are as they were when it went off the network; nothing touched it since"
log "ESTATE PASSED in $(($(date +%s) - start))s"
