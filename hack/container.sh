#!/usr/bin/env bash
# Booted Debian containers for the install tests of several hosts
# (hack/test-install.sh, hack/test-fleet.sh, hack/test-rpm.sh): sourced, not run. Each container
# is a copy of the cached bookworm rootfs that hack/test-install.sh builds,
# booted with systemd-nspawn, with a fixture RAPL tree of its own in
# /var/lib/joulie-fixture (there is no RAPL in a container).
#
# The sourcing script sets `work` (a scratch directory) and calls
# ct_cleanup from its exit trap; every container it booted is powered off.

ct_suite=bookworm
ct_fixture=/var/lib/joulie-fixture
# The fixture's package-0: long-term limit 200 W with a 200 W maximum; a
# 60% eco profile makes it 120 W.
ct_original=200000000
ct_capped=120000000

# The rootfs every container boots, which hack/test-install.sh builds and
# caches as a tarball keyed by its package list. python3 and python3-apt
# are for Ansible's modules; the rest is what a booted, apt-managed host
# needs. ct_extra is installed with apt after debootstrap (whose --include
# does not resolve dependencies): python3-cryptography, for the role's key
# and CSR, which the role would otherwise download on every run.
ct_include=systemd,systemd-sysv,dbus,apt,ca-certificates,python3,python3-apt
ct_extra=python3-cryptography
ct_rootfs_tarball() {
	local key cache
	cache=${JOULIE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/joulie}
	key=$(printf '%s %s minbase %s %s' "$ct_suite" "$(dpkg --print-architecture)" "$ct_include" "$ct_extra" | sha256sum | cut -c1-12)
	echo "$cache/rootfs-$ct_suite-$key.tar"
}

declare -A ct_nspawn=() ct_leader=()

# ct_make_fixture DIR: a one-package Xeon host under DIR, with the kernel's
# file modes, from which the agent decides what it may write.
ct_make_fixture() {
	local fx=$1 ct zone cpu
	ct="$fx/sys/devices/virtual/powercap/intel-rapl"
	zone="$ct/intel-rapl:0"
	mkdir -p "$zone/power" "$fx/sys/class/powercap" "$fx/proc"
	ln -s ../../devices/virtual/powercap/intel-rapl "$fx/sys/class/powercap/intel-rapl"
	ln -s ../../devices/virtual/powercap/intel-rapl/intel-rapl:0 "$fx/sys/class/powercap/intel-rapl:0"
	echo 1 >"$ct/enabled"
	echo package-0 >"$zone/name"
	echo 1 >"$zone/enabled"
	echo 1000000000 >"$zone/energy_uj"
	echo 262143328850 >"$zone/max_energy_range_uj"
	echo long_term >"$zone/constraint_0_name"
	echo "$ct_original" >"$zone/constraint_0_power_limit_uw"
	echo 999424 >"$zone/constraint_0_time_window_us"
	echo 200000000 >"$zone/constraint_0_max_power_uw"
	echo short_term >"$zone/constraint_1_name"
	echo 240000000 >"$zone/constraint_1_power_limit_uw"
	echo 2440 >"$zone/constraint_1_time_window_us"
	echo 400000000 >"$zone/constraint_1_max_power_uw"
	chmod 0444 "$zone/name" "$zone/max_energy_range_uj" "$zone"/constraint_*_name "$zone"/constraint_*_max_power_uw
	chmod 0400 "$zone/energy_uj"
	: >"$fx/proc/cpuinfo"
	for cpu in 0 1 2 3; do
		printf '%s\n' "processor	: $cpu" "vendor_id	: GenuineIntel" "cpu family	: 6" "model		: 106" \
			"model name	: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz" "physical id	: 0" \
			"siblings	: 4" "core id		: $cpu" "cpu cores	: 4" "" >>"$fx/proc/cpuinfo"
	done
	echo "MemTotal:       16384000 kB" >"$fx/proc/meminfo"
}

# ct_root NAME: the container's root directory on this host.
ct_root() { echo "$work/$1/rootfs"; }
# ct_limit NAME: the fixture's long-term limit of package-0, in µW.
ct_limit() { cat "$(ct_root "$1")$ct_fixture/sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw"; }

# ct_unpack NAME TARBALL: the container's rootfs and fixture. The unit as
# packaged may write only real sysfs; a drop-in lets it write the fixture.
ct_unpack() {
	local root
	root=$(ct_root "$1")
	mkdir -p "$root"
	tar --numeric-owner --xattrs -C "$root" -xf "$2"
	ct_make_fixture "$root$ct_fixture"
	mkdir -p "$root/etc/systemd/system/joulie-agentd.service.d"
	printf '[Service]\nReadWritePaths=%s\n' "$ct_fixture" >"$root/etc/systemd/system/joulie-agentd.service.d/test-fixture.conf"
}

# ct_start NAME NSPAWN-ARGS...: boots the container in the background.
ct_start() {
	local name=$1
	shift
	systemd-nspawn --register=no --keep-unit -b -D "$(ct_root "$name")" -M "$name" \
		--console=passive "$@" >"$work/$name/nspawn.log" 2>&1 &
	ct_nspawn[$name]=$!
}

# ct_wait_booted NAME: waits until the container's systemd reports
# "running"; sets ct_leader[NAME], its init's pid on this host.
ct_wait_booted() {
	local name=$1 pid=${ct_nspawn[$1]} leader="" state=""
	# The container's init is the child of nspawn that has become systemd.
	for _ in $(seq 300); do
		leader=$(ps -o pid=,comm= --ppid "$pid" | awk '$2 == "systemd" { print $1; exit }' || true)
		[ -n "$leader" ] && break
		kill -0 "$pid" 2>/dev/null || { cat "$work/$name/nspawn.log" >&2; echo "$name: systemd-nspawn exited" >&2; return 1; }
		sleep 0.1
	done
	[ -n "$leader" ] || { echo "$name: no systemd under systemd-nspawn" >&2; return 1; }
	ct_leader[$name]=$leader
	# Until init has its bus, is-system-running answers "offline" at once.
	for _ in $(seq 300); do
		state=$(timeout 120 nsenter --target "$leader" --mount --pid -- /bin/systemctl is-system-running --wait 2>/dev/null || true)
		case "$state" in running | degraded | maintenance | stopping) break ;; esac
		sleep 0.2
	done
	[ "$state" = running ] || { ct_in "$name" systemctl --failed --no-pager >&2 || true; echo "$name: did not boot: $state" >&2; return 1; }
}

# ct_in NAME COMMAND...: runs COMMAND in the container, as root.
ct_in() {
	nsenter --target "${ct_leader[$1]}" --mount --uts --ipc --net --pid -- \
		/usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "${@:2}"
}
# ct_unit NAME PROPERTY: a property of the container's joulie-agentd.service.
ct_unit() { ct_in "$1" systemctl show -P "$2" joulie-agentd.service; }

# ct_cleanup: powers every container off (SIGTERM makes nspawn shut the
# container down cleanly; SIGKILL after 20 s).
ct_cleanup() {
	local name pid
	for name in "${!ct_nspawn[@]}"; do
		kill -TERM "${ct_nspawn[$name]}" 2>/dev/null || true
	done
	for name in "${!ct_nspawn[@]}"; do
		pid=${ct_nspawn[$name]}
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}

# kube PYTHON: runs PYTHON as the admin of the test cluster in $cluster
# (joulie-testcluster's directory), with the Python client that
# kubernetes.core and the role's approval module use, as core, certs and
# custom. The caller defines netns, which runs a command where the
# cluster's loopback listeners are.
kube() {
	netns /usr/bin/python3 -c '
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
core, certs, custom = client.CoreV1Api(), client.CertificatesV1Api(), client.CustomObjectsApi()
exec(sys.argv[2])
' "$cluster/admin.kubeconfig" "$1"
}
