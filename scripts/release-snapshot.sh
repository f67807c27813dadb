#!/usr/bin/env bash
# release-snapshot.sh: build the release artifacts of the current checkout
# into dist/ exactly as a release would (.goreleaser.yml: a zip per platform,
# the registry manifest, SHA256SUMS covering both, its detached signature),
# without publishing anything. The version is CHANGELOG.md's newest release
# (scripts/version.sh); dist/mirror holds the zips as a filesystem mirror.
# KHA_SNAPSHOT_PLATFORMS (os_arch words) builds those of the configuration's
# platforms alone, and lists them in dist/.platforms: make test installs or
# locks five platforms' zips, which took 409 s on a cold build cache, where
# all 13 took about 13 minutes.
# With GPG_FINGERPRINT unset, a throwaway key in a
# temporary GNUPGHOME signs (a release signs with the real key: RELEASING.md);
# either way the signer's public key is left in dist/signing-key.asc.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=$(scripts/version.sh)
goreleaser=$(scripts/goreleaser.sh)
command -v gpg >/dev/null || { echo "release-snapshot.sh: gpg is missing (scripts/setup-host.sh installs gnupg)" >&2; exit 1; }

# A snapshot of these very sources, built in the last 20 hours (the
# throwaway key below lives a day), is reused: make test builds it once, not
# on every run. KHA_SNAPSHOT_REBUILD=1 builds anyway. The digest covers what
# goes into the binaries and the release files: non-test Go sources and the
# files they embed, the module files, the release configuration, the version.
platforms=${KHA_SNAPSHOT_PLATFORMS:-}
inputs=$( (git ls-files -co --exclude-standard -- main.go go.mod go.sum internal .goreleaser.yml terraform-registry-manifest.json |
  grep -v -e '_test\.go$' -e '/testdata/' | sort | xargs sha256sum; echo "$version $platforms") | sha256sum | cut -d' ' -f1)
if [ -z "${KHA_SNAPSHOT_REBUILD:-}" ] && [ "$(cat dist/.inputs 2>/dev/null)" = "$inputs" ] &&
   [ -n "$(find dist/.inputs -mmin -1200 2>/dev/null)" ]; then
  echo "release-snapshot.sh: dist/ holds $version built from these sources at $(date -r dist/.inputs +%H:%M); reusing it" >&2
  exit 0
fi

temporary=() throwaway_key=''
cleanup() {
  if [ -n "$throwaway_key" ]; then gpgconf --kill all 2>/dev/null || true; fi
  rm -rf "${temporary[@]}"
}
trap cleanup EXIT
if [ -z "${GPG_FINGERPRINT:-}" ]; then
  GNUPGHOME=$(mktemp -d) throwaway_key=1
  export GNUPGHOME
  temporary+=("$GNUPGHOME")
  gpg --batch --quiet --passphrase '' --quick-gen-key \
    'terraform-provider-kha snapshot (throwaway test key) <snapshot@kha.invalid>' rsa3072 sign 1d 2>/dev/null
  GPG_FINGERPRINT=$(gpg --batch --with-colons --list-secret-keys | awk -F: '$1 == "fpr" { print $10; exit }')
  export GPG_FINGERPRINT
  echo "release-snapshot.sh: signing with a throwaway key $GPG_FINGERPRINT" >&2
fi

# Fewer platforms: the configuration with every other pair of its goos and
# goarch lists ignored, so that the builds are otherwise the release's.
config=.goreleaser.yml
if [ -n "$platforms" ]; then
  config=$(mktemp --suffix=.yml)
  temporary+=("$config")
  list() { sed -n "s/^ *$1: \[\(.*\)\]/\1/p" .goreleaser.yml | tr -d ",'"; }
  ignored='' matrix=' '
  for os in $(list goos); do
    for arch in $(list goarch); do
      matrix="$matrix${os}_$arch "
      case " $platforms " in *" ${os}_$arch "*) ;; *) ignored="$ignored      - {goos: $os, goarch: '$arch'}\n" ;; esac
    done
  done
  for p in $platforms; do
    case $matrix in *" $p "*) ;; *) echo "release-snapshot.sh: $p is not among .goreleaser.yml's platforms" >&2; exit 1 ;; esac
  done
  awk -v ignored="$ignored" '{ print } /^    ignore:/ { printf "%s", ignored }' .goreleaser.yml > "$config"
fi

start=$(date +%s)
# The snapshot carries the release's version, not a pre-release one, so
# `version = "~> 0.2"` selects it as it will select the release.
KHA_VERSION=$version "$goreleaser" release --snapshot --clean --config "$config" >&2
# A release uploads the manifest under this name (.goreleaser.yml's
# release.extra_files); a snapshot publishes nothing, so it is put beside
# the zips here, as the registry will see it.
cp terraform-registry-manifest.json "dist/terraform-provider-kha_${version}_manifest.json"
gpg --batch --armor --export "$GPG_FINGERPRINT" > dist/signing-key.asc
# The zips again (hard links) as a filesystem mirror in the packed layout
# both CLIs read, <host>/kha/kha/<zip>: what `providers lock -fs-mirror`
# locks every platform from (README, "A team on several platforms").
for host in registry.terraform.io registry.opentofu.org; do
  mkdir -p "dist/mirror/$host/kha/kha"
  ln -f dist/*.zip "dist/mirror/$host/kha/kha/"
done
if [ -n "$platforms" ]; then echo "$platforms" > dist/.platforms; fi
echo "$inputs" > dist/.inputs
echo "release-snapshot.sh: built $version in $(( $(date +%s) - start ))s:" >&2
(cd dist && ls -1 -- *.zip *SHA256SUMS* *manifest.json signing-key.asc) >&2
