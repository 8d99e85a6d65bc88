package sim

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// trySchedule runs one scheduling cycle for job idx and starts it where
// the scheduler puts it; false when no node fits it.
func (s *simulation) trySchedule(ctx context.Context, idx int) bool {
	j := s.jobs[idx]
	name, err := s.sched.Schedule(ctx, j.pod)
	if err != nil {
		return false
	}
	if err := s.sched.Bind(j.pod, name); err != nil {
		panic(fmt.Sprintf("sim: bind %s to %s: %v", j.job.ID, name, err))
	}
	n := s.nodes[s.byName[name]]
	if j.queued && j.perfPod {
		s.pendingPerf--
	}
	s.unreserve(j)
	j.waking = -1
	if j.queued && n.readyAt > j.job.Arrival {
		// BootWaitRule, the one rule of every arm: the pod found no node
		// on arrival and starts on capacity a boot brought meanwhile.
		j.bootWait = s.now - j.job.Arrival
	}
	if n.state != awake {
		// Only the oracle's scheduler sees nodes that are not awake: the
		// node it needs is Ready as the pod arrives (powerstate.go).
		s.wakeWithForesight(n)
	}
	j.node, j.start, j.updated, j.queued = n.idx, s.now, s.now, false
	j.profile = nodeProfile(n.obj)
	if j.perfPod && (j.profile == string(joulie.ProfileEco) || j.profile == "draining") {
		s.perfOnEco++
	}
	at, _ := slices.BinarySearch(n.running, idx)
	n.running = slices.Insert(n.running, at, idx)
	n.podsChanged, n.park.dirty = true, true
	s.parkArrival(j, n)
	// A pod bound is a watch event for the controller: the node may have
	// been the family's last idle one.
	s.parkSoon()
	s.acct.started(j.job)
	if s.spec.Oracle != NoOracle {
		j.cap = s.oracleCap(j, n)
	}
	j.rate = 0
	s.nodeChanged(n)
	return true
}

// enqueue puts job idx, which fits on no node now, at the end of the
// queue, and lets the power-off rules wake a node for it.
func (s *simulation) enqueue(idx int) {
	j := s.jobs[idx]
	j.queued = true
	s.queue = append(s.queue, idx)
	if j.perfPod {
		s.pendingPerf++
	}
	s.wakeFor(idx)
	s.parkSoon()
}

// nodeProfile is the node's profile as its labels say when a pod lands.
func nodeProfile(n *v1.Node) string {
	if n.Labels[joulie.LabelDraining] == "true" {
		return "draining"
	}
	if p := n.Labels[joulie.LabelPowerProfile]; p != "" {
		return p
	}
	return "none"
}

// nodeChanged settles what follows from a change of node n's jobs or
// caps: the oracle's node-level CPU cap, every job's rate (a package cap
// binds on the whole node's draw, so one job's arrival can slow the
// others), and the node's draw.
func (s *simulation) nodeChanged(n *nodeState) {
	if s.spec.Oracle == OraclePhysical {
		n.cpuCap = s.oracleNodeCap(n)
	}
	cpuClock := s.cpuClock(n)
	for _, idx := range n.running {
		j := s.jobs[idx]
		r := 1 / j.phys.StretchAtClock(j.job.Boundness, s.jobClock(j, n, cpuClock))
		if r == j.rate {
			continue
		}
		s.progress(j)
		j.rate = r
		s.scheduleCompletion(idx)
	}
	s.setNodePower(n)
}

// progress credits job j's work since it was last updated at its rate,
// to what is left of it and to the accounts.
func (s *simulation) progress(j *jobState) {
	if j.rate > 0 && s.now > j.updated {
		d := j.rate * (s.now - j.updated).Seconds()
		j.left -= d
		s.acct.work(j, j.updated, s.now)
	}
	j.updated = s.now
}

func (s *simulation) scheduleCompletion(idx int) {
	j := s.jobs[idx]
	j.version++
	// Round up, so a job never completes before its work is done.
	d := time.Duration(j.left/j.rate*float64(time.Second)) + 1
	if j.left <= 0 {
		d = 0
	}
	heap.Push(&s.events, event{t: s.now + d, kind: evCompletion, idx: idx, version: j.version})
}

func (s *simulation) complete(ctx context.Context, idx int) error {
	j := s.jobs[idx]
	n := s.nodes[j.node]
	s.progress(j)
	j.done, j.end, j.left = true, s.now, 0
	s.done++
	at, _ := slices.BinarySearch(n.running, idx)
	n.running = slices.Delete(n.running, at, at+1)
	n.podsChanged, n.park.dirty = true, true
	s.acct.stopped(j.job)
	if err := s.sched.Remove(j.pod); err != nil {
		return fmt.Errorf("sim: remove %s: %w", j.job.ID, err)
	}
	s.nodeChanged(n)
	s.retry(ctx, n)
	if len(n.running) == 0 {
		s.nodeEmptied(n)
	}
	return nil
}

// retry offers the queue, in order, the resources freed on node n (nil:
// anything changed, offer every queued job). A job that could not fit on n
// by its requests alone is not sent through the scheduler, which would
// only say so again.
func (s *simulation) retry(ctx context.Context, n *nodeState) {
	if len(s.queue) == 0 {
		return
	}
	var freeCPU, freeMem int64
	var freeGPU int
	if n != nil {
		freeCPU, freeMem, freeGPU = s.free(n)
	}
	kept := s.queue[:0]
	for _, idx := range s.queue {
		j := s.jobs[idx].job
		if n != nil && (j.CPUMilli > freeCPU || j.MemoryMiB > freeMem || j.GPUs > freeGPU) {
			kept = append(kept, idx)
			continue
		}
		if !s.trySchedule(ctx, idx) {
			kept = append(kept, idx)
			continue
		}
		if n != nil {
			freeCPU, freeMem, freeGPU = s.free(n)
		}
	}
	s.queue = kept
}

// free is what node n has left by requests.
func (s *simulation) free(n *nodeState) (cpu, mem int64, gpus int) {
	cpu, mem, gpus = n.spec.CPUMilli, n.spec.MemoryMiB, n.spec.GPUs
	for _, idx := range n.running {
		j := s.jobs[idx].job
		cpu -= j.CPUMilli
		mem -= j.MemoryMiB
		gpus -= j.GPUs
	}
	return cpu, mem, gpus
}

// applyCaps is the agent of node i enforcing new caps: the node's draw and
// its jobs' progress change from now on.
func (s *simulation) applyCaps(i int, cpuCap, gpuCap, gpuStdCap float64) {
	n := s.nodes[i]
	if !s.spec.Caps || (n.cpuCap == cpuCap && n.gpuCap == gpuCap && n.gpuStdCap == gpuStdCap) {
		return
	}
	n.cpuCap, n.gpuCap, n.gpuStdCap = cpuCap, gpuCap, gpuStdCap
	s.nodeChanged(n)
}
