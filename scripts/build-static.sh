#!/usr/bin/env bash
# Builds dlq-worker and dlq-admin as fully static Linux binaries: cgo against musl, with the
# librdkafka that confluent-kafka-go bundles for musl (`-tags musl`), linked with -static.
# The Dockerfile and `make test` (examples/demo's test) both build through this script, so
# the binaries tested are the ones the image ships.
#
#   scripts/build-static.sh OUTDIR [PACKAGE...]   (default: ./cmd/dlq-worker ./cmd/dlq-admin)
#
# musl-gcc comes from Debian's musl-tools, installed when missing (as root).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: scripts/build-static.sh OUTDIR [PACKAGE...]}
shift
[ $# -gt 0 ] || set -- ./cmd/dlq-worker ./cmd/dlq-admin
scripts/stack.sh need musl-gcc:musl-tools
mkdir -p "$out"
# -trimpath: no build machine paths in the binaries. netgo/osusergo: Go's own resolver and
# user lookup, since a static binary cannot load NSS modules.
CGO_ENABLED=1 CC=musl-gcc go build -trimpath -tags musl,netgo,osusergo \
  -ldflags '-s -w -linkmode external -extldflags "-static"' -o "$out/" "$@"
