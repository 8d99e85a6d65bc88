#!/usr/bin/env bash
# Checks the packages `make package` left in dist/:
#   - lintian --pedantic, info tags included, reports nothing on the .deb;
#   - rpmlint reports nothing on the .rpm (packaging/rpm/rpmlint.toml);
#   - systemd-analyze verify prints nothing for the units as packaged
#     (it exits 0 on unknown keys, so its output is what counts);
#   - systemd-analyze security rates the service at most MAX_EXPOSURE;
#   - packaging the same commit again gives the same bytes.
# None of it needs systemd running: verify and security --offline read
# unit files.
#
# usage: test-package.sh NFPM
set -euo pipefail
cd "$(dirname "$0")/.."

nfpm=$1
MAX_EXPOSURE=${MAX_EXPOSURE:-3.0}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
version=$(hack/package-version.sh)
revision=$(sed -n 's/^release: "\(.*\)"$/\1/p' nfpm.yaml)
deb=dist/joulie-agent_${version}-${revision}_amd64.deb
rpm=dist/joulie-agent-${version}-${revision}.x86_64.rpm

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() {
	echo "test-package: FAIL: $*" >&2
	failed=1
}

echo "== lintian $deb"
rc=0
out=$(lintian --pedantic --display-info --fail-on error,warning,info,pedantic "$deb" 2>&1) || rc=$?
# Its one complaint about CI running as root is not about the package.
out=$(echo "$out" | grep -v '^running with root privileges is not recommended!$' || true)
if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
	echo "$out"
	fail "lintian reports on $deb"
fi

echo "== rpmlint $rpm"
# nfpm writes absolute paths into the RPM's cpio archive, and rpmlint
# unpacks it with plain `cpio -id`, which would write them into / itself.
# A cpio first on PATH that keeps every file under rpmlint's directory
# prevents that.
mkdir "$work/safe-cpio"
cat >"$work/safe-cpio/cpio" <<'WRAP'
#!/bin/sh
exec /usr/bin/cpio --no-absolute-filenames "$@"
WRAP
chmod +x "$work/safe-cpio/cpio"
if ! PATH="$work/safe-cpio:$PATH" rpmlint --strict -c packaging/rpm/rpmlint.toml "$rpm" >"$work/rpmlint.out" 2>&1; then
	cat "$work/rpmlint.out"
	fail "rpmlint reports on $rpm"
fi

echo "== systemd-analyze verify"
# The units as packaged, with their programs pointing into the unpacked
# package, so verify checks that the commands exist; MANPATH lets it find
# the pages of Documentation=.
mkdir "$work/root" "$work/units"
dpkg-deb -x "$deb" "$work/root"
for unit in joulie-agentd.service joulie-agentd.socket; do
	sed "s|/usr/bin/joulie-|$work/root/usr/bin/joulie-|g" "$work/root/lib/systemd/system/$unit" >"$work/units/$unit"
done
out=$(MANPATH="$work/root/usr/share/man" systemd-analyze verify \
	"$work/units/joulie-agentd.service" "$work/units/joulie-agentd.socket" 2>&1) || true
if [ -n "$out" ]; then
	echo "$out"
	fail "systemd-analyze verify has something to say"
fi

echo "== systemd-analyze security"
out=$(systemd-analyze security --offline=true "$work/root/lib/systemd/system/joulie-agentd.service" 2>&1) || true
exposure=$(echo "$out" | sed -n 's/.*Overall exposure level for joulie-agentd.service: \([0-9.]*\).*/\1/p')
if [ -z "$exposure" ]; then
	echo "$out"
	fail "no exposure level from systemd-analyze security"
elif awk -v e="$exposure" -v max="$MAX_EXPOSURE" 'BEGIN { exit !(e > max) }'; then
	echo "$out"
	fail "exposure $exposure is above $MAX_EXPOSURE"
else
	echo "exposure $exposure (at most $MAX_EXPOSURE)"
fi

echo "== reproducibility"
hack/package.sh "$nfpm" "$work/again" >/dev/null
for f in "$deb" "$rpm"; do
	if ! cmp -s "$f" "$work/again/$(basename "$f")"; then
		fail "$(basename "$f") differs between two packaging runs of one commit"
	fi
done
sha256sum "$deb" "$rpm"

if [ "$failed" -ne 0 ]; then
	exit 1
fi
echo "test-package: all package checks passed"
