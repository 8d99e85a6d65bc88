// Package integration proves Joulie's API contract against a real
// kube-apiserver and kube-scheduler started in-process by package
// harness: CRD validation, RBAC and admission for node agents, and the
// scheduler extender protocol. Before any test, the suite installs the
// Helm chart as rendered by the pinned helm, so every test runs under the
// chart's own RBAC, admission policy and scheduler configuration. The
// tests live in this package's _test files; one control plane serves the
// whole package.
package integration
