package sim

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// The power-off rules of arm g, those a cluster operator runs today to
// save energy: cluster-autoscaler's defaults, on bare metal.
const (
	// IdleOffAfter is how long a node stays empty before it is switched
	// off: cluster-autoscaler's --scale-down-unneeded-time default.
	IdleOffAfter = 10 * time.Minute
	// SuspendsPerMinute and ResumesPerMinute cap how many nodes are
	// switched off and woken per minute: Slurm's power saving defaults
	// (SuspendRate 60, ResumeRate 300 nodes per minute).
	SuspendsPerMinute = 60
	ResumesPerMinute  = 300
)

// powerStep is what an evPower event does to its node.
type powerStep uint8

const (
	// stepIdleCheck: switch the node off if it has been empty for
	// IdleOffAfter.
	stepIdleCheck powerStep = iota
	// stepOff: the node's shutdown is over.
	stepOff
	// stepReady: the node's boot is over.
	stepReady
	// stepWakeRetry: the resume rate allows another boot; look again at
	// the jobs waiting for one.
	stepWakeRetry
)

// powerRules is the state of the power-off rules.
type powerRules struct {
	s *simulation
	// suspends and resumes are the times of the last switch-offs and
	// boots, for the per-minute rates.
	suspends, resumes []time.Duration
	boots, shutdowns  int
	retryAt           time.Duration
}

func (p *powerRules) init(s *simulation) {
	p.s = s
	p.retryAt = -1
	for _, n := range s.nodes {
		s.nodeEmptied(n)
	}
}

// nodeEmptied applies the arm's rule to node n, whose last job just left.
func (s *simulation) nodeEmptied(n *nodeState) {
	n.emptySince = s.now
	switch s.spec.PowerOff {
	case AutoscalerRules:
		if n.reservedCPU == 0 && n.reservedGPU == 0 {
			s.pushPower(s.now+IdleOffAfter, n, stepIdleCheck)
		}
	case Foresight:
		// Off at once; whether it was worth it is settled when the node
		// is needed again (wakeWithForesight) or at the end (finish).
		s.setState(n, off)
	}
}

func (s *simulation) pushPower(t time.Duration, n *nodeState, step powerStep) {
	heap.Push(&s.events, event{t: t, kind: evPower, idx: n.idx, power: step})
}

func (s *simulation) setState(n *nodeState, st powerState) {
	n.state, n.stateAt = st, s.now
	s.setNodePower(n)
}

// underRate reports whether another action fits in the per-minute rate
// given the times of the last ones, dropping those older than a minute;
// when it does not, at is when it will.
func (s *simulation) underRate(times *[]time.Duration, perMinute int) (ok bool, at time.Duration) {
	kept := (*times)[:0]
	for _, t := range *times {
		if t > s.now-time.Minute {
			kept = append(kept, t)
		}
	}
	*times = kept
	if len(kept) < perMinute {
		return true, 0
	}
	return false, kept[0] + time.Minute
}

func (s *simulation) powerEvent(ctx context.Context, ev event) error {
	n := s.nodes[ev.idx]
	switch ev.power {
	case stepIdleCheck:
		if n.state != awake || len(n.running) > 0 || s.now < n.emptySince+IdleOffAfter || n.reservedCPU > 0 || n.reservedGPU > 0 {
			return nil
		}
		if ok, at := s.underRate(&s.power.suspends, SuspendsPerMinute); !ok {
			s.pushPower(at, n, stepIdleCheck)
			return nil
		}
		s.power.suspends = append(s.power.suspends, s.now)
		s.power.shutdowns++
		if err := s.sched.SetNodeUnschedulable(n.spec.Name, true); err != nil {
			return fmt.Errorf("sim: cordon node %s: %w", n.spec.Name, err)
		}
		s.setState(n, shuttingDown)
		s.pushPower(s.now+s.model.Power.Shutdown, n, stepOff)
	case stepOff:
		s.setState(n, off)
		if s.spec.PowerOff == Parking {
			s.parkedOff(n)
			return nil
		}
		// A job that found no node to wake while this one shut down may
		// wake it now.
		s.wakeQueued()
	case stepReady:
		s.setState(n, awake)
		n.readyAt = s.now
		if s.spec.PowerOff == Parking {
			return s.parkedReady(ctx, n)
		}
		if err := s.sched.SetNodeUnschedulable(n.spec.Name, false); err != nil {
			return fmt.Errorf("sim: uncordon node %s: %w", n.spec.Name, err)
		}
		n.reservedCPU, n.reservedMem, n.reservedGPU = 0, 0, 0
		s.retry(ctx, n)
		// Jobs the node was woken for that went elsewhere, or that it
		// could not take after all, look for another boot.
		for _, idx := range s.queue {
			if j := s.jobs[idx]; j.waking == n.idx {
				j.waking = -1
			}
		}
		s.wakeQueued()
		if len(n.running) == 0 {
			s.nodeEmptied(n)
		}
	case stepWakeRetry:
		s.power.retryAt = -1
		s.wakeQueued()
	}
	return nil
}

// wakeQueued lets every queued job without a boot under way look for one.
func (s *simulation) wakeQueued() {
	for _, idx := range s.queue {
		s.wakeFor(idx)
	}
}

// wakeFor is the autoscaler's scale-up for job idx, which fits on no
// awake node: it waits for a booting node with room left for it, or wakes
// an off node that fits it, one without GPUs for a job without GPUs when
// one does (an operator's GPU node group is kept for GPU work). A node
// whose taints the job does not tolerate is neither waited for nor woken:
// cluster-autoscaler simulates the scheduler's filters, taints included,
// before it scales a node group up.
func (s *simulation) wakeFor(idx int) {
	j := s.jobs[idx]
	if s.spec.PowerOff != AutoscalerRules || j.waking >= 0 {
		return
	}
	var pick *nodeState
	for _, n := range s.nodes {
		switch n.state {
		case booting:
			if tolerated(n, j) && fitsReserved(n, j) {
				s.reserve(n, j)
				return
			}
		case off:
			if !tolerated(n, j) || !fitsEmpty(n, j) {
				continue
			}
			if pick == nil || (j.job.GPUs == 0 && pick.spec.GPUs > 0 && n.spec.GPUs == 0) {
				pick = n
			}
		}
	}
	if pick == nil {
		return
	}
	if ok, at := s.underRate(&s.power.resumes, ResumesPerMinute); !ok {
		if s.power.retryAt < 0 {
			s.power.retryAt = at
			s.pushPower(at, pick, stepWakeRetry)
		}
		return
	}
	s.power.resumes = append(s.power.resumes, s.now)
	s.power.boots++
	s.setState(pick, booting)
	s.pushPower(s.now+s.model.Power.BootTime(pick.spec.GPUs > 0), pick, stepReady)
	s.reserve(pick, j)
}

// tolerated says whether job j's pod tolerates every NoSchedule and
// NoExecute taint of node n, by the API's own matching rule, as the
// scheduler's TaintToleration filter asks.
func tolerated(n *nodeState, j *jobState) bool {
	for i := range n.obj.Spec.Taints {
		t := &n.obj.Spec.Taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(j.pod.Spec.Tolerations, func(tol v1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), t, false) }) {
			return false
		}
	}
	return true
}

func fitsEmpty(n *nodeState, j *jobState) bool {
	return j.job.CPUMilli <= n.spec.CPUMilli && j.job.MemoryMiB <= n.spec.MemoryMiB && j.job.GPUs <= n.spec.GPUs
}

func fitsReserved(n *nodeState, j *jobState) bool {
	return j.job.CPUMilli <= n.spec.CPUMilli-n.reservedCPU && j.job.MemoryMiB <= n.spec.MemoryMiB-n.reservedMem &&
		j.job.GPUs <= n.spec.GPUs-n.reservedGPU
}

func (s *simulation) reserve(n *nodeState, j *jobState) {
	n.reservedCPU += j.job.CPUMilli
	n.reservedMem += j.job.MemoryMiB
	n.reservedGPU += j.job.GPUs
	j.waking = n.idx
}

// unreserve releases what job j held on the node booting for it, which it
// no longer needs: it is starting.
func (s *simulation) unreserve(j *jobState) {
	if j.waking < 0 {
		return
	}
	n := s.nodes[j.waking]
	if n.state == booting {
		n.reservedCPU -= j.job.CPUMilli
		n.reservedMem -= j.job.MemoryMiB
		n.reservedGPU -= j.job.GPUs
	}
}

// wakeWithForesight is the oracle needing node n, off since n.stateAt, for
// a pod that arrives now. Knowing when the node would be needed, it would
// have kept the node idle over the gap when that costs less than a
// shutdown, the off time and a boot (or when the gap is shorter than the
// two), and otherwise shut it down at once and booted it to be Ready now.
// The series drew off power over the gap; the choice is written over it.
func (s *simulation) wakeWithForesight(n *nodeState) {
	s.settleOff(n, true)
	s.setState(n, awake)
}

// settleOff writes the oracle's choice for node n's off interval, which
// ends now: with a boot at its end when woken, else (the run ended) with
// only the shutdown at its start.
func (s *simulation) settleOff(n *nodeState, woken bool) {
	ps := s.model.Power
	from, gap := n.stateAt, s.now-n.stateAt
	boot, bootJ := ps.BootTime(n.spec.GPUs > 0), ps.BootJoules(n.spec.GPUs > 0)
	offW := ps.Off(n.spec.GPUs > 0)
	costOff := ps.ShutdownWatts*ps.Shutdown.Seconds() + offW*(gap-ps.Shutdown).Seconds()
	if woken {
		costOff += bootJ - offW*boot.Seconds()
	}
	minGap := ps.Shutdown
	if woken {
		minGap += boot
	}
	if idle := n.idleWatts(); gap < minGap || idle*gap.Seconds() <= costOff {
		s.acct.add(from, s.now, Parts{IdleAwake: idle, Off: -offW})
		return
	}
	s.power.shutdowns++
	s.acct.add(from, from+ps.Shutdown, Parts{Booting: ps.ShutdownWatts, Off: -offW})
	if woken {
		s.power.boots++
		s.acct.add(s.now-boot, s.now, Parts{Booting: bootJ / boot.Seconds(), Off: -offW})
	}
}

// finish settles the oracle's nodes still off when the run ends.
func (p *powerRules) finish() {
	s := p.s
	if s.spec.PowerOff != Foresight {
		return
	}
	for _, n := range s.nodes {
		if n.state == off {
			s.settleOff(n, false)
		}
	}
}
