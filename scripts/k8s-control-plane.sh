#!/usr/bin/env bash
# Builds the Kubernetes control plane the cluster lab runs (test/cluster): kube-apiserver,
# kube-controller-manager and kubectl from k8s.io/kubernetes, and etcd 3.6 - all from the
# nested wrapper modules in third_party/k8s-control-plane, never from the project's go.mod.
#
# The binaries go to a cache directory outside the tree, keyed by the wrapper go.sum files,
# the version flags and `go version`; a second run with the same key reuses them (no go
# invocation at all). The directory is printed on stdout as the last line; progress goes to
# stderr.
#
# Usage: scripts/k8s-control-plane.sh [-print]
#   -print   only print the directory the current key maps to (exit 1 if not built yet)
# Environment:
#   K8S_CONTROL_PLANE_CACHE  parent of the keyed directories
#                            (default ${XDG_CACHE_HOME:-$HOME/.cache}/contiv-vpp)
#   GO                       the go command (default go)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
wrap="$root/third_party/k8s-control-plane"
GO="${GO:-go}"
k8s_version="v1.34.2"
k8s_minor="34"

ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$k8s_minor"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version"

key="$( { cat "$wrap/k8s/go.sum" "$wrap/etcd/go.sum"; echo "$ldflags"; "$GO" version; } \
  | sha256sum | cut -c1-16)"
parent="${K8S_CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/contiv-vpp}"
out="$parent/k8s-$key"
bins=(kube-apiserver kube-controller-manager kubectl etcd)

complete() {
  local b
  for b in "${bins[@]}"; do [ -x "$1/$b" ] || return 1; done
}

if [ "${1:-}" = "-print" ]; then
  complete "$out" || { echo "k8s-control-plane: not built yet ($out)" >&2; exit 1; }
  echo "$out"
  exit 0
fi

if complete "$out"; then
  echo "k8s-control-plane: cached in $out" >&2
  echo "$out"
  exit 0
fi

mkdir -p "$parent"
tmp="$(mktemp -d "$parent/.build-$key.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
echo "k8s-control-plane: building kube-apiserver, kube-controller-manager, kubectl $k8s_version into $out" >&2
(cd "$wrap/k8s" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "$ldflags" -o "$tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kubectl)
echo "k8s-control-plane: building etcd" >&2
(cd "$wrap/etcd" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w" -o "$tmp/etcd" \
  go.etcd.io/etcd/server/v3)
complete "$tmp"
# Another build with the same key may have finished meanwhile: keep the first one.
if ! mv -T "$tmp" "$out" 2>/dev/null; then
  complete "$out" || { echo "k8s-control-plane: cannot move $tmp to $out" >&2; exit 1; }
fi
trap - EXIT
echo "k8s-control-plane: built in $((SECONDS - start)) s" >&2
echo "$out"
