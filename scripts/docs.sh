#!/usr/bin/env bash
# docs.sh generate|validate: run tfplugindocs offline. With Terraform it
# finds the CLI on PATH; with OpenTofu it gets the schema from tofu, since
# tfplugindocs lays plugins out for Terraform's registry host only.
set -euo pipefail
cmd=${1:-generate}
root=$(cd "$(dirname "$0")/.." && pwd)
cli=$("$root/scripts/terraform-cli.sh")
tfplugindocs=(go tool -modfile="$root/tools/go.mod" tfplugindocs)
export CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE=/dev/null

cd "$root"
if [[ "$("$cli" version 2>/dev/null)" != *OpenTofu* ]]; then
  bin=$(mktemp -d); ln -s "$cli" "$bin/terraform"
  PATH="$bin:$PATH" "${tfplugindocs[@]}" "$cmd" --provider-name kha
  rm -rf "$bin"; exit 0
fi

w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
host=$(eval "$("$root/scripts/tf-env.sh")"; echo "${TF_ACC_PROVIDER_HOST:?}")
plugins="$w/plugins/$host/hashicorp/kha/0.0.1/$(go env GOOS)_$(go env GOARCH)"
mkdir -p "$plugins" && go build -o "$plugins/terraform-provider-kha" .
echo 'provider "kha" {}' > "$w/main.tf"
(cd "$w" && "$cli" init -get=false -plugin-dir=./plugins >/dev/null && "$cli" providers schema -json) |
  jq '.provider_schemas |= {kha: (to_entries[0].value)}' > "$w/schema.json"
"${tfplugindocs[@]}" "$cmd" --provider-name kha --providers-schema "$w/schema.json"
