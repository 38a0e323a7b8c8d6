#!/usr/bin/env bash
# ci-in-chroot.sh runs .ci/run on a bare Debian bookworm root made by debootstrap
# (variant minbase: no compiler, no git, no protoc, no iproute2), with only the host's
# Go toolchain added (/usr/local/go, mounted read-only, as machines of this kind have
# it). It proves that .ci/run installs everything else it needs. Root only.
#
# Usage: scripts/ci-in-chroot.sh [ROOT_DIR]   (default /var/tmp/contiv-ci-root)
#
# The root is made anew each run from the Debian mirror the host's apt uses, the
# repository's committed HEAD is cloned into it (uncommitted changes are not part of the
# proof) with ../shared copied beside the clone as CI has it, and .ci/run runs there
# with CI=true, no standard input and the host's GO* settings. The mounts are undone
# and the root removed on exit (KEEP_ROOT=1 keeps it for a look).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
root="${1:-/var/tmp/contiv-ci-root}"

[ "$(id -u)" -eq 0 ] || { echo "ci-in-chroot: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "ci-in-chroot: apt-get install debootstrap" >&2; exit 1; }

# The mirror the host's apt already uses (deb822 .sources or a one-line sources.list).
mirror="$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v -- '-security' | head -1)"
if [ -z "$mirror" ]; then
  mirror="$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)"
fi
[ -n "$mirror" ] || { echo "ci-in-chroot: no Debian mirror found in the host's apt sources" >&2; exit 1; }

mounts=()
cleanup() {
  local m i
  # network namespaces a failed test left behind are mounts under the root's /run/netns
  for m in $(awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount -l "${mounts[$i]}" 2>/dev/null || true
  done
  if [ "${KEEP_ROOT:-0}" != 1 ]; then
    rm -rf --one-file-system "$root"
  fi
}
trap cleanup EXIT

rm -rf --one-file-system "$root"
start=$SECONDS
echo "ci-in-chroot: debootstrap --variant=minbase bookworm into $root"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
  { tail -20 "$root.debootstrap.log" >&2; exit 1; }
echo "ci-in-chroot: bare root made in $((SECONDS - start)) s"
cp /etc/resolv.conf "$root/etc/resolv.conf"
[ -f /etc/apt/sources.list.d/debian.sources ] && cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
# The machine's own certificate authorities (a workplace's egress CA, for one): part of
# the machine, not of the project; ca-certificates, installed by .ci/run, adds them.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi

bind() { # bind SRC DST [ro]
  mkdir -p "$2"
  mount --rbind "$1" "$2"
  mount --make-rslave "$2"
  mounts+=("$2")
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2"; fi
}
# The root a mount point of its own, as a machine's / is: `ip -n NS ...` makes / a
# slave mount in a new mount namespace, which fails on a plain directory.
mount --bind "$root" "$root" && mounts+=("$root")
mount --make-private "$root"
mount -t proc proc "$root/proc" && mounts+=("$root/proc")
bind /sys "$root/sys"
bind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/run" && mounts+=("$root/run")
bind /usr/local/go "$root/usr/local/go" ro

mkdir -p "$root/work/ci"
git clone -q "$repo" "$root/work/ci/main"
if [ -d "$repo/../shared" ]; then
  cp -r "$repo/../shared" "$root/work/ci/shared"
  chmod -R a-w "$root/work/ci/shared"
fi

goenv=()
for v in $(env | sed -n 's/^\(GO[A-Z0-9_]*\)=.*/\1/p'); do goenv+=("$v=${!v}"); done
echo "ci-in-chroot: bash .ci/run in the chroot (CI=true ${goenv[*]})"
chroot "$root" /usr/bin/env -i HOME=/root CI=true TERM=dumb "${goenv[@]}" \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/bash -c 'cd /work/ci/main && bash .ci/run' </dev/null
echo "ci-in-chroot: .ci/run passed on the bare root; $((SECONDS - start)) s in all"
