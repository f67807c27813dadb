#!/usr/bin/env bash
# demo.sh: build the provider, start a throwaway OpenSSH server on loopback
# as a stand-in worker node, and apply examples/quickstart with the real
# terraform CLI through a dev_overrides CLI config (no registry, no init):
# the apiserver access matrix is computed at plan time and the worker's
# node-local HAProxy config is pushed over SSH, validated by haproxy itself.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ "$(id -u)" -ne 0 ]; then
  echo "demo.sh: run as root: it installs Debian packages and starts sshd on 127.0.0.1" >&2
  exit 1
fi
scripts/setup-host.sh
eval "$(scripts/tf-env.sh)"
tf=$TF_ACC_TERRAFORM_PATH

work=$(mktemp -d)
sshd_pid=
cleanup() {
  [ -z "$sshd_pid" ] || kill "$sshd_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== building the provider"
go build -o "$work/bin/terraform-provider-kha" .

echo "== starting a throwaway sshd on 127.0.0.1 (the demo's worker node)"
host_dir=$work/host
mkdir -p "$host_dir/etc" && chmod 755 "$work" "$host_dir"
ssh-keygen -q -t ed25519 -N '' -C kha-demo-host -f "$host_dir/host_ed25519"
ssh-keygen -q -t ed25519 -N '' -C kha-demo-client -f "$work/client_ed25519"
cp "$work/client_ed25519.pub" "$host_dir/authorized_keys" && chmod 644 "$host_dir/authorized_keys"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$host_dir/sshd_config" <<CFG
Port $port
ListenAddress 127.0.0.1
HostKey $host_dir/host_ed25519
PidFile $host_dir/sshd.pid
AuthorizedKeysFile $host_dir/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
CFG
install -d -m 0755 /run/sshd
/usr/sbin/sshd -D -e -f "$host_dir/sshd_config" 2>"$host_dir/sshd.log" &
sshd_pid=$!
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.05
done

cat > "$work/cli.tfrc" <<CFG
provider_installation {
  dev_overrides {
    "kha/kha" = "$work/bin"
  }
  direct {}
}
CFG
export TF_CLI_CONFIG_FILE=$work/cli.tfrc
cp -r examples/quickstart "$work/quickstart"
cat > "$work/quickstart/terraform.tfvars" <<VARS
ssh = {
  host             = "127.0.0.1"
  port             = $port
  host_key         = "$(cut -d' ' -f1,2 "$host_dir/host_ed25519.pub")"
  private_key_file = "$work/client_ed25519"
  target_dir       = "$host_dir/etc"
}
VARS
cd "$work/quickstart"
quiet() { grep -v -e 'Warning: Provider development overrides' -e 'development overrides are in effect' -e '^ - kha/kha in' \
  -e 'The behavior may therefore' -e 'applying changes may cause' -e 'published releases\.' -e '^[│╷╵]' || true; }

echo
echo "== terraform plan: the matrix is known before anything is applied"
"$tf" plan -no-color -input=false -out=plan.tfplan | quiet
echo
echo "== terraform apply: push the worker's HAProxy config over SSH (validated with haproxy -c first)"
"$tf" apply -no-color -input=false plan.tfplan | quiet | tail -n 3
echo
"$tf" output -no-color
echo
echo "== the file on the host"
cat "$host_dir/etc/haproxy/haproxy.cfg"
echo
echo "== someone edits it by hand; the next plan notices"
echo "# hand edit" >> "$host_dir/etc/haproxy/haproxy.cfg"
"$tf" plan -no-color -input=false | grep -E 'will be updated|remote_sha256|Plan:' || true
"$tf" apply -no-color -input=false -auto-approve | grep -E 'Apply complete' || true
grep -q 'hand edit' "$host_dir/etc/haproxy/haproxy.cfg" && { echo "drift was not repaired" >&2; exit 1; }
echo "drift repaired: $(sha256sum < "$host_dir/etc/haproxy/haproxy.cfg" | cut -d' ' -f1)"
