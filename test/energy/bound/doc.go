// Package bound is the energy benchmark's physical limit: a lower bound on
// the IT energy that any schedule of a job list on a cluster can spend
// inside an accounting window under the benchmark's physics. The report
// measures every arm against it, and fails if an arm spends less, which
// would mean the simulator or the bound is wrong. Nothing here reads the
// clock, the network or the simulator: it is a pure function of the jobs,
// the node families and the model.
//
// # The relaxation
//
// The bound covers every schedule in which each job j starts at some time
// between its arrival a_j and a given latest start L_j (the report passes
// the latest any arm started it; without one, its arrival), holds its
// requested CPUs, memory and GPUs on one awake node until it has done its
// work W_j, at a rate no higher than full speed and no lower than the
// model's slowest clock allows, and in which every node's draw is the
// physics' draw: that of an awake node (idle plus dynamic, under any
// package or per-GPU cap the simulator can set, and with Input.SliceCaps
// f-oracle's idealised cap per job slice of the CPUs), booting, shutting
// down or off. Its first form is the sum of four terms, each at most what
// any such schedule spends on the same part of the energy:
//
//   - Floor. Every node draws at least fl = min(off, boot, shutdown watts)
//     at every instant (the least of a CPU node's and a GPU node's own
//     figures), so N × fl × window is spent whatever happens.
//   - Awake. Job j surely holds its requests over [L_j, a_j + W_j): it has
//     started by L_j and cannot finish before a_j + W_j. At each instant
//     the jobs surely running must fit on the awake nodes. For a set Q of
//     jobs and a family f among the families F(Q) that can hold them,
//     a_f × cap_f ≥ demand(Q) − Σ_{g ∈ F(Q), g ≠ f} N_g × cap_g, for each of
//     CPUs, memory and GPUs: the other families can hold at most all of
//     their nodes' capacity. With Q the GPU jobs (F(Q): the families with
//     GPUs) and Q all jobs (F(Q): every family), the ceiling of the largest
//     right-hand side over cap_f is k_f(t), the fewest awake nodes of family
//     f (fluid bin packing: jobs are split freely). An awake node draws at
//     least its idle power, since the model's cap floor is not below any
//     idle draw, so (idle_f − fl) × ∫ k_f dt is spent above the floor.
//   - Switching. Take the awake nodes of a family as levels: level ℓ is on
//     while at least ℓ nodes are awake, and it must be on while k_f ≥ ℓ. The
//     awake count rises only when a boot ends and falls only when a
//     shutdown starts, so each time a level turns off and on again within
//     a gap of length g between two intervals where it is needed, one
//     shutdown and one boot happen in the gap; else the level stays on.
//     That gap costs at least min((idle − fl) × g, the shutdown's and the
//     boot's energy above fl, each clipped to the part that can lie inside
//     the window; for the family's top level, whose every node was awake as
//     the gap began, the shutdown and the boot must both fit in it). Gaps before a level is first needed and after it is last
//     needed count 0. This is perfect foresight: the cheaper choice for
//     every gap, known in advance.
//   - Dynamic. A node's dynamic draw (above idle) is shared among its jobs
//     in proportion to each one's busy CPUs (its requested CPUs times its
//     utilization), on top of its GPUs' own draw above idle. For a
//     job of class b, the least dynamic energy per second of work it can be
//     charged is found over every load of the node it shares, every cap,
//     and the simulator's kinds of CPU cap (one per node, and with
//     SliceCaps one per job's slice of the CPUs), with the physics' own Draw,
//     Clock and Stretch (dynamic.go). A job does at least
//     min(W_j, ρ_min × (end − L_j)) − min(W_j, start − a_j) of its work
//     inside the window [start, end), ρ_min its rate at the slowest clock,
//     so its dynamic energy inside the window is at least that work times
//     its least energy per second of work. A job's figures here are its
//     own (Input.Truth, the draw the simulator ran it on), and the slice
//     share's least is taken over every job's utilization, so the
//     argument holds job by job as it did class by class.
//
// The terms add up because they count disjoint parts of each node's draw:
// the floor, an awake node's idle above the floor, a boot's or a
// shutdown's draw above the floor, and an awake node's draw above idle.
//
// # The joint form
//
// Taken apart, the awake term packs nodes full while the dynamic term
// charges each job at the node load where its dynamic energy is least
// (about half load on the default curve): no schedule has both. The joint
// form charges each job its share, by busy CPUs, of its host's whole draw
// above the floor, idle included, at the load and cap where that is least
// per second of work; adds each awake GPU node's GPUs at their idle draw
// (k_f of them at least) and each job's GPUs' draw above idle as above;
// and leaves out switching. Every awake node's host draw above the floor is
// shared among the jobs on it, or, with no busy CPUs, counted as 0, so
// this too is at most what any schedule spends. A second joint form counts
// instead each job's own GPUs whole, idle included, over its stretched
// time, and no GPU that holds no job: a deep GPU cap saves dynamic energy
// but keeps the GPU's idle draw longer. The bound is the largest of the
// three forms. With SliceCaps only the first is used.
//
// # What it leaves out
//
// The bound lets a job be split across nodes and families, lets CPU-only
// work use every GPU node's spare CPUs and memory at no idle cost (the
// Q = all jobs case above), takes the cheapest node load and cap for each
// job separately, and counts nothing for the first boot or the last
// shutdown of a level inside the window. Each makes it lower, never
// higher, than what a schedule can reach; the report says how far each
// arm is from it, not that the bound can be reached.
package bound
