#!/usr/bin/env bash
# The .rpm installed for real: no Fedora or EL mirror is reachable here, so
# Debian's own rpm installs joulie-agent's .rpm into a booted Debian
# container (hack/container.sh). The package's scriptlets run under
# systemd: %post creates group joulie, enables and starts the agent, which
# then caps the fixture host as its edited agentd.yaml says; rpm -U to a
# newer build keeps that edited agentd.yaml (%config(noreplace)) and
# restarts the agent on the new binary; rpm -e stops it, which puts the
# original limit back, and removes the units.
#
# What this does not prove about dnf: dependency resolution (glibc is a
# dpkg package here, so rpm cannot see it), repository metadata, GPG
# checks of signed packages, and the RPM macros of a Red Hat system
# (%_unitdir, systemd's rpm macros, sysusers at install): those scriptlets
# run with Debian's systemd 252 and shadow tools.
#
# Usage: hack/test-rpm.sh RPM NEWER_RPM   (needs root)
# Environment: JOULIE_CACHE_DIR (rootfs cache), JOULIE_KEEP=1 keeps the
# container's directory.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/container.sh

step() { printf '\n== %s\n' "$*"; }
fail() {
	printf 'test-rpm: FAIL: %s\n' "$*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || fail "needs root (systemd-nspawn)"
[ "$#" -eq 2 ] || { echo "usage: $0 RPM NEWER_RPM" >&2; exit 2; }
for f in "$1" "$2"; do [ -f "$f" ] || fail "no package $f (make package)"; done
rpm_file=$(realpath "$1") newer_rpm=$(realpath "$2")

base=$(ct_rootfs_tarball)
[ -f "$base" ] || fail "no cached rootfs $base (hack/test-install.sh builds it)"
# The base rootfs with Debian's rpm added, cached beside it. The base stays
# as it is, so the other install tests keep their cache.
tarball=${base%.tar}-rpm.tar
if [ ! -f "$tarball" ]; then
	step "add Debian's rpm to the rootfs (cached afterwards as $tarball)"
	build=$(mktemp -d /var/tmp/joulie-rootfs-rpm.XXXXXX)
	trap 'rm -rf "$build"' EXIT
	tar --numeric-owner --xattrs -C "$build" -xf "$base"
	{ chroot "$build" apt-get update -q && DEBIAN_FRONTEND=noninteractive chroot "$build" apt-get install -y -q --no-install-recommends rpm; } \
		>"$build.log" 2>&1 || { tail -n 30 "$build.log" >&2; rm -f "$build.log"; fail "apt-get install rpm in the rootfs"; }
	rm -f "$build.log"
	rm -rf "$build/var/cache/apt/archives/"*.deb "$build/var/lib/apt/lists/"*_Packages
	tar --numeric-owner --xattrs -C "$build" -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
	rm -rf "$build"
	trap - EXIT
fi

work=$(mktemp -d /var/tmp/joulie-rpm.XXXXXX)
cleanup() {
	local rc=$?
	if [ "$rc" -ne 0 ] && [ -n "${ct_leader[rpm-test]:-}" ]; then
		echo "== journal of joulie-agentd (the test failed)" >&2
		ct_in rpm-test journalctl --no-pager -n 100 -u joulie-agentd.service >&2 || true
	fi
	ct_cleanup
	if [ "${JOULIE_KEEP:-}" = 1 ]; then echo "test-rpm: kept $work" >&2; else rm -rf "$work"; fi
	[ "$rc" -ne 0 ] || echo "test-rpm: PASS"
}
trap cleanup EXIT

wait_limit() {
	local want=$1 what=$2 got=""
	for _ in $(seq 150); do
		got=$(ct_limit rpm-test)
		[ "$got" = "$want" ] && { echo "ok: $what: limit $got uW"; return 0; }
		sleep 0.1
	done
	fail "$what: limit is $got uW, want $want"
}
wait_active() {
	local s=""
	for _ in $(seq 150); do
		s=$(ct_unit rpm-test ActiveState)
		[ "$s" = active ] && return 0
		sleep 0.1
	done
	fail "$1: joulie-agentd is $s, not active"
}

step "boot a container with Debian's rpm"
ct_unpack rpm-test "$tarball"
root=$(ct_root rpm-test)
cp "$rpm_file" "$newer_rpm" "$root/root/"
ct_start rpm-test --private-network
ct_wait_booted rpm-test

# Debian's rpm refuses to touch the system unless told it is meant
# (--force-debian). --nodeps: the one requirement, glibc >= 2.34, is met
# by Debian's libc6, which dpkg installed and rpm's database does not
# know. The check below fails when the package asks for anything else.
rpm_in() { ct_in rpm-test rpm --force-debian "$@"; }
step "rpm -i $(basename "$rpm_file")"
missing=$({ rpm_in -i --test "/root/$(basename "$rpm_file")" 2>&1 || true; } | sed -n 's/^[[:space:]]*\(.*\) is needed by .*/\1/p' | sort -u)
[ "$missing" = "glibc >= 2.34" ] || fail "the .rpm needs what --nodeps would hide; rpm -i --test says it lacks: ${missing:-nothing}"
echo "ok: the only requirement rpm cannot see is: $missing"
rpm_in -i --nodeps "/root/$(basename "$rpm_file")" || fail "rpm -i"
wait_active "after rpm -i (%post starts it)"
[ "$(ct_unit rpm-test UnitFileState)" = enabled ] || fail "%post did not enable joulie-agentd.service"
ct_in rpm-test getent group joulie >/dev/null || fail "%post did not create group joulie"
[ "$(ct_limit rpm-test)" = "$ct_original" ] || fail "the default configuration changed the fixture"
echo "ok: %post under systemd: group joulie, enabled and started, fixture untouched by the default config"

step "edit /etc/joulie/agentd.yaml: standalone eco at 60% of the fixture"
cat >"$root/etc/joulie/agentd.yaml" <<CONF
# Edited by the test: rpm -U must keep this file.
nodeName: rpm-test
hostRoot: $ct_fixture
metricsAddress: ""
reconcileInterval: 1s
nvmlLibraryPath: none
amdsmiLibraryPath: none
standalone:
  profile:
    profile: eco
    cpu:
      packagePowerCapPctOfMax: 60
CONF
ct_in rpm-test systemctl daemon-reload
ct_in rpm-test systemctl restart joulie-agentd.service
wait_active "after the restart"
wait_limit "$ct_capped" "capped by the rpm-installed agent"

step "rpm -U $(basename "$newer_rpm")"
conf_sum=$(sha256sum <"$root/etc/joulie/agentd.yaml")
pid=$(ct_unit rpm-test MainPID)
rpm_in -U --nodeps "/root/$(basename "$newer_rpm")" || fail "rpm -U"
want=$(rpm -qp --qf '%{VERSION}-%{RELEASE}' "$newer_rpm" 2>/dev/null)
got=$(rpm_in -q --qf '%{VERSION}-%{RELEASE}' joulie-agent)
[ "$got" = "$want" ] || fail "rpm -U: $got installed, want $want"
[ "$(sha256sum <"$root/etc/joulie/agentd.yaml")" = "$conf_sum" ] || fail "rpm -U replaced the edited /etc/joulie/agentd.yaml"
wait_active "after rpm -U"
[ "$(ct_unit rpm-test MainPID)" != "$pid" ] || fail "%postun did not restart the agent on the new binary"
wait_limit "$ct_capped" "capped after rpm -U"
echo "ok: upgraded to $got; the edited agentd.yaml kept; the agent restarted (pid $pid -> $(ct_unit rpm-test MainPID))"

step "rpm -e joulie-agent"
rpm_in -e joulie-agent || fail "rpm -e"
wait_limit "$ct_original" "after rpm -e (%preun stops the agent, which restores)"
[ "$(ct_unit rpm-test LoadState)" = not-found ] || fail "joulie-agentd.service still known to systemd after rpm -e"
[ ! -e "$root/usr/bin/joulie-agentd" ] || fail "rpm -e left /usr/bin/joulie-agentd"
echo "ok: the agent stopped, the original 200 W is back, the units are gone"
