package kubesync

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"joulie.io/joulie/agentd/internal/podenergy"
	"joulie.io/joulie/pkg/energyreport"
)

// Events is the resource EnergyReport events are written to.
var Events = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}

// What the agent's events say of themselves. The chart's admission policy
// admits an agent's event only with this reason, about a pod, reported
// as the agent's own node.
const (
	EnergyReportReason = energyreport.Reason
	reportingComponent = "joulie.io/agent"
)

// EnergyReporter writes an EnergyReport event on each pod that ended, so
// that kubectl describe pod shows what the pod used. It writes through
// the dynamic client, which keeps the core API's typed clients (and every
// API group they register) out of the daemon.
type EnergyReporter struct {
	events dynamic.NamespaceableResourceInterface
	node   string
	log    *slog.Logger
	queue  chan podenergy.PodEnergy
}

// NewEnergyReporter reports as node through client.
func NewEnergyReporter(client dynamic.Interface, node string, log *slog.Logger) *EnergyReporter {
	return &EnergyReporter{events: client.Resource(Events), node: node, log: log, queue: make(chan podenergy.PodEnergy, 256)}
}

// Enqueue hands a pod's final totals over for reporting. It never blocks:
// with 256 reports waiting (the API server unreachable for a while on a
// node ending many pods) the report is logged and dropped; the totals
// stay in metrics and on the local socket for their retention.
func (r *EnergyReporter) Enqueue(e podenergy.PodEnergy) {
	if e.UID == "" || e.GPUJoules == 0 && !e.HasCPU {
		// No UID: kubectl describe matches events to the pod by UID, and
		// the agent learns UIDs from the API server. Nothing measured:
		// nothing to report.
		return
	}
	select {
	case r.queue <- e:
	default:
		r.log.Warn("EnergyReport queue full; this report is dropped", "pod", e.Key.String(), "gpuJoules", e.GPUJoules)
	}
}

// Run writes the queued reports until ctx ends.
func (r *EnergyReporter) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-r.queue:
			if err := r.Report(ctx, e); err != nil {
				r.log.Warn("could not write the EnergyReport event", "pod", e.Key.String(), "err", err)
			}
		}
	}
}

// Report writes e's EnergyReport event now.
func (r *EnergyReporter) Report(ctx context.Context, e podenergy.PodEnergy) error {
	ev := r.event(e, time.Now())
	_, err := r.events.Namespace(e.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create EnergyReport event on pod %s: %w", e.Key, err)
	}
	return nil
}

// event is e's EnergyReport as of now.
func (r *EnergyReporter) event(e podenergy.PodEnergy, now time.Time) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "events.k8s.io/v1",
		"kind":       "Event",
		"metadata": map[string]any{
			// The recorder's naming: the object's name and a unique suffix.
			"name":      fmt.Sprintf("%s.%x", e.Name, now.UnixNano()),
			"namespace": e.Namespace,
		},
		"eventTime":           now.UTC().Format(metav1.RFC3339Micro),
		"reportingController": reportingComponent,
		"reportingInstance":   r.node,
		"action":              "Measure",
		"reason":              EnergyReportReason,
		"type":                "Normal",
		"note":                note(e),
		"regarding": map[string]any{
			"apiVersion": "v1",
			"kind":       "Pod",
			"namespace":  e.Namespace,
			"name":       e.Name,
			"uid":        e.UID,
		},
	}}
}

// note is the report's text, as package energyreport writes it for
// kubectl joulie pods to read back.
func note(e podenergy.PodEnergy) string {
	gpus := e.GPUs()
	return energyreport.Note(energyreport.Report{
		GPUJoules: e.GPUJoules, GPUCount: len(gpus), GPUs: gpus, GPUEstimated: e.GPUEstimated,
		CPUJoules: e.CPUJoules, HasCPU: e.HasCPU, Since: e.Since, Until: e.Until,
	})
}
