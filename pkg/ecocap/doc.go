// Package ecocap chooses the power cap of an eco node's CPU packages and
// of its GPUs: the cap that pays. A cap is worth applying when it lowers
// the energy per unit of work of the jobs under it, so the choice is:
//
//   - no cap while performance pods run on the node (they are promised
//     full speed);
//   - no cap that does not bind: when the devices' projected uncapped draw
//     is at or below the eco cap, a cap saves nothing now and slows the
//     jobs wherever the draw rises;
//   - no cap deeper than the one at which the jobs' energy per unit of
//     work is least, with the node's idle draw paid for the stretched
//     time (Optimal, stretch.go), and never deeper than the configured eco
//     cap (CPU_ECO_CAP_PCT_OF_MAX, GPU_ECO_CAP_PCT_OF_MAX), which stays the
//     deepest allowed.
//
// Each choice carries a short reason for the NodePowerProfile, the
// agent's status and the controller's metrics. The reasons hold only
// figures that change with the configuration or the hardware, never a
// live reading, so that a steady node's profile is not rewritten every
// time its draw moves.
//
// Everything here is a pure function of values: nothing reads the API,
// the clock or the network. pkg/plan feeds it the draw it projects for
// each eco node (agent, Kepler or the utilization model, in SPEC.md's
// order).
package ecocap
