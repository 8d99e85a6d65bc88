package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeGPU lays out one GPU of the fake libnvidia-ml (its state files:
// agentd/internal/nvml/fakenvml) whose energy counter runs at watts.
func fakeGPU(t *testing.T, dir, uuid string, watts int) { fakeGPUs(t, dir, watts, uuid) }

// fakeGPUs lays out one H100 of the fake libnvidia-ml per UUID, in order.
func fakeGPUs(t *testing.T, dir string, watts int, uuids ...string) {
	t.Helper()
	files := map[string]string{"count": fmt.Sprint(len(uuids))}
	for i, uuid := range uuids {
		g := fmt.Sprintf("gpu%d/", i)
		for k, v := range map[string]string{"name": "NVIDIA H100 80GB HBM3", "uuid": uuid, "pci_bus_id": fmt.Sprintf("0000:%02x:00.0", 0x18+i),
			"min_mw": "200000", "max_mw": "700000", "default_mw": "700000", "limit_mw": "700000",
			"power_mw": fmt.Sprint(watts * 1000), "energy_mj": "1000000", "energy_since_ms": fmt.Sprint(time.Now().UnixMilli())} {
			files[g+k] = v
		}
		if err := os.MkdirAll(filepath.Join(dir, g), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// kubeletPods writes what the fake kubelet lists: each pod with one
// container holding gpus.
func kubeletPods(t *testing.T, file string, pods map[string][]string) {
	t.Helper()
	type devices struct {
		Resource string   `json:"resource"`
		IDs      []string `json:"ids"`
	}
	type container struct {
		Name    string    `json:"name"`
		Devices []devices `json:"devices"`
	}
	type pod struct {
		Namespace  string      `json:"namespace"`
		Name       string      `json:"name"`
		Containers []container `json:"containers"`
	}
	var list []pod
	for key, gpus := range pods {
		ns, name, _ := strings.Cut(key, "/")
		list = append(list, pod{ns, name, []container{{"main", []devices{{"nvidia.com/gpu", gpus}}}}})
	}
	raw, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// The real joulie-agentd, with its node's own identity under the chart's
// RBAC and admission policies, a fake kubelet on the real pod-resources
// API and a GPU of the fake libnvidia-ml: when a pod that held the GPU
// ends, an EnergyReport event on the pod (matched by UID, as kubectl
// describe pod matches) says what it used.
func TestAgentReportsAPodsEnergyWhenItEnds(t *testing.T) {
	const node, ns, uuid = "energy-report-node", "energy-e2e", "GPU-e2e00000-0000-4000-8000-000000000001"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp.CreateReadyNode(t, node, nil, nil)
	pod := cp.CreatePod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "train"}, Spec: corev1.PodSpec{NodeName: node}})

	h := newGPUHost(ctx, t, func(dir string) { fakeGPU(t, dir, uuid, 400) }, map[string][]string{ns + "/train": {uuid}})
	podsFile := h.podsFile
	agentd := h.agent(t, node)
	// The pod's GPU energy grows on the agent's socket, under the UID
	// the API server gave it.
	pollUntil(t, "train's GPU energy on the agent's socket", 45*time.Second, func() bool {
		var r struct {
			Pods []struct {
				Name      string  `json:"name"`
				UID       string  `json:"uid"`
				GPUJoules float64 `json:"gpuJoules"`
			} `json:"pods"`
		}
		if !getJSON(agentd.socket, "/v1/pods", &r) {
			return false
		}
		for _, p := range r.Pods {
			if p.Name == "train" && p.UID == string(pod.UID) && p.GPUJoules > 400 {
				return true
			}
		}
		return false
	})

	// The pod ends: the kubelet no longer lists it.
	kubeletPods(t, podsFile, map[string][]string{})
	events := cp.AdminClient(t).EventsV1().Events(ns)
	var note string
	pollUntil(t, "the EnergyReport event", 45*time.Second, func() bool {
		list, err := events.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Reason == "EnergyReport" && e.Regarding.UID == pod.UID && e.ReportingInstance == node {
				note = e.Note
				return true
			}
		}
		return false
	})
	if !strings.Contains(note, "measured on 1 GPU") || !strings.Contains(note, uuid) {
		t.Errorf("EnergyReport note %q, want the GPU energy measured on %s", note, uuid)
	}
	t.Logf("EnergyReport: %s", note)
}
