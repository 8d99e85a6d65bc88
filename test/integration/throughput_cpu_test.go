package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/prometheus/procfs"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"joulie.io/joulie/test/harness"
)

// cpuSpan measures the CPU the scheduler and the extender use over a
// span of a round. The scheduler shares this process with the API server
// and the test, so its CPU is read from a CPU profile, as the samples
// that carry the label the harness puts on the scheduler's goroutines;
// the extender is a process of its own, read from /proc. Wall time on a
// shared machine swings with whatever else runs; CPU time per pod does
// much less, so the benchmark reports both.
type cpuSpan struct {
	round               string
	ext                 *extenderProcess
	profile             bytes.Buffer
	running             bool
	extAtStart          float64
	scheduler, extender float64 // seconds, once stopped
}

func (c *cpuSpan) start(b *testing.B) {
	b.Helper()
	if err := pprof.StartCPUProfile(&c.profile); err != nil {
		b.Fatalf("start the CPU profile (is -cpuprofile set? it cannot be with this benchmark): %v", err)
	}
	c.running = true
	if c.ext != nil {
		c.extAtStart = c.ext.cpuSeconds(b)
	}
}

func (c *cpuSpan) stop(b *testing.B) {
	b.Helper()
	if c.ext != nil {
		c.extender = c.ext.cpuSeconds(b) - c.extAtStart
	}
	pprof.StopCPUProfile()
	c.running = false
	// The profile stays with the benchmark's artifacts (go test
	// -artifacts keeps them), for go tool pprof -tagfocus.
	if err := os.WriteFile(filepath.Join(b.ArtifactDir(), c.round+".cpu.pprof"), c.profile.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	sched, err := labelledCPU(&c.profile, harness.ProfileLabel, harness.ProfileScheduler)
	if err != nil {
		b.Fatal(err)
	}
	c.scheduler = sched
}

// abort stops a profile a failed round left running, so that the next
// round can start one.
func (c *cpuSpan) abort() {
	if c.running {
		pprof.StopCPUProfile()
		c.running = false
	}
}

// labelledCPU sums, in seconds, the CPU of the samples of a CPU profile
// whose label key has the value value.
func labelledCPU(data *bytes.Buffer, key, value string) (float64, error) {
	p, err := profile.Parse(data)
	if err != nil {
		return 0, fmt.Errorf("read the CPU profile: %w", err)
	}
	at := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			at = i
		}
	}
	if at < 0 {
		return 0, fmt.Errorf("the CPU profile has no cpu/nanoseconds sample type: %v", p.SampleType)
	}
	var ns int64
	for _, s := range p.Sample {
		for _, v := range s.Label[key] {
			if v == value {
				ns += s.Value[at]
				break
			}
		}
	}
	return float64(ns) / 1e9, nil
}

// deleteRound deletes a round's pods once it is measured, so that every
// round starts from the same cluster: bound pods left behind would make
// each round's scheduler start and filter against more pods than the one
// before it.
func deleteRound(b *testing.B, admin kubernetes.Interface, round string) {
	b.Helper()
	pods := admin.CoreV1().Pods(benchNamespace)
	sel := metav1.ListOptions{LabelSelector: benchRoundKey + "=" + round}
	// No kubelet runs here, so a pod is removed only when deleted with
	// no grace period.
	if err := pods.DeleteCollection(b.Context(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, sel); err != nil {
		b.Fatalf("delete round %s's pods: %v", round, err)
	}
	harness.PollUntil(b, "round "+round+"'s pods to be deleted", time.Minute, func() bool {
		list, err := pods.List(b.Context(), sel)
		if err != nil {
			b.Fatalf("list round %s's pods: %v", round, err)
		}
		return len(list.Items) == 0
	})
}

// cpuSeconds is the CPU the extender's process has used so far.
func (e *extenderProcess) cpuSeconds(t testing.TB) float64 {
	t.Helper()
	proc, err := procfs.NewProc(e.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	st, err := proc.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return st.CPUTime()
}
