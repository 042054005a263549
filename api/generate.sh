#!/usr/bin/env bash
# generate.sh regenerates all generated code under api/: Go messages, gRPC
# stubs, grpc-gateway handlers and OpenAPI v2 (swagger) JSON for every .proto
# file below api/, written next to the .proto file. It first installs any
# missing or wrongly versioned tool at the pinned version.
#
# Usage:
#   api/generate.sh           regenerate in place
#   api/generate.sh --check   regenerate into a temporary directory and fail
#                             if the committed files differ (for CI)
#
# Run it from anywhere; it works on the repository that contains it.
set -euo pipefail

# Pinned tool versions. api/api_test.go checks that the generated files name
# the same protoc and protoc-gen-go versions.
PROTOC_VERSION="3.21.12"
PROTOC_GEN_GO_VERSION="v1.36.12"
PROTOC_GEN_GO_GRPC_VERSION="v1.6.2"
GRPC_GATEWAY_VERSION="v2.32.0"
GOOGLEAPIS_SOURCE_MODULE="github.com/grpc-ecosystem/grpc-gateway"
GOOGLEAPIS_SOURCE_VERSION="v1.16.0"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GOOGLEAPIS="${ROOT}/third_party/googleapis"
GOBIN_DIR="$(go env GOBIN)"
if [[ -z "${GOBIN_DIR}" ]]; then
	GOBIN_DIR="$(go env GOPATH)/bin"
fi

check=false
case "${1:-}" in
"") ;;
--check) check=true ;;
*)
	echo "usage: $0 [--check]" >&2
	exit 2
	;;
esac

log() { echo "generate.sh: $*" >&2; }

# ensure_protoc installs protoc from the distribution when it is missing or
# is not the pinned version.
ensure_protoc() {
	local have=""
	if command -v protoc >/dev/null 2>&1; then
		have="$(protoc --version | awk '{print $2}')"
	fi
	if [[ "${have}" == "${PROTOC_VERSION}" ]]; then
		return
	fi
	log "protoc ${have:-missing}, want ${PROTOC_VERSION}: installing protobuf-compiler"
	local sudo=""
	if [[ "$(id -u)" != "0" ]]; then
		sudo="sudo"
	fi
	${sudo} apt-get update
	${sudo} apt-get install -y protobuf-compiler
	have="$(protoc --version | awk '{print $2}')"
	if [[ "${have}" != "${PROTOC_VERSION}" ]]; then
		log "protoc is ${have} after install, want ${PROTOC_VERSION}"
		exit 1
	fi
}

# module_version prints the main module version a Go binary was built from.
module_version() {
	go version -m "$1" 2>/dev/null | awk '$1 == "mod" {print $3; exit}'
}

# ensure_plugin installs a protoc plugin with go install unless the binary in
# GOBIN_DIR was already built from the pinned version.
ensure_plugin() {
	local name="$1" pkg="$2" version="$3"
	local bin="${GOBIN_DIR}/${name}"
	if [[ -x "${bin}" && "$(module_version "${bin}")" == "${version}" ]]; then
		return
	fi
	log "installing ${pkg}@${version}"
	(cd "$(mktemp -d)" && GOBIN="${GOBIN_DIR}" GOFLAGS= go install "${pkg}@${version}")
}

# ensure_googleapis copies google/api/annotations.proto and http.proto (and
# their license) from the grpc-gateway v1 module, which ships them, when they
# are missing.
ensure_googleapis() {
	if [[ -f "${GOOGLEAPIS}/google/api/annotations.proto" && -f "${GOOGLEAPIS}/google/api/http.proto" ]]; then
		return
	fi
	log "copying google/api protos from ${GOOGLEAPIS_SOURCE_MODULE}@${GOOGLEAPIS_SOURCE_VERSION}"
	local dir
	dir="$(cd "$(mktemp -d)" && GOFLAGS= go mod download -json "${GOOGLEAPIS_SOURCE_MODULE}@${GOOGLEAPIS_SOURCE_VERSION}" |
		awk -F'"' '$2 == "Dir" {print $4}')"
	local src="${dir}/third_party/googleapis"
	mkdir -p "${GOOGLEAPIS}/google/api"
	install -m 0644 "${src}/google/api/annotations.proto" "${src}/google/api/http.proto" "${GOOGLEAPIS}/google/api/"
	install -m 0644 "${src}/LICENSE" "${GOOGLEAPIS}/LICENSE"
}

ensure_protoc
ensure_plugin protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "${PROTOC_GEN_GO_VERSION}"
ensure_plugin protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "${PROTOC_GEN_GO_GRPC_VERSION}"
ensure_plugin protoc-gen-grpc-gateway github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway "${GRPC_GATEWAY_VERSION}"
ensure_plugin protoc-gen-openapiv2 github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2 "${GRPC_GATEWAY_VERSION}"
ensure_googleapis

cd "${ROOT}"
mapfile -t protos < <(find api -name '*.proto' -type f | LC_ALL=C sort)
if [[ ${#protos[@]} -eq 0 ]]; then
	log "no .proto files under api/"
	exit 1
fi

out="${ROOT}"
if ${check}; then
	out="$(mktemp -d)"
	trap 'rm -rf "${out}"' EXIT
fi

# The include path is the repository root, so a file registers as
# "api/<pkg>/v1/<name>.proto" and outputs land next to it with
# paths=source_relative.
protoc \
	-I "${ROOT}" \
	-I "${GOOGLEAPIS}" \
	--plugin=protoc-gen-go="${GOBIN_DIR}/protoc-gen-go" \
	--plugin=protoc-gen-go-grpc="${GOBIN_DIR}/protoc-gen-go-grpc" \
	--plugin=protoc-gen-grpc-gateway="${GOBIN_DIR}/protoc-gen-grpc-gateway" \
	--plugin=protoc-gen-openapiv2="${GOBIN_DIR}/protoc-gen-openapiv2" \
	--go_out="${out}" --go_opt=paths=source_relative \
	--go-grpc_out="${out}" --go-grpc_opt=paths=source_relative \
	--grpc-gateway_out="${out}" --grpc-gateway_opt=paths=source_relative \
	--openapiv2_out="${out}" \
	"${protos[@]}"

if ${check}; then
	status=0
	while IFS= read -r f; do
		rel="${f#"${out}"/}"
		if ! cmp -s "${f}" "${ROOT}/${rel}"; then
			log "stale: ${rel} (run api/generate.sh)"
			status=1
		fi
	done < <(find "${out}" -type f | LC_ALL=C sort)
	if [[ ${status} -eq 0 ]]; then
		log "generated code is up to date (${#protos[@]} proto files)"
	fi
	exit "${status}"
fi
log "generated code for ${#protos[@]} proto files"
