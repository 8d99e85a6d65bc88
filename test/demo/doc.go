// Package demo is joulie-demo: Joulie run for real on a cluster in a box.
// An embedded etcd, kube-apiserver and kube-scheduler (test/harness), the
// Helm chart installed as an operator would, the real joulie-controller
// and joulie-extender started with the arguments and environment the
// chart gives their pods (chart.go, process.go), and a fleet of simulated
// hosts (test/demo/fleet) each enforced by a real joulie-agentd. A
// workload from the energy benchmark's generator runs over it while a
// live view shows each node's profile, caps, power and pods; the report
// (test/demo/demoreport) is written at the end.
//
// Run is the whole demo; cmd/joulie-demo is its command line.
package demo
