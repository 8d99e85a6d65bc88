package demo

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/test/demo/fleet"
	"joulie.io/joulie/test/energy/workload"
)

// gpuResources are the extended resources a simulated node may offer.
var gpuResources = []corev1.ResourceName{joulie.ResourceNVIDIAGPU, joulie.ResourceAMDGPU}

// demoNode is a node as the workload generator sees it, and which GPU
// resource it offers.
type demoNode struct {
	workload.Node
	gpuResource corev1.ResourceName
}

// clusterNodes reads the nodes the fleet created from the API: their
// allocatable CPU, memory and GPUs are what the workload is sized to.
func clusterNodes(ctx context.Context, kc kubernetes.Interface, names []string) ([]demoNode, error) {
	var nodes []demoNode
	for _, name := range names {
		n, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("read node %s: %w", name, err)
		}
		a := n.Status.Allocatable
		d := demoNode{Node: workload.Node{Name: name, CPUMilli: a.Cpu().MilliValue(), MemoryMiB: a.Memory().Value() >> 20}}
		for _, r := range gpuResources {
			if q, ok := a[r]; ok && q.Value() > 0 {
				d.GPUs, d.gpuResource = int(q.Value()), r
			}
		}
		nodes = append(nodes, d)
	}
	return nodes, nil
}

// demoJobs is the benchmark's generator scaled to the demo: the same
// shapes, class shares, burstiness and daily curve, with lifetimes and
// arrivals shrunk from hours to seconds so that a run of duration shows
// a whole day, its busy evening and its quiet morning. Arrivals last half
// the run, one compressed day, and the longest job a third of it, so the
// last pods finish before the run ends even when capped.
//
// The offered load is the benchmark's headline level (40% of the CPUs
// and GPUs requested, in the steady state the short lifetimes reach
// within seconds), unless the day would hold more than maxJobs pods: the
// load is then lowered to fit, since a list cut at maxJobs would lose its
// evening. level is the load the list was drawn for.
func demoJobs(seed int64, nodes []demoNode, duration time.Duration, maxJobs int) (jobs []workload.Job, arrivals time.Duration, level float64, err error) {
	cfg := workload.DefaultConfig()
	cfg.Nodes = nil
	for _, n := range nodes {
		cfg.Nodes = append(cfg.Nodes, n.Node)
	}
	arrivals = duration / 2
	cfg.Horizon = arrivals
	cfg.Day = arrivals
	cfg.Jobs = maxJobs
	cfg.Lifetime = workload.Lifetime{P50: duration / 20, P90: duration / 8, P99: duration / 4, Max: duration / 3}
	cfg.Bursts.Spread = duration / 20
	level = workload.DefaultLoadLevel
	cfg.TargetCPUUtilization, cfg.TargetGPUUtilization = level, level
	// Both streams' rates are linear in the two targets, so scaling them
	// scales the expected count (90% of maxJobs leaves room for the
	// bursts' spread).
	ld := cfg.Load()
	if want := (ld.GPUStreamPerHour + ld.CPUStreamPerHour) * arrivals.Hours(); want > 0.9*float64(maxJobs) {
		f := 0.9 * float64(maxJobs) / want
		level *= f
		cfg.TargetCPUUtilization, cfg.TargetGPUUtilization = level, level
	}
	if err := cfg.Validate(); err != nil {
		return nil, 0, 0, fmt.Errorf("the demo's workload does not fit its nodes: %w", err)
	}
	jobs = workload.Generate(seed, cfg)
	if len(jobs) == 0 {
		return nil, 0, 0, fmt.Errorf("the workload generator made no jobs for %d nodes over %s", len(nodes), arrivals)
	}
	return jobs, arrivals, level, nil
}

// jobPod is the Pod a job is submitted as: its class annotation and
// requests as a user would write them, and the fleet's annotations that
// tell the pod lifecycle stand-in its work and boundness. A GPU job asks
// for the GPU resource of a node family with enough GPUs per node, chosen
// by the job's name in proportion to the GPUs each resource has, so the
// same list always lands the same way.
func jobPod(job workload.Job, namespace string, nodes []demoNode) (*corev1.Pod, error) {
	cpu := *resource.NewMilliQuantity(job.CPUMilli, resource.DecimalSI)
	mem := *resource.NewQuantity(job.MemoryMiB<<20, resource.BinarySI)
	req := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem}
	var limits corev1.ResourceList
	if job.GPUs > 0 {
		r, err := gpuResourceFor(job, nodes)
		if err != nil {
			return nil, err
		}
		q := *resource.NewQuantity(int64(job.GPUs), resource.DecimalSI)
		// Extended resources are requested through limits.
		req[r] = q
		limits = corev1.ResourceList{r: q}
	}
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      podName(job),
			Namespace: namespace,
			Labels:    map[string]string{"app.kubernetes.io/part-of": "joulie-demo"},
			Annotations: map[string]string{
				joulie.AnnotationWorkloadClass: string(job.Class),
				fleet.AnnotationWork:           job.Work.String(),
				fleet.AnnotationBoundness:      string(job.Boundness),
			},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name:      "work",
				Image:     "registry.invalid/joulie/demo-work:0",
				Resources: corev1.ResourceRequirements{Requests: req, Limits: limits},
			}},
		},
	}, nil
}

// podName is a job's pod's name: job IDs are already DNS labels but for
// their case.
func podName(job workload.Job) string { return strings.ToLower(job.ID) }

func gpuResourceFor(job workload.Job, nodes []demoNode) (corev1.ResourceName, error) {
	total := map[corev1.ResourceName]int{}
	for _, n := range nodes {
		if n.GPUs >= job.GPUs {
			total[n.gpuResource] += n.GPUs
		}
	}
	var sum int
	for _, r := range gpuResources {
		sum += total[r]
	}
	if sum == 0 {
		return "", fmt.Errorf("job %s asks for %d GPUs and no node has that many", job.ID, job.GPUs)
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(job.ID))
	pick := int(h.Sum32() % uint32(sum))
	for _, r := range gpuResources {
		if pick < total[r] {
			return r, nil
		}
		pick -= total[r]
	}
	return gpuResources[0], nil
}

// submitter creates the jobs' pods at their arrival times from start.
type submitter struct {
	kc        kubernetes.Interface
	namespace string
	jobs      []workload.Job
	nodes     []demoNode
	submitted atomic.Int64

	mu      sync.Mutex
	created map[string]time.Time // by pod name
	failed  error                // the first pod it could not create
}

func (s *submitter) run(ctx context.Context, start time.Time) {
	jobs := slices.SortedFunc(slices.Values(s.jobs), func(a, b workload.Job) int {
		return cmp.Or(cmp.Compare(a.Arrival, b.Arrival), cmp.Compare(a.ID, b.ID))
	})
	for _, job := range jobs {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(job.Arrival))):
		}
		pod, err := jobPod(job, s.namespace, s.nodes)
		if err == nil {
			_, err = s.kc.CoreV1().Pods(s.namespace).Create(ctx, pod, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.mu.Lock()
			if s.failed == nil {
				s.failed = fmt.Errorf("create pod %s/%s: %w", s.namespace, podName(job), err)
			}
			s.mu.Unlock()
			continue
		}
		s.mu.Lock()
		if s.created == nil {
			s.created = map[string]time.Time{}
		}
		s.created[podName(job)] = time.Now()
		s.mu.Unlock()
		s.submitted.Add(1)
	}
}

// createdAt is when the pod of a job was created, zero if it was not.
func (s *submitter) createdAt(name string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created[name]
}

// err is the first pod the submitter failed to create, or nil.
func (s *submitter) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}
