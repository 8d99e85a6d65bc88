package schedsim

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// benchCluster is the benchmark's standard cluster: 2,000 CPU nodes
// (192 cores, 768 GiB) and 500 GPU nodes (112 cores, 2 TiB, 8 GPUs), a
// fifth of each labelled eco.
func benchCluster() []*v1.Node {
	nodes := make([]*v1.Node, 0, 2500)
	for i := range 2500 {
		profile := "performance"
		if i%5 == 0 {
			profile = "eco"
		}
		labels := map[string]string{joulie.LabelPowerProfile: profile}
		if i < 2000 {
			nodes = append(nodes, makeNode(fmt.Sprintf("cpu-%04d", i), 192, 768, 0, labels))
		} else {
			nodes = append(nodes, makeNode(fmt.Sprintf("gpu-%03d", i-2000), 112, 2048, 8, labels))
		}
	}
	return nodes
}

// benchPod cycles through eight shapes, one of them with a GPU: about
// 10 cores per pod on average.
func benchPod(i int) *v1.Pod {
	name := fmt.Sprintf("job-%d", i)
	shapes := [8]struct{ milliCPU, memGi, gpus int64 }{
		{8000, 32, 0}, {32000, 128, 0}, {12000, 96, 1}, {2000, 8, 0},
		{4000, 16, 0}, {16000, 64, 0}, {1000, 4, 0}, {8000, 32, 0},
	}
	sh := shapes[i%len(shapes)]
	return makePod(name, sh.milliCPU, sh.memGi, sh.gpus)
}

// labelExtender keeps nodes that are not eco and scores them by a cheap
// function of the name: it measures the cost of the extender path, not of
// any particular scoring.
type labelExtender struct{}

func (labelExtender) Filter(pod *v1.Pod, nodes []*v1.Node) ([]*v1.Node, map[string]string, error) {
	kept := make([]*v1.Node, 0, len(nodes))
	failed := map[string]string{}
	for _, n := range nodes {
		if n.Labels[joulie.LabelPowerProfile] == "eco" {
			failed[n.Name] = "eco node"
			continue
		}
		kept = append(kept, n)
	}
	return kept, failed, nil
}

func (labelExtender) Prioritize(pod *v1.Pod, nodes []*v1.Node) (extenderv1.HostPriorityList, error) {
	list := make(extenderv1.HostPriorityList, len(nodes))
	for i, n := range nodes {
		list[i] = extenderv1.HostPriority{Host: n.Name, Score: int64(len(n.Name)+i) % 11}
	}
	return list, nil
}

func (labelExtender) Weight() int64 { return 1 }

// BenchmarkSchedulePod measures one pod's scheduling cycle (Schedule and
// Bind, plus the Remove of an earlier pod that keeps the load steady) on
// the 2,500-node cluster holding 15,000 running pods (about a third of its
// cores and half of its GPUs).
func BenchmarkSchedulePod(b *testing.B) {
	const running = 15000
	for _, bc := range []struct {
		name        string
		profile     Profile
		ext         Extender
		parallelism int
	}{
		{"LeastAllocated", DefaultProfile, nil, 1},
		{"MostAllocated", MostAllocatedProfile, nil, 1},
		{"LeastAllocated+extender", DefaultProfile, labelExtender{}, 1},
		{"LeastAllocated/parallelism=2", DefaultProfile, nil, 2},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := New(bc.profile, benchCluster(), bc.ext, Options{Seed: 1, Parallelism: bc.parallelism})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			ring := make([]*v1.Pod, running)
			schedule := func(i int) {
				pod := benchPod(i)
				node, err := s.Schedule(ctx, pod)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Bind(pod, node); err != nil {
					b.Fatal(err)
				}
				if old := ring[i%running]; old != nil {
					if err := s.Remove(old); err != nil {
						b.Fatal(err)
					}
				}
				ring[i%running] = pod
			}
			for i := range running {
				schedule(i)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				schedule(running + i)
			}
		})
	}
}
