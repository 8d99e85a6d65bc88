package workload

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

const key = v1alpha1.LabelPowerProfile

func expr(k string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: k, Operator: op, Values: values}
}

func term(exprs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: exprs}
}

// podWith builds a pod from an annotation value ("" for none), a
// nodeSelector value ("" for none) and required affinity terms (nil for no
// affinity at all).
func podWith(annotation, selector string, terms ...corev1.NodeSelectorTerm) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	if annotation != "" {
		pod.Annotations = map[string]string{v1alpha1.AnnotationWorkloadClass: annotation}
	}
	if selector != "" {
		pod.Spec.NodeSelector = map[string]string{key: selector}
	}
	if terms != nil {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
		}}
	}
	return pod
}

func TestClassify(t *testing.T) {
	hostname := expr("kubernetes.io/hostname", corev1.NodeSelectorOpIn, "node-1")
	tests := []struct {
		name       string
		pod        *corev1.Pod
		class      Class
		perf, eco  bool
		annotation string
	}{
		{name: "nil pod is general", pod: nil, class: General, perf: true, eco: true},
		{name: "bare pod is general", pod: podWith("", ""), class: General, perf: true, eco: true},
		{name: "annotation performance", pod: podWith("performance", ""), class: Performance, perf: true, eco: true},
		{name: "annotation standard", pod: podWith("standard", ""), class: General, perf: true, eco: true},
		{name: "annotation is case-sensitive", pod: podWith("Performance", ""), class: General, perf: true, eco: true},
		{name: "unknown annotation is standard", pod: podWith("batch", ""), class: General, perf: true, eco: true},

		{name: "nodeSelector performance", pod: podWith("", "performance"), class: Performance, perf: true},
		{name: "nodeSelector eco", pod: podWith("", "eco"), class: EcoOnly, eco: true},
		{name: "nodeSelector unknown profile allows neither", pod: podWith("", "turbo"), class: General},
		{name: "nodeSelector on other keys only", pod: func() *corev1.Pod {
			p := podWith("", "")
			p.Spec.NodeSelector = map[string]string{"kubernetes.io/arch": "amd64"}
			return p
		}(), class: General, perf: true, eco: true},

		{name: "In performance", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpIn, "performance"))), class: Performance, perf: true},
		{name: "In eco", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpIn, "eco"))), class: EcoOnly, eco: true},
		{name: "In both profiles", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpIn, "eco", "performance"))), class: General, perf: true, eco: true},
		{name: "In eco with an unknown value", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpIn, "eco", "turbo"))), class: EcoOnly, eco: true},
		{name: "In unknown values only", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpIn, "turbo"))), class: General},
		{name: "NotIn eco", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpNotIn, "eco"))), class: Performance, perf: true},
		{name: "NotIn performance", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpNotIn, "performance"))), class: EcoOnly, eco: true},
		{name: "NotIn unknown value", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpNotIn, "turbo"))), class: General, perf: true, eco: true},
		{name: "NotIn both profiles", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpNotIn, "eco", "performance"))), class: General},
		{name: "Exists", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpExists))), class: General, perf: true, eco: true},
		{name: "DoesNotExist", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpDoesNotExist))), class: General},
		{name: "Gt", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpGt, "1"))), class: General},
		{name: "Lt", pod: podWith("", "", term(expr(key, corev1.NodeSelectorOpLt, "1"))), class: General},
		{name: "unknown operator", pod: podWith("", "", term(expr(key, "Like", "eco"))), class: General},
		{name: "NotIn eco on another key", pod: podWith("", "", term(expr("example.com/tier", corev1.NodeSelectorOpNotIn, "eco"))), class: General, perf: true, eco: true},
		{name: "label keys are case-sensitive", pod: podWith("", "", term(expr("Joulie.io/power-profile", corev1.NodeSelectorOpIn, "eco"))), class: General, perf: true, eco: true},

		{name: "expressions ANDed within a term", pod: podWith("", "", term(
			expr(key, corev1.NodeSelectorOpExists),
			hostname,
			expr(key, corev1.NodeSelectorOpNotIn, "performance"),
		)), class: EcoOnly, eco: true},
		{name: "contradicting expressions in a term allow neither", pod: podWith("", "", term(
			expr(key, corev1.NodeSelectorOpIn, "eco"),
			expr(key, corev1.NodeSelectorOpIn, "performance"),
		)), class: General},
		{name: "NotIn eco in both of two terms is performance", pod: podWith("", "",
			term(expr(key, corev1.NodeSelectorOpNotIn, "eco")),
			term(hostname, expr(key, corev1.NodeSelectorOpIn, "performance")),
		), class: Performance, perf: true},
		{name: "NotIn eco in one of two terms is general", pod: podWith("", "",
			term(expr(key, corev1.NodeSelectorOpNotIn, "eco")),
			term(hostname),
		), class: General, perf: true, eco: true},
		{name: "terms for each profile ORed are general", pod: podWith("", "",
			term(expr(key, corev1.NodeSelectorOpIn, "performance")),
			term(expr(key, corev1.NodeSelectorOpIn, "eco")),
		), class: General, perf: true, eco: true},
		{name: "eco term ORed with DoesNotExist term is eco-only", pod: podWith("", "",
			term(expr(key, corev1.NodeSelectorOpIn, "eco")),
			term(expr(key, corev1.NodeSelectorOpDoesNotExist)),
		), class: EcoOnly, eco: true},
		{name: "matchFields only", pod: podWith("", "", corev1.NodeSelectorTerm{
			MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "node-1")},
		}), class: General, perf: true, eco: true},
		{name: "matchFields on the profile key do not restrict", pod: podWith("", "", corev1.NodeSelectorTerm{
			MatchFields: []corev1.NodeSelectorRequirement{expr(key, corev1.NodeSelectorOpIn, "eco")},
		}), class: General, perf: true, eco: true},
		{name: "empty term matches no node", pod: podWith("", "", corev1.NodeSelectorTerm{}), class: General},
		{name: "empty term ORed with eco term", pod: podWith("", "",
			corev1.NodeSelectorTerm{},
			term(expr(key, corev1.NodeSelectorOpIn, "eco")),
		), class: EcoOnly, eco: true},
		{name: "empty term list allows both", pod: podWith("", "", []corev1.NodeSelectorTerm{}...), class: General, perf: true, eco: true},
		{name: "nil required affinity allows both", pod: func() *corev1.Pod {
			p := podWith("", "")
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
			return p
		}(), class: General, perf: true, eco: true},
		{name: "pod affinity only allows both", pod: func() *corev1.Pod {
			p := podWith("", "")
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}}
			return p
		}(), class: General, perf: true, eco: true},
		{name: "preferred affinity is ignored", pod: func() *corev1.Pod {
			p := podWith("", "")
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
					Weight:     100,
					Preference: term(expr(key, corev1.NodeSelectorOpIn, "performance")),
				}},
			}}
			return p
		}(), class: General, perf: true, eco: true},

		{name: "nodeSelector ANDed with affinity", pod: podWith("", "performance", term(expr(key, corev1.NodeSelectorOpExists))), class: Performance, perf: true},
		{name: "nodeSelector and affinity disagree", pod: podWith("", "performance", term(expr(key, corev1.NodeSelectorOpIn, "eco"))), class: General},

		{name: "annotation performance wins over eco-only constraint", pod: podWith("performance", "eco"), class: Performance, eco: true},
		{name: "annotation standard does not undo performance constraint", pod: podWith("standard", "", term(expr(key, corev1.NodeSelectorOpNotIn, "eco"))), class: Performance, perf: true},
		{name: "annotation performance with DoesNotExist", pod: podWith("performance", "", term(expr(key, corev1.NodeSelectorOpDoesNotExist))), class: Performance},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.pod); got != tt.class {
				t.Errorf("Classify = %q, want %q", got, tt.class)
			}
			perf, eco := AllowedProfiles(tt.pod)
			if perf != tt.perf || eco != tt.eco {
				t.Errorf("AllowedProfiles = (performance %t, eco %t), want (%t, %t)", perf, eco, tt.perf, tt.eco)
			}
		})
	}
}

func TestWorkloadClass(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"nil pod", nil, "standard"},
		{"no annotation", podWith("", ""), "standard"},
		{"performance", podWith("performance", ""), "performance"},
		{"standard", podWith("standard", ""), "standard"},
		{"uppercase is unknown", podWith("PERFORMANCE", ""), "standard"},
		{"padded value is unknown", podWith(" performance", ""), "standard"},
		{"unknown value", podWith("gold", ""), "standard"},
		{"constraints are not read", podWith("", "performance"), "standard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WorkloadClass(tt.pod); got != tt.want {
				t.Errorf("WorkloadClass = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsActive(t *testing.T) {
	deleting := podWith("", "")
	deleting.Status.Phase = corev1.PodRunning
	now := metav1.Now()
	deleting.DeletionTimestamp = &now

	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"nil pod", nil, false},
		{"phase not yet set", podWith("", ""), true},
		{"pending", withPhase(corev1.PodPending), true},
		{"running", withPhase(corev1.PodRunning), true},
		{"unknown", withPhase(corev1.PodUnknown), true},
		{"succeeded", withPhase(corev1.PodSucceeded), false},
		{"failed", withPhase(corev1.PodFailed), false},
		{"running with deletionTimestamp", deleting, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsActive(tt.pod); got != tt.want {
				t.Errorf("IsActive = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestIsDaemonSet(t *testing.T) {
	owned := func(kind string, controller bool) *corev1.Pod {
		p := podWith("", "")
		p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: "o", Controller: &controller}}
		return p
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"nil pod", nil, false},
		{"no owner", podWith("", ""), false},
		{"controlled by a DaemonSet", owned("DaemonSet", true), true},
		{"owned by a DaemonSet that is not its controller", owned("DaemonSet", false), false},
		{"controlled by a ReplicaSet", owned("ReplicaSet", true), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsDaemonSet(tt.pod); got != tt.want {
				t.Errorf("IsDaemonSet = %t, want %t", got, tt.want)
			}
		})
	}
}

func withPhase(phase corev1.PodPhase) *corev1.Pod {
	p := podWith("", "")
	p.Status.Phase = phase
	return p
}

func TestClassifyDoesNotAllocate(t *testing.T) {
	for _, bp := range benchmarkPods() {
		pod := bp.pod
		if n := testing.AllocsPerRun(100, func() {
			_ = Classify(pod)
			_, _ = AllowedProfiles(pod)
			_ = WorkloadClass(pod)
			_ = IsActive(pod)
		}); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", bp.name, n)
		}
	}
}

type namedPod struct {
	name string
	pod  *corev1.Pod
}

func benchmarkPods() []namedPod {
	return []namedPod{
		{"unconstrained", podWith("", "")},
		{"annotated", podWith("performance", "")},
		{"nodeSelector", podWith("", "eco")},
		{"two terms", podWith("standard", "",
			term(expr("kubernetes.io/hostname", corev1.NodeSelectorOpIn, "node-1"), expr(key, corev1.NodeSelectorOpNotIn, "eco")),
			term(expr(key, corev1.NodeSelectorOpIn, "performance", "turbo")),
		)},
	}
}

func BenchmarkClassify(b *testing.B) {
	for _, bp := range benchmarkPods() {
		b.Run(bp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Classify(bp.pod)
			}
		})
	}
}
