// Package httpbackend is the agent's telemetry source and control backend
// for nodes whose power lives in a simulator rather than in hardware. A
// TelemetryProfile routes such nodes to an HTTP endpoint; this package
// speaks the small JSON contract described here to that endpoint. The
// other side is implemented by the demo's simulated hosts
// (joulie.io/joulie/test/demo/fleet, in the test module: the shipped
// agent carries no simulator) and, for agentd's own unit tests, by the
// test double in sub-package httpbackendtest.
//
// The contract is written for simulator authors. Its version is
// joulie.io/http-backend/v1 (APIVersion).
//
// # Endpoints
//
// An endpoint is a base URL, http or https, with a host and without query
// or fragment. Every "{node}" in it is replaced by the node name,
// path-escaped, so one simulator can serve every node at one address
// (http://sim:8080), under a path per node (http://sim:8080/nodes/{node})
// or at a host per node (http://{node}.sim:8080). The agent appends
// "/telemetry" or "/control" to the base path; the node is also named in
// every request, so the simulator never has to parse it out of the path.
// Telemetry and control may be routed to different endpoints, each with
// its own timeout (default 2s).
//
// # Versioning
//
// Every JSON body, request or response, carries
// "apiVersion": "joulie.io/http-backend/v1", and every request carries the
// header "Joulie-Api-Version: joulie.io/http-backend/v1" so that a
// simulator serving several versions can choose before it reads a body (a
// GET has none). v1 bodies are decoded strictly (see Decoding), so any
// change to a body, even an added optional field, is a new apiVersion; an
// agent refuses answers of a version it does not speak, naming both.
//
// # Telemetry
//
//	GET <base>/telemetry?node=node-a
//	Accept: application/json
//	Joulie-Api-Version: joulie.io/http-backend/v1
//
// A 200 answer carries the node's readings now:
//
//	{
//	  "apiVersion": "joulie.io/http-backend/v1",
//	  "node": "node-a",
//	  "time": "2026-03-01T12:00:00Z",
//	  "nodePowerWatts": 1710.5,
//	  "cpu": {
//	    "packagePowerWatts": [182.0, 176.5],
//	    "capWatts": 250,
//	    "minWattsPerPackage": 90,
//	    "maxWattsPerPackage": 350,
//	    "throttlePct": 0
//	  },
//	  "gpus": [
//	    {"index": 0, "uuid": "GPU-8f1c...", "name": "NVIDIA H100 80GB HBM3",
//	     "pciBusId": "0000:17:00.0", "powerWatts": 402.5, "energyJoules": 1.2e7,
//	     "capWatts": 700, "minWatts": 200, "maxWatts": 700, "defaultWatts": 700}
//	  ]
//	}
//
// Fields (R required, O optional; watts are finite numbers in 0..1e6):
//
//	apiVersion          R  string, exactly joulie.io/http-backend/v1
//	node                R  string, the node asked for; any other is refused,
//	                       which catches a base URL that lost its {node}
//	time                R  string, RFC 3339, when the readings were taken
//	nodePowerWatts      O  whole-node draw, when the simulator models more
//	                       than CPU packages and GPUs; otherwise the agent
//	                       uses their sum
//	cpu                 O  object; absent when the simulator does not model
//	                       the CPU (CPU controls are then blocked)
//	  packagePowerWatts R  array of 1..64 watts, one per package, in order:
//	                       the observed power the DVFS fallback loop holds
//	                       under the cap
//	  capWatts          R  per-package limit in force (the maximum when
//	                       uncapped)
//	  minWattsPerPackage, maxWattsPerPackage
//	                    R  range a package limit may take, min <= max; the
//	                       agent clamps every write to it
//	  throttlePct       R  DVFS throttle in force, 0..100
//	gpus                O  array of at most 256 objects; absent or empty
//	                       for a node without GPUs
//	  index             R  whole number 0..255, unique: the device index
//	                       the control takes
//	  uuid              R  non-empty string, unique within the node
//	  name, pciBusId    O  strings, as NVML would report them
//	  powerWatts        R  current draw
//	  energyJoules      O  energy counter since the simulated driver loaded
//	  capWatts          R  limit in force
//	  minWatts, maxWatts R range a limit may take, min <= max; the agent
//	                       clamps every write to it
//	  defaultWatts      O  out-of-the-box limit (default: maxWatts)
//
// # Control
//
//	POST <base>/control
//	Content-Type: application/json
//	Joulie-Api-Version: joulie.io/http-backend/v1
//
// The body names the node and one action with exactly the fields that
// action takes:
//
//	{"apiVersion": "joulie.io/http-backend/v1", "node": "node-a",
//	 "action": "rapl.set_power_cap_watts", "watts": 215.5}
//	{"apiVersion": "joulie.io/http-backend/v1", "node": "node-a",
//	 "action": "dvfs.set_throttle_pct", "pct": 30}
//	{"apiVersion": "joulie.io/http-backend/v1", "node": "node-a",
//	 "action": "gpu.set_power_cap_watts", "gpu": 0, "watts": 420}
//
//	rapl.set_power_cap_watts  watts: limit for each CPU package (the same
//	                          per-package meaning as packagePowerCapWatts
//	                          in NodePowerProfile)
//	dvfs.set_throttle_pct     pct: 0 (full speed) .. 100 (deepest
//	                          throttle); the DVFS fallback when package
//	                          limits are blocked
//	gpu.set_power_cap_watts   gpu: device index; watts: its limit
//
// The agent has already clamped watts to the range telemetry reported and
// pct to 0..100. There is no "all GPUs" form: ranges are per device, and
// one answer carries one read-back value; the agent sends one request
// per device, and none for a device whose limit is already in force.
//
// The answer (200) says what happened:
//
//	{"apiVersion": "joulie.io/http-backend/v1", "result": "applied",
//	 "appliedWatts": 215.5}
//	{"apiVersion": "joulie.io/http-backend/v1", "result": "blocked",
//	 "message": "package power limits are read-only on this node"}
//
//	result        R  applied: the value is in force; blocked: the node cannot
//	                 enforce this control (the agent then reports blocked
//	                 and, for package limits, falls back to DVFS); error:
//	                 the attempt failed (value out of range, no such GPU)
//	message       O  string for the operator; shown in NodePowerProfile
//	                 status
//	appliedWatts  R with applied for the two watts actions: the limit in
//	                 force, as the device reads it back
//	appliedPct    R with applied for dvfs.set_throttle_pct
//
// # Status codes
//
// For both routes:
//
//	2xx   the body is as above; for control, result decides
//	501   the simulator does not model this (an action, or telemetry at
//	      all): blocked
//	4xx   the request was refused (malformed, unknown node, wrong
//	      version): error; this is a bug or a misconfiguration, not a
//	      property of the node
//	5xx   error
//
// A non-2xx answer should carry the control answer's shape,
// {"apiVersion": ..., "result": "error" or "blocked", "message": ...};
// the agent shows its message, or the start of whatever body came.
// Redirects follow the agent's HTTP client policy (by default, followed).
//
// # Decoding
//
// Every body is at most 1 MiB (MaxBodyBytes); the agent gives up on a
// bigger answer. A body is exactly one JSON object: nothing after it, no
// key twice, no field this version does not define, every required field
// present (null counts as absent) and of its type, numbers within their
// ranges, strings at most 1024 bytes. An error names the URL and the
// field: "telemetry from http://sim:8080/n1/telemetry?node=n1: field
// gpus[2].powerWatts: not a number (got a string)".
//
// # Timeouts and retries
//
// Each request is bounded by its endpoint's timeout, reading the answer
// included. There is no retry: the agent's next reconcile tick is the
// retry, so a slow simulator costs one timeout per tick and requests never
// pile up. A write needs the device range, so it reads telemetry first
// unless a reading younger than Config.MaxTelemetryAge (default 1s) is at
// hand; a tick that lists GPUs and then caps them reads telemetry once.
//
// # Originals and restore
//
// The host safety rule (journal every original before the first write,
// restore on stop) protects a real host. This backend journals nothing
// and its Restore does nothing: the values it writes live in the
// simulator, not on the agent's host, and a journal of them would outlive
// the simulator run that held them. Resetting a simulated node is the
// simulator's business. The agent's failsafe still works through the
// ordinary controls (performance caps are plain writes).
package httpbackend
