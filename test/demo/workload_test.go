package demo

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/test/demo/fleet"
	"joulie.io/joulie/test/energy/workload"
)

// nodesLikeTheFleet are three families: CPU-only EPYC nodes, H100 nodes
// with 8 GPUs and L40S nodes with 4.
func nodesLikeTheFleet() []demoNode {
	var nodes []demoNode
	for range 6 {
		nodes = append(nodes, demoNode{Node: workload.Node{CPUMilli: 384000, MemoryMiB: 1536 << 10}})
	}
	for range 5 {
		nodes = append(nodes, demoNode{Node: workload.Node{CPUMilli: 224000, MemoryMiB: 2048 << 10, GPUs: 8}, gpuResource: joulie.ResourceNVIDIAGPU})
	}
	for range 5 {
		nodes = append(nodes, demoNode{Node: workload.Node{CPUMilli: 128000, MemoryMiB: 1024 << 10, GPUs: 4}, gpuResource: joulie.ResourceAMDGPU})
	}
	return nodes
}

func TestDemoWorkloadFitsTheRun(t *testing.T) {
	d := 4 * time.Minute
	jobs, arrivals, level, err := demoJobs(1, nodesLikeTheFleet(), d, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if arrivals != d/2 {
		t.Errorf("arrivals over %s, want half the run", arrivals)
	}
	if level != workload.DefaultLoadLevel {
		t.Errorf("load level %v on the default 16 nodes, want the benchmark's %v", level, workload.DefaultLoadLevel)
	}
	// Fewer pods allowed: the load comes down, the day stays whole.
	few, _, fewLevel, err := demoJobs(1, nodesLikeTheFleet(), d, 150)
	if err != nil {
		t.Fatal(err)
	}
	if fewLevel >= level || len(few) > 150 || few[len(few)-1].Arrival < arrivals*9/10 {
		t.Errorf("with at most 150 pods: level %v, %d pods, the last at %s; want a lower level and the whole day", fewLevel, len(few), few[len(few)-1].Arrival)
	}
	if len(jobs) < 100 || len(jobs) > 1000 {
		t.Errorf("%d jobs, want a few hundred", len(jobs))
	}
	var perf, gpu int
	for _, j := range jobs {
		if j.Arrival > arrivals || j.Work > d/3 || j.Work <= 0 {
			t.Errorf("job %s arrives at %s with work %s: outside the run's half or longer than a third of it", j.ID, j.Arrival, j.Work)
		}
		if j.Class == workload.Performance {
			perf++
		}
		if j.GPUs > 0 {
			gpu++
		}
	}
	// A compressed day: the whole of it arrives (the list is not cut at
	// max-pods before the evening), busier in the evening hours 17-23
	// than in the morning hours 8-14, as the benchmark's openb curve.
	var busy, quiet int
	hour := arrivals / 24
	for _, j := range jobs {
		switch h := int(j.Arrival / hour); {
		case h >= 17 && h < 24:
			busy++
		case h >= 8 && h < 15:
			quiet++
		}
	}
	if last := jobs[len(jobs)-1].Arrival; last < arrivals*9/10 {
		t.Errorf("the last job arrives at %s of a %s day: the list was cut before the day's end", last, arrivals)
	}
	if float64(busy) < 1.5*float64(quiet) {
		t.Errorf("%d jobs in the evening hours against %d in the morning: want a busy and a quiet phase", busy, quiet)
	}
	t.Logf("%d jobs over %s: %d in the evening hours, %d in the morning", len(jobs), arrivals, busy, quiet)
	if perf == 0 || perf == len(jobs) || gpu == 0 || gpu == len(jobs) {
		t.Errorf("%d jobs: %d performance, %d with GPUs; want both classes and both kinds", len(jobs), perf, gpu)
	}
	again, _, _, _ := demoJobs(1, nodesLikeTheFleet(), d, 1000)
	if workload.Hash(again) != workload.Hash(jobs) {
		t.Error("the same seed gives another workload")
	}
}

func TestJobPodAsksLikeAUser(t *testing.T) {
	nodes := nodesLikeTheFleet()
	job := workload.Job{ID: "job-000042", Class: workload.Performance, Boundness: "gpu-compute", CPUMilli: 8000, MemoryMiB: 65536, GPUs: 8, Work: 90 * time.Second}
	pod, err := jobPod(job, "joulie-demo", nodes)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "job-000042" || pod.Namespace != "joulie-demo" {
		t.Errorf("pod %s/%s", pod.Namespace, pod.Name)
	}
	for k, want := range map[string]string{
		joulie.AnnotationWorkloadClass: "performance", fleet.AnnotationWork: "1m30s", fleet.AnnotationBoundness: "gpu-compute",
	} {
		if got := pod.Annotations[k]; got != want {
			t.Errorf("annotation %s = %q, want %q", k, got, want)
		}
	}
	res := pod.Spec.Containers[0].Resources
	// Eight GPUs fit only the H100 nodes.
	if q := res.Limits[joulie.ResourceNVIDIAGPU]; q.Value() != 8 {
		t.Errorf("limits %v, want 8 nvidia.com/gpu", res.Limits)
	}
	if q := res.Requests[corev1.ResourceCPU]; q.MilliValue() != 8000 {
		t.Errorf("CPU request %v, want 8", q.String())
	}
	if q := res.Requests[corev1.ResourceMemory]; q.Value() != 64<<30 {
		t.Errorf("memory request %v, want 64Gi", q.String())
	}

	// One-GPU jobs spread over both vendors.
	seen := map[corev1.ResourceName]int{}
	for i := range 200 {
		j := workload.Job{ID: "job-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), GPUs: 1, CPUMilli: 1000, MemoryMiB: 1024, Work: time.Second}
		p, err := jobPod(j, "ns", nodes)
		if err != nil {
			t.Fatal(err)
		}
		for r := range p.Spec.Containers[0].Resources.Limits {
			seen[r]++
		}
	}
	if seen[joulie.ResourceNVIDIAGPU] == 0 || seen[joulie.ResourceAMDGPU] == 0 {
		t.Errorf("one-GPU jobs asked for %v, want both vendors", seen)
	}
	if _, err := jobPod(workload.Job{ID: "job-big", GPUs: 16}, "ns", nodes); err == nil {
		t.Error("a job of 16 GPUs, more than any node has, gives no error")
	}
}
