#!/usr/bin/env bash
# run.sh: the end-to-end test. Five test hosts in network namespaces (three
# control-plane nodes with etcd and a real kube-apiserver, two workers that
# also hold the external VIP), examples/ha-cluster applied to them over SSH
# by the real terraform CLI, then: kubectl through every endpoint of the
# matrix from every host, an apiserver killed under load, the VIP moved by
# keepalived, an empty plan, and a destroy that leaves the hosts clean.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/test/e2e
export KHA_E2E_DIR=${KHA_E2E_DIR:-/tmp/kha-e2e}
T=$KHA_E2E_DIR
kube=${KHA_KUBE_DIR:?run through make e2e, which sets KHA_KUBE_DIR}
start=$(date +%s)
log() { echo "== [$(($(date +%s) - start))s] $*"; }
fail() { echo "E2E FAILED: $*" >&2; exit 1; }

cd "$root"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
[ "$(id -u)" -eq 0 ] || fail "run as root: the test makes network namespaces"
exec 9>/run/kha-e2e.lock
flock -n 9 || fail "another end-to-end run holds /run/kha-e2e.lock"
scripts/setup-host.sh
eval "$(scripts/tf-env.sh)"
tf=$TF_ACC_TERRAFORM_PATH
log "kube-apiserver and kubectl (built once from the Go module proxy, then cached in $kube)"
"$here/build-kube.sh" "$kube" "${KUBE_VERSION:-1.36.3}"
kubectl=$kube/kubectl

cleanup() {
  set +e
  [ -n "${keep:-}" ] && return
  "$here/hosts.sh" down
}
trap cleanup EXIT
rm -rf "$T" && mkdir -p "$T/cp"
log "hosts up"
"$here/hosts.sh" up 5

# The cluster CA exists before the load balancers: HAProxy verifies the
# apiservers against it, and haproxy -c wants the file.
pki=$T/cp
new_ca "$pki" kha-e2e-ca
for i in 1 2 3 4 5; do
  cp "$pki/ca.crt" "$T/hosts/h$i/etc-kha/ca.crt"
  # The hosts file has lines of its own that kha must leave alone.
  printf '127.0.0.1\tlocalhost\n10.77.0.1%d\th%d\n# kept by the host\n' "$i" "$i" > "$T/hosts/h$i/etc-kha/hosts"
  cp "$T/hosts/h$i/etc-kha/hosts" "$T/hosts/h$i/hosts.before"
done

log "terraform plan examples/ha-cluster"
work=$T/tf && cp -r examples/ha-cluster "$work"
dev_provider "$T"
start_or_reload() { # pidfile start-command reload-signal
  echo "if [ -s $1 ] && kill -0 \$(cat $1) 2>/dev/null; then kill -$3 \$(cat $1); else $2; fi"
}
stop() { # pidfile runtime-files...: stop the daemon, wait for it to exit, remove what it leaves
  echo "if [ -s $1 ]; then p=\$(cat $1); kill \$p 2>/dev/null; for i in \$(seq 100); do kill -0 \$p 2>/dev/null || break; sleep 0.05; done; fi; rm -f $*"
}
jq -n --arg key "$T/client_ed25519" --arg kh "$T/hosts/known_hosts" \
  --arg hl "$(start_or_reload /etc/kha/haproxy-local.pid 'haproxy -W -D -f /etc/kha/haproxy-local.cfg' USR2)" \
  --arg hv "$(start_or_reload /etc/kha/haproxy-vip.pid 'haproxy -W -D -f /etc/kha/haproxy-vip.cfg' USR2)" \
  --arg ng "$(start_or_reload /etc/kha/nginx.pid 'nginx -c /etc/kha/nginx.conf' HUP)" \
  --arg ka "$(start_or_reload /etc/kha/keepalived.pid 'keepalived -f /etc/kha/keepalived.conf -p /etc/kha/keepalived.pid -r /etc/kha/vrrp.pid -c /etc/kha/checkers.pid' HUP)" \
  --arg hls "$(stop /etc/kha/haproxy-local.pid /etc/kha/haproxy-local.sock)" --arg hvs "$(stop /etc/kha/haproxy-vip.pid)" \
  --arg ngs "$(stop /etc/kha/nginx.pid)" --arg kas "$(stop /etc/kha/keepalived.pid /etc/kha/vrrp.pid /etc/kha/checkers.pid)" '{
  control_plane_nodes: [{name: "h1", ip: "10.77.0.11"}, {name: "h2", ip: "10.77.0.12"}, {name: "h3", ip: "10.77.0.13"}],
  worker_nodes: [{name: "h4", ip: "10.77.0.14", local_lb: "haproxy"}, {name: "h5", ip: "10.77.0.15", local_lb: "nginx"}],
  lb_nodes: [{name: "h4", ip: "10.77.0.14", priority: 150}, {name: "h5", ip: "10.77.0.15", priority: 100}],
  vip: "10.77.0.100", ca_file: "/etc/kha/ca.crt", hosts_file: "/etc/kha/hosts",
  ssh_private_key_file: $key, ssh_known_hosts_file: $kh,
  commands: {haproxy_local_reload: $hl, haproxy_local_stop: $hls, haproxy_vip_reload: $hv, haproxy_vip_stop: $hvs,
             nginx_reload: $ng, nginx_stop: $ngs, keepalived_reload: $ka, keepalived_stop: $kas}
}' > "$work/terraform.tfvars.json"
tf() { # command args...: the terraform CLI in the working copy, bounded, its output in $T/<command>.log
  local log=$T/$1.log
  (cd "$work" && timeout 900 "$tf" "$1" -no-color -input=false "${@:2}") > "$log" 2>&1 || { cat "$log"; fail "terraform $*"; }
}
tf plan -out=tfplan
(cd "$work" && "$tf" show -json tfplan) > "$T/plan.json"
planned() { # jq filter on the plan; every value the test takes from it must be known
  jq -e -c --arg f "$1" "($1) // error(\"not known at plan time: \" + \$f)" "$T/plan.json" || fail "the plan does not know $1"
}

log "certificates from the plan's SANs, before anything is applied"
sans=$(planned .planned_values.outputs.apiserver_cert_sans.value | jq -r '[(.dns_names[] | "DNS:" + .), (.ip_addresses[] | "IP:" + .)] | join(",")')
etcd_ips=$(planned .planned_values.outputs.etcd_cert_sans.value | jq -r '[.ip_addresses[] | "IP:" + .] | join(",")')
etcd_servers=$(planned '.planned_values.root_module.resources[] | select(.address == "kha_etcd_access.etcd") | .values.etcd_servers' | jq -r .)
issue_cert "$pki" apiserver kube-apiserver "$sans" serverAuth
issue_cert "$pki" etcd etcd "$etcd_ips" serverAuth,clientAuth
issue_cert "$pki" etcd-client kube-apiserver-etcd-client DNS:etcd-client clientAuth
issue_cert "$pki" admin kha-e2e-admin DNS:admin clientAuth system:masters
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/sa.key" 2>/dev/null
openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"

log "control plane up: etcd and kube-apiserver on h1-h3"
cluster=h1=https://10.77.0.11:2380,h2=https://10.77.0.12:2380,h3=https://10.77.0.13:2380
for i in 1 2 3; do
  ip=10.77.0.1$i
  ip netns exec kha-h$i etcd --name h$i --data-dir "$T/cp/etcd-$i" \
    --listen-client-urls "https://$ip:2379,https://127.0.0.1:2379" --advertise-client-urls "https://$ip:2379" \
    --listen-peer-urls "https://$ip:2380" --initial-advertise-peer-urls "https://$ip:2380" \
    --initial-cluster "$cluster" --initial-cluster-token kha-e2e-cp --initial-cluster-state new \
    --heartbeat-interval 250 --election-timeout 2500 --logger zap --log-outputs stderr --log-level warn \
    --cert-file "$pki/etcd.crt" --key-file "$pki/etcd.key" --client-cert-auth --trusted-ca-file "$pki/ca.crt" \
    --peer-cert-file "$pki/etcd.crt" --peer-key-file "$pki/etcd.key" --peer-client-cert-auth --peer-trusted-ca-file "$pki/ca.crt" \
    > "$T/cp/etcd-$i.log" 2>&1 &
  disown
done
for i in 1 2 3; do
  ip=10.77.0.1$i
  ip netns exec kha-h$i "$kube/kube-apiserver" --bind-address=0.0.0.0 --advertise-address=$ip --secure-port=6443 \
    --etcd-servers="$etcd_servers" --etcd-cafile="$pki/ca.crt" --etcd-certfile="$pki/etcd-client.crt" --etcd-keyfile="$pki/etcd-client.key" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" --client-ca-file="$pki/ca.crt" \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc --service-cluster-ip-range=10.233.0.0/18 \
    --authorization-mode=Node,RBAC > "$T/cp/kas-$i.log" 2>&1 &
  echo $! > "$T/cp/kas-$i.pid"
  disown
done

# kc HOST SERVER [--tls-server-name NAME]: kubectl from a host's namespace
# (HOST "root" is the root namespace), verifying the apiserver certificate.
kc() {
  local host=$1 server=$2; shift 2
  local run=(); [ "$host" = root ] || run=(ip netns exec "kha-$host")
  "${run[@]}" "$kubectl" --server "$server" --certificate-authority "$pki/ca.crt" \
    --client-certificate "$pki/admin.crt" --client-key "$pki/admin.key" --request-timeout 3s "$@" get --raw /readyz
}
wait_ready() {
  for _ in $(seq 1 600); do kc "$1" "$2" >/dev/null 2>&1 && return 0; sleep 0.2; done
  tail -n 20 "$T"/cp/kas-*.log >&2; fail "$1: $2 not ready"
}
for i in 1 2 3; do wait_ready h$i https://127.0.0.1:6443; done
log "control plane ready"
log "terraform apply the plan: load balancers (each proven in a throwaway instance, then verified), keepalived, hosts entries over SSH"
tf apply tfplan
out() { (cd "$work" && "$tf" output -json "$1"); }

wait_ready h4 https://10.77.0.100:8443
log "the VIP's load balancer sees the apiservers"

log "kubectl through every endpoint of the matrix, from every host"
checks=0
for i in 1 2 3 4 5; do
  own=$(out node_endpoints | jq -r ".h$i")
  wait_ready h$i "$own"
  kc h$i "$own" >/dev/null || fail "h$i via its node endpoint $own"
  kc h$i https://10.77.0.100:8443 >/dev/null || fail "h$i via the VIP"
  kc h$i https://10.77.0.100:8443 --tls-server-name api.k8s.example.com >/dev/null || fail "h$i via the VIP by name"
  checks=$((checks + 3))
  for cp in 10.77.0.11 10.77.0.12 10.77.0.13; do
    kc h$i "https://$cp:6443" >/dev/null || fail "h$i directly to the apiserver at $cp"
    checks=$((checks + 1))
  done
done
wait_ready root "$(out kubeconfig_server | jq -r .)"
kc root "$(out api_endpoint | jq -r . | sed 's#api.k8s.example.com#10.77.0.100#')" --tls-server-name api.k8s.example.com >/dev/null \
  || fail "root namespace via the external endpoint"
checks=$((checks + 2))
grep -q '^10.77.0.100 api.k8s.example.com$' "$T/hosts/h4/etc-kha/hosts" || fail "hosts entry missing on h4"
log "$checks kubectl checks passed"

# on HOST COMMAND: run in a test host's network, mount and UTS namespaces
# (where its /etc/kha is), like a command given over SSH.
on() { nsenter -t "$(cat "$T/hosts/$1/sshd.pid")" -m -n -u -- sh -c "$2"; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

log "kill h1's kube-apiserver while both workers send requests through their node-local load balancers"
load() { # host seconds: curl through the host's localhost endpoint, one line per request: start_ns http_code seconds
  local end=$(( $(date +%s%N) + $2 * 1000000000 ))
  while [ "$(date +%s%N)" -lt "$end" ]; do
    printf '%s %s\n' "$(date +%s%N)" "$(ip netns exec "kha-$1" curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 \
      --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" https://localhost:6443/readyz)"
  done
}
load h4 8 > "$T/load-h4" & l4=$!
load h5 8 > "$T/load-h5" & l5=$!
sleep 3
kill -9 "$(cat "$T/cp/kas-1.pid")"
# The kernel tears the process down after kill returns; h1 is dead once its
# port refuses connections.
while (exec 3<>/dev/tcp/10.77.0.11/6443) 2>/dev/null; do sleep 0.001; done
killed=$(date +%s%N)
# HAProxy's own view: how long until it marks h1 down.
for _ in $(seq 1 200); do
  echo 'show servers state kube_apiserver' | socat stdio "unix-connect:$T/hosts/h4/etc-kha/haproxy-local.sock" |
    awk '$4 == "h1" && $6 == 0 {found = 1} END {exit !found}' && break
  sleep 0.01
done
haproxy_down=$(ms_since "$killed")
wait $l4 $l5
# A request in flight on h1 when it dies fails whatever the proxy does (the
# proxy passes TLS through); every request started after h1 refuses
# connections must succeed, through HAProxy's retries and nginx's next
# upstream.
for h in h4 h5; do
  read -r total failed after failed_after slowest < <(awk -v k="$killed" '{n++; if ($2 != 200) f++; if ($1 >= k) {a++; if ($2 != 200) fa++; if ($3 > s) s = $3}}
    END {printf "%d %d %d %d %.3f\n", n, f, a, fa, s}' "$T/load-$h")
  echo "$h: $total requests, $failed failed ($failed_after of the $after started after the kill); the slowest after the kill took ${slowest}s"
  if [ "$total" -le 20 ] || [ "$after" -le 10 ]; then fail "$h: too few requests to judge the failover"; fi
  [ "$failed_after" = 0 ] || fail "$h: $failed_after requests started after the kill failed"
  [ "$failed" -le 1 ] || fail "$h: $failed requests failed; only the one in flight on h1 may"
done
echo "HAProxy on h4 marked h1 down ${haproxy_down} ms after the kill"

log "the VIP follows the healthy load balancer: five runs of each fault"
vip_on() { ip -n "kha-$1" -br addr show eth0 | grep -q '10.77.0.100/'; }
vip_only_on() { # h4 or h5, the pair
  local other=h4; [ "$1" = h5 ] || other=h5
  vip_on "$1" && ! vip_on "$other"
}
vip_wait() { # host what-happened: wait for the VIP on host alone; prints ms since $t0
  for _ in $(seq 1 1200); do vip_only_on "$1" && break; sleep 0.01; done
  vip_only_on "$1" || fail "the VIP did not move to $1 alone after $2"
  ms_since "$t0"
}
vip_stays() { # host seconds: no flapping while the fault lasts
  local end=$(( $(date +%s%N) + $2 * 1000000000 ))
  while [ "$(date +%s%N)" -lt "$end" ]; do vip_only_on "$1" || fail "the VIP left $1 while the fault lasted"; sleep 0.02; done
}
t0=$(date +%s%N); echo "VIP on h4 $(vip_wait h4 "the apiservers came up") ms after the apiservers came up (h4 has the higher priority)"
# shellcheck disable=SC2016 # expands on the host
kill_vip_lb='p=$(cat /etc/kha/haproxy-vip.pid); pkill -9 -P "$p"; kill -9 "$p"'
faults=(
  "the external HAProxy on h4 died|on h4 '$kill_vip_lb'|on h4 'haproxy -W -D -f /etc/kha/haproxy-vip.cfg 2>/dev/null'"
  "h4 dropped off the network|ip -n kha-h4 link set eth0 down|ip -n kha-h4 link set eth0 up"
  "h4 lost its routes to every apiserver|for i in 1 2 3; do ip -n kha-h4 route add blackhole 10.77.0.1\$i/32; done|for i in 1 2 3; do ip -n kha-h4 route del blackhole 10.77.0.1\$i/32; done"
)
vip_report=()
for f in "${faults[@]}"; do
  IFS='|' read -r what fault restore <<< "$f"
  moves=() backs=()
  for run in 1 2 3 4 5; do
    eval "$fault"
    t0=$(date +%s%N); moves+=("$(vip_wait h5 "$what (run $run)")")
    kc root https://10.77.0.100:8443 >/dev/null || fail "the VIP does not serve on h5 after $what"
    vip_stays h5 2
    eval "$restore"
    t0=$(date +%s%N); backs+=("$(vip_wait h4 "$what was repaired (run $run)")")
  done
  stats() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {printf "median %d ms, max %d ms", v[int((NR + 1) / 2)], v[NR]}'; }
  vip_report+=("$(printf '%-40s VIP on h5: %s (runs: %s); back on h4 after the repair: %s' "$what" "$(stats "${moves[@]}")" "${moves[*]}" "$(stats "${backs[@]}")")")
done
printf '%s\n' "${vip_report[@]}"
wait_ready root https://10.77.0.100:8443

log "terraform plan is empty"
tf plan -detailed-exitcode

log "terraform destroy leaves the hosts clean"
tf destroy -auto-approve
for i in 4 5; do
  left=$(find "$T/hosts/h$i/etc-kha" -mindepth 1 ! -name ca.crt ! -name hosts -printf '%f ')
  [ -z "$left" ] || fail "h$i still has: $left"
done
for i in 1 2 3 4 5; do
  cmp -s "$T/hosts/h$i/hosts.before" "$T/hosts/h$i/etc-kha/hosts" || fail "h$i's hosts file differs from before the apply"
done
for i in 4 5; do
  ! ip netns pids kha-h$i | xargs -r ps -o comm= -p | grep -q -e haproxy -e nginx -e keepalived \
    || fail "h$i still runs a load balancer after destroy"
done
log "E2E PASSED in $(($(date +%s) - start))s"
