#!/usr/bin/env bash
# genproto.sh regenerates the Go code of the repository's protobuf files.
#
# Usage: scripts/genproto.sh [--check]
#
#   (no flag)  regenerate every *.pb.go (and *_grpc.pb.go) of the directories
#              listed below; files whose content does not change are not
#              touched, generated files whose .proto is gone are removed.
#   --check    regenerate into a temporary directory only and fail, listing
#              the files, if the tree differs from what would be generated.
#
# The generated files are committed, so the tools are pinned to exact
# versions and the script refuses to run with any other:
#
#   protoc              3.21.12   apt-get install protobuf-compiler  (Debian bookworm)
#   protoc-gen-go       v1.36.10  go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.10
#   protoc-gen-go-grpc  1.5.1     go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
#                                 (only needed once GRPC_DIRS is not empty)
#
# The tools are looked up in PATH and then in $(go env GOBIN) or
# $(go env GOPATH)/bin; PROTOC, PROTOC_GEN_GO and PROTOC_GEN_GO_GRPC override
# the lookup with explicit paths.
#
# Every .proto is compiled with the repository root as the only import path,
# so a .proto imports another by its repository path (for example
# import "api/models/vpp/l3/l3.proto";) and is registered in the protobuf
# registry under that path, which keeps file names unique across packages.
# Outputs are written next to their .proto (paths=source_relative); each
# .proto must therefore set a go_package matching its directory.
set -euo pipefail

# PROTO_DIRS lists the directories (relative to the repository root) whose
# .proto files, searched recursively, are compiled with protoc-gen-go. Add a
# directory here when it gets its first .proto file.
PROTO_DIRS=(
	api/models
	pkg/pbjson/internal/testpb
	api/k8s
)

# GRPC_DIRS lists the directories whose .proto files also define gRPC
# services; they are compiled with protoc-gen-go and protoc-gen-go-grpc (for
# example plugins/podmanager/cni once cni.proto exists).
GRPC_DIRS=(
	plugins/podmanager/cni
)

PROTOC_VERSION="3.21.12"
PROTOC_GEN_GO_VERSION="v1.36.10"
PROTOC_GEN_GO_GRPC_VERSION="1.5.1"

die() {
	echo "genproto: $*" >&2
	exit 1
}

check=false
case "${1:-}" in
"") ;;
--check) check=true ;;
*) die "unknown argument '$1' (usage: scripts/genproto.sh [--check])" ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# find_tool NAME OVERRIDE prints the path of the tool NAME: OVERRIDE if set,
# else the first one found in PATH, GOBIN or GOPATH/bin.
find_tool() {
	local name="$1" override="$2" dir
	if [[ -n "$override" ]]; then
		echo "$override"
		return
	fi
	if command -v "$name" >/dev/null 2>&1; then
		command -v "$name"
		return
	fi
	if command -v go >/dev/null 2>&1; then
		for dir in "$(go env GOBIN)" "$(go env GOPATH)/bin"; do
			if [[ -n "$dir" && -x "$dir/$name" ]]; then
				echo "$dir/$name"
				return
			fi
		done
	fi
}

# require_version TOOL WANT INSTALL checks that "TOOL --version" reports WANT.
require_version() {
	local tool="$1" want="$2" install="$3" got
	got="$("$tool" --version 2>&1 | awk '{print $NF}')" ||
		die "cannot run '$tool --version'; install version $want with: $install"
	[[ "$got" == "$want" ]] ||
		die "$tool is version '$got', version $want is required; install it with: $install"
}

protoc="$(find_tool protoc "${PROTOC:-}")"
[[ -n "$protoc" ]] ||
	die "protoc not found; install version $PROTOC_VERSION with: apt-get install protobuf-compiler"
require_version "$protoc" "$PROTOC_VERSION" "apt-get install protobuf-compiler"

gen_go="$(find_tool protoc-gen-go "${PROTOC_GEN_GO:-}")"
gen_go_install="go install google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
[[ -n "$gen_go" ]] || die "protoc-gen-go not found; install it with: $gen_go_install"
require_version "$gen_go" "$PROTOC_GEN_GO_VERSION" "$gen_go_install"

gen_grpc=""
if ((${#GRPC_DIRS[@]} > 0)); then
	gen_grpc="$(find_tool protoc-gen-go-grpc "${PROTOC_GEN_GO_GRPC:-}")"
	gen_grpc_install="go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v$PROTOC_GEN_GO_GRPC_VERSION"
	[[ -n "$gen_grpc" ]] || die "protoc-gen-go-grpc not found; install it with: $gen_grpc_install"
	require_version "$gen_grpc" "$PROTOC_GEN_GO_GRPC_VERSION" "$gen_grpc_install"
fi

# list_protos DIR... prints the .proto files under the directories, sorted.
list_protos() {
	local dir
	for dir in "$@"; do
		[[ -d "$dir" ]] || die "directory '$dir' listed in $0 does not exist"
	done
	if (($# > 0)); then
		find "$@" -type f -name '*.proto' | LC_ALL=C sort -u
	fi
}

mapfile -t go_protos < <(list_protos "${PROTO_DIRS[@]}" "${GRPC_DIRS[@]}")
mapfile -t grpc_protos < <(list_protos "${GRPC_DIRS[@]}")
((${#go_protos[@]} > 0)) || die "no .proto files found in: ${PROTO_DIRS[*]} ${GRPC_DIRS[*]}"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

"$protoc" --proto_path=. \
	--plugin=protoc-gen-go="$gen_go" \
	--go_out="$out" --go_opt=paths=source_relative \
	"${go_protos[@]}"

if ((${#grpc_protos[@]} > 0)); then
	"$protoc" --proto_path=. \
		--plugin=protoc-gen-go-grpc="$gen_grpc" \
		--go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
		"${grpc_protos[@]}"
fi

# Compare the fresh output with the tree: copy (or report) what differs.
changed=()
while IFS= read -r file; do
	if ! cmp -s "$out/$file" "$file"; then
		changed+=("$file")
		if ! $check; then
			cp "$out/$file" "$file"
		fi
	fi
done < <(cd "$out" && find . -type f -name '*.go' | sed 's|^\./||' | LC_ALL=C sort)

# Remove (or report) generated files that no .proto produces any more.
while IFS= read -r file; do
	file="${file#./}"
	if [[ ! -e "$out/$file" ]] && grep -q -m1 '^// Code generated by protoc-gen-go' "$file"; then
		changed+=("$file (stale)")
		if ! $check; then
			rm "$file"
		fi
	fi
done < <(find "${PROTO_DIRS[@]}" "${GRPC_DIRS[@]}" -type f -name '*.pb.go' | LC_ALL=C sort -u)

if $check; then
	if ((${#changed[@]} > 0)); then
		echo "genproto: generated code is out of date, run scripts/genproto.sh:" >&2
		printf '  %s\n' "${changed[@]}" >&2
		exit 1
	fi
	echo "genproto: ${#go_protos[@]} .proto files, generated code up to date"
else
	echo "genproto: ${#go_protos[@]} .proto files, ${#changed[@]} generated files changed"
fi
