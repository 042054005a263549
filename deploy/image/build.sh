#!/usr/bin/env bash
# Builds the cellrouter OCI image: static celld, globald and loadtest (CGO
# off, stripped, version-stamped) FROM scratch, running as uid 65532, with a
# CA bundle and the OCI labels source, revision, version and created. The
# tag is the version from `git describe`.
#
#   deploy/image/build.sh                 # localhost/cellrouter:<git describe>
#   IMAGE=registry.example.com/cellrouter deploy/image/build.sh
#   VERSION=v1.2.0 GOARCH=arm64 deploy/image/build.sh
#
# Environment: IMAGE (repository, default localhost/cellrouter), VERSION
# (default git describe --tags --always --dirty), GOARCH (default the host's),
# CA_BUNDLE (default /etc/ssl/certs/ca-certificates.crt, Debian's
# ca-certificates), BUILD_TOOL (podman or buildah; default whichever is
# installed, podman first). The last line printed is the image reference.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v go >/dev/null 2>&1; then
	export PATH="$PATH:/usr/local/go/bin"
fi
tool=${BUILD_TOOL:-}
if [ -z "$tool" ]; then
	for t in podman buildah; do
		if command -v "$t" >/dev/null 2>&1; then tool=$t; break; fi
	done
fi
if [ -z "$tool" ]; then
	echo "build.sh: neither podman nor buildah is installed (apt-get install -y podman buildah)" >&2
	exit 1
fi

version=${VERSION:-$(git describe --tags --always --dirty)}
revision=$(git rev-parse HEAD)
# The commit's time, not the build's: the same commit builds the same labels.
created=$(git log -1 --format=%cI HEAD)
module=$(go list -m)
source=${SOURCE_URL:-https://${module}}
image=${IMAGE:-localhost/cellrouter}
goarch=${GOARCH:-$(go env GOARCH)}
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
if [ ! -s "$ca" ]; then
	echo "build.sh: no CA bundle at $ca (apt-get install -y ca-certificates, or set CA_BUNDLE)" >&2
	exit 1
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/bin" "$ctx/etc/ssl/certs" "$ctx/tmp"
chmod 1777 "$ctx/tmp"

stamp="-X ${module}/internal/buildinfo.version=${version} -X ${module}/internal/buildinfo.revision=${revision}"
echo "build.sh: go build ($version, linux/$goarch, CGO off)" >&2
CGO_ENABLED=0 GOOS=linux GOARCH=$goarch go build -trimpath -buildvcs=false \
	-ldflags "-s -w $stamp" -o "$ctx/bin/" ./cmd/celld ./cmd/globald ./cmd/loadtest
chmod 0555 "$ctx"/bin/*

cp "$ca" "$ctx/etc/ssl/certs/ca-certificates.crt"
chmod 0444 "$ctx/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\ncellrouter:x:65532:65532:cellrouter:/nonexistent:/sbin/nologin\n' >"$ctx/etc/passwd"
printf 'root:x:0:\ncellrouter:x:65532:\n' >"$ctx/etc/group"
chmod 0444 "$ctx/etc/passwd" "$ctx/etc/group"

args=(--file deploy/image/Containerfile --platform "linux/$goarch" --tag "$image:$version"
	--build-arg "VERSION=$version" --build-arg "REVISION=$revision"
	--build-arg "CREATED=$created" --build-arg "SOURCE=$source")
echo "build.sh: $tool build $image:$version" >&2
case "$tool" in
podman) podman build --quiet --layers=false "${args[@]}" "$ctx" >&2 ;;
buildah) buildah build --quiet --layers=false "${args[@]}" "$ctx" >&2 ;;
*) echo "build.sh: BUILD_TOOL=$tool: want podman or buildah" >&2; exit 1 ;;
esac
echo "$image:$version"
