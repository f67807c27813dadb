#!/usr/bin/env bash
# upgrade-mirror.sh DIR: a filesystem mirror in DIR holding kha/kha twice,
# for make test-upgrade: as last released, and as built from this tree at a
# version above it. Prints the environment the upgrade test reads as
# `export` lines (use: eval "$(scripts/upgrade-mirror.sh DIR)").
#
# The release is CHANGELOG.md's newest release section made before HEAD,
# built from its tag v<version>, or without one from the commit that added
# its heading (0.1.0 has no tag), by that commit's own scripts/install.sh:
# once per commit, cached under ~/.cache/kha-tools with the commit's sources,
# whose examples the test applies. This tree gets goreleaser's snapshot
# version (<release with the patch incremented>-SNAPSHOT-<commit>) until its
# own release section exists; CLIs select a pre-release only when a
# configuration names it exactly, which the test does.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ $# -eq 1 ] || { echo "usage: upgrade-mirror.sh DIR" >&2; exit 2; }
mirror=$(mkdir -p "$1" && cd "$1" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/kha-tools

# release_commit VERSION: the commit VERSION was released from.
release_commit() {
  git rev-parse -q --verify "refs/tags/v$1^{commit}" ||
    git log --format=%H -S"## [$1]" -- CHANGELOG.md | tail -n 1
}

current=$(scripts/version.sh)
from='' commit=''
while read -r version; do
  c=$(release_commit "$version")
  # The release this tree is (its heading added by HEAD, or not committed
  # yet) is not one to upgrade from.
  if [ -n "$c" ] && [ "$c" != "$(git rev-parse HEAD)" ] && git merge-base --is-ancestor "$c" HEAD; then
    from=$version commit=$c
    break
  fi
done < <(sed -n 's/^## \[\([0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*[^]]*\)\].*/\1/p' CHANGELOG.md)
[ -n "$from" ] || { echo "upgrade-mirror.sh: CHANGELOG.md names no release made before HEAD" >&2; exit 1; }
if [ "$current" = "$from" ]; then
  IFS=. read -r major minor patch <<<"${from%%-*}"
  to=$major.$minor.$((patch + 1))-SNAPSHOT-$(git rev-parse --short HEAD)
else
  to=$current
fi

# The release, built once.
release=$cache/kha-$from-$commit
if [ ! -x "$release/plugins/registry.terraform.io/kha/kha/$from/$(go env GOOS)_$(go env GOARCH)/terraform-provider-kha_v$from" ]; then
  echo "upgrade-mirror.sh: building kha $from from $commit (once)" >&2
  start=$(date +%s)
  rm -rf "$release" && mkdir -p "$release/src"
  git archive "$commit" | tar -x -C "$release/src"
  KHA_PLUGIN_DIR=$release/plugins.tmp "$release/src/scripts/install.sh" >&2
  mv "$release/plugins.tmp" "$release/plugins"
  echo "upgrade-mirror.sh: built kha $from in $(( $(date +%s) - start ))s" >&2
fi
cp -a "$release/plugins/." "$mirror/"
KHA_VERSION=$to KHA_PLUGIN_DIR=$mirror scripts/install.sh >&2

echo "export KHA_UPGRADE_MIRROR='$mirror'"
echo "export KHA_UPGRADE_FROM='$from'"
echo "export KHA_UPGRADE_FROM_SOURCE='$release/src'"
echo "export KHA_UPGRADE_TO='$to'"
