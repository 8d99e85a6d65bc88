// Package park decides which nodes to switch off while they are idle and
// which to switch back on before work waits for them (SPEC.md, "Power
// states, parking and per-pod energy"; issue 23, point 3).
//
// Decide is a pure function: it takes one snapshot of the nodes (their
// power state as the NodePowerProfile spec records it, what the agent
// reports, readiness and the pods on them), the pods the scheduler could
// not place, the recent performance arrivals per hardware family and the
// time, and returns the power-state transitions to carry out, each with a
// reason an operator can read. Nothing here reads the API, the clock or
// the network. joulie-controller feeds it from its informer caches and
// carries the transitions out through the API (taint, NodePowerProfile
// spec, the node's BMC or a neighbour's Wake-on-LAN); the energy simulator
// in test/energy/sim feeds it its simulated cluster, so both run the same
// decisions.
//
// Every fact a decision depends on comes from the snapshot, and the
// snapshot from the API, never from the caller's memory: the rate limits
// count the transitions recent PowerStateSince times show, and a node's
// park or wake goes on from whatever state its profile records, so a
// controller restart or a new leader resumes where the last one stopped.
//
// Each hardware family keeps a warm reserve of idle awake nodes, sized
// for the performance demand that arrives within one boot time. With
// Params.ReserveFor set to performance, the default, the reserve is kept
// for performance pods: Decide names the nodes it holds, the controller
// labels them joulie.io/warm-reserve, the extender turns every other pod
// away from them, and a pending standard pod wakes a parked node rather
// than count on them. A standard pod that no node outside the reserve
// could take even empty (a CPU pod larger than every CPU-only node, on a
// GPU node) would wait for ever: the reserve gives it a node, and refills
// from what is parked. With any, the first pods to come take them.
// A reserve node waits idle until a performance pod takes it, about one
// gap between the family's performance arrivals: Params.ReserveMaxGap
// prices that wait, and a family whose performance pods come more
// seldom (or never) keeps no reserve at all, so that a sparse cluster of
// many hardware families does not keep a node of each awake for little
// demand.
//
// The life of a parkable node:
//
//	awake ──(empty for SettleTime, above its family's reserve)──▶ parking
//	parking ──(still empty after ParkGrace; the caller cordons it)──▶ parked
//	parking ──(a pod landed, a pending pod fits, cordoned by an admin, no longer parkable)──▶ awake
//	parked ──(its agent answered the park awake, Ready and renewed since)──▶ awake
//	parked ──(a pod is bound to it)──▶ waking
//	parked ──(a pending pod fits only here, or the family's reserve is short)──▶ waking
//	waking ──(Ready, heartbeat and Lease renewed since the wake, agent up)──▶ awake
//	waking ──(Ready, Lease renewed since, agent answered the wake awake: it never went off)──▶ awake
//	waking ──(not back within ResumeTimeout, attempts left)──▶ waking (attempt+1)
//	waking ──(not back within ResumeTimeout, no attempts left)──▶ wake-failed
//	wake-failed ──(back: an operator powered it on)──▶ awake
//
// Only a Ready heartbeat and a node Lease renewal newer than the state's
// powerStateSince tell a host that is on from one whose last Ready
// condition lingers after it went off; and only a status whose
// observedGeneration has caught up with the parked spec tells an agent's
// answer to the park from what it said before. A pod bound to a node that
// stays off (wake-failed, or its wake held back by WakesPerMinute) is
// named in Result.Stranded, so the caller can tell its owner why it does
// not run. The caller's own cordon of a parked node
// (joulie.io/cordoned-for-park) counts as no cordon: it says no more than
// the taint. Input.Volumes narrows the nodes a pending pod fits to those
// its volumes can be used on, so a pod with a local volume wakes the node
// the volume lives on.
package park
