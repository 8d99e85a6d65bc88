package config

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/settings"
)

// key is one leaf of the configuration: its flag and JOULIE_ variable are
// derived from its path; Env holds the agent seed's variable, if any,
// read below the JOULIE_ one.
type key = settings.Key[Config]

// keys lists every key in the order of the example file. It is built once
// and never changed.
var keys = []key{
	{Path: "nodeName", Usage: "name of this node's Node, NodeHardware and NodePowerProfile", DefaultText: "the host name",
		Ref: func(c *Config) any { return &c.NodeName }},
	{Path: "kubeconfig", Usage: "kubeconfig of the agent's node-scoped identity; empty runs standalone",
		Ref: func(c *Config) any { return &c.Kubeconfig }},
	{Path: "podsKubeconfig", Usage: `kubeconfig the agent reads its node's pods with: the kubelet's own, which the Node authorizer confines to this node's pods; "none" reads none (eco unchecked, no park powers the host off)`,
		Ref: func(c *Config) any { return &c.PodsKubeconfig }},
	{Path: "hostRoot", Usage: "directory under which sys/ and proc/ are read and written",
		Ref: func(c *Config) any { return &c.HostRoot }},
	{Path: "stateDir", Usage: "directory of the journal of original values",
		Ref: func(c *Config) any { return &c.StateDir }},
	{Path: "socket", Usage: "Unix socket served to joulie-agentctl",
		Ref: func(c *Config) any { return &c.Socket }},
	{Path: "metricsAddress", Usage: "host:port of the Prometheus /metrics endpoint; empty disables it",
		Ref: func(c *Config) any { return &c.MetricsAddress }},
	{Path: "reconcileInterval", Usage: "time between two reconcile ticks (at least 1s)",
		Ref: func(c *Config) any { return &c.ReconcileInterval }},
	{Path: "failsafe", Usage: "target once the desired state is stale: keep, performance or restore",
		Ref: func(c *Config) any { return &c.Failsafe }},
	{Path: "failsafeTimeout", Usage: "how long without a fresh desired state before the failsafe applies",
		Ref: func(c *Config) any { return &c.FailsafeTimeout }},
	{Path: "keepCapsOnStop", Usage: "leave the caps in force on stop instead of restoring the originals",
		Ref: func(c *Config) any { return &c.KeepCapsOnStop }},
	{Path: "nvmlLibraryPath", Usage: `path of libnvidia-ml; empty finds libnvidia-ml.so.1, "none" disables NVML`,
		Ref: func(c *Config) any { return &c.NVMLLibraryPath }},
	{Path: "amdsmiLibraryPath", Usage: `path of libamd_smi; empty tries the usual places, "none" disables amd-smi`,
		Ref: func(c *Config) any { return &c.AMDSMILibraryPath }},
	{Path: "logLevel", Usage: "debug, info, warn or error",
		Ref: func(c *Config) any { return &c.LogLevel }},
	{Path: "logFormat", Usage: "text or json",
		Ref: func(c *Config) any { return &c.LogFormat }},

	{Path: "dvfs.emaAlpha", Env: []string{"DVFS_EMA_ALPHA"}, Usage: "weight of the newest power reading in the average, in (0, 1]",
		Ref: func(c *Config) any { return &c.DVFS.EMAAlpha }},
	{Path: "dvfs.highMarginW", Env: []string{"DVFS_HIGH_MARGIN_W"}, Usage: "watts above the cap before power counts as above",
		Ref: func(c *Config) any { return &c.DVFS.HighMarginW }},
	{Path: "dvfs.lowMarginW", Env: []string{"DVFS_LOW_MARGIN_W"}, Usage: "watts below the cap before power counts as below",
		Ref: func(c *Config) any { return &c.DVFS.LowMarginW }},
	{Path: "dvfs.tripCount", Env: []string{"DVFS_TRIP_COUNT"}, Usage: "consecutive readings out of band before acting",
		Ref: func(c *Config) any { return &c.DVFS.TripCount }},
	{Path: "dvfs.cooldown", Env: []string{"DVFS_COOLDOWN"}, ParseEnv: seedCooldown, Usage: "least time between two actions",
		Ref: func(c *Config) any { return &c.DVFS.Cooldown }},
	{Path: "dvfs.stepPct", Env: []string{"DVFS_STEP_PCT"}, Usage: "throttle change per action, in percentage points of CPUs",
		Ref: func(c *Config) any { return &c.DVFS.StepPct }},
	{Path: "dvfs.minFreqKHz", Env: []string{"DVFS_MIN_FREQ_KHZ"}, Usage: "frequency ceiling of a throttled CPU in kHz; 0 is the CPU's minimum",
		Ref: func(c *Config) any { return &c.DVFS.MinFreqKHz }},

	{Path: "parking.allowPowerOff", Usage: "let the agent power the host off through logind when the controller parks the node",
		Ref: func(c *Config) any { return &c.Parking.AllowPowerOff }},
	{Path: "parking.wakeAddress", Usage: "host:port destinations, comma-separated, of the Wake-on-LAN packets sent for the controller",
		Ref: func(c *Config) any { return &c.Parking.WakeAddress }},

	{Path: "podResources.socket", Usage: `the kubelet's pod-resources socket, which says which pod holds which GPU: a path on the host, not under hostRoot; "none" turns per-pod attribution off`,
		Ref: func(c *Config) any { return &c.PodResources.Socket }},

	{Path: "backend", Usage: "where controls and telemetry go: host or http",
		Ref: func(c *Config) any { return &c.Backend }},
	{Path: "http.telemetryURL", Usage: "base URL serving GET /telemetry for backend http; {node} is the node name",
		Ref: func(c *Config) any { return &c.HTTP.TelemetryURL }},
	{Path: "http.controlURL", Usage: "base URL serving POST /control for backend http; {node} is the node name",
		Ref: func(c *Config) any { return &c.HTTP.ControlURL }},
	{Path: "http.timeout", Usage: "time limit of each request to the http backend",
		Ref: func(c *Config) any { return &c.HTTP.Timeout }},

	{Path: "standalone.profile.profile", Usage: "profile enforced without a kubeconfig: performance or eco",
		Ref: func(c *Config) any { return &c.StandaloneMode.Profile.Profile }},
	{Path: "standalone.profile.cpu.packagePowerCapWatts", Usage: "cap of each CPU package in watts",
		Ref: func(c *Config) any { return &standaloneCPU(c).PackagePowerCapWatts }},
	{Path: "standalone.profile.cpu.packagePowerCapPctOfMax", Usage: "cap of each CPU package in percent of its maximum",
		Ref: func(c *Config) any { return &standaloneCPU(c).PackagePowerCapPctOfMax }},
	{Path: "standalone.profile.gpu.powerCap.capWattsPerGpu", Usage: "cap of each GPU in watts",
		Ref: func(c *Config) any { return &standaloneGPU(c).CapWattsPerGpu }},
	{Path: "standalone.profile.gpu.powerCap.capPctOfMax", Usage: "cap of each GPU in percent of its maximum",
		Ref: func(c *Config) any { return &standaloneGPU(c).CapPctOfMax }},

	{Path: "pool.enabled", Usage: "turn pool mode on: drive the selected simulated nodes (needs backend http and a kubeconfig)",
		Ref: func(c *Config) any { return &c.Pool.Enabled }},
	{Path: "pool.nodeSelector", Env: []string{"POOL_NODE_SELECTOR"}, Usage: "label selector of the nodes to drive",
		Ref: func(c *Config) any { return &c.Pool.NodeSelector }},
	{Path: "pool.shards", Usage: "number of pool processes sharing the nodes",
		Ref: func(c *Config) any { return &c.Pool.Shards }},
	{Path: "pool.shardIndex", Usage: "this process's shard, from 0 to shards-1",
		Ref: func(c *Config) any { return &c.Pool.ShardIndex }},
}

func standaloneCPU(c *Config) *joulie.CPUPowerTarget {
	p := &c.StandaloneMode.Profile
	if p.CPU == nil {
		p.CPU = &joulie.CPUPowerTarget{}
	}
	return p.CPU
}

func standaloneGPU(c *Config) *joulie.GPUPowerCap {
	p := &c.StandaloneMode.Profile
	if p.GPU == nil {
		p.GPU = &joulie.GPUPowerTarget{}
	}
	if p.GPU.PowerCap == nil {
		p.GPU.PowerCap = &joulie.GPUPowerCap{}
	}
	return p.GPU.PowerCap
}

// seedCooldown parses the seed's DVFS_COOLDOWN, which takes a Go
// duration or, as the seed gives the tunable without a unit, a plain
// number of seconds.
func seedCooldown(dst any, s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsNaN(secs) || math.Abs(secs) > float64(math.MaxInt64/int64(time.Second)) {
			return errors.New(strconv.Quote(s) + " is not a duration such as 10s, or seconds")
		}
		d = time.Duration(secs * float64(time.Second))
	}
	*dst.(*time.Duration) = d
	return nil
}

// category groups the flags of a block in --help.
func category(path string) string {
	switch {
	case strings.HasPrefix(path, "dvfs."):
		return "DVFS fallback"
	case path == "backend" || strings.HasPrefix(path, "http."):
		return "Backend"
	case strings.HasPrefix(path, "standalone."):
		return "Standalone target"
	case strings.HasPrefix(path, "pool."):
		return "Pool mode"
	case strings.HasPrefix(path, "parking."):
		return "Parking"
	case strings.HasPrefix(path, "podResources."):
		return "Per-pod attribution"
	}
	return ""
}

// table is the agent's configuration mechanism, built from keys.
var table = settings.New(settings.Table[Config]{
	Keys:        keys,
	Prefix:      "JOULIE_",
	ConfigEnv:   EnvConfig,
	DefaultPath: DefaultPath,
	Default:     Default,
	Clone:       Config.clone,
	Check:       Config.problems,
	Complete:    func(c *Config) []settings.Problem { c.tidy(); return nil },
	Category:    category,
})
