package config

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"joulie.io/joulie/agentd/internal/dvfs"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// key is one leaf of the configuration. Its flag and variable names are
// derived from path; ref returns a pointer to the field in c, creating
// the optional blocks on the way (so call it on a copy when only
// reading).
type key struct {
	path  string
	usage string
	// alias is the agent seed's variable for the key, read below the
	// JOULIE_ one; "" when the seed has none.
	alias string
	ref   func(c *Config) any
}

// keys lists every key in the order of the example file. It is built once
// and never changed.
var keys = []key{
	{path: "nodeName", usage: "name of this node's Node, NodeHardware and NodePowerProfile",
		ref: func(c *Config) any { return &c.NodeName }},
	{path: "kubeconfig", usage: "kubeconfig of the agent's node-scoped identity; empty runs standalone",
		ref: func(c *Config) any { return &c.Kubeconfig }},
	{path: "hostRoot", usage: "directory under which sys/ and proc/ are read and written",
		ref: func(c *Config) any { return &c.HostRoot }},
	{path: "stateDir", usage: "directory of the journal of original values",
		ref: func(c *Config) any { return &c.StateDir }},
	{path: "socket", usage: "Unix socket served to joulie-agentctl",
		ref: func(c *Config) any { return &c.Socket }},
	{path: "metricsAddress", usage: "host:port of the Prometheus /metrics endpoint; empty disables it",
		ref: func(c *Config) any { return &c.MetricsAddress }},
	{path: "reconcileInterval", usage: "time between two reconcile ticks (at least 1s)",
		ref: func(c *Config) any { return &c.ReconcileInterval }},
	{path: "failsafe", usage: "target once the desired state is stale: keep, performance or restore",
		ref: func(c *Config) any { return &c.Failsafe }},
	{path: "failsafeTimeout", usage: "how long without a fresh desired state before the failsafe applies",
		ref: func(c *Config) any { return &c.FailsafeTimeout }},
	{path: "keepCapsOnStop", usage: "leave the caps in force on stop instead of restoring the originals",
		ref: func(c *Config) any { return &c.KeepCapsOnStop }},
	{path: "nvmlLibraryPath", usage: `path of libnvidia-ml; empty finds libnvidia-ml.so.1, "none" disables NVML`,
		ref: func(c *Config) any { return &c.NVMLLibraryPath }},
	{path: "amdsmiLibraryPath", usage: `path of libamd_smi; empty tries the usual places, "none" disables amd-smi`,
		ref: func(c *Config) any { return &c.AMDSMILibraryPath }},
	{path: "logLevel", usage: "debug, info, warn or error",
		ref: func(c *Config) any { return &c.LogLevel }},
	{path: "logFormat", usage: "text or json",
		ref: func(c *Config) any { return &c.LogFormat }},

	{path: "dvfs.emaAlpha", alias: dvfs.EnvEMAAlpha, usage: "weight of the newest power reading in the average, in (0, 1]",
		ref: func(c *Config) any { return &c.DVFS.EMAAlpha }},
	{path: "dvfs.highMarginW", alias: dvfs.EnvHighMarginW, usage: "watts above the cap before power counts as above",
		ref: func(c *Config) any { return &c.DVFS.HighMarginW }},
	{path: "dvfs.lowMarginW", alias: dvfs.EnvLowMarginW, usage: "watts below the cap before power counts as below",
		ref: func(c *Config) any { return &c.DVFS.LowMarginW }},
	{path: "dvfs.tripCount", alias: dvfs.EnvTripCount, usage: "consecutive readings out of band before acting",
		ref: func(c *Config) any { return &c.DVFS.TripCount }},
	{path: "dvfs.cooldown", alias: dvfs.EnvCooldown, usage: "least time between two actions",
		ref: func(c *Config) any { return &c.DVFS.Cooldown }},
	{path: "dvfs.stepPct", alias: dvfs.EnvStepPct, usage: "throttle change per action, in percentage points of CPUs",
		ref: func(c *Config) any { return &c.DVFS.StepPct }},
	{path: "dvfs.minFreqKHz", alias: dvfs.EnvMinFreqKHz, usage: "frequency ceiling of a throttled CPU in kHz; 0 is the CPU's minimum",
		ref: func(c *Config) any { return &c.DVFS.MinFreqKHz }},

	{path: "backend", usage: "where controls and telemetry go: host or http",
		ref: func(c *Config) any { return &c.Backend }},
	{path: "http.telemetryURL", usage: "base URL serving GET /telemetry for backend http; {node} is the node name",
		ref: func(c *Config) any { return &c.HTTP.TelemetryURL }},
	{path: "http.controlURL", usage: "base URL serving POST /control for backend http; {node} is the node name",
		ref: func(c *Config) any { return &c.HTTP.ControlURL }},
	{path: "http.timeout", usage: "time limit of each request to the http backend",
		ref: func(c *Config) any { return &c.HTTP.Timeout }},

	{path: "standalone.profile.profile", usage: "profile enforced without a kubeconfig: performance or eco",
		ref: func(c *Config) any { return &c.StandaloneMode.Profile.Profile }},
	{path: "standalone.profile.cpu.packagePowerCapWatts", usage: "cap of each CPU package in watts",
		ref: func(c *Config) any { return &standaloneCPU(c).PackagePowerCapWatts }},
	{path: "standalone.profile.cpu.packagePowerCapPctOfMax", usage: "cap of each CPU package in percent of its maximum",
		ref: func(c *Config) any { return &standaloneCPU(c).PackagePowerCapPctOfMax }},
	{path: "standalone.profile.gpu.powerCap.capWattsPerGpu", usage: "cap of each GPU in watts",
		ref: func(c *Config) any { return &standaloneGPU(c).CapWattsPerGpu }},
	{path: "standalone.profile.gpu.powerCap.capPctOfMax", usage: "cap of each GPU in percent of its maximum",
		ref: func(c *Config) any { return &standaloneGPU(c).CapPctOfMax }},

	{path: "pool.enabled", usage: "turn pool mode on: drive the selected simulated nodes (needs backend http and a kubeconfig)",
		ref: func(c *Config) any { return &c.Pool.Enabled }},
	{path: "pool.nodeSelector", alias: "POOL_NODE_SELECTOR", usage: "label selector of the nodes to drive",
		ref: func(c *Config) any { return &c.Pool.NodeSelector }},
	{path: "pool.shards", usage: "number of pool processes sharing the nodes",
		ref: func(c *Config) any { return &c.Pool.Shards }},
	{path: "pool.shardIndex", usage: "this process's shard, from 0 to shards-1",
		ref: func(c *Config) any { return &c.Pool.ShardIndex }},
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

// words splits a camelCase path into lowercase words: a capital after a
// lowercase letter or digit starts a word, and the path's dots separate
// words. So "http.telemetryURL" gives http, telemetry, url, and
// "dvfs.minFreqKHz" gives dvfs, min, freq, khz (the seed's
// DVFS_MIN_FREQ_KHZ), which is why capitals after capitals never split.
func words(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, ".") {
		r := []rune(seg)
		start := 0
		for i := 1; i < len(r); i++ {
			if unicode.IsUpper(r[i]) && (unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])) {
				out = append(out, strings.ToLower(string(r[start:i])))
				start = i
			}
		}
		out = append(out, strings.ToLower(string(r[start:])))
	}
	return out
}

// flagName is the key's command-line flag, without dashes.
func (k key) flagName() string { return strings.Join(words(k.path), "-") }

// envName is the key's JOULIE_ variable.
func (k key) envName() string {
	return "JOULIE_" + strings.ToUpper(strings.Join(words(k.path), "_"))
}

// setString parses s, from a flag or a variable, into the field dst
// points to. An empty string unsets an optional number and is an empty
// string field; other kinds refuse it.
func setString(dst any, s string) error {
	switch p := dst.(type) {
	case *string:
		*p = s
	case *Failsafe:
		*p = Failsafe(s)
	case *joulie.EndpointType:
		*p = joulie.EndpointType(s)
	case *joulie.Profile:
		*p = joulie.Profile(s)
	case *metav1.Duration:
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not a duration (such as \"5s\" or \"1m30s\")", s)
		}
		p.Duration = d
	case *bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		*p = b
	case *float64:
		f, err := parseFloat(s)
		if err != nil {
			return err
		}
		*p = f
	case **float64:
		if strings.TrimSpace(s) == "" {
			*p = nil
			return nil
		}
		f, err := parseFloat(s)
		if err != nil {
			return err
		}
		*p = &f
	case *int:
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		*p = n
	case *int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		*p = n
	default:
		panic(fmt.Sprintf("config: no parser for %T", dst))
	}
	return nil
}

// parseFloat refuses NaN and infinities, which strconv accepts but no
// setting means.
func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return f, nil
}

// setYAML stores v, a value of the file as encoding/json decodes it with
// UseNumber, in the field dst points to. Null leaves the field as it is
// (the default), except that it unsets an optional number. Types are
// strict: a quoted number is not a number and a bare number is not a
// duration, since either is more often a slip than an intent.
func setYAML(dst any, v any) error {
	if v == nil {
		if p, ok := dst.(**float64); ok {
			*p = nil
		}
		return nil
	}
	switch dst.(type) {
	case *string, *Failsafe, *joulie.EndpointType, *joulie.Profile:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s is not a string (quote it)", describe(v))
		}
		return setString(dst, s)
	case *metav1.Duration:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s is not a duration: give a unit, such as \"5s\"", describe(v))
		}
		return setString(dst, s)
	case *bool:
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%s is not true or false", describe(v))
		}
		*dst.(*bool) = b
		return nil
	case *float64, **float64:
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%s is not a number", describe(v))
		}
		return setString(dst, n.String())
	case *int, *int64:
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%s is not a whole number", describe(v))
		}
		return setString(dst, n.String())
	default:
		panic(fmt.Sprintf("config: no decoder for %T", dst))
	}
}

// describe renders a decoded YAML value for an error message.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(v)
	case map[string]any:
		return "a block of keys"
	case []any:
		return "a list"
	case float64:
		// Only the non-finite ones get here (parseYAML); shown as written
		// in YAML, which is where they came from.
		switch {
		case math.IsNaN(v):
			return ".nan"
		case math.IsInf(v, 1):
			return ".inf"
		case math.IsInf(v, -1):
			return "-.inf"
		}
		return fmtFloat(v)
	default:
		return fmt.Sprint(v)
	}
}

// format renders the field dst points to; ok is false for an unset
// optional number.
func format(dst any) (s string, ok bool) {
	switch p := dst.(type) {
	case *string:
		return *p, true
	case *Failsafe:
		return string(*p), true
	case *joulie.EndpointType:
		return string(*p), true
	case *joulie.Profile:
		return string(*p), true
	case *metav1.Duration:
		return p.Duration.String(), true
	case *bool:
		return strconv.FormatBool(*p), true
	case *float64:
		return strconv.FormatFloat(*p, 'g', -1, 64), true
	case **float64:
		if *p == nil {
			return "", false
		}
		return strconv.FormatFloat(**p, 'g', -1, 64), true
	case *int:
		return strconv.Itoa(*p), true
	case *int64:
		return strconv.FormatInt(*p, 10), true
	default:
		panic(fmt.Sprintf("config: no formatter for %T", dst))
	}
}
