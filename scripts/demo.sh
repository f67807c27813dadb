#!/usr/bin/env bash
# demo.sh: kha in one command, on this machine only. A throwaway OpenSSH
# server on 127.0.0.1 stands in for a worker node and three TLS servers on
# 192.0.2.11-13 for the control plane's apiservers (documentation addresses
# added to lo for the demo's lifetime: kha refuses loopback node addresses). examples/quickstart is
# planned and applied with the real terraform CLI through a dev_overrides CLI
# config (no registry): the access matrix and certificate SANs come out of
# the plan, the apiservers' certificate is issued from those SANs, and the
# worker's node-local HAProxy is pushed over SSH, validated, started, and
# serves requests that verify TLS. Then a control-plane node dies, someone
# edits the config by hand, and everything is destroyed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
if [ "$(id -u)" -ne 0 ]; then
  echo "demo.sh: run as root: it installs Debian packages and starts sshd on 127.0.0.1" >&2
  exit 1
fi
scripts/setup-host.sh
eval "$(scripts/tf-env.sh)"
tf=$TF_ACC_TERRAFORM_PATH

work=$(mktemp -d)
pids=()
added=()   # node addresses the demo put on lo, taken off again at exit
cleanup() {
  for a in "${added[@]}"; do ip addr del "$a/32" dev lo 2>/dev/null || true; done
  [ -z "${etc:-}" ] || [ ! -s "$etc/haproxy.pid" ] || kill "$(cat "$etc/haproxy.pid")" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
step() { echo; echo "== $*"; }
quiet() { grep -v -e 'Warning: Provider development overrides' -e 'development overrides are in effect' -e '^ - kha/kha in' \
  -e 'The behavior may therefore' -e 'applying changes may cause' -e 'published releases\.' -e '^[│╷╵]' || true; }

step "node addresses 192.0.2.11-13 (cp1-3) and 192.0.2.21 (w1) on lo: they stay on this machine"
for a in 192.0.2.11 192.0.2.12 192.0.2.13 192.0.2.21; do
  if ! ip -o addr show dev lo | grep -qw "$a"; then ip addr add "$a/32" dev lo && added+=("$a"); fi
done

step "building the provider"
dev_provider "$work"

step "starting a throwaway sshd on 127.0.0.1: the worker node w1"
host=$work/host etc=$work/host/etc
mkdir -p "$etc" && chmod 755 "$work" "$host"
ssh-keygen -q -t ed25519 -N '' -C kha-demo-client -f "$work/client_ed25519"
for port in $(shuf -i 20000-60000 -n 50); do   # a port nothing answers on
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
done
sshd_files "$host" 127.0.0.1 "$port" "$work/client_ed25519.pub"
/usr/sbin/sshd -D -e -f "$host/sshd_config" 2>"$host/sshd.log" &
pids+=($!)
wait_port 127.0.0.1 "$port"

pidfile=$etc/haproxy.pid
cp -r examples/quickstart "$work/quickstart"
cat > "$work/quickstart/terraform.tfvars" <<VARS
control_plane_nodes = [
  { name = "cp1", ip = "192.0.2.11" },
  { name = "cp2", ip = "192.0.2.12" },
  { name = "cp3", ip = "192.0.2.13" },
]
worker_nodes        = [{ name = "w1", ip = "192.0.2.21" }]
external_lb_address = null
worker = {
  host             = "127.0.0.1"
  port             = $port
  host_key         = "$(cut -d' ' -f1,2 "$host/host_ed25519.pub")"
  private_key_file = "$work/client_ed25519"
  config_dir       = "$etc"
  ca_file          = "$etc/ca.crt"
  reload_command   = "if [ -s $pidfile ] && kill -0 \$(cat $pidfile) 2>/dev/null; then kill -USR2 \$(cat $pidfile); else haproxy -W -D -f $etc/haproxy.cfg; fi"
  destroy_command  = "[ ! -s $pidfile ] || kill \$(cat $pidfile); rm -f $pidfile"
}
VARS
cd "$work/quickstart"

step "terraform plan: the matrix and the certificate SANs, known before anything exists"
"$tf" plan -no-color -input=false -out=plan.tfplan | quiet | grep -E '^  # |Plan:'
"$tf" show -json plan.tfplan | jq '.planned_values.outputs | map_values(.value)' > planned.json
jq '{mode, node_endpoints, kubeadm_control_plane_endpoint, apiserver_cert_sans, local_lb: .local_lb | {listen, backends}}' planned.json
sans=$(jq -r '.apiserver_cert_sans | [(.dns_names[] | "DNS:" + .), (.ip_addresses[] | "IP:" + .)] | join(",")' planned.json)

step "stand-in apiservers on 192.0.2.11-13:6443, with a certificate for exactly the planned SANs"
pki=$work/pki && mkdir -p "$pki"
new_ca "$pki" kha-demo-ca && cp "$pki/ca.crt" "$etc/ca.crt"
issue_cert "$pki" apiserver kube-apiserver "$sans" serverAuth
declare -A apiserver
for i in 1 2 3; do
  mkdir -p "$work/cp$i" && echo "ok from cp$i" > "$work/cp$i/readyz"
  (cd "$work/cp$i" && exec openssl s_server -quiet -WWW -accept "192.0.2.1$i:6443" \
    -cert "$pki/apiserver.crt" -key "$pki/apiserver.key" >/dev/null 2>&1) &
  apiserver[cp$i]=$! && pids+=($!)
done
for i in 1 2 3; do wait_port "192.0.2.1$i" 6443; done
echo "certificate SANs: $(openssl x509 -in "$pki/apiserver.crt" -noout -ext subjectAltName | tail -n 1 | sed 's/^ *//')"

step "terraform apply: w1's HAProxy config goes over SSH, haproxy -c checks it, the reload command starts it"
"$tf" apply -no-color -input=false plan.tfplan | quiet | grep -E 'Creat|Apply complete'
echo "HAProxy runs as pid $(cat "$pidfile") with $etc/haproxy.cfg:"
sed -n '/^backend/,$p' "$etc/haproxy.cfg"

endpoint=$("$tf" output -json node_endpoints | jq -r .w1)
get() { curl -s --max-time 3 --cacert "$etc/ca.crt" "$endpoint/readyz"; }
step "requests to w1's endpoint $endpoint, through HAProxy, verifying TLS"
for _ in $(seq 1 50); do get >/dev/null && break; sleep 0.1; done   # health checks bring the backends up
for n in 1 2 3 4 5 6; do echo "request $n: $(get || echo FAILED)"; done

step "cp1 dies; HAProxy keeps serving from cp2 and cp3"
kill "${apiserver[cp1]}"
ok=0 failed=0
for _ in $(seq 1 20); do if get >/dev/null; then ok=$((ok + 1)); else failed=$((failed + 1)); fi; done
echo "20 requests after cp1 died: $ok served, $failed failed"
[ "$failed" = 0 ] || { echo "demo.sh: requests failed after cp1 died" >&2; exit 1; }

step "someone edits the config by hand and loosens its mode; the next plan notices and apply puts it back"
echo "# hand edit" >> "$etc/haproxy.cfg"
chmod 0666 "$etc/haproxy.cfg"
"$tf" plan -no-color -input=false | sed 's/^│ //' | quiet | grep -E 'will be updated|remote_sha256|Plan:|Changed Outside|content changed|mode is'
"$tf" apply -no-color -input=false -auto-approve | quiet | grep -E 'Apply complete'
! grep -q 'hand edit' "$etc/haproxy.cfg" || { echo "demo.sh: drift was not repaired" >&2; exit 1; }
[ "$(stat -c %a "$etc/haproxy.cfg")" = 644 ] || { echo "demo.sh: the mode was not repaired" >&2; exit 1; }
echo "repaired; still serving: $(get)"

step "terraform destroy: HAProxy stopped, its config removed"
"$tf" destroy -no-color -input=false -auto-approve | quiet | grep -E 'Destroy complete'
[ ! -e "$etc/haproxy.cfg" ] || { echo "demo.sh: the config is still on the host" >&2; exit 1; }
if get >/dev/null; then echo "demo.sh: something still answers on $endpoint" >&2; exit 1; fi
echo "nothing listens on $endpoint any more; the host is as it was"
