#!/usr/bin/env bash
# demo.sh: build the provider and apply examples/quickstart with the real
# terraform CLI through a dev_overrides CLI config (no registry, no init).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ "$(id -u)" -ne 0 ] || scripts/setup-host.sh
eval "$(scripts/tf-env.sh)"
tf=$TF_ACC_TERRAFORM_PATH

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
go build -o "$work/bin/terraform-provider-kha" .
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
cd "$work/quickstart"

echo "== terraform plan: every value below is known before apply"
"$tf" plan -no-color -input=false 2>&1 | grep -v -i 'development overrides\|dev_overrides\|^ *- kha/kha\|^│\|^╷\|^╵\|The behavior may therefore\|^$' || true
echo
echo "== terraform apply"
"$tf" apply -no-color -input=false -auto-approve >/dev/null 2>&1 || "$tf" apply -no-color -input=false -auto-approve
"$tf" output -no-color
