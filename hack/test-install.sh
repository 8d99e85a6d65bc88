#!/usr/bin/env bash
# The install test: the joulie-agent .deb in a booted Debian system.
#
# A bookworm rootfs (debootstrap, cached as a tarball keyed by its package
# list) boots with systemd-nspawn. Inside it, apt installs the .deb, and the
# test checks that the service becomes active (READY=1), that
# joulie-agentctl answers root and group joulie and refuses everyone else,
# that a stop and a SIGKILL both put the original power limits back, and
# that apt purge leaves nothing behind. There is no RAPL in a container:
# the agent runs against a fixture sysfs tree (hostRoot) with a standalone
# eco profile, so its writes and restores are visible as file contents.
# Then hack/test-ansible.sh rolls the agent out into the same container
# with the Ansible role, twice.
#
# Usage: hack/test-install.sh [path/to/joulie-agent.deb]
# (default: the newest dist/joulie-agent_*_amd64.deb, from make package).
# Needs root. Environment:
#   JOULIE_CACHE_DIR        rootfs cache (default ~/.cache/joulie)
#   JOULIE_DEBIAN_MIRROR    debootstrap mirror (default: this host's apt mirror)
#   JOULIE_SKIP_ANSIBLE=1   stop after the package checks
#   JOULIE_KEEP=1           keep the container's directory on exit
#   NFPM                    the pinned nfpm, to package a newer version for the upgrade
#   JOULIE_HELM, GO         the pinned helm and go, for hack/test-ansible.sh
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }
fail() {
	printf 'test-install: FAIL: %s\n' "$*" >&2
	exit 1
}

if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || fail "needs root (debootstrap and systemd-nspawn), and there is no sudo"
	exec sudo --preserve-env=JOULIE_CACHE_DIR,JOULIE_DEBIAN_MIRROR,JOULIE_SKIP_ANSIBLE,JOULIE_KEEP,XDG_CACHE_HOME "$0" "$@"
fi

deb=${1:-$(ls -t dist/joulie-agent_*_amd64.deb 2>/dev/null | head -n1 || true)}
[ -n "$deb" ] && [ -f "$deb" ] || fail "no .deb given and none in dist/ (run make package)"
deb=$(realpath "$deb")

. hack/container.sh
suite=$ct_suite include=$ct_include extra=$ct_extra
tarball=$(ct_rootfs_tarball)
cache=$(dirname "$tarball")

# The mirror this host's apt already uses for Debian itself.
host_mirror() {
	local m
	m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -oE 'https?://[^ ]*/debian/?( |$)' | grep -v security | head -n1 | tr -d ' ' || true)
	echo "${m:-http://deb.debian.org/debian}"
}

# --- the rootfs --------------------------------------------------------------

if [ ! -f "$tarball" ]; then
	mirror=${JOULIE_DEBIAN_MIRROR:-$(host_mirror)}
	step "debootstrap $suite from $mirror (cached afterwards as $tarball)"
	mkdir -p "$cache"
	build=$(mktemp -d /var/tmp/joulie-rootfs.XXXXXX)
	trap 'rm -rf "$build"' EXIT
	debootstrap --variant=minbase --include="$include" "$suite" "$build/rootfs" "$mirror" >"$build/debootstrap.log" 2>&1 ||
		{ tail -n 30 "$build/debootstrap.log" >&2; fail "debootstrap"; }
	DEBIAN_FRONTEND=noninteractive chroot "$build/rootfs" apt-get install -y -q --no-install-recommends $extra \
		>>"$build/debootstrap.log" 2>&1 || { tail -n 30 "$build/debootstrap.log" >&2; fail "apt-get install $extra in the rootfs"; }
	rm -rf "$build/rootfs/var/cache/apt/archives/"*.deb "$build/rootfs/var/lib/apt/lists/"*_Packages
	# An empty machine-id: systemd makes one at each boot.
	: >"$build/rootfs/etc/machine-id"
	tar --numeric-owner --xattrs -C "$build/rootfs" -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
	rm -rf "$build"
	trap - EXIT
fi

# --- boot --------------------------------------------------------------------

work=$(mktemp -d /var/tmp/joulie-install.XXXXXX)
root="$work/rootfs"
nspawn_pid=""
leader=""

inside() {
	nsenter --target "$leader" --mount --uts --ipc --net --pid -- \
		/usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}

cleanup() {
	local rc=$?
	if [ "$rc" -ne 0 ] && [ -n "$leader" ]; then
		echo "== journal of joulie-agentd (the test failed)" >&2
		inside journalctl --no-pager -n 200 -u joulie-agentd.service -u joulie-agentd.socket >&2 || true
	fi
	if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
		# SIGTERM makes nspawn power the container off cleanly.
		kill -TERM "$nspawn_pid" 2>/dev/null || true
		for _ in $(seq 100); do
			kill -0 "$nspawn_pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$nspawn_pid" 2>/dev/null || true
		wait "$nspawn_pid" 2>/dev/null || true
	fi
	if [ "${JOULIE_KEEP:-}" = 1 ]; then
		echo "test-install: kept $work" >&2
	else
		rm -rf "$work"
	fi
	if [ "$rc" -eq 0 ]; then
		echo "test-install: PASS"
	fi
}
trap cleanup EXIT

step "unpack the cached rootfs"
mkdir "$root"
tar --numeric-owner --xattrs -C "$root" -xf "$tarball"

# The fixture host, written where the container sees it as
# /var/lib/joulie-fixture: one Xeon package, long-term limit 200 W with a
# 200 W maximum. A 60% eco profile makes it 120 W.
fixture=$ct_fixture
zone_rel="sys/class/powercap/intel-rapl:0"
limit_file="$root$fixture/$zone_rel/constraint_0_power_limit_uw"
original=$ct_original
capped=$ct_capped

ct_make_fixture "$root$fixture"
cp "$deb" "$root/root/"
deb_in="/root/$(basename "$deb")"

step "boot $suite with systemd-nspawn -b"
systemd-nspawn --register=no --keep-unit -b -D "$root" -M joulie-install \
	--private-network --console=passive >"$work/nspawn.log" 2>&1 &
nspawn_pid=$!
# The container's init is the child of nspawn that has become systemd
# (nspawn's own short-lived helpers are children too, before that).
for _ in $(seq 300); do
	leader=$(ps -o pid=,comm= --ppid "$nspawn_pid" | awk '$2 == "systemd" { print $1; exit }' || true)
	[ -n "$leader" ] && break
	kill -0 "$nspawn_pid" 2>/dev/null || { cat "$work/nspawn.log" >&2; fail "systemd-nspawn exited"; }
	sleep 0.1
done
[ -n "$leader" ] || { cat "$work/nspawn.log" >&2; fail "no systemd under systemd-nspawn"; }
# Until init has its bus, is-system-running answers "offline" at once.
state=""
for _ in $(seq 300); do
	state=$(timeout 120 nsenter --target "$leader" --mount --pid -- /bin/systemctl is-system-running --wait 2>/dev/null || true)
	case "$state" in running | degraded | maintenance | stopping) break ;; esac
	sleep 0.2
done
echo "system state: $state (init is pid $leader on the host)"
case "$state" in
running) ;;
*)
	inside systemctl --failed --no-pager || true
	fail "the container did not boot: $state"
	;;
esac

# --- install -----------------------------------------------------------------

# The long-term limit of the fixture's package-0, waiting up to 15 s for want.
wait_limit() {
	local want=$1 what=$2 got=""
	for _ in $(seq 150); do
		got=$(cat "$limit_file")
		[ "$got" = "$want" ] && { echo "ok: $what: limit $got uW"; return 0; }
		sleep 0.1
	done
	fail "$what: limit is $got uW, want $want"
}

# The unit's state: active means READY=1 came (Type=notify).
unit_prop() { inside systemctl show -P "$1" joulie-agentd.service; }
wait_active() {
	local what=$1 s=""
	for _ in $(seq 150); do
		s=$(unit_prop ActiveState)
		[ "$s" = active ] && { echo "ok: $what: active, status \"$(unit_prop StatusText)\""; return 0; }
		sleep 0.1
	done
	fail "$what: joulie-agentd is $s, not active"
}

step "apt install $deb_in"
inside apt-get install -y --no-install-recommends "$deb_in" >"$work/apt-install.log" 2>&1 ||
	{ cat "$work/apt-install.log" >&2; fail "apt install"; }
tail -n 3 "$work/apt-install.log"
wait_active "after apt install (default config: standalone, uncapped)"
[ "$(unit_prop UnitFileState)" = enabled ] || fail "joulie-agentd.service is not enabled"
[ "$(inside systemctl is-enabled joulie-agentd.socket)" = enabled ] || fail "joulie-agentd.socket is not enabled"
[ "$(cat "$limit_file")" = "$original" ] || fail "the default config changed the fixture"
inside dpkg -L joulie-agent | sort >"$work/dpkg-L"

step "configure: fixture host root, standalone eco at 60%"
# The package's unit may write only real sysfs; the test lets it write the
# fixture through a drop-in of its own.
mkdir -p "$root/etc/systemd/system/joulie-agentd.service.d"
cat >"$root/etc/systemd/system/joulie-agentd.service.d/test-fixture.conf" <<EOF
[Service]
ReadWritePaths=$fixture
EOF
cat >"$root/etc/joulie/agentd.yaml" <<EOF
nodeName: install-test
hostRoot: $fixture
metricsAddress: ""
reconcileInterval: 1s
nvmlLibraryPath: none
amdsmiLibraryPath: none
standalone:
  profile:
    profile: eco
    cpu:
      packagePowerCapPctOfMax: 60
EOF
inside systemctl daemon-reload
inside systemctl restart joulie-agentd.service
wait_active "after restart with the eco profile"
wait_limit "$capped" "eco profile applied"

step "joulie-agentctl status: root, group joulie, others"
inside useradd --create-home --groups joulie jmember
inside useradd --create-home jother
out=$(inside joulie-agentctl status --output json) || fail "status as root"
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["node"] == "install-test", d["node"]
assert d["profile"] == "eco", d["profile"]
assert d["cpu"]["result"] == "applied", d["cpu"]
assert d["cpu"]["appliedCapWatts"] == 120, d["cpu"]
' "$out" || fail "status --output json as root: $out"
echo "ok: root: profile eco, cpu applied at 120 W"
inside runuser -u jmember -- joulie-agentctl status >"$work/member.out" 2>&1 ||
	{ cat "$work/member.out" >&2; fail "status as a member of group joulie"; }
echo "ok: group joulie member: $(head -n1 "$work/member.out")"
rc=0
inside runuser -u jother -- joulie-agentctl status >"$work/other.out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || { cat "$work/other.out" >&2; fail "status as a non-member: exit $rc, want 1"; }
grep -qi 'permission\|group joulie' "$work/other.out" || { cat "$work/other.out" >&2; fail "no clear refusal for a non-member"; }
echo "ok: non-member refused (exit 1): $(cat "$work/other.out")"

step "systemctl stop restores the original limit"
inside systemctl stop joulie-agentd.service
wait_limit "$original" "after systemctl stop"
# The socket went down with the service, so a status call cannot
# start the agent again behind the operator's back.
if inside joulie-agentctl status >/dev/null 2>&1; then
	fail "joulie-agentctl status answered after systemctl stop: the socket started the agent again"
fi
sleep 1
wait_limit "$original" "after a status call on the stopped agent"

step "kill -9, then systemd restarts the agent"
inside systemctl start joulie-agentd.service
wait_active "started again"
wait_limit "$capped" "capped again"
restarts=$(unit_prop NRestarts)
pid=$(unit_prop MainPID)
inside bash -c "kill -KILL $pid"
# ExecStopPost= (joulie-agentctl restore --offline) restores at once; the
# restart follows RestartSec=5s later and caps again.
wait_limit "$original" "after kill -9 of pid $pid (ExecStopPost restore)"
for _ in $(seq 150); do
	[ "$(unit_prop NRestarts)" -gt "$restarts" ] && break
	sleep 0.1
done
[ "$(unit_prop NRestarts)" -gt "$restarts" ] || fail "systemd did not restart the killed agent"
wait_active "restarted after kill -9"
wait_limit "$capped" "capped after the restart"
[ "$(unit_prop MainPID)" != "$pid" ] || fail "same pid after the restart"

step "kill -9 with no ExecStopPost: the next start restores first"
# The daemon's own crash recovery: a journal left by a killed daemon is
# restored before anything is enforced again. Without ExecStopPost= the
# limit stays capped until the next start, which restores the originals
# (the journal), then the stopped agent's restore keeps them.
cat >"$root/etc/systemd/system/joulie-agentd.service.d/test-no-stoppost.conf" <<EOF
[Service]
ExecStopPost=
Restart=no
EOF
inside systemctl daemon-reload
inside systemctl restart joulie-agentd.service
wait_limit "$capped" "capped"
inside bash -c "kill -KILL $(unit_prop MainPID)"
sleep 1
[ "$(cat "$limit_file")" = "$capped" ] || fail "without ExecStopPost the limit should still be capped"
[ -s "$root/var/lib/joulie/originals.json" ] || fail "no journal of originals after kill -9"
echo "ok: killed without ExecStopPost: still capped, journal kept"
rm "$root/etc/systemd/system/joulie-agentd.service.d/test-no-stoppost.conf"
inside systemctl daemon-reload
inside systemctl reset-failed joulie-agentd.service || true
since=$(inside date '+%Y-%m-%d %H:%M:%S')
inside systemctl start joulie-agentd.service
wait_active "started after the unrecovered kill"
inside journalctl --no-pager -u joulie-agentd.service --since "$since" -o cat | grep -i restor ||
	fail "the start after a crash did not restore the journal's originals"
wait_limit "$capped" "capped again after the crash recovery"

step "apt upgrade: the edited agentd.yaml stays, the agent restarts on the new package"
# The same binaries packaged as a newer version: what an upgrade does to
# the configuration and the running agent does not depend on the code.
[ -x "${NFPM:-}" ] || fail "NFPM must name the pinned nfpm (make test-install sets it)"
version=$(dpkg-deb -f "$deb" Version)
upgrade_version="${version%-*}+upgradetest"
PKG_VERSION=$upgrade_version hack/package.sh "$NFPM" "$work/upgrade" >/dev/null || fail "package $upgrade_version"
upgrade_deb=$(ls "$work/upgrade/"joulie-agent_*_amd64.deb)
cp "$upgrade_deb" "$root/root/"
conf_sum=$(sha256sum <"$root/etc/joulie/agentd.yaml")
pid=$(unit_prop MainPID)
inside apt-get install -y --no-install-recommends "/root/$(basename "$upgrade_deb")" >"$work/apt-upgrade.log" 2>&1 ||
	{ cat "$work/apt-upgrade.log" >&2; fail "apt install of the newer package"; }
rm "$root/root/$(basename "$upgrade_deb")"
[ "$(inside dpkg-query -W -f '${Version}' joulie-agent)" = "$upgrade_version-1" ] || fail "not upgraded: $(inside dpkg-query -W -f '${Version}' joulie-agent)"
[ "$(sha256sum <"$root/etc/joulie/agentd.yaml")" = "$conf_sum" ] || fail "the upgrade changed /etc/joulie/agentd.yaml"
! ls "$root"/etc/joulie/*.dpkg-* >/dev/null 2>&1 || fail "the upgrade left $(ls "$root"/etc/joulie/*.dpkg-*)"
echo "ok: upgraded to $upgrade_version-1; /etc/joulie/agentd.yaml kept as edited, no .dpkg-* file"
wait_active "after the upgrade"
[ "$(unit_prop MainPID)" != "$pid" ] || fail "the upgrade did not restart the running agent"
wait_limit "$capped" "capped after the upgrade"

step "apt purge joulie-agent leaves nothing behind"
inside apt-get purge -y joulie-agent >"$work/apt-purge.log" 2>&1 || { cat "$work/apt-purge.log" >&2; fail "apt purge"; }
tail -n 1 "$work/apt-purge.log"
wait_limit "$original" "after apt purge"
rm -rf "$root/etc/systemd/system/joulie-agentd.service.d" "$root$deb_in"
inside systemctl daemon-reload
left=""
while read -r f; do
	# Shared directories (/usr/bin, /lib as a link) stay.
	if [ ! -d "$root$f" ] && { [ -e "$root$f" ] || [ -L "$root$f" ]; }; then
		left="$left $f"
	fi
done <"$work/dpkg-L"
for d in /etc/joulie /var/lib/joulie /run/joulie /usr/share/doc/joulie-agent; do
	if [ -e "$root$d" ]; then left="$left $d"; fi
done
[ -z "$left" ] || fail "left behind by apt purge:$left"
# Anything else named after joulie: unit symlinks, deb-systemd-helper
# state, dpkg's records. The group joulie stays, as Debian leaves system
# groups behind (files may still belong to it).
stray=$(inside find / -xdev \( -path /proc -o -path /sys -o -path "$fixture" \) -prune -o -name '*joulie*' -print)
[ -z "$stray" ] || fail "left behind by apt purge: $stray"
[ "$(unit_prop LoadState)" = not-found ] || fail "joulie-agentd.service still known to systemd"
echo "ok: $(wc -l <"$work/dpkg-L") packaged paths, /etc/joulie, /var/lib/joulie, /run/joulie, units: gone"

if [ "${JOULIE_SKIP_ANSIBLE:-}" = 1 ]; then
	exit 0
fi

step "Ansible: roll out into the container (hack/test-ansible.sh)"
cp "$deb" "$work/"
hack/test-ansible.sh "$leader" "$work/$(basename "$deb")" "$work"
