package httphost

import (
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"joulie.io/joulie/agentd/internal/enforce"
	"joulie.io/joulie/agentd/internal/simulated/httpbackend"
	"joulie.io/joulie/agentd/internal/simulated/httpbackend/httpbackendtest"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// simulated starts the test double of the HTTP backend on loopback with one node.
func simulated(t *testing.T, spec httpbackendtest.NodeSpec) (*httpbackend.Client, *httpbackendtest.Simulator) {
	t.Helper()
	sim := httpbackendtest.New(time.Now)
	if err := sim.AddNode("sim-0", spec); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	c, err := httpbackend.New(httpbackend.Config{Node: "sim-0",
		Telemetry: httpbackend.Endpoint{URL: srv.URL + "/{node}"}, Control: httpbackend.Endpoint{URL: srv.URL + "/{node}"}})
	if err != nil {
		t.Fatal(err)
	}
	return c, sim
}

func gpuNode(readOnly bool) httpbackendtest.NodeSpec {
	return httpbackendtest.NodeSpec{
		CPU: &httpbackendtest.CPUSpec{Packages: 2, MinWattsPerPackage: 100, MaxWattsPerPackage: 400, IdleWattsPerPackage: 80, ReadOnlyLimits: readOnly},
		GPUs: []httpbackendtest.GPUSpec{
			{UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", MinWatts: 200, MaxWatts: 700, DefaultWatts: 700, IdleWatts: 70},
			{UUID: "GPU-b", Name: "NVIDIA H100 80GB HBM3", MinWatts: 200, MaxWatts: 700, DefaultWatts: 700, IdleWatts: 70},
		},
	}
}

func eco60() joulie.NodePowerProfileSpec {
	return joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco,
		CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(60.0)},
		GPU: &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(60.0)}}}
}

func TestSimulatedNodeIsCappedThroughTheContract(t *testing.T) {
	c, sim := simulated(t, gpuNode(false))
	h, err := New(c, Options{CPUModel: "AMD EPYC 9654 96-Core Processor"})
	if err != nil {
		t.Fatal(err)
	}
	r := h.Enforce(time.Now(), ptr.To(eco60()))
	cpu, gpu := r.CPU, r.GPU
	if cpu.Result != joulie.ResultApplied || cpu.Backend != joulie.BackendHTTP || *cpu.AppliedCapWatts != 240 {
		t.Fatalf("cpu %+v", cpu)
	}
	if gpu.Result != joulie.ResultApplied || *gpu.AppliedCapWatts != 420 {
		t.Fatalf("gpu %+v", gpu)
	}
	tel, _ := sim.Telemetry("sim-0")
	if tel.CPU.CapWatts != 240 || tel.GPUs[1].CapWatts != 420 {
		t.Fatalf("simulator state: cpu cap %g, gpu1 cap %g", tel.CPU.CapWatts, tel.GPUs[1].CapWatts)
	}
	hw := h.Hardware(time.Now())
	if hw.CPU.CatalogModel != "amd-epyc-9654" || hw.GPU == nil || hw.GPU.Count != 2 || hw.CPU.Control.Backend != joulie.BackendHTTP {
		t.Fatalf("hardware %+v / %+v", hw.CPU, hw.GPU)
	}
	if p := r.Power; !p.HasCPU || !p.HasGPU || p.CPUWatts <= 0 {
		t.Fatalf("power %+v", p)
	}
}

func TestSimulatedReadOnlyLimitsFallBackToTheSimulatorsDVFS(t *testing.T) {
	c, sim := simulated(t, gpuNode(true))
	if err := sim.SetLoad("sim-0", 1, 1); err != nil {
		t.Fatal(err)
	}
	h, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var r enforce.Result
	for range 20 {
		r = h.Enforce(now, ptr.To(eco60()))
		now = now.Add(15 * time.Second)
	}
	if cpu := r.CPU; cpu.Backend != joulie.BackendDVFS || r.CPUMode != joulie.BackendDVFS || cpu.ThrottlePct == nil || *cpu.ThrottlePct == 0 {
		t.Fatalf("cpu %+v mode %s", cpu, r.CPUMode)
	}
	tel, _ := sim.Telemetry("sim-0")
	if tel.CPU.ThrottlePct == 0 {
		t.Fatal("the simulator never received a throttle")
	}
}
