// Package buildinfo says which build of cellrouter a binary is, for the
// daemons' --version and the container image's labels.
//
// A release build stamps the version and the revision at link time (what
// deploy/image/build.sh does):
//
//	go build -ldflags "-X github.com/cellrouter/cellrouter/internal/buildinfo.version=v1.2.0 \
//	    -X github.com/cellrouter/cellrouter/internal/buildinfo.revision=$(git rev-parse HEAD)" ./cmd/...
//
// Without stamps, Read falls back to what the Go toolchain records in every
// binary built inside a Git checkout: the main module's version (a pseudo
// version, or "(devel)") and the VCS revision and whether the tree was
// modified. A binary built with neither reports version "devel".
package buildinfo
