#!/usr/bin/env bash
# Installs what the build and the tests need on a Debian machine, and only
# what is missing, so a warm machine pays nothing. Go tools are pinned in the
# Makefile and installed with `go install`; this script covers the system
# packages: gcc and the C library headers for cgo and the race detector,
# the Prometheus server the controller's facility poller is tested against,
# the IPMI BMC simulator its BMC client is tested against,
# what `make test-package` checks the .deb and .rpm with, Chromium for the
# demo report's check, and what
# `make test-install` boots a Debian container and runs Ansible with, and
# the CA certificates and podman of `make images` and `make test-images`.
set -euo pipefail

need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc)
[ -e /usr/include/stdlib.h ] || need+=(libc6-dev)
# `install-deps.sh demo` stops here: make demo needs only the C compiler
# (cgo for the agent, and the fleet compiles the fake NVML with it), and a
# newcomer's first command should not install the test tooling.
if [ "${1:-}" != demo ]; then
command -v git >/dev/null 2>&1 || need+=(git)
command -v diff >/dev/null 2>&1 || need+=(diffutils)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
# make package: objdump and objcopy (binutils comes with gcc, but say so).
command -v objcopy >/dev/null 2>&1 || need+=(binutils)
# make test-package: the linters, rpmlint's unpacker, systemd-analyze
# (verify and security --offline need no running systemd) and man, which
# verify uses to find the pages of Documentation=.
command -v lintian >/dev/null 2>&1 || need+=(lintian)
command -v rpmlint >/dev/null 2>&1 || need+=(rpmlint)
command -v rpm2cpio >/dev/null 2>&1 || need+=(rpm)
command -v cpio >/dev/null 2>&1 || need+=(cpio)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
command -v man >/dev/null 2>&1 || need+=(man-db)
# The state lock's test holds a lock with flock(1); make test-install
# enters its container with nsenter(1).
command -v flock >/dev/null 2>&1 || need+=(util-linux)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
# The agent's power-off path is tested against a private D-Bus bus with a
# fake logind on it (agentd/internal/logind/logindtest).
command -v dbus-daemon >/dev/null 2>&1 || need+=(dbus-daemon)
# The controller's BMC client is tested against Debian's IPMI BMC
# simulator, ipmi_sim.
command -v ipmi_sim >/dev/null 2>&1 || need+=(openipmi)
# The demo fleet's BMC nodes are ipmi_sim too, their power hook calls the
# fleet with curl, and their test drives them with ipmitool, a client
# independent of the controller's.
command -v ipmitool >/dev/null 2>&1 || need+=(ipmitool)
command -v curl >/dev/null 2>&1 || need+=(curl)
# The demo's test (test/cmd/joulie-demo) renders its HTML report in a
# headless browser and fails on a blank or broken page.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# make test-install: a Debian rootfs booted in a container, and the
# Ansible rollout into it (ansible brings community.docker, whose nsenter
# connection the test uses).
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v systemd-nspawn >/dev/null 2>&1 || need+=(systemd-container)
command -v ps >/dev/null 2>&1 || need+=(procps)
command -v ansible-playbook >/dev/null 2>&1 || need+=(ansible)
command -v ansible-lint >/dev/null 2>&1 || need+=(ansible-lint)
# The role's cluster identity step, run against the harness's API server:
# kubernetes.core and the role's approval module need the Python client in
# the Python Debian's Ansible runs on; the test signs its apt repository
# with gpg, indexes it with dpkg-scanpackages and reads the issued
# certificate with openssl.
/usr/bin/python3 -c 'import kubernetes' >/dev/null 2>&1 || need+=(python3-kubernetes)
command -v gpg >/dev/null 2>&1 || need+=(gpg)
command -v dpkg-scanpackages >/dev/null 2>&1 || need+=(dpkg-dev)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# make images: the images' CA certificates are the files of Debian's
# ca-certificates package. make test-images runs the images with Debian's
# podman, under runc (crun refuses this machine's hybrid cgroup layout).
[ -d /usr/share/ca-certificates/mozilla ] || need+=(ca-certificates)
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)
fi # not demo

if [ "${#need[@]}" -eq 0 ]; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing ${need[*]} and no apt-get here; install them by hand" >&2
	exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${need[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
