package schedsim

import (
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

const gpuResource v1.ResourceName = "nvidia.com/gpu"

func makeNode(name string, cpu, memGi, gpus int64, labels map[string]string) *v1.Node {
	alloc := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
	if gpus > 0 {
		alloc[gpuResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status:     v1.NodeStatus{Capacity: alloc, Allocatable: alloc},
	}
}

func makePod(name string, milliCPU, memGi, gpus int64) *v1.Pod {
	req := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(milliCPU, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
	}
	if gpus > 0 {
		req[gpuResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "sim", Name: name},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name:      "job",
			Resources: v1.ResourceRequirements{Requests: req, Limits: req},
		}}},
	}
}

func newScheduler(t testing.TB, p Profile, nodes []*v1.Node, ext Extender, seed uint64) *Scheduler {
	t.Helper()
	s, err := New(p, nodes, ext, Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// place schedules pod and binds it where the scheduler chose.
func place(t testing.TB, s *Scheduler, pod *v1.Pod) string {
	t.Helper()
	node, err := s.Schedule(context.Background(), pod)
	if err != nil {
		t.Fatalf("schedule %s: %v", pod.Name, err)
	}
	if err := s.Bind(pod, node); err != nil {
		t.Fatal(err)
	}
	return node
}

func TestProfilesSpreadOrPack(t *testing.T) {
	for _, tc := range []struct {
		name      string
		profile   Profile
		wantNodes int
	}{
		{"default profile spreads over the emptiest nodes", DefaultProfile, 3},
		{"MostAllocated packs onto the fullest node", MostAllocatedProfile, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []*v1.Node{makeNode("a", 16, 64, 0, nil), makeNode("b", 16, 64, 0, nil), makeNode("c", 16, 64, 0, nil)}
			s := newScheduler(t, tc.profile, nodes, nil, 1)
			used := map[string]bool{}
			for i := range 3 {
				used[place(t, s, makePod(fmt.Sprintf("p%d", i), 2000, 4, 0))] = true
			}
			if len(used) != tc.wantNodes {
				t.Errorf("3 pods landed on %d nodes %v, want %d", len(used), used, tc.wantNodes)
			}
		})
	}
}

func TestPodThatFitsNowhereWaitsUntilAPodLeaves(t *testing.T) {
	s := newScheduler(t, DefaultProfile, []*v1.Node{makeNode("a", 4, 16, 0, nil), makeNode("b", 4, 16, 0, nil)}, nil, 1)
	first := makePod("first", 3000, 1, 0)
	freed := place(t, s, first)
	place(t, s, makePod("second", 3000, 1, 0))

	big := makePod("big", 2000, 1, 0)
	_, err := s.Schedule(context.Background(), big)
	if !errors.Is(err, ErrUnschedulable) {
		t.Fatalf("got %v, want ErrUnschedulable", err)
	}
	if !strings.Contains(err.Error(), "0/2 nodes are available: 2 Insufficient cpu") {
		t.Errorf("error %q does not carry kube-scheduler's reasons", err)
	}

	if err := s.Remove(first); err != nil {
		t.Fatal(err)
	}
	node, err := s.Schedule(context.Background(), big)
	if err != nil {
		t.Fatalf("after removing %s: %v", first.Name, err)
	}
	if node != freed {
		t.Fatalf("big went to %s, want %s, the node %s left", node, freed, first.Name)
	}
	if err := s.Bind(big, node); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(first); err == nil {
		t.Error("removing a pod twice succeeded")
	}
}

func TestGPUPodsCountAgainstNodeGPUs(t *testing.T) {
	s := newScheduler(t, DefaultProfile, []*v1.Node{makeNode("cpu", 192, 768, 0, nil), makeNode("gpu", 112, 2048, 8, nil)}, nil, 1)
	for i := range 8 {
		if node := place(t, s, makePod(fmt.Sprintf("g%d", i), 1000, 8, 1)); node != "gpu" {
			t.Fatalf("GPU pod %d went to %s", i, node)
		}
	}
	_, err := s.Schedule(context.Background(), makePod("g8", 1000, 8, 1))
	if !errors.Is(err, ErrUnschedulable) || !strings.Contains(err.Error(), "Insufficient nvidia.com/gpu") {
		t.Fatalf("ninth GPU pod: got %v, want unschedulable for nvidia.com/gpu", err)
	}
}

func withNodeSelector(p *v1.Pod, profile string) *v1.Pod {
	p.Spec.NodeSelector = map[string]string{joulie.LabelPowerProfile: profile}
	return p
}

func withRequiredAffinity(p *v1.Pod, op v1.NodeSelectorOperator, values ...string) *v1.Pod {
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: joulie.LabelPowerProfile, Operator: op, Values: values}},
		}}},
	}}
	return p
}

func TestPowerProfileConstraintsFollowNodeLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		// want is the node before and after the two nodes swap profiles.
		want, wantSwapped string
	}{
		{"nodeSelector performance", withNodeSelector(makePod("p", 1000, 1, 0), "performance"), "x", "y"},
		{"required affinity NotIn eco", withRequiredAffinity(makePod("p", 1000, 1, 0), v1.NodeSelectorOpNotIn, "eco"), "x", "y"},
		{"required affinity In eco", withRequiredAffinity(makePod("p", 1000, 1, 0), v1.NodeSelectorOpIn, "eco"), "y", "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler(t, DefaultProfile, []*v1.Node{
				makeNode("x", 16, 64, 0, map[string]string{joulie.LabelPowerProfile: "performance"}),
				makeNode("y", 16, 64, 0, map[string]string{joulie.LabelPowerProfile: "eco"}),
			}, nil, 1)
			for range 5 {
				if got, err := s.Schedule(context.Background(), tc.pod); err != nil || got != tc.want {
					t.Fatalf("got %q, %v; want %q", got, err, tc.want)
				}
			}
			if err := s.SetNodeLabels("x", map[string]string{joulie.LabelPowerProfile: "eco"}); err != nil {
				t.Fatal(err)
			}
			if err := s.SetNodeLabels("y", map[string]string{joulie.LabelPowerProfile: "performance"}); err != nil {
				t.Fatal(err)
			}
			for range 5 {
				if got, err := s.Schedule(context.Background(), tc.pod); err != nil || got != tc.wantSwapped {
					t.Fatalf("after the swap: got %q, %v; want %q", got, err, tc.wantSwapped)
				}
			}
		})
	}
	s := newScheduler(t, DefaultProfile, []*v1.Node{makeNode("x", 16, 64, 0, nil)}, nil, 1)
	if err := s.SetNodeLabels("nope", nil); err == nil {
		t.Error("labelling an unknown node succeeded")
	}
}

// fakeExtender filters out the nodes in drop and scores by name.
type fakeExtender struct {
	drop   map[string]bool
	scores map[string]int64
	weight int64
	extra  string // a node Filter returns although it was not offered

	offered [][]string // node names of each Filter call
}

func (e *fakeExtender) Filter(pod *v1.Pod, nodes []*v1.Node) ([]*v1.Node, map[string]string, error) {
	var names []string
	var kept []*v1.Node
	failed := map[string]string{}
	for _, n := range nodes {
		names = append(names, n.Name)
		if e.drop[n.Name] {
			failed[n.Name] = "joulie: node is eco"
			continue
		}
		kept = append(kept, n)
	}
	e.offered = append(e.offered, names)
	if e.extra != "" {
		kept = append(kept, makeNode(e.extra, 1, 1, 0, nil))
	}
	return kept, failed, nil
}

func (e *fakeExtender) Prioritize(pod *v1.Pod, nodes []*v1.Node) (extenderv1.HostPriorityList, error) {
	list := make(extenderv1.HostPriorityList, len(nodes))
	for i, n := range nodes {
		list[i] = extenderv1.HostPriority{Host: n.Name, Score: e.scores[n.Name]}
	}
	return list, nil
}

func (e *fakeExtender) Weight() int64 { return e.weight }

func TestExtenderFilterRemovesNodes(t *testing.T) {
	nodes := []*v1.Node{makeNode("a", 16, 64, 0, nil), makeNode("b", 16, 64, 0, nil), makeNode("c", 16, 64, 0, nil)}
	ext := &fakeExtender{drop: map[string]bool{"a": true, "c": true}, weight: 1}
	s := newScheduler(t, DefaultProfile, nodes, ext, 1)
	for i := range 6 {
		if node := place(t, s, makePod(fmt.Sprintf("p%d", i), 1000, 1, 0)); node != "b" {
			t.Fatalf("pod %d went to %s, which the extender filtered out", i, node)
		}
	}

	ext.drop["b"] = true
	_, err := s.Schedule(context.Background(), makePod("late", 1000, 1, 0))
	if !errors.Is(err, ErrUnschedulable) || !strings.Contains(err.Error(), "3 joulie: node is eco") {
		t.Fatalf("got %v, want unschedulable with the extender's reason for 3 nodes", err)
	}
}

func TestExtenderReturningANodeNotOfferedIsAnError(t *testing.T) {
	ext := &fakeExtender{weight: 1, extra: "ghost"}
	s := newScheduler(t, DefaultProfile, []*v1.Node{makeNode("a", 16, 64, 0, nil), makeNode("b", 16, 64, 0, nil)}, ext, 1)
	_, err := s.Schedule(context.Background(), makePod("p", 1000, 1, 0))
	if err == nil || errors.Is(err, ErrUnschedulable) || !strings.Contains(err.Error(), `"ghost"`) {
		t.Fatalf("got %v, want an error naming the node the extender made up", err)
	}
}

func TestExtenderWeightMustBePositive(t *testing.T) {
	if _, err := New(DefaultProfile, []*v1.Node{makeNode("a", 1, 1, 0, nil)}, &fakeExtender{}, Options{}); err == nil {
		t.Fatal("New accepted an extender with weight 0")
	}
}

// TestExtenderScoresAddToPluginTotals checks kube-scheduler's arithmetic on
// a case worked out by hand. Nodes a and b have 10 CPUs and 10 GiB; a
// already runs a pod of 5 CPUs and 5 GiB; the new pod asks for 1 CPU and
// 1 GiB. The default profile's scores (weight × normalized score):
//   - TaintToleration 3 × 100 on both (no taints);
//   - NodeAffinity, PodTopologySpread, InterPodAffinity: skipped (the pod
//     has no preferences, no owner, no pod affinity);
//   - ImageLocality 1 × 0 on both (no image present);
//   - NodeResourcesBalancedAllocation 1 × 100 on both (CPU and memory are
//     equally used on each node);
//   - NodeResourcesFit 1 × LeastAllocated: b (10-1)/10 → 90, a (10-6)/10
//     → 40; MostAllocated: b 1/10 → 10, a 6/10 → 60.
//
// So the plugins put b 50 points ahead with LeastAllocated and a 50 ahead
// with MostAllocated. The extender's score s at weight w adds s × w × 10.
func TestExtenderScoresAddToPluginTotals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		profile Profile
		scores  map[string]int64
		weight  int64
		want    string // "" means a tie: both nodes must win for some seed
	}{
		{"no extender score: plugins choose b", DefaultProfile, nil, 1, "b"},
		{"a scores 4 at weight 1: 40 < 50, b keeps it", DefaultProfile, map[string]int64{"a": 4}, 1, "b"},
		{"a scores 6 at weight 1: 60 > 50, a wins", DefaultProfile, map[string]int64{"a": 6}, 1, "a"},
		{"a scores 5 at weight 1: 50 = 50, a tie", DefaultProfile, map[string]int64{"a": 5}, 1, ""},
		{"a scores 2 at weight 2: 40 < 50", DefaultProfile, map[string]int64{"a": 2}, 2, "b"},
		{"a scores 2 at weight 3: 60 > 50", DefaultProfile, map[string]int64{"a": 2}, 3, "a"},
		{"scores on both count by difference: a 10, b 4 at weight 1", DefaultProfile, map[string]int64{"a": 10, "b": 4}, 1, "a"},
		{"scores on both count by difference: a 10, b 5 at weight 1", DefaultProfile, map[string]int64{"a": 10, "b": 5}, 1, ""},
		{"MostAllocated: plugins choose a", MostAllocatedProfile, nil, 1, "a"},
		{"MostAllocated: b scores 6, b wins", MostAllocatedProfile, map[string]int64{"b": 6}, 1, "b"},
		{"MostAllocated: b scores 4, a keeps it", MostAllocatedProfile, map[string]int64{"b": 4}, 1, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			winners := map[string]int{}
			for seed := range uint64(20) {
				nodes := []*v1.Node{makeNode("a", 10, 10, 0, nil), makeNode("b", 10, 10, 0, nil)}
				s := newScheduler(t, tc.profile, nodes, &fakeExtender{scores: tc.scores, weight: tc.weight}, seed)
				if err := s.Bind(makePod("running", 5000, 5, 0), "a"); err != nil {
					t.Fatal(err)
				}
				node, err := s.Schedule(context.Background(), makePod("new", 1000, 1, 0))
				if err != nil {
					t.Fatal(err)
				}
				winners[node]++
			}
			if tc.want == "" {
				if winners["a"] == 0 || winners["b"] == 0 {
					t.Errorf("a tie should go either way over 20 seeds, got %v", winners)
				}
			} else if winners[tc.want] != 20 {
				t.Errorf("winners over 20 seeds %v, want always %s", winners, tc.want)
			}
		})
	}
}

func TestExtenderDecidesBetweenEqualNodes(t *testing.T) {
	for seed := range uint64(20) {
		nodes := []*v1.Node{makeNode("a", 16, 64, 0, nil), makeNode("b", 16, 64, 0, nil), makeNode("c", 16, 64, 0, nil)}
		s := newScheduler(t, DefaultProfile, nodes, &fakeExtender{scores: map[string]int64{"b": 1}, weight: 1}, seed)
		if node, err := s.Schedule(context.Background(), makePod("p", 1000, 1, 0)); err != nil || node != "b" {
			t.Fatalf("seed %d: got %q, %v; want b, the extender's choice among equal nodes", seed, node, err)
		}
	}
}

// placements schedules and binds n pods and returns where they went.
func placements(t *testing.T, seed uint64, n int) []string {
	var nodes []*v1.Node
	for i := range 30 {
		nodes = append(nodes, makeNode(fmt.Sprintf("n%02d", i), 64, 256, 0, nil))
	}
	s := newScheduler(t, DefaultProfile, nodes, nil, seed)
	var got []string
	for i := range n {
		got = append(got, place(t, s, makePod(fmt.Sprintf("p%d", i), 1000, 1, 0)))
	}
	return got
}

func TestSameSeedSamePlacements(t *testing.T) {
	a, b, c := placements(t, 7, 90), placements(t, 7, 90), placements(t, 8, 90)
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("seed 7 twice gave different placements:\n%v\n%v", a, b)
	}
	if strings.Join(a, ",") == strings.Join(c, ",") {
		t.Errorf("seeds 7 and 8 gave the same placements; the seed does not reach the tie-break")
	}
}

func TestSampleOfNodesFollowsPercentageOfNodesToScore(t *testing.T) {
	var nodes []*v1.Node
	for i := range 1000 {
		nodes = append(nodes, makeNode(fmt.Sprintf("n%04d", i), 16, 64, 0, nil))
	}
	for _, tc := range []struct {
		name      string
		profile   Profile
		wantCount int
	}{
		// 50% - 1000/125 % = 42% of 1,000 nodes.
		{"kube-scheduler's adaptive default", DefaultProfile, 420},
		{"percentageOfNodesToScore 100", Profile{PercentageOfNodesToScore: ptr.To[int32](100)}, 1000},
		{"percentageOfNodesToScore 1 stops at the 100-node floor", Profile{PercentageOfNodesToScore: ptr.To[int32](1)}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ext := &fakeExtender{weight: 1}
			s := newScheduler(t, tc.profile, nodes, ext, 1)
			for i := range 3 {
				if _, err := s.Schedule(context.Background(), makePod(fmt.Sprintf("p%d", i), 1000, 1, 0)); err != nil {
					t.Fatal(err)
				}
			}
			for i, names := range ext.offered {
				if len(names) != tc.wantCount {
					t.Fatalf("cycle %d offered %d nodes to the extender, want %d", i, len(names), tc.wantCount)
				}
				// Each cycle starts where the previous one stopped.
				if want := fmt.Sprintf("n%04d", i*tc.wantCount%1000); names[0] != want {
					t.Errorf("cycle %d started at %s, want %s", i, names[0], want)
				}
			}
		})
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	for _, tc := range []struct {
		percentage, nodes, want int32
	}{
		{0, 50, 50},
		{0, 100, 100},
		{0, 1000, 420},
		{0, 2500, 750},
		{0, 5000, 500},  // 50-40 = 10%
		{0, 10000, 500}, // floor of 5%
		{100, 2500, 2500},
		{10, 500, 100}, // floor of 100 nodes
	} {
		if got := numFeasibleNodesToFind(tc.percentage, tc.nodes); got != tc.want {
			t.Errorf("numFeasibleNodesToFind(%d, %d) = %d, want %d", tc.percentage, tc.nodes, got, tc.want)
		}
	}
}

func TestProfileRefusedByKubeSchedulerValidation(t *testing.T) {
	_, err := New(Profile{Strategy: "Sideways"}, []*v1.Node{makeNode("a", 1, 1, 0, nil)}, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "Sideways") {
		t.Fatalf("got %v, want kube-scheduler's refusal naming the strategy", err)
	}
}

func TestBindChecksNodeAndDuplicates(t *testing.T) {
	s := newScheduler(t, DefaultProfile, []*v1.Node{makeNode("a", 4, 4, 0, nil)}, nil, 1)
	p := makePod("p", 1000, 1, 0)
	if err := s.Bind(p, "nope"); err == nil {
		t.Error("binding to an unknown node succeeded")
	}
	if err := s.Bind(p, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Bind(p, "a"); err == nil {
		t.Error("binding a pod twice succeeded")
	}
	if p.Spec.NodeName != "" {
		t.Error("Bind changed the caller's pod")
	}
}

func TestPreFilterNarrowsNodesByName(t *testing.T) {
	s := newScheduler(t, DefaultProfile, []*v1.Node{makeNode("a", 4, 16, 0, nil), makeNode("b", 4, 16, 0, nil), makeNode("c", 4, 16, 0, nil)}, nil, 1)
	onB := func(name string, milliCPU int64) *v1.Pod {
		p := makePod(name, milliCPU, 1, 0)
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"b"}}},
			}}},
		}}
		return p
	}
	if node := place(t, s, onB("first", 3000)); node != "b" {
		t.Fatalf("pod pinned to b by name went to %s", node)
	}
	// NodeAffinity's PreFilter leaves only b, so the other two nodes are
	// reported as kube-scheduler reports nodes a PreFilterResult left out.
	_, err := s.Schedule(context.Background(), onB("second", 3000))
	want := "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
	if !errors.Is(err, ErrUnschedulable) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want unschedulable with %q", err, want)
	}
}

func TestPreFilterRejectionMakesThePodUnschedulable(t *testing.T) {
	s := newScheduler(t, DefaultProfile, []*v1.Node{makeNode("a", 4, 16, 0, nil)}, nil, 1)
	p := makePod("with-claim", 1000, 1, 0)
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "missing"},
	}}}
	_, err := s.Schedule(context.Background(), p)
	if !errors.Is(err, ErrUnschedulable) || !strings.Contains(err.Error(), `persistentvolumeclaim "missing" not found`) {
		t.Fatalf("got %v, want unschedulable for the missing claim", err)
	}
}

// Without leaves the named plugins out of the profile kube-scheduler
// builds, and leaves the profile it was called on alone.
func TestProfileWithoutLeavesPluginsOut(t *testing.T) {
	base := MostAllocatedProfile
	p := base.Without("ImageLocality", "InterPodAffinity")
	if len(base.Disabled) != 0 {
		t.Fatalf("Without changed the profile it was called on: %v", base.Disabled)
	}
	cfg, err := p.schedulerConfig()
	if err != nil {
		t.Fatal(err)
	}
	disabled := pluginNames(cfg.Profiles[0].Plugins.MultiPoint.Disabled)
	if !disabled["ImageLocality"] || !disabled["InterPodAffinity"] || disabled["NodeResourcesFit"] {
		t.Errorf("disabled plugins %v, want ImageLocality and InterPodAffinity only", cfg.Profiles[0].Plugins.MultiPoint.Disabled)
	}
	// kube-scheduler takes an unknown name in the disabled list without a
	// word, so check that every inert plugin is one the default profile
	// enables: a plugin renamed upstream would otherwise stay on unseen.
	def, err := DefaultProfile.schedulerConfig()
	if err != nil {
		t.Fatal(err)
	}
	enabled := pluginNames(def.Profiles[0].Plugins.MultiPoint.Enabled)
	for _, name := range InertForPlainPods {
		if !enabled[name] {
			t.Errorf("InertForPlainPods names %s, which the default profile does not enable", name)
		}
	}
}

// pluginNames is the set of the plugins' names.
func pluginNames(plugins []config.Plugin) map[string]bool {
	set := map[string]bool{}
	for _, pl := range plugins {
		set[pl.Name] = true
	}
	return set
}
