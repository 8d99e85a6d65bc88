#!/usr/bin/env bash
# Builds joulie-agent's .deb and .rpm from nfpm.yaml into OUTDIR (dist/).
# `make package` runs it after building joulie-agentd and joulie-agentctl
# into PKG_BIN (dist/bin); it generates the files nfpm.yaml takes from
# dist/stage/ (the binaries, manual pages, changelog) and the version.
#
# usage: package.sh NFPM OUTDIR
#
# Reproducible: every timestamp is SOURCE_DATE_EPOCH (the last commit's
# time unless set), gzip writes no name or time (-n), and nfpm orders the
# archives itself, so one commit gives the same packages, byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."

nfpm=$1 outdir=$2
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
export PKG_VERSION=${PKG_VERSION:-$(hack/package-version.sh)}
# The install tests package a second build, with a newer version string
# in its binaries, from a directory of their own.
export PKG_BIN=${PKG_BIN:-dist/bin}
revision=$(sed -n 's/^release: "\(.*\)"$/\1/p' nfpm.yaml)
maintainer=$(sed -n 's/^maintainer: //p' nfpm.yaml)

stage=dist/stage
rm -rf "$stage"
mkdir -p "$stage" "$outdir"

cp "$PKG_BIN/joulie-agentd" "$PKG_BIN/joulie-agentctl" "$stage/"
# Manual pages from the programs' own command definitions.
"$PKG_BIN/joulie-agentd" --man-page | gzip -n -9 >"$stage/joulie-agentd.8.gz"
"$PKG_BIN/joulie-agentctl" --man-page | gzip -n -9 >"$stage/joulie-agentctl.1.gz"
hack/package-changelog.sh "$PKG_VERSION" "$revision" "$maintainer" >"$stage/changelog.yml"

# cgo links libc dynamically: depend on the newest symbol version used.
GLIBC_MIN=$(objdump -T "$PKG_BIN/joulie-agentd" "$PKG_BIN/joulie-agentctl" |
	grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -V | tail -n1)
[ -n "$GLIBC_MIN" ] || { echo "package: no glibc symbol versions in the binaries" >&2; exit 1; }
export GLIBC_MIN

for packager in deb rpm; do
	"$nfpm" package --config nfpm.yaml --packager "$packager" --target "$outdir/" >/dev/null
done
ls "$outdir"/joulie-agent[_-]"$PKG_VERSION"-"$revision"*.{deb,rpm}
