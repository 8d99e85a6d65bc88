// Package schedsim is the energy simulator's scheduler: kube-scheduler
// 1.37's own framework and in-tree plugins, run in process over an
// in-memory cluster, one pod at a time, with an optional extender applied
// the way kube-scheduler applies one.
//
// # What runs
//
// New builds the configuration the way kube-scheduler reads a
// configuration file (a v1 KubeSchedulerConfiguration, defaulted and
// converted by the scheduler's scheme, then validated), so DefaultProfile
// is exactly kube-scheduler's default profile and MostAllocatedProfile
// differs only in NodeResourcesFit's scoringStrategy. It then builds a
// framework from plugins.NewInTreeRegistry() with the profile, as
// cluster-autoscaler's simulator does, over kube-scheduler's own node cache
// (backend/cache) and snapshot: Bind, Remove and SetNodeLabels update the
// cache, and each Schedule refreshes the snapshot incrementally
// (Cache.UpdateSnapshot copies only the nodes that changed), as
// kube-scheduler does at the start of each cycle. The plugins that read the
// API through informers (volumes, DRA, namespaces) see an empty fake API.
//
// A scheduling cycle follows kube-scheduler 1.37's
// pkg/scheduler/schedule_one.go:
//   - schedulePod: no feasible node is a FitError (wrapped with
//     ErrUnschedulable); one feasible node is chosen without scoring;
//     otherwise the best total score wins.
//   - findNodesThatFitPod: PreFilter (a rejection there makes every node
//     unschedulable; a PreFilterResult narrows the nodes), then Filter,
//     then the extender's filter.
//   - findNodesThatPassFilters and numFeasibleNodesToFind: the filter pass
//     starts where the previous cycle stopped (nextStartNodeIndex) and stops
//     once numFeasibleNodesToFind nodes passed. percentageOfNodesToScore is
//     kube-scheduler's default (0, adaptive) unless the Profile sets it; at
//     2,500 nodes that scores 750 nodes per pod. It is the same rule for
//     every arm, so the arms differ only in their scoring and extender.
//   - findNodesThatPassExtenders: the extender's filter narrows the feasible
//     nodes; the nodes it drops carry its reasons into the FitError.
//   - prioritizeNodes: PreScore, Score, NormalizeScore and the plugins'
//     weights (RunScorePlugins), then each extender score times the
//     extender's weight times MaxNodeScore/MaxExtenderPriority (100/10) is
//     added to the node's total. Extender scores are not clamped, as in
//     kube-scheduler.
//   - the choice: framework.NewSortedScoredNodes(...).Pop(), the highest
//     total, ties broken by each node's Randomizer.
//
// # Where it departs from kube-scheduler, and why
//
//   - Ties: kube-scheduler 1.37 draws Randomizer (math/rand) only when an
//     extender scored; otherwise the order in which its parallel filter
//     found the nodes breaks ties. Here every node draws from a source
//     seeded by Options.Seed, so ties are uniform and runs repeat.
//   - The filter pass is serial, in snapshot order, so the sample of nodes
//     is the same on every run; kube-scheduler's parallel pass keeps
//     whichever nodes its workers reach first. Scoring may run in parallel
//     (Options.Parallelism) without changing results.
//   - Every pod takes the full cycle: OpportunisticBatching's node hint
//     expires after 500 ms of wall-clock time, which a simulated clock
//     cannot honour, so it is not used.
//   - No preemption, nominated pods or binding cycle: the simulator's pods
//     share one priority, so DefaultPreemption would find no victims, and
//     binding goes to the API server, which here is Bind updating the cache.
//     The queue (kube-scheduler's PrioritySort: FIFO among equal priorities)
//     and the retry of unschedulable pods are the caller's.
//   - Extender errors stop the cycle with an error, where kube-scheduler
//     would skip an ignorable extender (Joulie's chart sets ignorable) and
//     always ignores prioritize errors: an in-process extender has no
//     network to fail, so an error is a bug to see, not an outage to ride
//     out.
//
// Nothing here reads the wall clock for a decision: time passes only in
// the caller. The framework's metric recorder and the informers run
// goroutines until Close.
package schedsim
