package httpbackend_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"joulie.io/joulie/agentd/internal/simulated/httpbackend"
	"joulie.io/joulie/agentd/internal/simulated/httpbackend/httpbackendtest"
)

// A simulator serving one node per path, and the agent's side capping a
// GPU and the CPU packages of node-a through it.
func Example() {
	sim := httpbackendtest.New(nil)
	_ = sim.AddNode("node-a", httpbackendtest.NodeSpec{
		CPU:  &httpbackendtest.CPUSpec{Packages: 2, MinWattsPerPackage: 90, MaxWattsPerPackage: 350, IdleWattsPerPackage: 60},
		GPUs: []httpbackendtest.GPUSpec{{UUID: "GPU-1", Name: "NVIDIA H100 80GB HBM3", MinWatts: 200, MaxWatts: 700, DefaultWatts: 700}},
	})
	srv := httptest.NewServer(sim)
	defer srv.Close()

	ep := httpbackend.Endpoint{URL: srv.URL + "/nodes/{node}"}
	c, err := httpbackend.New(httpbackend.Config{Node: "node-a", Telemetry: ep, Control: ep})
	if err != nil {
		fmt.Println(err)
		return
	}
	gpus := httpbackend.NewGPUCapper(c)
	applied, err := gpus.SetCap(0, 900) // above the device's range
	fmt.Println(applied, err)
	applied, err = c.SetPackageCapWatts(context.Background(), 215.5)
	fmt.Println(applied, err)
	// Output:
	// 700 <nil>
	// 215.5 <nil>
}
