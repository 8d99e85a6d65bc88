// Package sim is the energy benchmark's discrete-event simulator: one
// job list, one physics model, kube-scheduler's own framework (schedsim)
// and, for Joulie's arms, the controller's plan.Compute and the
// extender's pkg/scoring, all on a simulated clock.
//
// An arm is a row of a table (arms.go): the scheduler profile, whether
// Joulie's controller and extender run, whether caps are enforced, whether
// idle nodes are switched off, and whether the oracle chooses caps per
// job. Every arm runs under the same physics, power states included, and
// is accounted the same way: IT energy and full-speed-equivalent work
// inside a steady-state window (Options.Window), and every job run to
// completion for its completion time. See test/energy/README.md, section
// Simulator.
package sim
