// Package physics is the power model of Joulie's energy benchmark: what a
// node draws at a given load, what a power cap does to that draw, and how
// much longer a job runs under the cap. Every arm of the benchmark uses the
// same [Model], so no arm can win by a friendlier model.
//
// The numbers live in physics.yaml, embedded as the default ([Default]),
// with the source of each; [Load] reads another file of the same shape, and
// a file's variants ([Sensitivity], [File.Variant]) overlay some of its
// numbers. Nothing here reads the wall clock; the functions are pure.
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
// make nearly all of a CPU node's dynamic power, so a 60% cap on a
// saturated node removes 47% of its dynamic range above idle. Under a cap
// a device draws min(natural, f × maximum).
// Caps below the file's minCapFraction are treated as that floor (the
// effective cap, [Model.EffectiveCap]); no measurement supports the model
// lower down.
//
// # Stretch
//
// A cap slows a job only when it binds. Dynamic power, the draw above
// idle, is taken to go as clock^k. A device ([Device]) whose natural draw
// at full clock is N, idle I, under a limit L below N, runs at the clock
// fraction r = ((L − I)/(N − I))^(1/k), and no lower than MinClock; when N
// is within L, r = 1 ([Model.Clock]). A job bound by its clock alone runs
// r^−a times as long; a job of class b, of clock sensitivity β, runs
// 1 + β(r^−a − 1) times as long ([Model.StretchAtClock], [Model.Stretch]).
// A cap that the device's draw stays under therefore slows nothing.
//
// k, a and MinClock are fitted when the file is loaded to its clock:
// table, one job timed at fixed clocks: NAS EP class C on a Grid'5000
// taurus node (2 × Xeon E5-2630, idle 95 W), from the Batsim simulator's
// repository. k is the least-squares slope of ln(W − idle) on ln(GHz)
// (1.384), a that of ln(seconds) on −ln(GHz) (1.046), MinClock the lowest
// clock over the highest (1.2/2.3). Using a 2012 CPU's exponents for
// today's CPUs and GPUs is an assumption.
//
// β is per class. The GPU classes keep the Zeus NSDI'23 runtimes at a 60%
// limit, and β is derived so that one H100 at the class's utilization
// under the table cap stretches by exactly that figure (gpu-compute 0.357,
// gpu-mixed 0.629); gpu-low's 259 W stay under 420 W, so the cap cannot
// slow it and β = 0. The CPU classes give β: cpu-compute 1 (NAS EP is
// compute-bound, and the table is its measurement), cpu-memory 0.2
// (assumption: memory-bound work waits on DRAM, whose clock a package cap
// does not lower), cpu-low 0.3 (assumption: it computes about its
// utilization's share of the time).
//
// Which device's draw the cap binds on is the caller's choice, and the
// simulator's physics: a CPU node's package cap binds on the node's whole
// package draw ([NodeCPU] at the node's load), so a job on a lightly
// loaded node runs at full speed under a cap that would slow it on a busy
// one; a GPU cap binds on that GPU's draw ([Model.GPUDevice] of 1).
//
// # Energy
//
// Power and stretch are tied by one rule: a job of work W (its runtime at
// full speed) under cap f holds its device for stretch × W, and during all
// that time the device draws min(natural, f × maximum) ([Model.Draw]). Its
// energy is the integral of that power over the stretched runtime,
// [Model.Run] in closed form. A simulator that advances time in steps,
// credits each running job dt/stretch of work per step and adds node power
// × dt to the energy reaches the same number; the tests check it.
//
// # Caps per job
//
// The benchmark's oracle heuristics cap jobs, not nodes. A job holds devices:
// whole GPUs ([Model.GPUDevice]), and a slice of a node's CPUs that draws
// as the whole node would at the job's utilization, scaled to the slice
// ([CPUSlice]). [Model.MinEnergyCap] is the cap at which a job's energy
// over its devices is least, its speed set by one of them (the pace). The
// energy has kinks where a cap starts to bind and where the clock reaches
// MinClock, and between them falling draw trades against rising stretch,
// so the search tries the kinks and a fine grid and refines the best by
// golden section. [Model.SliceSaving] is what the jobs' own caps take off
// a node's draw, shared out so that a node filled with copies of one job
// under cap f draws exactly the node-level cap f.
//
// # Power states
//
// [Model.Power] holds what a node draws switched off and what switching
// costs, measured on the same taurus nodes (9.75 W off with the BMC
// alive; 151.52 s and 18,966 J to boot; 6.1 s and 616 J to shut down). A
// GPU node boots for as long plus a GPU driver start (60 s, assumption) at
// the boot's average power, and draws the same off power, unless the file
// gives a GPU node its own off and boot draw ([PowerStates.Off],
// [PowerStates.Booting]; the hgx-power-states variant does).
//
// # A job's own figures
//
// A class's figures are what a controller could know of a job at best.
// [Truth] draws each job's own clock sensitivity and utilization within
// the model's [Spread] of its class's, from a seed and the job's ID, and
// [Truths] hands out the model each job runs under ([Model.WithClass]).
// The simulator's physics uses it; what it shows Joulie's controller does
// not.
package physics
