#!/usr/bin/env bash
# install.sh: build the provider at CHANGELOG.md's version and put it where
# `terraform init` and `tofu init` find it with no CLI configuration: the
# implicit local mirror ~/.terraform.d/plugins, as
#   <registry host>/kha/kha/<version>/<os>_<arch>/terraform-provider-kha_v<version>
# under Terraform's and OpenTofu's registry hosts. KHA_PLUGIN_DIR names
# another plugin directory (e.g. one a filesystem_mirror block points at),
# KHA_VERSION another version (make test-upgrade's build above the release).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=${KHA_VERSION:-$(scripts/version.sh)}
plugins=${KHA_PLUGIN_DIR:-$HOME/.terraform.d/plugins}
platform=$(go env GOOS)_$(go env GOARCH)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
name=terraform-provider-kha_v$version
go build -trimpath -ldflags "-s -w -X main.version=$version -X main.commit=$commit" -o "$build/$name" .
for host in registry.terraform.io registry.opentofu.org; do
  dir=$plugins/$host/kha/kha/$version/$platform
  install -d "$dir"
  install -m 0755 "$build/$name" "$dir/$name"
  echo "installed $dir/$name"
done
