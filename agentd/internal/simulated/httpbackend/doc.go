// Package httpbackend is the agent's client of a simulator that stands
// in for a node's hardware: it reads the node's telemetry and sends its
// power controls over a small JSON-over-HTTP contract, version
// joulie.io/http-backend/v1 (APIVersion). The contract itself, for
// simulator authors, is CONTRACT.md in this directory. The simulator the
// demo runs is joulie.io/joulie/test/demo/fleet; sub-package
// httpbackendtest is a test double of it for agentd's unit tests.
package httpbackend
