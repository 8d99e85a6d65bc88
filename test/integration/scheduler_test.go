package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// testExtender is a scheduler extender that keeps only the allowed nodes
// and scores one of them highest. It remembers how the scheduler called
// it.
type testExtender struct {
	allowed   []string
	preferred string

	mu             sync.Mutex
	filterCalls    int
	prioritizeCall int
	gotNodeNames   bool // the scheduler sent names only (node cache mode)
	gotNodeObjects bool // the scheduler sent whole Node objects
	candidates     []string
}

func (e *testExtender) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var args extenderv1.ExtenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	names := e.record(r.URL.Path, &args)
	var reply any
	switch r.URL.Path {
	case "/filter":
		res := extenderv1.ExtenderFilterResult{FailedNodes: extenderv1.FailedNodesMap{}}
		var kept []string
		for _, n := range names {
			if slices.Contains(e.allowed, n) {
				kept = append(kept, n)
			} else {
				res.FailedNodes[n] = "not chosen by the test extender"
			}
		}
		if args.NodeNames != nil {
			res.NodeNames = &kept
		} else {
			list := &corev1.NodeList{}
			for _, n := range args.Nodes.Items {
				if slices.Contains(kept, n.Name) {
					list.Items = append(list.Items, n)
				}
			}
			res.Nodes = list
		}
		reply = res
	case "/prioritize":
		scores := extenderv1.HostPriorityList{}
		for _, n := range names {
			score := extenderv1.MinExtenderPriority
			if n == e.preferred {
				score = extenderv1.MaxExtenderPriority
			}
			scores = append(scores, extenderv1.HostPriority{Host: n, Score: score})
		}
		reply = scores
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

func (e *testExtender) record(path string, args *extenderv1.ExtenderArgs) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var names []string
	if args.NodeNames != nil {
		e.gotNodeNames = true
		names = *args.NodeNames
	}
	if args.Nodes != nil {
		e.gotNodeObjects = true
		for _, n := range args.Nodes.Items {
			names = append(names, n.Name)
		}
	}
	switch path {
	case "/filter":
		e.filterCalls++
		e.candidates = slices.Sorted(slices.Values(names))
	case "/prioritize":
		e.prioritizeCall++
	}
	return names
}

func TestSchedulerBindsWhereTheExtenderSays(t *testing.T) {
	for _, nodeCacheCapable := range []bool{true, false} {
		t.Run(fmt.Sprintf("nodeCacheCapable=%v", nodeCacheCapable), func(t *testing.T) {
			group := fmt.Sprintf("ext-cache-%v", nodeCacheCapable)
			nodes := []string{group + "-a", group + "-b", group + "-c"}
			for _, n := range nodes {
				cp.CreateReadyNode(t, n, map[string]string{"joulie.test/group": group}, corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("32"),
				})
			}
			// Node c fails the extender's filter; of a and b, b scores
			// highest. The default plugins score identical nodes alike, so
			// the extender's score decides.
			ext := &testExtender{allowed: nodes[:2], preferred: nodes[1]}
			srv := httptest.NewServer(ext)
			t.Cleanup(srv.Close)

			cp.StartScheduler(t, &schedulerconfigv1.KubeSchedulerConfiguration{
				Extenders: []schedulerconfigv1.Extender{{
					URLPrefix:        srv.URL,
					FilterVerb:       "filter",
					PrioritizeVerb:   "prioritize",
					Weight:           5,
					NodeCacheCapable: nodeCacheCapable,
					HTTPTimeout:      metav1.Duration{Duration: 10 * time.Second},
				}},
			})

			pod := cp.CreatePod(t, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: group, Annotations: map[string]string{"joulie.io/workload-class": "performance"}},
				Spec: corev1.PodSpec{
					// Keep the pod to this subtest's nodes.
					NodeSelector: map[string]string{"joulie.test/group": group},
					Containers: []corev1.Container{{
						Name:      "main",
						Image:     "registry.invalid/joulie/idle:0",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
					}},
				},
			})
			got := cp.WaitForPodBound(t, pod.Namespace, pod.Name, 60*time.Second)
			if got != nodes[1] {
				t.Errorf("pod bound to %s, want %s", got, nodes[1])
			}

			ext.mu.Lock()
			defer ext.mu.Unlock()
			if ext.filterCalls == 0 || ext.prioritizeCall == 0 {
				t.Errorf("extender called %d times for filter and %d for prioritize, want both", ext.filterCalls, ext.prioritizeCall)
			}
			if !slices.Equal(ext.candidates, nodes) {
				t.Errorf("extender filtered %v, want the group's nodes %v", ext.candidates, nodes)
			}
			if nodeCacheCapable && (!ext.gotNodeNames || ext.gotNodeObjects) {
				t.Errorf("with nodeCacheCapable the scheduler should send node names only (names %v, objects %v)", ext.gotNodeNames, ext.gotNodeObjects)
			}
			if !nodeCacheCapable && (ext.gotNodeNames || !ext.gotNodeObjects) {
				t.Errorf("without nodeCacheCapable the scheduler should send Node objects only (names %v, objects %v)", ext.gotNodeNames, ext.gotNodeObjects)
			}
		})
	}
}

// A benchmark starts a scheduler per round: one stopped before its test
// ends must leave the process ready for the next, whose pods it binds.
func TestSchedulerStopsAndStartsAgainInOneTest(t *testing.T) {
	const group = "sched-restart"
	node := group + "-node"
	cp.CreateReadyNode(t, node, map[string]string{"joulie.test/group": group}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")})
	for i := range 2 {
		stop := cp.StartScheduler(t, nil)
		pod := cp.CreatePod(t, groupPod(group, fmt.Sprintf("%s-%d", group, i), ""))
		if got := cp.WaitForPodBound(t, pod.Namespace, pod.Name, 60*time.Second); got != node {
			t.Fatalf("scheduler %d bound %s to %s, want %s", i+1, pod.Name, got, node)
		}
		stop()
	}
}
