#!/usr/bin/env bash
# Tests hack/verify-codegen.sh itself: in a scratch copy of the checkout,
# edit an API type without regenerating and expect verify to fail and name
# the stale output. Run by `make check`, so the guard cannot silently rot.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tar -C "$repo" --exclude=./.git --exclude=./test --exclude=./bin --exclude=./dist -cf - . | tar -C "$scratch" -xf -

# A tighter range on a twin score changes only the CRD schema.
types="$scratch/pkg/apis/joulie/v1alpha1/nodetwin_types.go"
grep -q '// +kubebuilder:validation:Maximum=100' "$types"
sed -i '0,/+kubebuilder:validation:Maximum=100/s//+kubebuilder:validation:Maximum=99/' "$types"

if "$scratch/hack/verify-codegen.sh" >"$scratch/out.log" 2>&1; then
	cat "$scratch/out.log" >&2
	echo "test-verify-codegen: verify passed although a type changed" >&2
	exit 1
fi
if ! grep -q 'packaging/helm/joulie/crds is out of date' "$scratch/out.log"; then
	cat "$scratch/out.log" >&2
	echo "test-verify-codegen: verify failed without naming the stale CRDs" >&2
	exit 1
fi
echo "test-verify-codegen: verify catches an edited type that was not regenerated"
