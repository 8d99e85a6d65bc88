package park

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// benchCluster is 2,500 nodes in three families: a tenth of them parked,
// a tenth parking or waking, most busy, some idle; 500 pending pods, of
// which most fit an awake node, some need a parked node (by node
// selector, so each is checked against every node before its own), and
// some fit nothing, which is the most work: every node is tried.
func benchCluster() Input {
	fams := []string{cpuFam, gpuFam, "cpu:intel-xeon-8480"}
	input := Input{Now: t0, PodsKnown: true, Arrivals: map[string][]Arrival{}}
	for i := range 2500 {
		name := fmt.Sprintf("node-%04d", i)
		fam := fams[i%len(fams)]
		var mods []func(*Node)
		switch {
		case i%10 == 0:
			mods = append(mods, in(joulie.PowerParked, time.Hour))
		case i%10 == 1:
			mods = append(mods, in(joulie.PowerParking, 10*time.Second))
		case i%10 == 2 && i%3 == 0:
			mods = append(mods, in(joulie.PowerWaking, time.Minute), attempts(1))
		case i%10 < 5:
			// idle
		default:
			mods = append(mods, busy(60))
		}
		input.Nodes = append(input.Nodes, node(name, fam, 64, mods...))
	}
	for _, f := range fams {
		input.Arrivals[f] = arrivals(200, 16, 50*time.Minute)
	}
	for i := range 500 {
		switch {
		case i%5 == 0:
			input.Pending = append(input.Pending, pod(fmt.Sprintf("wake-%d", i), 32, 0, onHost(fmt.Sprintf("node-%04d", (i*10)%2500))))
		case i%5 == 1:
			input.Pending = append(input.Pending, pod(fmt.Sprintf("huge-%d", i), 1000, 0))
		default:
			p := pod(fmt.Sprintf("fits-%d", i), 2, 0)
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("4Gi")
			input.Pending = append(input.Pending, p)
		}
	}
	return input
}

// BenchmarkDecide2500Nodes500Pending measured 16-50 ms, 2.3 MB and 21,400
// allocations per Decide on the shared 2-core machine while other work ran
// (load 12-16); the spread is the load's.
func BenchmarkDecide2500Nodes500Pending(b *testing.B) {
	in := benchCluster()
	s := DefaultParams()
	s.WakesPerMinute = 1000
	r := Decide(in, s)
	b.Logf("%d transitions, %d pending pods unplaceable, %d waiting for the rate", len(r.Transitions), r.Unplaceable, r.WaitingForRate)
	b.ReportAllocs()
	for b.Loop() {
		Decide(in, s)
	}
}
