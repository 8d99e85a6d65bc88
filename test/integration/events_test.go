package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// energyReport is the event an agent writes when a pod ends.
func energyReport(node string, pod *corev1.Pod, name string) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: pod.Namespace},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "joulie.io/agent",
		ReportingInstance:   node,
		Action:              "Measure",
		Reason:              "EnergyReport",
		Type:                corev1.EventTypeNormal,
		Note:                "GPU 1.20 kWh on 2 GPUs",
		Regarding:           corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
}

// An agent may write an EnergyReport on a pod of its own node, in its own
// name, and nothing else: not on a running pod of another node, not as
// another node, not another kind of event. The chart's RBAC and admission
// policies, against the real API server.
func TestAgentReportsEnergyOnlyOnPodsOfItsOwnNode(t *testing.T) {
	const ns, nodeA, nodeB = "energy-reports", "report-node-a", "report-node-b"
	cp.CreateReadyNode(t, nodeA, nil, nil)
	cp.CreateReadyNode(t, nodeB, nil, nil)
	onA := cp.CreatePod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "train-a"}, Spec: corev1.PodSpec{NodeName: nodeA}})
	onB := cp.CreatePod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "train-b"}, Spec: corev1.PodSpec{NodeName: nodeB}})
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ended-and-deleted", UID: "0b1c2d3e-0000-4000-8000-000000000001"}}
	a := kubernetes.NewForConfigOrDie(cp.AgentConfig(t, nodeA)).EventsV1().Events(ns)
	b := kubernetes.NewForConfigOrDie(cp.AgentConfig(t, nodeB)).EventsV1().Events(ns)
	ctx := t.Context()

	// The policies load asynchronously: wait until one refuses.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = a.Create(ctx, energyReport(nodeA, onB, "probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), "own node"), nil
	}); err != nil {
		t.Fatalf("event policies not in force after 15s (last answer: %v)", last)
	}

	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: refused: %v", what, err)
		}
	}
	refused := func(what, message string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), message) {
			t.Errorf("%s: want Forbidden saying %q, got %v", what, message, err)
		}
	}
	_, err := a.Create(ctx, energyReport(nodeA, onA, "a-on-a"), metav1.CreateOptions{})
	allowed("agent A on its own pod", err)
	_, err = b.Create(ctx, energyReport(nodeB, onB, "b-on-b"), metav1.CreateOptions{})
	allowed("agent B on its own pod", err)
	_, err = a.Create(ctx, energyReport(nodeA, onB, "a-on-b"), metav1.CreateOptions{})
	refused("agent A on a running pod of node B", "may report only on pods of its own node", err)
	_, err = a.Create(ctx, energyReport(nodeB, onA, "a-as-b"), metav1.CreateOptions{})
	refused("agent A reporting as node B", "may report only as its own node", err)
	other := energyReport(nodeA, onA, "a-other-reason")
	other.Reason = "Killing"
	_, err = a.Create(ctx, other, metav1.CreateOptions{})
	refused("agent A writing another kind of event", "only EnergyReport events", err)
	// A report comes after its pod ended, and the pod may be gone: no pod
	// of that name is no objection.
	_, err = a.Create(ctx, energyReport(nodeA, gone, "a-on-gone"), metav1.CreateOptions{})
	allowed("agent A on a pod already deleted", err)

	ev, err := a.Get(ctx, "a-on-a", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("agent A read an event back (%v, %v): the role grants create only", ev, err)
	}
	admin := cp.AdminClient(t).EventsV1().Events(ns)
	if e, err := admin.Get(ctx, "a-on-a", metav1.GetOptions{}); err != nil || e.Regarding.UID != onA.UID {
		t.Errorf("the report on train-a: %v, %v", e, err)
	}
}
