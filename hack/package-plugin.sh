#!/usr/bin/env bash
# Builds the kubectl joulie release: one tarball per platform
# (kubectl-joulie_<version>_<os>_<arch>.tar.gz holding the binary and
# LICENSE) and the krew manifest packaging/krew/joulie.yaml with the
# version, the download location and each tarball's sha256 filled in, all
# into OUTDIR (dist/plugin). `make plugin-release` runs it.
#
# usage: package-plugin.sh OUTDIR
#
# The binary is pure Go (CGO_ENABLED=0), so every platform cross-builds
# here. Reproducible: -trimpath, no VCS stamping, and the tarballs'
# owners, order and times fixed (SOURCE_DATE_EPOCH, the last commit's).
# BASE_URL is where the tarballs will be published.
set -euo pipefail
cd "$(dirname "$0")/.."

# The platforms krew offers the plugin on; the manifest lists the same
# (TestKrewManifest checks).
PLATFORMS="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"

outdir=$1
GO=${GO:-go}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
pkg_version=${PKG_VERSION:-$(hack/package-version.sh)}
# krew wants a semantic version with a v: 0.0.0~git... becomes
# v0.0.0-git..., a pre-release of 0.0.0.
VERSION=v${pkg_version//\~/-}
BASE_URL=${BASE_URL:-https://joulie.io/releases/kubectl-joulie/$VERSION}
ldflags="-s -w -X joulie.io/joulie/pkg/version.Version=$VERSION"

rm -rf "$outdir"
mkdir -p "$outdir"
# The template's header comment is about the template: it stays there.
manifest=$(grep -v '^#' packaging/krew/joulie.yaml)
for platform in $PLATFORMS; do
	os=${platform%/*} arch=${platform#*/}
	stage=$(mktemp -d)
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -buildvcs=false -ldflags "$ldflags" \
		-o "$stage/kubectl-joulie" ./controller/cmd/kubectl-joulie
	cp packaging/doc/copyright "$stage/LICENSE"
	touch -d "@$SOURCE_DATE_EPOCH" "$stage/kubectl-joulie" "$stage/LICENSE"
	tarball=kubectl-joulie_${VERSION}_${os}_${arch}.tar.gz
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
		-C "$stage" -cf - kubectl-joulie LICENSE | gzip -n -9 >"$outdir/$tarball"
	rm -rf "$stage"
	sum=$(sha256sum "$outdir/$tarball" | cut -d' ' -f1)
	manifest=${manifest//"\${SHA256_${os}_${arch}}"/$sum}
done
manifest=${manifest//"\${VERSION}"/$VERSION}
manifest=${manifest//"\${BASE_URL}"/$BASE_URL}
if grep -q '\${' <<<"$manifest"; then
	echo "package-plugin: the manifest keeps a placeholder:" >&2
	grep '\${' <<<"$manifest" >&2
	exit 1
fi
printf '%s\n' "$manifest" >"$outdir/joulie.yaml"
ls "$outdir"
