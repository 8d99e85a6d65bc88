// Package config is joulie-agentd's configuration: one struct, its key
// table and its validation. The mechanism (YAML file, JOULIE_* environment
// variables, command-line flags, one validation pass, --help) is
// pkg/settings, shared with the controller and the extender; the
// configuration is read and validated once at start and again on reload.
//
// Every key has three spellings, derived mechanically from its YAML path
// so that none has to be looked up: the path in camelCase
// ("dvfs.emaAlpha"), a flag in kebab-case ("--dvfs-ema-alpha") and a
// variable in upper snake case with the JOULIE_ prefix
// ("JOULIE_DVFS_EMA_ALPHA"). The agent seed's own names (DVFS_EMA_ALPHA
// and the other DVFS_* tunables, POOL_NODE_SELECTOR) are accepted too,
// below their JOULIE_ spellings.
//
// Precedence, highest first: flag, JOULIE_* variable, seed variable, file,
// default. An empty variable counts as unset (as with the DVFS_*
// variables), so a systemd EnvironmentFile may list variables blank.
//
// Every error this package returns wraps ErrUsage: the daemon exits with
// code 2 on it (SPEC.md, "Command-line contract").
package config

import (
	"hash/fnv"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/dvfs"
	"joulie.io/joulie/agentd/internal/podresources"
	"joulie.io/joulie/agentd/internal/wol"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/settings"
)

// DefaultPath is where the packages install the configuration file. A
// missing file at this path means "all defaults"; a missing file named by
// --config or JOULIE_CONFIG is an error.
const DefaultPath = "/etc/joulie/agentd.yaml"

// Defaults that other values are checked against.
const (
	// DefaultMetricsAddress is the Prometheus endpoint's listen address:
	// every interface, like node_exporter's :9100, so that the cluster's
	// Prometheus can scrape the host.
	DefaultMetricsAddress = ":9477"
	// MinReconcileInterval is the shortest tick allowed: RAPL energy
	// deltas over less than a second are dominated by the counter's
	// update granularity, and the DVFS loop acts on trip counts of ticks.
	MinReconcileInterval = time.Second
)

// Config is joulie-agentd's whole configuration. The json tags are the
// YAML keys (sigs.k8s.io/yaml goes through JSON), so yaml.Marshal of a
// Config is a valid configuration file.
type Config struct {
	// NodeName names this node's Node, NodeHardware and NodePowerProfile.
	// Default: the host name, lowercased as the kubelet does.
	NodeName string `json:"nodeName"`
	// Kubeconfig is the path of the agent's node-scoped kubeconfig. Empty
	// means standalone mode: no API server, StandaloneMode.Profile is the
	// target.
	Kubeconfig string `json:"kubeconfig"`
	// PodsKubeconfig is the kubeconfig the agent reads its node's pods
	// with (DefaultPodsKubeconfig, the kubelet's own): an identity the
	// API server's Node authorizer confines to the pods bound to this
	// node, so that the agent's own identity reads no pod at all. The eco
	// guard, the per-pod energy's names and the last check before a park
	// powers the host off read through it. NoPods ("none") reads none:
	// eco then applies unchecked, and no park powers the host off.
	PodsKubeconfig string `json:"podsKubeconfig"`
	// HostRoot is the directory under which sys/ and proc/ are read and
	// written ("/"); tests point it at a fixture tree.
	HostRoot string `json:"hostRoot"`
	// StateDir holds the journal of original values (/var/lib/joulie).
	StateDir string `json:"stateDir"`
	// Socket is the Unix socket joulie-agentctl talks to
	// (/run/joulie/agentd.sock).
	Socket string `json:"socket"`
	// MetricsAddress is the host:port of /metrics (DefaultMetricsAddress);
	// empty disables the endpoint.
	MetricsAddress string `json:"metricsAddress"`
	// ReconcileInterval is the tick (5s, at least MinReconcileInterval).
	ReconcileInterval metav1.Duration `json:"reconcileInterval"`
	// Failsafe is applied when no fresh desired state has arrived for
	// FailsafeTimeout: agent.FailsafeKeep (the default),
	// agent.FailsafePerformance or agent.FailsafeRestore (SPEC.md,
	// "Safety rules").
	Failsafe string `json:"failsafe"`
	// FailsafeTimeout is how long the desired state may go without a
	// refresh before the failsafe applies (5m).
	FailsafeTimeout metav1.Duration `json:"failsafeTimeout"`
	// KeepCapsOnStop leaves the caps in force when the daemon stops;
	// by default the originals are restored.
	KeepCapsOnStop bool `json:"keepCapsOnStop"`
	// NVMLLibraryPath is libnvidia-ml's path; empty lets the loader find
	// libnvidia-ml.so.1, host.Skip ("none") skips NVML.
	NVMLLibraryPath string `json:"nvmlLibraryPath"`
	// AMDSMILibraryPath is libamd_smi's path; empty tries the usual
	// places, host.Skip ("none") skips amd-smi.
	AMDSMILibraryPath string `json:"amdsmiLibraryPath"`
	// LogLevel is debug, info, warn or error (info).
	LogLevel string `json:"logLevel"`
	// LogFormat is text or json (text).
	LogFormat string `json:"logFormat"`

	// DVFS tunes the DVFS fallback controller.
	DVFS dvfs.Config `json:"dvfs"`

	// Parking is the host's side of parking: power-off and Wake-on-LAN.
	Parking Parking `json:"parking"`

	// PodResources is where the agent learns which pod holds which GPU.
	PodResources PodResources `json:"podResources"`

	// Backend is where controls and telemetry go: host (the machine's own
	// sysfs, NVML, amd-smi) or http (a simulator, see HTTP).
	Backend joulie.EndpointType `json:"backend"`
	// HTTP is the simulator endpoint used when Backend is http.
	HTTP HTTP `json:"http"`

	// StandaloneMode holds the target enforced when there is no
	// kubeconfig. (The field is not called Standalone: that is the method
	// telling whether the agent runs standalone.)
	StandaloneMode StandaloneMode `json:"standalone"`

	// Pool is pool mode: one process drives many simulated nodes.
	Pool Pool `json:"pool"`

	// src says how this Config was loaded, so Reload can repeat it.
	src *settings.Source[Config]
}

// HTTP is a simulator endpoint speaking the httpbackend contract. In
// either URL, "{node}" stands for the node's name.
type HTTP struct {
	// TelemetryURL serves GET /telemetry; empty leaves telemetry
	// unrouted (blocked).
	TelemetryURL string `json:"telemetryURL"`
	// ControlURL serves POST /control; empty leaves control unrouted.
	ControlURL string `json:"controlURL"`
	// Timeout bounds each request (joulie.DefaultEndpointTimeout).
	Timeout metav1.Duration `json:"timeout"`
}

// StandaloneMode configures standalone mode.
type StandaloneMode struct {
	// Profile is the target, with the fields and rules of
	// NodePowerProfile.spec. The default, performance with no CPU or GPU
	// block, leaves the hardware at its original limits.
	Profile joulie.NodePowerProfileSpec `json:"profile"`
}

// Parking configures what the agent does when the node's
// NodePowerProfile parks it or asks it to wake a neighbour. Parking is
// decided by the controller, for nodes labelled joulie.io/parkable=true;
// nothing here turns it on, and standalone mode never parks.
type Parking struct {
	// AllowPowerOff lets the agent power the host off through logind when
	// the node is parked. False, the default, is the host's veto: the
	// agent restores the caps and reports the park as refused. A host is
	// parked only when both its owner (this key) and the cluster's admin
	// (the node's joulie.io/parkable label) have opted in.
	AllowPowerOff bool `json:"allowPowerOff"`
	// WakeAddress lists, comma-separated, the host:port destinations
	// of the magic packets the agent sends for the controller
	// (wol.DefaultAddress).
	WakeAddress string `json:"wakeAddress"`
}

// PodResources configures how the agent maps GPUs to the pods holding
// them, for per-pod energy: through the kubelet's pod-resources API
// (package podresources).
type PodResources struct {
	// Socket is the Unix socket of the kubelet's pod-resources API
	// (podresources.DefaultSocket). It is a path on the host itself, not
	// under HostRoot: it leads to a running kubelet, not to files a
	// fixture tree could stand in for. podresources.Off ("none") turns
	// per-pod attribution off; a socket that is not there is no error,
	// only no per-pod figures.
	Socket string `json:"socket"`
}

// Pool configures pool mode (agent seed, "Runtime modes"), for simulated
// nodes behind the http backend.
type Pool struct {
	// Enabled turns pool mode on; it needs backend http and a kubeconfig.
	Enabled bool `json:"enabled"`
	// NodeSelector is a label selector ("joulie.io/managed=true") for the
	// nodes the pool drives.
	NodeSelector string `json:"nodeSelector"`
	// Shards is how many pool processes share the selected nodes (1).
	Shards int `json:"shards"`
	// ShardIndex is this process's shard, in [0, Shards).
	ShardIndex int `json:"shardIndex"`
}

// Owns reports whether this shard drives the node: FNV-1a of the name,
// modulo Shards, equals ShardIndex. The hash depends on the name alone,
// so every process agrees on the split without talking to the others,
// and a node keeps its shard for as long as Shards stays the same.
func (p Pool) Owns(node string) bool {
	if p.Shards <= 1 {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(node))
	return int(h.Sum32()%uint32(p.Shards)) == p.ShardIndex
}

// Default returns the configuration that applies when nothing is set.
func Default() Config {
	return Config{
		NodeName:          hostNodeName(),
		HostRoot:          "/",
		StateDir:          "/var/lib/joulie",
		Socket:            "/run/joulie/agentd.sock",
		MetricsAddress:    DefaultMetricsAddress,
		ReconcileInterval: metav1.Duration{Duration: 5 * time.Second},
		Failsafe:          agent.FailsafeKeep,
		FailsafeTimeout:   metav1.Duration{Duration: 5 * time.Minute},
		LogLevel:          "info",
		LogFormat:         "text",
		DVFS:              dvfs.DefaultConfig(),
		PodsKubeconfig:    DefaultPodsKubeconfig,
		Parking:           Parking{WakeAddress: wol.DefaultAddress},
		PodResources:      PodResources{Socket: podresources.DefaultSocket},
		Backend:           joulie.EndpointHost,
		HTTP:              HTTP{Timeout: metav1.Duration{Duration: joulie.DefaultEndpointTimeout}},
		StandaloneMode:    StandaloneMode{Profile: joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance}},
		Pool:              Pool{NodeSelector: joulie.LabelManaged + "=true", Shards: 1},
	}
}

// hostNodeName is the kubelet's default node name: the host name,
// lowercased and trimmed, so that the agent finds its Node without being
// told. Empty when the name cannot be read; Validate then asks for
// nodeName.
func hostNodeName() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(h))
}

// DefaultPodsKubeconfig is where kubeadm writes the kubelet's kubeconfig
// (its client certificate, user system:node:<node>, rotated in place).
const DefaultPodsKubeconfig = "/etc/kubernetes/kubelet.conf"

// NoPods is the podsKubeconfig that reads no pods.
const NoPods = "none"

// Standalone reports whether the agent runs without an API server.
func (c Config) Standalone() bool { return c.Kubeconfig == "" }

// ErrUsage is wrapped by every error of this package: the configuration
// (file, variables, flags) is at fault, and the daemon exits with code 2.
var ErrUsage = settings.ErrUsage
