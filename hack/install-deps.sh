#!/usr/bin/env bash
# Installs what the build and the tests need on a Debian machine, and only
# what is missing, so a warm machine pays nothing. Go tools are pinned in the
# Makefile and installed with `go install`; this script covers the system
# packages (gcc and the C library headers for cgo and the race detector, and
# the Prometheus server the controller's facility poller is tested against).
set -euo pipefail

need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc)
[ -e /usr/include/stdlib.h ] || need+=(libc6-dev)
command -v git >/dev/null 2>&1 || need+=(git)
command -v diff >/dev/null 2>&1 || need+=(diffutils)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)

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
