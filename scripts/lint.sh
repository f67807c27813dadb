#!/usr/bin/env bash
# lint.sh: run golangci-lint (pinned in tools/lint/go.mod) with the checked-in
# .golangci.yml (the binary is built once from the Go module proxy and cached),
# then shellcheck on the host scripts (internal/remote/scripts).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(cd "$root/tools/lint" && go list -m -f '{{.Version}}' github.com/golangci/golangci-lint/v2)
bin=${XDG_CACHE_HOME:-$HOME/.cache}/kha-tools/golangci-lint-$version/golangci-lint
if [ ! -x "$bin" ]; then
  echo "lint.sh: building golangci-lint $version (once, a few minutes)" >&2
  start=$(date +%s)
  (cd "$root/tools/lint" && go build -trimpath -o "$bin" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)
  echo "lint.sh: built $bin in $(( $(date +%s) - start ))s" >&2
fi
cd "$root"
"$bin" run "$@"
# The host scripts, as the engine sends them, through shellcheck.
KHA_REQUIRE_REAL=1 go test -count=1 -run '^TestScripts_shellcheck$' ./internal/remote
