// Package localapi is joulie-agentd's local API: a small JSON-over-HTTP
// protocol on a Unix socket, spoken by joulie-agentctl on the same host.
// It holds both sides, the server the daemon runs and the client the CLI
// uses, so the two cannot drift apart.
//
// # Endpoints
//
//	GET    /v1/status    Status: what the agent enforces now and how it went
//	GET    /v1/hardware  the NodeHardware status the agent publishes
//	GET    /v1/profile   ProfileState: the spec in force and where it came from
//	PUT    /v1/profile   body: a NodePowerProfileSpec; standalone mode only
//	DELETE /v1/profile   drop a local override; standalone mode only
//	POST   /v1/restore   put every recorded original back; RestoreReport
//
// Bodies use the JSON field names of the joulie.io/v1alpha1 API types.
// Every answer other than 2xx carries {"error": "..."}, a sentence an
// operator can act on.
//
// # Security
//
// The socket is owned by root and the group named in the daemon's config
// (joulie by default), mode 0660, so the kernel already keeps everyone else
// from connecting. The server checks again on every connection with
// SO_PEERCRED, so a socket whose mode was loosened by hand, or handed over
// by systemd with other settings, still admits only the right callers:
// reads for root and members of the group, writes (profile set, restore)
// for root alone.
//
// The daemon decides what the verbs do to the host; this package only
// carries them, through the Agent interface.
package localapi
