#!/usr/bin/env bash
# Writes the changelog nfpm turns into changelog.Debian.gz and the RPM's
# %changelog: one entry for this version (with the package revision, as
# both formats expect), dated at the commit (SOURCE_DATE_EPOCH), listing
# the commits since the previous release tag, at most 30.
#
# usage: package-changelog.sh VERSION REVISION MAINTAINER > changelog.yml
set -euo pipefail
cd "$(dirname "$0")/.."

version=$1 revision=$2 maintainer=$3
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}

# The commits of this release: since the last tag before HEAD, else all.
range=HEAD
if prev=$(git describe --tags --match 'v[0-9]*' --abbrev=0 HEAD^ 2>/dev/null); then
	range="$prev..HEAD"
fi

# YAML single-quoted scalars: a quote is written twice.
quote() { printf "'%s'" "${1//\'/\'\'}"; }

echo "- semver: $(quote "$version-$revision")"
echo "  date: $(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"
echo "  packager: $(quote "$maintainer")"
echo "  deb:"
echo "    urgency: medium"
echo "    distributions: [stable]"
echo "  changes:"
git log --no-merges --max-count=30 --format='%h %s' "$range" |
	while read -r sha subject; do
		# Debian changelog lines stay under 80 columns. Cut at a space:
		# a word cut short ("befor...") is a spelling error to lintian.
		if [ "${#subject}" -gt 72 ]; then
			subject="${subject:0:70}"
			subject="${subject% *}..."
		fi
		echo "    - commit: $sha"
		echo "      note: $(quote "$subject")"
	done
