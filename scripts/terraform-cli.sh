#!/usr/bin/env bash
# terraform-cli.sh: print the absolute path of a Terraform-compatible CLI
# that supports everything kha uses (write-only attributes need >= 1.11):
#   $KHA_TERRAFORM, else `terraform` on PATH when >= 1.11, else OpenTofu
#   built once from the Go module proxy into the cache.
set -euo pipefail

TOFU_VERSION=v1.12.6
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/kha-tools
TOFU=$CACHE/tofu-$TOFU_VERSION/tofu

version_ok() { # $1 = CLI path; true when it reports a version >= 1.11
  local major minor
  read -r major minor < <(TF_CLI_CONFIG_FILE=/dev/null CHECKPOINT_DISABLE=1 "$1" version -json 2>/dev/null |
      sed -n 's/.*"terraform_version": *"\([0-9]*\)\.\([0-9]*\)\..*/\1 \2/p' | sed -n 1p) || return 1
  [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -ge 11 ]; }
}

if [ -n "${KHA_TERRAFORM:-}" ]; then
  [ -x "$KHA_TERRAFORM" ] || { echo "KHA_TERRAFORM=$KHA_TERRAFORM is not executable: point it at a terraform or tofu binary, or unset it" >&2; exit 1; }
  readlink -f "$KHA_TERRAFORM"; exit 0
fi
if tf=$(command -v terraform 2>/dev/null) && version_ok "$tf"; then
  readlink -f "$tf"; exit 0
fi
if [ -x "$TOFU" ] && version_ok "$TOFU"; then
  echo "$TOFU"; exit 0
fi

echo "terraform-cli.sh: no Terraform >= 1.11 found; building OpenTofu $TOFU_VERSION (several minutes, once)" >&2
start=$(date +%s)
dir=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "github.com/opentofu/opentofu@$TOFU_VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$dir" ] || { echo "terraform-cli.sh: could not download OpenTofu $TOFU_VERSION" >&2; exit 1; }
(cd "$dir" && GOFLAGS="" go build -trimpath \
   -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$TOFU" ./cmd/tofu)
echo "terraform-cli.sh: built $TOFU in $(( $(date +%s) - start ))s" >&2
echo "$TOFU"
