#!/usr/bin/env bash
# goreleaser.sh: print the path of goreleaser at the version tools/release
# pins, built once from the Go module proxy into the cache.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's#^[[:space:]]*github.com/goreleaser/goreleaser/v2 \(v[^ ]*\).*#\1#p' "$root/tools/release/go.mod" | sed -n 1p)
[ -n "$version" ] || { echo "goreleaser.sh: tools/release/go.mod pins no goreleaser" >&2; exit 1; }
bin=${XDG_CACHE_HOME:-$HOME/.cache}/kha-tools/goreleaser-$version/goreleaser
if [ ! -x "$bin" ]; then
  echo "goreleaser.sh: building goreleaser $version (a few minutes, once)" >&2
  start=$(date +%s)
  (cd "$root/tools/release" && go build -trimpath -o "$bin.tmp" github.com/goreleaser/goreleaser/v2) && mv "$bin.tmp" "$bin"
  echo "goreleaser.sh: built $bin in $(( $(date +%s) - start ))s" >&2
fi
echo "$bin"
