// Package harness runs a real Kubernetes control plane inside a Go test
// process, so that Joulie's controller, extender and agent code is checked
// against the same API server, admission chain and scheduler a cluster
// runs, with no Docker and nothing downloaded at run time.
//
// Start launches etcd (embedded, go.etcd.io/etcd/server/v3/embed) and
// kube-apiserver (k8s.io/kubernetes, through its own test server) on free
// loopback ports. StartScheduler adds a kube-scheduler (its own Setup and
// Run) for one test or benchmark round, with a KubeSchedulerConfiguration
// that may name extenders. There is no kubelet and no
// kube-controller-manager: helpers create Ready nodes, create pods,
// bind them and move them to Running or Succeeded, and the API server runs
// without the TaintNodesByCondition admission plugin, whose taints only a
// node lifecycle controller would lift.
//
// Authentication and authorization are real. The API server trusts a
// client CA that the harness owns and authorizes with Node and RBAC, so
// each client built by UserConfig, AdminConfig or AgentConfig carries its
// own certificate and is checked like a remote caller. ServiceAccountConfig
// uses a bound token from the TokenRequest API instead.
//
// The write counter is server-side: the API server writes an audit log in
// blocking mode with one rule, metadata for create, update, patch, delete
// and deletecollection. Writes counts the RequestReceived events of a user,
// which the server records before it handles the request, and fills each
// write's status code from the ResponseComplete event. A request refused by
// RBAC or admission therefore counts as a write the component attempted,
// with its 403 or 422 code.
//
// BuildProgram builds a product binary in the product module's directory,
// for tests that run a Joulie program as a process against the control
// plane.
//
// Logs of etcd, the API server and the audit log go to files in the
// control plane's directory; a scheduler logs to a file in its test's
// artifact directory. Nothing goes to the console unless a test fails.
package harness
