#!/usr/bin/env bash
# tf-env.sh [terraform|opentofu]: print the environment for acceptance tests
# and the demo as `export` lines (use: eval "$(scripts/tf-env.sh)"), for the
# CLI terraform-cli.sh picks with the same argument. It never lets the
# testing framework download a CLI and isolates it from user CLI configs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cli=$("$here/terraform-cli.sh" "$@")
echo "export TF_ACC_TERRAFORM_PATH='$cli'"
echo "export TF_CLI_CONFIG_FILE=/dev/null"
echo "export CHECKPOINT_DISABLE=1"
# Test fixtures name no source, so Terraform takes the provider as
# hashicorp/kha; OpenTofu needs the namespace spelled out.
echo "export TF_ACC_PROVIDER_NAMESPACE=hashicorp"
echo "unset TF_ACC_TERRAFORM_VERSION"
# OpenTofu resolves providers under its own registry host; ask it which one
# (no network needed) rather than writing a host name down.
# (no `| grep -q`: under pipefail, the CLI killed by SIGPIPE fails the test)
if [[ "$("$cli" version 2>/dev/null)" == *OpenTofu* ]]; then
  d=$(mktemp -d)
  printf 'terraform {\n  required_providers {\n    kha = { source = "kha/kha" }\n  }\n}\n' > "$d/main.tf"
  host=$(cd "$d" && TF_CLI_CONFIG_FILE=/dev/null "$cli" providers 2>/dev/null |
         sed -n 's#.*provider\[\([^]/]*\)/kha/kha\].*#\1#p' | sed -n 1p)
  rm -rf "$d"
  [ -n "$host" ] || { echo "tf-env.sh: $cli did not say which registry host it resolves kha/kha under" >&2; exit 1; }
  echo "export TF_ACC_PROVIDER_HOST='$host'"
else
  echo "unset TF_ACC_PROVIDER_HOST"
fi
