#!/usr/bin/env bash
# Prints the version the .deb and .rpm carry, derived from `git describe`
# so that it is valid for both formats and grows with every commit:
#
#   tag v1.4.0, exactly              1.4.0
#   tag v1.4.0-rc.1                  1.4.0~rc.1      (sorts before 1.4.0)
#   5 commits after v1.4.0           1.4.0+git<UTC date>.<sha>
#   no tag yet                       0.0.0~git<UTC date>.<sha>
#   uncommitted changes              the above with .dirty appended
#
# <UTC date> is the commit's time (SOURCE_DATE_EPOCH, YYYYMMDDhhmmss), so
# later commits get higher versions; the short sha tells two builds of
# the same second apart. '-' is left out: both formats reserve it for the
# package revision (nfpm adds -1).
set -euo pipefail
cd "$(dirname "$0")/.."

epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
stamp=$(date -u -d "@$epoch" +%Y%m%d%H%M%S)
sha=$(git rev-parse --short=12 HEAD)
dirty=""
git diff --quiet HEAD -- 2>/dev/null || dirty=".dirty"

if desc=$(git describe --tags --match 'v[0-9]*' --long 2>/dev/null) &&
	[[ $desc =~ ^v([0-9][0-9A-Za-z.+-]*)-([0-9]+)-g[0-9a-f]+$ ]]; then
	base=${BASH_REMATCH[1]//-/\~}
	if [ "${BASH_REMATCH[2]}" = 0 ]; then
		echo "${base}${dirty}"
	else
		echo "${base}+git${stamp}.${sha}${dirty}"
	fi
else
	echo "0.0.0~git${stamp}.${sha}${dirty}"
fi
