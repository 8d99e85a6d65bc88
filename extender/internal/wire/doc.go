// Package wire reads and writes kube-scheduler's extender protocol
// (k8s.io/kube-scheduler/extender/v1) as fast as the extender's latency
// budget needs.
//
// The scheduler sends an ExtenderArgs per filter and prioritize call: the
// pod, and either the candidate nodes' names (nodeCacheCapable: true) or
// their whole Node objects, about 5 KB each. Decoding 5,000 full Nodes with
// encoding/json takes hundreds of milliseconds, nearly all of it building
// fields nobody reads. DecodeArgs instead scans the body once, validating
// its syntax, and keeps only what the extender uses: the node names, the
// two Joulie labels the filter falls back on, and each node's raw bytes,
// which the filter hands back to the scheduler verbatim. Everything else in
// a Node is skipped without being decoded. The pod, a single object, goes
// through encoding/json, into a pod trimmed to the fields that classify it
// and give its resource demand.
//
// Decoded names point into the request body, so the body must stay
// untouched while an Args is in use. Decoded values can weigh many times
// the bytes that spell them, so the decoder asks Args.Reserve before it
// takes memory, for a server to count against what it allows calls in
// flight; the reply sizes are known before writing for the same reason. Requests the decoder cannot read in
// full (bad syntax, truncation, wrong types where it looks, keys it reads
// given twice) are refused with an error; the HTTP layer turns it into a
// 400.
//
// The Append functions write the replies by hand for the same reason, with
// the upstream types' field names.
package wire
