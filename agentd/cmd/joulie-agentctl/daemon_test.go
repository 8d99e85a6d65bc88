package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"joulie.io/joulie/agentd/internal/localapi"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func ptr(v float64) *float64 { return &v }

func at(d time.Duration) metav1.Time { return metav1.NewTime(testNow.Add(-d)) }

// fakeAgent stands in for joulie-agentd behind the socket.
type fakeAgent struct {
	mu         sync.Mutex
	status     localapi.Status
	hardware   joulie.NodeHardwareStatus
	profile    localapi.ProfileState
	configured joulie.NodePowerProfileSpec
	report     localapi.RestoreReport
	pods       localapi.PodsReport
	restoreErr error
	calls      []string
}

func (a *fakeAgent) called(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, name)
}

func (a *fakeAgent) Calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

func (a *fakeAgent) Status() localapi.Status { a.called("Status"); return a.status }

func (a *fakeAgent) Hardware() joulie.NodeHardwareStatus { a.called("Hardware"); return a.hardware }

func (a *fakeAgent) Pods() localapi.PodsReport { a.called("Pods"); return a.pods }

func (a *fakeAgent) Profile() localapi.ProfileState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.profile
}

func (a *fakeAgent) SetProfile(spec joulie.NodePowerProfileSpec) error {
	a.called("SetProfile")
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.profile.Standalone {
		return localapi.ErrNotStandalone
	}
	a.profile.Source, a.profile.Spec = localapi.SourceOverride, spec
	return nil
}

func (a *fakeAgent) ClearProfile() error {
	a.called("ClearProfile")
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.profile.Standalone {
		return localapi.ErrNotStandalone
	}
	a.profile.Source, a.profile.Spec = localapi.SourceStandalone, a.configured
	return nil
}

func (a *fakeAgent) Restore() (localapi.RestoreReport, error) {
	a.called("Restore")
	return a.report, a.restoreErr
}

// clusterAgent is a GPU node under a NodePowerProfile, with one GPU lost.
func clusterAgent() *fakeAgent {
	lastSync := at(8 * time.Second)
	return &fakeAgent{
		status: localapi.Status{
			Node: "gpu-07", Version: "v0.4.0", Profile: joulie.ProfileEco, Source: localapi.SourceCluster,
			ObservedGeneration: 12, CPUMode: joulie.BackendRAPL,
			CPU: &joulie.ControlStatus{Backend: joulie.BackendRAPL, Result: joulie.ResultApplied, AppliedCapWatts: ptr(210),
				LastTransitionTime: at(time.Hour),
				Devices: []joulie.DeviceControlStatus{
					{ID: "package-0", Result: joulie.ResultApplied, AppliedCapWatts: ptr(210)},
					{ID: "package-1", Result: joulie.ResultApplied, AppliedCapWatts: ptr(210)}}},
			GPU: &joulie.ControlStatus{Backend: joulie.BackendNVML, Result: joulie.ResultError, AppliedCapWatts: ptr(420),
				Message: "1 of 4 GPUs could not be capped; retrying in 30s", LastTransitionTime: at(5 * time.Minute),
				Devices: []joulie.DeviceControlStatus{
					{ID: "0", Result: joulie.ResultApplied, AppliedCapWatts: ptr(420)},
					{ID: "1", Result: joulie.ResultApplied, AppliedCapWatts: ptr(420)},
					{ID: "2", Result: joulie.ResultError, Message: "nvmlDeviceSetPowerManagementLimit: GPU is lost"},
					{ID: "3", Result: joulie.ResultApplied, AppliedCapWatts: ptr(420)}}},
			CPUCapReason:      "capped at 60%: eco cap; the energy optimum lies deeper",
			GPUCapReason:      "capped at 60%: eco cap; the energy optimum lies deeper",
			MeasuredPower:     &joulie.MeasuredPower{CPUPowerWatts: ptr(388.54), GPUPowerWatts: ptr(1201), NodePowerWatts: 1589.54, Time: at(2 * time.Second)},
			LastSync:          &lastSync,
			Failsafe:          localapi.FailsafeState{Mode: "keep"},
			OriginalsRecorded: 6,
		},
		hardware: joulie.NodeHardwareStatus{
			CPU: joulie.CPUHardware{
				Vendor: "GenuineIntel", Model: "Intel(R) Xeon(R) Platinum 8480+", CatalogModel: "intel-xeon-8480plus",
				Exactness: joulie.ExactnessExact, Sockets: 2, CoresPerSocket: 56, TotalCores: 112, LogicalCPUs: 224,
				CapRange: &joulie.PowerRange{MinWatts: 105, MaxWatts: 350, DefaultWatts: 350, Source: "rapl"},
				Packages: []joulie.CPUPackage{
					{ID: 0, Zone: "intel-rapl:0", CurrentCapWatts: ptr(210), LimitsWritable: true},
					{ID: 1, Zone: "intel-rapl:1", CurrentCapWatts: ptr(210), LimitsWritable: true}},
				Frequency: &joulie.FrequencyLandmarks{Driver: "intel_pstate", Governor: "powersave", MinKHz: 800000, BaseKHz: 2000000, MaxKHz: 3800000},
				Control:   joulie.ControlCapability{Backend: joulie.BackendRAPL, Available: []joulie.ControlBackend{joulie.BackendRAPL, joulie.BackendDVFS}},
				Telemetry: joulie.TelemetryCapability{Source: joulie.TelemetryRAPL},
			},
			GPU: &joulie.GPUHardware{
				Vendor: "nvidia", Model: "NVIDIA H100 80GB HBM3", CatalogModel: "nvidia-h100-sxm", Exactness: joulie.ExactnessExact, Count: 4,
				CapRange: &joulie.PowerRange{MinWatts: 200, MaxWatts: 700, DefaultWatts: 700, Source: "nvml"},
				Devices: []joulie.GPUDevice{
					{Index: 0, PCIBusID: "0000:18:00.0", CurrentCapWatts: ptr(420), CapRange: &joulie.PowerRange{MinWatts: 200, MaxWatts: 700}},
					{Index: 1, PCIBusID: "0000:2a:00.0", CurrentCapWatts: ptr(420), CapRange: &joulie.PowerRange{MinWatts: 200, MaxWatts: 700}},
					{Index: 2, PCIBusID: "0000:3a:00.0"},
					{Index: 3, PCIBusID: "0000:5d:00.0", CurrentCapWatts: ptr(420), CapRange: &joulie.PowerRange{MinWatts: 200, MaxWatts: 700}}},
				Control:   joulie.ControlCapability{Backend: joulie.BackendNVML, Available: []joulie.ControlBackend{joulie.BackendNVML}},
				Telemetry: joulie.TelemetryCapability{Source: joulie.TelemetryNVML},
			},
			MemoryBytes: 2 << 40,
			Quality:     joulie.DiscoveryPartial,
			Warnings:    []string{"GPU 2 (0000:3a:00.0) does not answer NVML: GPU is lost"},
		},
		profile: localapi.ProfileState{Node: "gpu-07", Source: localapi.SourceCluster, Generation: 12,
			Spec: joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco,
				CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr(60)},
				GPU: &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapWattsPerGpu: ptr(420), CapPctOfMax: ptr(60)},
					Reason: "capped at 60%: eco cap; the energy optimum lies deeper"}}},
	}
}

// standaloneAgent is an AMD host without a cluster, on the DVFS fallback,
// that lost nothing but has no GPUs.
func standaloneAgent() *fakeAgent {
	configured := joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance}
	return &fakeAgent{
		status: localapi.Status{
			Node: "edge-3", Version: "v0.4.0", Standalone: true, Profile: joulie.ProfileEco, Source: localapi.SourceOverride,
			CPUMode: joulie.BackendDVFS,
			CPU: &joulie.ControlStatus{Backend: joulie.BackendDVFS, Result: joulie.ResultApplied, AppliedCapWatts: ptr(216), ThrottlePct: ptr(37.5),
				Message: "RAPL limits are read-only on AMD EPYC; steering frequency instead"},
			GPU:      &joulie.ControlStatus{Result: joulie.ResultNone, Message: "no GPU on this host"},
			Failsafe: localapi.FailsafeState{Mode: "keep"},
		},
		hardware: joulie.NodeHardwareStatus{
			CPU: joulie.CPUHardware{Vendor: "AuthenticAMD", Model: "AMD EPYC 9654 96-Core Processor", Sockets: 1,
				Packages:  []joulie.CPUPackage{{ID: 0, Zone: "intel-rapl:0"}},
				Control:   joulie.ControlCapability{Backend: joulie.BackendDVFS, Reason: "RAPL limits are read-only"},
				Telemetry: joulie.TelemetryCapability{Source: joulie.TelemetryRAPL}},
			Quality: joulie.DiscoveryMinimal,
		},
		configured: configured,
		profile:    localapi.ProfileState{Node: "edge-3", Standalone: true, Source: localapi.SourceStandalone, Spec: configured},
	}
}

// startDaemon serves agent on a socket of group in a fresh temp dir and
// returns the socket's path.
func startDaemon(t *testing.T, agent localapi.Agent, group string, opts localapi.Options) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentd.sock")
	sock, err := localapi.Listen(path, group)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- localapi.Serve(ctx, sock, agent, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return path
}

// startForReads serves agent to this test's own group, so the read verbs
// work without root.
func startForReads(t *testing.T, agent localapi.Agent) string {
	t.Helper()
	return startDaemon(t, agent, "", localapi.Options{AllowedGID: os.Getegid()})
}

func startAsRoot(t *testing.T, agent localapi.Agent) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the daemon's write verbs are root's: run the tests as root, as make check does on CI")
	}
	return startDaemon(t, agent, "", localapi.Options{AllowedGID: -1})
}

func ctlOK(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := runCtl(args...)
	if code != 0 {
		t.Fatalf("joulie-agentctl %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

func TestStatusTables(t *testing.T) {
	failsafe := clusterAgent()
	failsafe.status.Source = localapi.SourceFailsafe
	failsafe.status.SyncError = "Get \"https://10.0.0.1:6443/apis/joulie.io/v1alpha1/nodepowerprofiles/gpu-07\": dial tcp 10.0.0.1:6443: connect: connection refused"
	since := at(11 * time.Minute)
	lastSync := at(12*time.Minute + 30*time.Second)
	failsafe.status.LastSync = &lastSync
	failsafe.status.Failsafe = localapi.FailsafeState{Active: true, Mode: "keep", Since: &since,
		Reason: "NodePowerProfile not refreshed for 10m; keeping the last applied target"}
	failsafe.status.MeasuredPower = nil

	// What joulie-agentd reports after `restore`: originals back, paused.
	paused := clusterAgent()
	paused.status.Source, paused.status.Profile, paused.status.Failsafe = localapi.SourcePaused, "", localapi.FailsafeState{}
	paused.status.OriginalsRecorded = 0
	paused.status.CPU = &joulie.ControlStatus{Backend: joulie.BackendNone, Result: joulie.ResultNone, Message: "original settings restored; enforcement paused"}
	paused.status.GPU = &joulie.ControlStatus{Backend: joulie.BackendNone, Result: joulie.ResultNone, Message: "original settings restored; enforcement paused"}

	fresh := standaloneAgent()
	fresh.status.CPU, fresh.status.GPU, fresh.status.Profile = nil, nil, ""

	// GPUs on the PCI bus that no backend reaches: the reason once, then
	// which GPUs it blocks.
	unreachable := clusterAgent()
	why := "NVML cannot reach the NVIDIA GPUs on the PCI bus: NVML unavailable: libnvidia-ml.so.1 not found; " +
		"install the NVIDIA driver (it ships libnvidia-ml.so.1) or set nvmlLibraryPath to the library's path"
	unreachable.status.GPU = &joulie.ControlStatus{Backend: joulie.BackendNone, Result: joulie.ResultBlocked,
		Message: "4 of 4 GPUs not capped: " + why, LastTransitionTime: at(time.Hour)}
	for i := range 4 {
		unreachable.status.GPU.Devices = append(unreachable.status.GPU.Devices,
			joulie.DeviceControlStatus{ID: strconv.Itoa(i), Result: joulie.ResultBlocked, Message: why})
	}
	unreachable.status.MeasuredPower = &joulie.MeasuredPower{CPUPowerWatts: ptr(388.54), NodePowerWatts: 388.54, Time: at(2 * time.Second)}
	// A park under way: caps restored, logind asked.
	parked := clusterAgent()
	parked.status.PowerState = joulie.PowerParked
	parked.status.Conditions = []metav1.Condition{{Type: "Parked", Status: metav1.ConditionTrue, Reason: "PowerOffRequested",
		Message: "every cap is restored to its original; logind accepted the power-off", LastTransitionTime: at(3 * time.Second)}}
	parked.status.CPU = &joulie.ControlStatus{Backend: joulie.BackendNone, Result: joulie.ResultNone,
		Message: "original settings restored for the park; nothing is enforced while the node is parked"}
	parked.status.GPU = parked.status.CPU
	parked.status.OriginalsRecorded = 0

	// An awake agent asked to wake two parked neighbours, one of them on
	// a network it cannot reach.
	waker := clusterAgent()
	waker.status.PowerState = joulie.PowerAwake
	sent, tried := at(4*time.Second), at(9*time.Second)
	waker.status.WakeOnLAN = []localapi.WakeOnLANTarget{
		{MAC: "0c:c4:7a:12:34:56", PacketsSent: 7, LastSent: &sent},
		{MAC: "0c:c4:7a:ab:cd:ef", Errors: 2, LastSent: &tried,
			LastError: "send Wake-on-LAN packet for 0c:c4:7a:ab:cd:ef to 10.9.0.255:9: sendto: network is unreachable"}}
	for _, tc := range []struct {
		name  string
		agent *fakeAgent
	}{
		{"status-cluster", clusterAgent()},
		{"status-parked", parked},
		{"status-waking-neighbours", waker},
		{"status-cluster-failsafe", failsafe},
		{"status-standalone-dvfs", standaloneAgent()},
		{"status-paused", paused},
		{"status-just-started", fresh},
		{"status-gpus-unreachable", unreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := startForReads(t, tc.agent)
			golden(t, tc.name, ctlOK(t, "--socket", path, "status"))
		})
	}
}

func TestHardwareTables(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agent *fakeAgent
	}{
		{"hardware-gpu-node", clusterAgent()},
		{"hardware-cpu-only", standaloneAgent()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := startForReads(t, tc.agent)
			golden(t, tc.name, ctlOK(t, "--socket", path, "hardware"))
		})
	}
}

func TestPodsTables(t *testing.T) {
	gpuNode := clusterAgent()
	cpuW, cpuJ, webW, webJ := 41.5, 180_000.0, 3.0, 950.0
	gpuNode.pods = localapi.PodsReport{
		Node: "gpu-07", Kubelet: "connected to /var/lib/kubelet/pod-resources/kubelet.sock: 3 pods, 3 of 4 GPUs held",
		CPU: "estimated from RAPL by CPU time (cgroup v2, systemd driver)",
		Pods: []localapi.PodEnergy{
			{Namespace: "web", Name: "front", CPUWattsEstimate: &webW, CPUJoulesEstimate: &webJ},
			{Namespace: "ml", Name: "infer-7", GPUs: []string{"GPU-5a0c7d4e-1111-2222-3333-444455556666"}, GPUWatts: 0, GPUJoules: 2_400_000,
				GPUEstimated: true, Ended: true},
			{Namespace: "ml", Name: "train", GPUs: []string{"GPU-0b1c2d3e-aaaa-bbbb-cccc-ddddeeeeffff", "GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"},
				GPUWatts: 1220, GPUJoules: 9_000_000, CPUWattsEstimate: &cpuW, CPUJoulesEstimate: &cpuJ},
		},
		UnattributedGPUJoules: map[string]float64{"GPU-77aa": 5400},
	}
	golden(t, "pods-gpu-node", ctlOK(t, "--socket", startForReads(t, gpuNode), "pods"))
	empty := standaloneAgent()
	empty.pods = localapi.PodsReport{Node: "edge-3", Kubelet: "no pod-resources socket at /var/lib/kubelet/pod-resources/kubelet.sock",
		CPU: "no per-pod CPU estimate: standalone mode", Pods: []localapi.PodEnergy{}}
	golden(t, "pods-none", ctlOK(t, "--socket", startForReads(t, empty), "pods"))
}

func TestProfileTables(t *testing.T) {
	t.Run("profile-cluster", func(t *testing.T) {
		golden(t, "profile-cluster", ctlOK(t, "--socket", startForReads(t, clusterAgent()), "profile"))
	})
	t.Run("profile-standalone", func(t *testing.T) {
		golden(t, "profile-standalone", ctlOK(t, "--socket", startForReads(t, standaloneAgent()), "profile"))
	})
}

func TestProfileSetOverridesThenClearGoesBack(t *testing.T) {
	agent := standaloneAgent()
	path := startAsRoot(t, agent)
	out := ctlOK(t, "--socket", path, "profile", "set", "--profile", "eco", "--cpu-pct", "60", "--gpu-pct", "60", "--gpu-watts", "300")
	golden(t, "profile-set", out)
	want := joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco,
		CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr(60)},
		GPU: &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapWattsPerGpu: ptr(300), CapPctOfMax: ptr(60)}}}
	if got := agent.Profile(); got.Source != localapi.SourceOverride || mustJSON(t, got.Spec) != mustJSON(t, want) {
		t.Errorf("the agent holds %s from %s, want %s", mustJSON(t, got.Spec), got.Source, mustJSON(t, want))
	}

	out = ctlOK(t, "--socket", path, "profile", "set", "--clear", "-o", "json")
	var back localapi.ProfileState
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if back.Source != localapi.SourceStandalone || back.Spec.Profile != joulie.ProfilePerformance || back.Spec.CPU != nil {
		t.Errorf("after --clear: %+v", back)
	}
}

func TestProfileSetInClusterModeSaysUseKubectl(t *testing.T) {
	agent := clusterAgent()
	path := startAsRoot(t, agent)
	_, errOut, code := runCtl("--socket", path, "profile", "set", "--profile", "performance")
	if code != exitFailure || errOut != "joulie-agentctl: the profile is set by the cluster (NodePowerProfile gpu-07); use kubectl\n" {
		t.Errorf("exit %d: %q", code, errOut)
	}
	if len(agent.Calls()) != 0 {
		t.Errorf("the agent was asked: %v", agent.Calls())
	}
}

func TestRestorePrintsWhatTheDaemonDid(t *testing.T) {
	agent := clusterAgent()
	agent.report = localapi.RestoreReport{
		Restored: 3,
		Controls: []localapi.RecordedControl{
			{Backend: "rapl", ID: "intel-rapl:0/constraint_0_power_limit_uw", Original: "350000000"},
			{Backend: "rapl", ID: "intel-rapl:1/constraint_0_power_limit_uw", Original: "350000000"},
			{Backend: "nvml", ID: "GPU-5d1c9e2a-0b7f-4c57-9a1e-3f0e8c2b6d41", Original: "700000"}},
		Message: "Enforcement is paused until the NodePowerProfile changes or joulie-agentd is reloaded.",
	}
	golden(t, "restore", ctlOK(t, "--socket", startAsRoot(t, agent), "restore"))

	counted := clusterAgent()
	counted.report = localapi.RestoreReport{Restored: 6}
	golden(t, "restore-counts-only", ctlOK(t, "--socket", startAsRoot(t, counted), "restore"))

	empty := clusterAgent()
	golden(t, "restore-nothing", ctlOK(t, "--socket", startAsRoot(t, empty), "restore"))
}

func TestFailedRestoreShowsTheReportAndFails(t *testing.T) {
	agent := clusterAgent()
	agent.report = localapi.RestoreReport{
		Restored: 1, Kept: 1,
		Controls: []localapi.RecordedControl{
			{Backend: "rapl", ID: "intel-rapl:0/constraint_0_power_limit_uw", Original: "350000000"},
			{Backend: "nvml", ID: "GPU-2", Original: "700000", Error: "GPU is lost"}},
	}
	agent.restoreErr = errors.New("restore nvml GPU-2 to 700000: GPU is lost")
	path := startAsRoot(t, agent)
	out, errOut, code := runCtl("--socket", path, "restore")
	if code != exitFailure || errOut != "joulie-agentctl: restore nvml GPU-2 to 700000: GPU is lost\n" {
		t.Errorf("exit %d: %q", code, errOut)
	}
	golden(t, "restore-partial", out)

	out, _, code = runCtl("--socket", path, "restore", "-o", "json")
	var report localapi.RestoreReport
	if err := json.Unmarshal([]byte(out), &report); err != nil || code != exitFailure {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if report.Error == "" || report.Kept != 1 || len(report.Controls) != 2 {
		t.Errorf("JSON report = %+v", report)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestJSONOutputIsTheAPIJSON checks that -o json carries the agent's
// values unchanged, under the API's field names.
func TestJSONOutputIsTheAPIJSON(t *testing.T) {
	agent := clusterAgent()
	path := startForReads(t, agent)
	for _, tc := range []struct {
		verb string
		into any
		want any
	}{
		{"status", &localapi.Status{}, agent.status},
		{"hardware", &joulie.NodeHardwareStatus{}, agent.hardware},
		{"profile", &localapi.ProfileState{}, agent.profile},
	} {
		t.Run(tc.verb, func(t *testing.T) {
			out := ctlOK(t, "--socket", path, tc.verb, "--output", "json")
			if err := json.Unmarshal([]byte(out), tc.into); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if got, want := mustJSON(t, tc.into), mustJSON(t, tc.want); got != want {
				t.Errorf("JSON differs from the agent's:\ngot  %s\nwant %s", got, want)
			}
		})
	}
	out := ctlOK(t, "--socket", path, "status", "-o", "json")
	for _, key := range []string{`"observedGeneration": 12`, `"appliedCapWatts": 210`, `"nodePowerWatts": 1589.54`, `"lastSync": "2026-03-14T09:26:57Z"`} {
		if !strings.Contains(out, key) {
			t.Errorf("status JSON lacks %s", key)
		}
	}
}

func TestSocketFromTheEnvironment(t *testing.T) {
	path := startForReads(t, clusterAgent())
	t.Setenv("JOULIE_SOCKET", path)
	if out := ctlOK(t, "profile"); !strings.Contains(out, "gpu-07") {
		t.Errorf("JOULIE_SOCKET not used:\n%s", out)
	}
}

func TestDaemonVerbsExitCodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "agentd.sock")
	notRunning := "joulie-agentctl: joulie-agentd is not running (no socket at " + missing + "); check `systemctl status joulie-agentd`\n"
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		message string
	}{
		{"status without a daemon", []string{"--socket", missing, "status"}, exitFailure, notRunning},
		{"hardware without a daemon", []string{"--socket", missing, "hardware"}, exitFailure, notRunning},
		{"restore without a daemon", []string{"--socket", missing, "restore"}, exitFailure, notRunning},
		{"unknown output", []string{"--socket", missing, "status", "-o", "yaml"}, exitUsage, "joulie-agentctl: --output must be table or json, not \"yaml\"\n"},
		{"stray argument", []string{"--socket", missing, "hardware", "gpu"}, exitUsage, "joulie-agentctl: hardware takes no arguments (got \"gpu\")\n"},
		{"unknown flag", []string{"--socket", missing, "restore", "--force"}, exitUsage, "flag provided but not defined: -force"},
		{"empty socket", []string{"--socket", "", "status"}, exitUsage, "--socket must name joulie-agentd's socket"},
		{"set without a profile", []string{"--socket", missing, "profile", "set", "--cpu-pct", "60"}, exitUsage, "profile set needs --profile performance|eco (or --clear)"},
		{"set an unknown profile", []string{"--socket", missing, "profile", "set", "--profile", "turbo"}, exitUsage, `--profile must be performance or eco, not "turbo"`},
		{"set a percentage over 100", []string{"--socket", missing, "profile", "set", "--profile", "eco", "--gpu-pct", "120"}, exitUsage, "--gpu-pct must be from 0 to 100, not 120"},
		{"set negative watts", []string{"--socket", missing, "profile", "set", "--profile", "eco", "--cpu-watts", "-1"}, exitUsage, "--cpu-watts must be 0 or more, not -1"},
		{"set a non-number", []string{"--socket", missing, "profile", "set", "--profile", "eco", "--cpu-pct", "sixty"}, exitUsage, "invalid value \"sixty\" for flag -cpu-pct"},
		{"clear with caps", []string{"--socket", missing, "profile", "set", "--clear", "--cpu-pct", "60"}, exitUsage, "--clear goes back to the configured profile and takes no --cpu-pct"},
		{"profile with a stray argument", []string{"--socket", missing, "profile", "sett"}, exitUsage, "profile takes no arguments (got \"sett\")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCtl(tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.message) {
				t.Errorf("exit %d, stderr %q; want %d with %q", code, errOut, tc.code, tc.message)
			}
		})
	}
}

// The power state and the Wake-on-LAN targets carry the API's own field
// names: status.powerState and status.conditions of NodePowerProfile,
// spec.wakeOnLAN.
func TestStatusJSONNamesParkingAsTheAPI(t *testing.T) {
	agent := clusterAgent()
	agent.status.PowerState = joulie.PowerParked
	agent.status.Conditions = []metav1.Condition{{Type: "Parked", Status: metav1.ConditionTrue, Reason: "PoweringOff", LastTransitionTime: at(time.Second)}}
	sent := at(2 * time.Second)
	agent.status.WakeOnLAN = []localapi.WakeOnLANTarget{{MAC: "0c:c4:7a:12:34:56", PacketsSent: 3, LastSent: &sent}}
	out := ctlOK(t, "--socket", startForReads(t, agent), "status", "-o", "json")
	tag := func(v any, field string) string {
		f, ok := reflect.TypeOf(v).FieldByName(field)
		if !ok {
			t.Fatalf("%T has no %s", v, field)
		}
		return strings.Split(f.Tag.Get("json"), ",")[0]
	}
	for _, key := range []string{
		`"` + tag(joulie.NodePowerProfileStatus{}, "PowerState") + `": "parked"`,
		`"` + tag(joulie.NodePowerProfileStatus{}, "Conditions") + `": [`,
		`"` + tag(joulie.NodePowerProfileSpec{}, "WakeOnLAN") + `": [`,
		`"mac": "0c:c4:7a:12:34:56"`, `"packetsSent": 3`, `"reason": "PoweringOff"`,
	} {
		if !strings.Contains(out, key) {
			t.Errorf("status JSON lacks %s:\n%s", key, out)
		}
	}
}
