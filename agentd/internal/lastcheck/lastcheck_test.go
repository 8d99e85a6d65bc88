package lastcheck

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func pod(name string, phase corev1.PodPhase, owner string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Status: corev1.PodStatus{Phase: phase}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: owner, Name: "o", Controller: ptr.To(true)}}
	}
	return p
}

func TestCheck(t *testing.T) {
	ds := pod("exporter", corev1.PodRunning, "DaemonSet")
	for _, tc := range []struct {
		name string
		k    Kubelet
		a    API
		want []string // substrings of the blockers, in order; none means OK
	}{
		{"empty", Kubelet{}, API{}, nil},
		{"only DaemonSet pods", Kubelet{Pods: []string{"ns/exporter"}}, API{Pods: []*corev1.Pod{ds}}, nil},
		{"terminal pods bound, not run", Kubelet{}, API{Pods: []*corev1.Pod{pod("done", corev1.PodSucceeded, "Job"), pod("failed", corev1.PodFailed, "")}}, nil},
		{"a pod bound by nodeName, not yet admitted", Kubelet{}, API{Pods: []*corev1.Pod{pod("pinned", "", "")}},
			[]string{"pod ns/pinned is bound to the node (phase not yet reported)"}},
		{"a running ReplicaSet pod", Kubelet{Pods: []string{"ns/web"}}, API{Pods: []*corev1.Pod{pod("web", corev1.PodRunning, "ReplicaSet"), ds}},
			[]string{"pod ns/web is bound to the node (phase Running)"}},
		{"a static pod's mirror is no DaemonSet's", Kubelet{Pods: []string{"ns/static"}}, API{Pods: []*corev1.Pod{pod("static", corev1.PodRunning, "Node")}},
			[]string{"pod ns/static is bound"}},
		{"admitted but deleted from the API", Kubelet{Pods: []string{"ns/gone"}}, API{},
			[]string{"pod ns/gone is admitted by the kubelet but not bound"}},
		{"ended in the API, still run", Kubelet{Pods: []string{"ns/done"}}, API{Pods: []*corev1.Pod{pod("done", corev1.PodSucceeded, "")}},
			[]string{"pod ns/done has ended in the API server but the kubelet still runs it"}},
		{"API unreadable", Kubelet{}, API{Err: errors.New("forbidden")},
			[]string{"could not be read from the API server", "forbidden"}},
		{"kubelet unreadable", Kubelet{Err: errors.New("no socket")}, API{},
			[]string{"the kubelet could not say", "no socket"}},
		{"kubelet off: the API alone", Kubelet{Off: true}, API{Pods: []*corev1.Pod{ds}}, nil},
		{"kubelet off does not hide a bound pod", Kubelet{Off: true}, API{Pods: []*corev1.Pod{pod("pinned", corev1.PodPending, "")}},
			[]string{"pod ns/pinned is bound"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(tc.k, tc.a)
			if len(tc.want) == 0 {
				if !v.OK() {
					t.Fatalf("blockers %q, want none", v.Blockers)
				}
				if !strings.Contains(v.Message(), "no pod") {
					t.Errorf("message %q", v.Message())
				}
				return
			}
			if v.OK() {
				t.Fatalf("no blocker, want %q (checked %s)", tc.want, v.Checked)
			}
			msg := strings.Join(v.Blockers, "\n")
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("blockers %q lack %q", v.Blockers, w)
				}
			}
			if !strings.HasPrefix(v.Message(), v.Blockers[0]) {
				t.Errorf("message %q does not start with the first blocker", v.Message())
			}
		})
	}
}

func TestAnswer(t *testing.T) {
	if why, checked := Check(Kubelet{Off: true}, API{}).Answer(); why != "" || !strings.Contains(checked, "0 pods bound") {
		t.Errorf("empty node: why %q, checked %q", why, checked)
	}
	if why, _ := Check(Kubelet{Pods: []string{"ns/gone"}}, API{}).Answer(); !strings.Contains(why, "pod ns/gone is admitted") {
		t.Errorf("a blocked node: why %q", why)
	}
}
