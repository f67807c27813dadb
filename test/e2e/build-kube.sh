#!/usr/bin/env bash
# build-kube.sh OUTDIR [VERSION]: build kube-apiserver, kubectl and kubeadm from the
# Go module proxy into OUTDIR, and kube-vip (cached: nothing to do when
# OUTDIR/.version already says VERSION and kube-vip is there).
# k8s.io/kubernetes points its staging modules at local directories, so they
# are pinned to their published versions here.
set -euo pipefail
out=$1
version=${2:-1.36.3}
minor=$(echo "$version" | cut -d. -f2)
# The newest kube-vip the module proxy serves (kubespray pins v1.0.3, an image
# tag the proxy does not have; the manager's environment is the same).
kube_vip_version=1.0.0

build_kube_vip() {
  [ "$(cat "$out/.kube-vip-version" 2>/dev/null)" = "$kube_vip_version" ] && [ -x "$out/kube-vip" ] && return 0
  echo "build-kube.sh: building kube-vip v$kube_vip_version from the Go module proxy (first run only)" >&2
  local work dir
  work=$(mktemp -d)
  # The checksum database does not list this kube-vip release; its own
  # go.sum still pins every dependency.
  dir=$(cd "$work" && go mod init kha.test/kubevip >/dev/null 2>&1 &&
    GONOSUMDB=github.com/kube-vip go mod download -json "github.com/kube-vip/kube-vip@v$kube_vip_version" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  cp -r "$dir" "$work/src" && chmod -R u+w "$work/src"
  (cd "$work/src" && go build -trimpath -ldflags "-s -w" -o "$out/kube-vip" .)
  rm -rf "$work"
  echo "$kube_vip_version" > "$out/.kube-vip-version"
}

if [ "$(cat "$out/.version" 2>/dev/null)" = "$version" ] && [ -x "$out/kube-apiserver" ] && [ -x "$out/kubectl" ] && [ -x "$out/kubeadm" ]; then
  build_kube_vip
  exit 0
fi
echo "build-kube.sh: building kube-apiserver, kubectl and kubeadm v$version from the Go module proxy (first run only: ~750 MB of modules, several minutes)" >&2
start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
go mod init kha.test/kubebuild >/dev/null 2>&1
gomod=$(go mod download -json "k8s.io/kubernetes@v$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
{
  echo "require k8s.io/kubernetes v$version"
  echo "replace ("
  grep '=> ./staging' "$gomod" | awk -v v="0.$minor.${version##*.}" '{print "\t" $1 " => " $1 " v" v}'
  echo ")"
} >> go.mod
printf '//go:build tools\n\npackage kubebuild\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kubectl"\n\t_ "k8s.io/kubernetes/cmd/kubeadm"\n)\n' > tools.go
go mod tidy 2>"$work/tidy.log" || { cat "$work/tidy.log" >&2; exit 1; }
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $p.gitVersion=v$version -X $p.gitMajor=1 -X $p.gitMinor=$minor"
done
mkdir -p "$out"
# One go build for the three: their shared packages compile once and the
# three links (the slowest steps, each on one core) run side by side.
go build -trimpath -ldflags "$ldflags" -o "$out/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kubeadm
echo "$version" > "$out/.version"
build_kube_vip
echo "build-kube.sh: built in $(( $(date +%s) - start ))s" >&2
