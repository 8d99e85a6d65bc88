package kubesync

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"

	"joulie.io/joulie/agentd/internal/podenergy"
	"joulie.io/joulie/pkg/energyreport"
)

var since = time.Date(2026, 11, 28, 14, 2, 5, 0, time.UTC)

func ended(uid string, gpuJ float64, gpus ...string) podenergy.PodEnergy {
	return podenergy.PodEnergy{
		Pod:        podenergy.Pod{Key: podenergy.Key{Namespace: "ml", Name: "train"}, UID: uid},
		Containers: []podenergy.ContainerEnergy{{Name: "trainer", GPUJoules: gpuJ, GPUs: gpus}},
		GPUJoules:  gpuJ, CPUJoules: 180_000, HasCPU: true,
		Since: since, Until: since.Add(2*time.Hour + 38*time.Minute + 7*time.Second), Ended: true,
	}
}

func TestEnergyReportIsTheEventThePolicyAdmits(t *testing.T) {
	c := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{Events: "EventList"})
	r := NewEnergyReporter(c, "gpu-07", slog.New(slog.DiscardHandler))
	if err := r.Report(context.Background(), ended("u-1", 9_000_000, "GPU-a", "GPU-b")); err != nil {
		t.Fatal(err)
	}
	list, err := c.Resource(Events).Namespace("ml").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("events %v, %v; want one", list, err)
	}
	ev := list.Items[0].Object
	str := func(path ...string) string { v, _, _ := unstructured.NestedString(ev, path...); return v }
	// What the chart's policies check: the reason, the reporter is the
	// agent's node, the event is about a pod of its own namespace.
	for _, c := range []struct{ got, want string }{
		{str("reason"), "EnergyReport"}, {str("reportingInstance"), "gpu-07"}, {str("reportingController"), "joulie.io/agent"},
		{str("regarding", "kind"), "Pod"}, {str("regarding", "namespace"), "ml"}, {str("metadata", "namespace"), "ml"},
		{str("regarding", "name"), "train"}, {str("regarding", "uid"), "u-1"}, {str("type"), "Normal"},
	} {
		if c.got != c.want {
			t.Errorf("event field %q, want %q", c.got, c.want)
		}
	}
	note := str("note")
	for _, want := range []string{"GPU energy 2.50 kWh (9000000 J) measured on 2 GPUs", "CPU energy 0.05 kWh (180000 J) estimated",
		"from 2026-11-28T14:02:05Z to 2026-11-28T16:40:12Z (2h38m7s)", "GPUs GPU-a, GPU-b"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	if !strings.HasPrefix(str("metadata", "name"), "train.") {
		t.Errorf("event name %q", str("metadata", "name"))
	}
}

func TestNothingToReportWithoutAUIDOrEnergy(t *testing.T) {
	r := NewEnergyReporter(dynfake.NewSimpleDynamicClient(runtime.NewScheme()), "gpu-07", slog.New(slog.DiscardHandler))
	r.Enqueue(ended("", 1000, "GPU-a"))
	idle := ended("u-2", 0)
	idle.HasCPU = false
	r.Enqueue(idle)
	if n := len(r.queue); n != 0 {
		t.Errorf("%d reports queued, want none", n)
	}
}

func TestANoteStaysWithinTheAPILimit(t *testing.T) {
	var gpus []string
	for i := range 80 {
		gpus = append(gpus, fmt.Sprintf("GPU-0b1c2d3e-aaaa-bbbb-cccc-%012d", i))
	}
	if n := len(note(ended("u", 1, gpus...))); n > energyreport.NoteLimit {
		t.Errorf("note of %d bytes, over the limit of %d", n, energyreport.NoteLimit)
	}
}
