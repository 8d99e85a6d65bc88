// Package integration proves Joulie's API contract against a real
// kube-apiserver and kube-scheduler started in-process by package
// harness: CRD validation, RBAC and admission for node agents, and the
// scheduler extender protocol. The tests live in this package's _test
// files; one control plane serves the whole package.
package integration
