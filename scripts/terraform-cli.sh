#!/usr/bin/env bash
# terraform-cli.sh [terraform|opentofu]: print the absolute path of a
# Terraform-compatible CLI that supports everything kha uses (write-only
# attributes need >= 1.11).
#   no argument: $KHA_TERRAFORM, else `terraform` on PATH when >= 1.11, else
#     OpenTofu built once from the Go module proxy into the cache;
#   terraform: `terraform` on PATH when >= 1.11; without one, OpenTofu, with a
#     warning. Terraform cannot be built from the Go module proxy (its
#     backends are nested modules that module downloads leave out) and its
#     release downloads are not reachable everywhere;
#   opentofu: OpenTofu built once from the Go module proxy into the cache
#     (`tofu` on PATH when it is this version).
set -euo pipefail

TOFU_VERSION=v1.12.6
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/kha-tools
TOFU=$CACHE/tofu-$TOFU_VERSION/tofu

cli_version() { # $1 = CLI path; prints major.minor.patch
  TF_CLI_CONFIG_FILE=/dev/null CHECKPOINT_DISABLE=1 "$1" version -json 2>/dev/null |
    sed -n 's/.*"terraform_version": *"\([0-9]*\.[0-9]*\.[0-9]*\).*/\1/p' | sed -n 1p
}
version_ok() { # $1 = CLI path; true when it reports a version >= 1.11
  local major minor
  IFS=. read -r major minor _ < <(cli_version "$1") || return 1
  [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -ge 11 ]; }
}
is_tofu() { [[ "$("$1" version 2>/dev/null)" == *OpenTofu* ]]; }

# build MODULE VERSION PACKAGE OUTPUT [LDFLAGS]: build a CLI from its source
# on the Go module proxy, once.
build() {
  echo "terraform-cli.sh: building $1 $2 from the Go module proxy (several minutes, once)" >&2
  local start dir
  start=$(date +%s)
  dir=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "$1@$2" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || { echo "terraform-cli.sh: could not download $1 $2" >&2; exit 1; }
  (cd "$dir" && GOFLAGS="" go build -trimpath -ldflags "-s -w ${5:-}" -o "$4" "$3")
  echo "terraform-cli.sh: built $4 in $(( $(date +%s) - start ))s" >&2
}

want_opentofu() {
  local tofu
  if tofu=$(type -P tofu 2>/dev/null) && [ "$(cli_version "$tofu")" = "${TOFU_VERSION#v}" ]; then
    readlink -f "$tofu"; return
  fi
  [ -x "$TOFU" ] && version_ok "$TOFU" ||
    build github.com/opentofu/opentofu "$TOFU_VERSION" ./cmd/tofu "$TOFU" "-X github.com/opentofu/opentofu/version.dev=no"
  echo "$TOFU"
}

want_terraform() {
  local tf
  if tf=$(type -P terraform 2>/dev/null) && ! is_tofu "$tf" && version_ok "$tf"; then
    readlink -f "$tf"; return
  fi
  echo "terraform-cli.sh: no Terraform >= 1.11 on PATH; using OpenTofu in its place" >&2
  want_opentofu
}

case "${1:-}" in
  terraform) want_terraform; exit 0 ;;
  opentofu) want_opentofu; exit 0 ;;
  "") ;;
  *) echo "usage: terraform-cli.sh [terraform|opentofu]" >&2; exit 2 ;;
esac

if [ -n "${KHA_TERRAFORM:-}" ]; then
  [ -x "$KHA_TERRAFORM" ] || { echo "KHA_TERRAFORM=$KHA_TERRAFORM is not executable: point it at a terraform or tofu binary, or unset it" >&2; exit 1; }
  readlink -f "$KHA_TERRAFORM"; exit 0
fi
if tf=$(type -P terraform 2>/dev/null) && version_ok "$tf"; then
  readlink -f "$tf"; exit 0
fi
want_opentofu
