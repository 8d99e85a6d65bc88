#!/usr/bin/env bash
# Fails when the generated code or CRDs in the tree are not what the API
# types in pkg/apis produce now, e.g. after a type was edited without
# running `make generate`. It regenerates in a scratch copy of the checkout
# and compares, so the working tree is never touched.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# The nested test module, build outputs and VCS data play no part in
# generation; leaving them out keeps the copy small.
tar -C "$repo" --exclude=./.git --exclude=./test --exclude=./bin --exclude=./dist -cf - . | tar -C "$scratch" -xf -

if ! "$scratch/hack/update-codegen.sh" >"$scratch/codegen.log" 2>&1; then
	cat "$scratch/codegen.log" >&2
	echo "verify-codegen: generation failed (log above)" >&2
	exit 1
fi

stale=0
for path in pkg/generated packaging/helm/joulie/crds pkg/apis/joulie/v1alpha1/zz_generated.deepcopy.go; do
	if ! diff -ruN "$repo/$path" "$scratch/$path" >"$scratch/diff" 2>&1; then
		stale=1
		echo "verify-codegen: $path is out of date:" >&2
		head -n 40 "$scratch/diff" >&2
	fi
done
if [ "$stale" -ne 0 ]; then
	echo "verify-codegen: run 'make generate' and commit the result." >&2
	exit 1
fi
echo "verify-codegen: generated code and CRDs are up to date."
