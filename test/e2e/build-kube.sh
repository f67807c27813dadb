#!/usr/bin/env bash
# build-kube.sh OUTDIR [VERSION]: build kube-apiserver, kubectl and kubeadm from the
# Go module proxy into OUTDIR (cached: nothing to do when OUTDIR/.version
# already says VERSION). k8s.io/kubernetes points its staging modules at
# local directories, so they are pinned to their published versions here.
set -euo pipefail
out=$1
version=${2:-1.36.3}
minor=$(echo "$version" | cut -d. -f2)
if [ "$(cat "$out/.version" 2>/dev/null)" = "$version" ] && [ -x "$out/kube-apiserver" ] && [ -x "$out/kubectl" ] && [ -x "$out/kubeadm" ]; then
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
go build -trimpath -ldflags "$ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
go build -trimpath -ldflags "$ldflags" -o "$out/kubectl" k8s.io/kubernetes/cmd/kubectl
go build -trimpath -ldflags "$ldflags" -o "$out/kubeadm" k8s.io/kubernetes/cmd/kubeadm
echo "$version" > "$out/.version"
echo "build-kube.sh: built in $(( $(date +%s) - start ))s" >&2
