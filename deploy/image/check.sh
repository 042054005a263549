#!/usr/bin/env bash
# Checks an image built by build.sh without running a container (the
# sandboxes CI runs in refuse `podman run`): the OCI labels and the user
# from `image inspect`, then the binaries copied out of the image are static
# and report the labelled version and revision with --version.
#
#   deploy/image/check.sh localhost/cellrouter:v1.2.0
#
# BUILD_TOOL picks podman or buildah, as in build.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
image=${1:?usage: deploy/image/check.sh IMAGE}
if ! command -v go >/dev/null 2>&1; then
	export PATH="$PATH:/usr/local/go/bin"
fi
tool=${BUILD_TOOL:-}
if [ -z "$tool" ]; then
	for t in podman buildah; do
		if command -v "$t" >/dev/null 2>&1; then tool=$t; break; fi
	done
fi
fail() { echo "check.sh: $image: $*" >&2; exit 1; }

inspect() {
	case "$tool" in
	podman) podman image inspect --format "$1" "$image" ;;
	buildah) buildah inspect --type image --format "${1//.Config./.OCIv1.Config.}" "$image" ;;
	esac
}
label() { inspect "{{index .Config.Labels \"org.opencontainers.image.$1\"}}"; }

version=$(label version)
revision=$(label revision)
source=$(label source)
[ -n "$version" ] && [ "$version" != "<no value>" ] || fail "no org.opencontainers.image.version label"
[[ "$revision" =~ ^[0-9a-f]{40}$ ]] || fail "org.opencontainers.image.revision label $revision: want a full commit hash"
[[ "$source" == https://* ]] || fail "org.opencontainers.image.source label $source: want a URL"
user=$(inspect '{{.Config.User}}')
[ "$user" = "65532:65532" ] || fail "user $user, want 65532:65532 (non-root)"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
case "$tool" in
podman)
	ctr=$(podman create "$image")
	for b in celld globald loadtest; do podman cp "$ctr:/usr/local/bin/$b" "$out/$b"; done
	podman cp "$ctr:/etc/ssl/certs/ca-certificates.crt" "$out/ca.crt"
	podman rm "$ctr" >/dev/null
	;;
buildah)
	ctr=$(buildah from "$image")
	mnt=$(buildah mount "$ctr")
	for b in celld globald loadtest; do cp "$mnt/usr/local/bin/$b" "$out/$b"; done
	cp "$mnt/etc/ssl/certs/ca-certificates.crt" "$out/ca.crt"
	buildah umount "$ctr" >/dev/null
	buildah rm "$ctr" >/dev/null
	;;
*) fail "BUILD_TOOL=$tool: want podman or buildah" ;;
esac
[ -s "$out/ca.crt" ] || fail "no CA bundle at /etc/ssl/certs/ca-certificates.crt"

for b in celld globald loadtest; do
	go version -m "$out/$b" | grep -q 'CGO_ENABLED=0' || fail "$b was not built with CGO off"
	line=$("$out/$b" --version)
	case "$line" in
	"$b $version (revision $revision, "*) echo "check.sh: $line" ;;
	*) fail "$b --version printed \"$line\", want \"$b $version (revision $revision, ...)\"" ;;
	esac
done
echo "check.sh: $image: labels (version $version, revision $revision, source $source), user $user, static binaries: ok"
