// Package physics is the power model of Joulie's energy benchmark: what a
// node draws at a given load, what a power cap does to that draw, and how
// much longer a job runs under the cap. Every arm of the benchmark uses the
// same [Model], so no arm can win by a friendlier model.
//
// The numbers live in physics.yaml, embedded as the default ([Default]),
// with the source of each; [Load] reads another file of the same shape, and
// a file's variants ([Sensitivity], [File.Variant]) overlay some of its
// numbers. Nothing here reads the clock; the functions are pure.
//
// # Power
//
// A CPU node's natural power is a piecewise-linear curve over its CPU load
// (the share of its CPUs kept busy), through measured points. A GPU node
// draws its host curve at its CPU load plus, for each GPU, an idle draw and
// a dynamic draw proportional to that GPU's utilization.
//
// A cap is a fraction f of a device's maximum, the way Joulie's profiles
// write it (packagePowerCapPctOfMax, capPctOfMax). A GPU's maximum is its
// idle plus dynamic draw; a CPU node's is its curve at full load, and its
// package cap is modelled as a limit on the whole node's draw: the packages
// make nearly all of a CPU node's dynamic power, and a 60% cap then removes
// 47% of the dynamic range above idle, the "about half" behind the CPU
// stretch figures. Under a cap a device draws min(natural, f × maximum).
// Caps below the file's minCapFraction are treated as that floor (the
// effective cap, [Model.EffectiveCap]); no measurement supports the model
// lower down.
//
// # Stretch
//
// Each job belongs to a [Boundness] class. Under a cap f a job of class b
// progresses at 1/stretch of its full speed, where stretch is linear in f:
// 1 at f = 1, the class's measured stretchAtTableCap at f =
// tableCapFraction (60%), and on along the same line below it down to the
// floor. Like the Zeus measurements it comes from, stretch depends on the
// cap as a fraction of the device's maximum, not on how far the cap cuts
// into the job's own draw: the medians already average over phases the
// limit clips and phases it does not. So a mixed job under a cap that its
// average draw stays below still runs longer at the same power; that costs
// capping energy, the conservative side for a benchmark of capping.
//
// # Energy
//
// Power and stretch are tied by one rule: a job of work W (its runtime at
// full speed) under cap f holds its share of the device for stretch(f) × W,
// and during all that time the share draws min(natural, f × maximum). Its
// energy is the integral of that power over the stretched runtime,
// [Model.Run] in closed form. A simulator that advances time in steps,
// credits each running job dt/stretch of work per step and adds node power
// × dt to the energy reaches the same number; the tests check it.
//
// # Caps per job
//
// The benchmark's oracle bound caps jobs, not nodes. A job holds [Share]s
// of devices: whole GPUs ([Model.GPUShare]), and a slice of a node's CPUs
// that draws as the whole node would at the job's utilization, scaled to
// the slice ([CPUShare]). [Model.MinEnergyCap] is the cap at which a job's
// energy over its shares is least, found among the model's breakpoints;
// [Model.SliceSaving] is what the jobs' own caps take off a node's draw,
// shared out so that a node filled with copies of one job under cap f
// draws exactly the node-level cap f.
package physics
