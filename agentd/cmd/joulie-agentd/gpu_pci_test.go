package main

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"joulie.io/joulie/agentd/internal/pci/pcitest"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// TestDaemonReportsGPUsWithoutNVMLAsBlocked runs the daemon on a host
// with three H100s on the PCI bus and no libnvidia-ml where the
// configuration says: the eco GPU cap cannot be enforced, and status,
// hardware and metrics must all say so, not that the host has no GPU.
func TestDaemonReportsGPUsWithoutNVMLAsBlocked(t *testing.T) {
	f := newFixture(t)
	pcitest.Write(t, f.root, pcitest.HGX(3)...)
	f.nvml = filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	f.metrics = freeAddress(t)
	f.writeConfig(t, 60)
	d := f.start(t)
	waitFor(t, "the first reconcile", func() bool { s := status(t, f); return s.GPU != nil && s.CPU != nil })

	s := status(t, f)
	if s.CPU.Result != joulie.ResultApplied {
		t.Errorf("CPU %+v: the GPUs must not stop the CPU cap", s.CPU)
	}
	if s.GPU.Result != joulie.ResultBlocked || s.GPU.Backend != joulie.BackendNone || len(s.GPU.Devices) != 3 {
		t.Fatalf("GPU status %+v, want blocked for 3 GPUs", s.GPU)
	}
	for _, want := range []string{"NVIDIA GPUs on the PCI bus", f.nvml + " not found", "install the NVIDIA driver", "nvmlLibraryPath"} {
		if !strings.Contains(s.GPU.Message, want) {
			t.Errorf("GPU message %q does not say %q", s.GPU.Message, want)
		}
	}
	if out, _, code := ctl(t, f, "status"); code != 0 || !strings.Contains(out, "blocked") {
		t.Errorf("table status: exit %d\n%s", code, out)
	}

	var hw joulie.NodeHardwareStatus
	ctlJSON(t, f, "hardware", &hw)
	if hw.GPU == nil || hw.GPU.Count != 3 || hw.GPU.Model != "NVIDIA H100 SXM" || hw.GPU.Control.Backend != joulie.BackendNone || hw.GPU.Devices[2].PCIBusID != "0000:3a:00.0" {
		t.Fatalf("hardware GPU %+v", hw.GPU)
	}

	f.metricsHave(t,
		`joulie_control_result{class="gpu",node="node-a",result="blocked"} 1`,
		`joulie_gpu_control_result{gpu="2",node="node-a",result="blocked"} 1`)

	d.signal(t, syscall.SIGTERM)
	if code := d.wait(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// metricsHave fails t unless the daemon's metrics hold every line of
// wants.
func (f *fixture) metricsHave(t *testing.T, wants ...string) {
	t.Helper()
	resp, err := http.Get("http://" + f.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range wants {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// freeAddress is a loopback address with a port nothing listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
