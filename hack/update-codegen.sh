#!/usr/bin/env bash
# Regenerates everything derived from the API types in pkg/apis: deepcopy,
# CRD manifests, apply configurations, typed clientset, listers and
# informers. Generators are pinned here and run with `go run pkg@version`, so
# they need no entry in the product's go.mod and no install step.
#
# It works on the checkout it lives in; hack/verify-codegen.sh runs it in a
# scratch copy and compares.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo
cd "$repo"

CONTROLLER_TOOLS_VERSION=v0.23.0
CODE_GENERATOR_VERSION=v0.37.1
# openapi-gen lives in kube-openapi; keep it at the version go.mod uses.
KUBE_OPENAPI_VERSION=$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)

module=joulie.io/joulie
apis=$module/pkg/apis/joulie/v1alpha1
gen=$module/pkg/generated
header=hack/boilerplate.go.txt

controller_gen() { go run "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION" "$@"; }
codegen() { local tool=$1; shift; go run "k8s.io/code-generator/cmd/$tool@$CODE_GENERATOR_VERSION" "$@"; }

# Generated trees are rewritten whole, so a type that was removed leaves no
# stale file behind.
rm -rf "$out/pkg/generated" "$out/packaging/helm/joulie/crds"
rm -f "$out/pkg/apis/joulie/v1alpha1/zz_generated.deepcopy.go"
mkdir -p "$out/pkg/generated" "$out/packaging/helm/joulie/crds" "$out/pkg/apis/joulie/v1alpha1"

# Float fields (watts, scores) are deliberate: the twin and the extender do
# arithmetic on them and integer watts are too coarse for small caps.
controller_gen \
	"object:headerFile=$header" \
	crd:allowDangerousTypes=true \
	paths=./pkg/apis/... \
	"output:crd:artifacts:config=$out/packaging/helm/joulie/crds"

# OpenAPI definitions, then the schema document built from them, so the
# apply configurations know the structure of every type (field ownership
# and extraction need it). API-rule findings go to a report next to the
# definitions, where a review sees them change.
go run "k8s.io/kube-openapi/cmd/openapi-gen@$KUBE_OPENAPI_VERSION" \
	--go-header-file "$header" \
	--output-file zz_generated.openapi.go \
	--output-dir "$out/pkg/generated/openapi" \
	--output-pkg "$gen/openapi" \
	--report-filename "$out/pkg/generated/openapi/api-rule-violations.list" \
	k8s.io/apimachinery/pkg/apis/meta/v1 \
	k8s.io/apimachinery/pkg/runtime \
	k8s.io/apimachinery/pkg/version \
	"$apis"
schema=$(mktemp)
trap 'rm -f "$schema"' EXIT
go run ./hack/openapi-schema >"$schema"

codegen applyconfiguration-gen \
	--go-header-file "$header" \
	--openapi-schema "$schema" \
	--output-dir "$out/pkg/generated/applyconfiguration" \
	--output-pkg "$gen/applyconfiguration" \
	"$apis"

# The clientset is built without Apply methods on purpose: wiring it to the
# apply configurations links client-go's discovery and the scheme of every
# built-in API group into each program, about 12 MB of binary the agent
# (resident on every host) would page in for nothing. Server-side apply
# still works through Patch with types.ApplyPatchType and a marshalled
# apply configuration from pkg/generated/applyconfiguration.
codegen client-gen \
	--go-header-file "$header" \
	--clientset-name versioned \
	--input-base "" \
	--input "$apis" \
	--apply-configuration-package "" \
	--output-dir "$out/pkg/generated/clientset" \
	--output-pkg "$gen/clientset"

codegen lister-gen \
	--go-header-file "$header" \
	--output-dir "$out/pkg/generated/listers" \
	--output-pkg "$gen/listers" \
	"$apis"

codegen informer-gen \
	--go-header-file "$header" \
	--versioned-clientset-package "$gen/clientset/versioned" \
	--listers-package "$gen/listers" \
	--output-dir "$out/pkg/generated/informers" \
	--output-pkg "$gen/informers" \
	"$apis"
