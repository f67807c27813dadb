#!/usr/bin/env bash
# version.sh: print the provider's version, the newest release section of
# CHANGELOG.md ("## [0.1.0] - 2026-11-24" prints 0.1.0). Releases are
# tagged v<version>; snapshots and `make install` build this version.
set -euo pipefail
v=$(sed -n 's/^## \[\([0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*[^]]*\)\].*/\1/p' "$(dirname "$0")/../CHANGELOG.md" | sed -n 1p)
[ -n "$v" ] || { echo "version.sh: CHANGELOG.md has no release section (## [X.Y.Z] - date)" >&2; exit 1; }
echo "$v"
