package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/host"
	"joulie.io/joulie/agentd/internal/podresources"
	"joulie.io/joulie/agentd/internal/wol"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/baseurl"
	"joulie.io/joulie/pkg/settings"
)

// maxSocketPath is the longest Unix socket path Linux binds: sun_path
// holds 108 bytes, one of them the terminating NUL.
const maxSocketPath = 107

// problem is one validation finding, under the key to fix.
type problem = settings.Problem

// Validate reports every problem of c, each naming its key and the bad
// value. The error wraps ErrUsage.
func (c Config) Validate() error { return table.Validate(c) }

// problems checks the keys in the order of keys, so that the report
// reads in the order of the file.
func (c Config) problems() []problem {
	var ps []problem
	add := func(key, format string, a ...any) {
		ps = append(ps, problem{Key: key, Msg: fmt.Sprintf(format, a...)})
	}

	switch {
	case c.NodeName == "":
		add("nodeName", `is empty and the host name gave none; set it to this node's name`)
	default:
		if msgs := validation.IsDNS1123Subdomain(c.NodeName); len(msgs) > 0 {
			add("nodeName", "%q is not a valid Kubernetes node name: %s", c.NodeName, strings.Join(msgs, "; "))
		}
	}
	absDir := func(key, v string) {
		if !filepath.IsAbs(v) {
			add(key, "%q is not an absolute path", v)
		}
	}
	absDir("hostRoot", c.HostRoot)
	// The host backend finds all hardware under hostRoot: a wrong one
	// would run an agent that controls nothing and says so only in
	// discovery warnings. The http backend never reads it.
	if c.Backend != joulie.EndpointHTTP && filepath.IsAbs(c.HostRoot) {
		if msg := checkDir(c.HostRoot); msg != "" {
			add("hostRoot", "%q %s", c.HostRoot, msg)
		}
	}
	absDir("stateDir", c.StateDir)
	absDir("socket", c.Socket)
	if len(c.Socket) > maxSocketPath {
		add("socket", "%q is %d bytes long; a Unix socket path holds at most %d", c.Socket, len(c.Socket), maxSocketPath)
	}
	if c.MetricsAddress != "" {
		if msg := checkListenAddress(c.MetricsAddress); msg != "" {
			add("metricsAddress", "%q %s (such as %q; empty disables metrics)", c.MetricsAddress, msg, DefaultMetricsAddress)
		}
	}
	if d := c.ReconcileInterval.Duration; d < MinReconcileInterval {
		add("reconcileInterval", "%q is below the minimum %v", d.String(), MinReconcileInterval)
	}
	switch c.Failsafe {
	case agent.FailsafeKeep, agent.FailsafePerformance, agent.FailsafeRestore:
	default:
		add("failsafe", "%q is not one of keep, performance, restore", c.Failsafe)
	}
	// A timeout shorter than a tick would trip the failsafe between two
	// reads of a perfectly healthy desired state.
	if d := c.FailsafeTimeout.Duration; d < c.ReconcileInterval.Duration {
		add("failsafeTimeout", "%q is shorter than reconcileInterval %q", d.String(), c.ReconcileInterval.Duration.String())
	}
	library := func(key, v string) {
		// dlopen resolves a relative path with a slash against the working
		// directory, which for a service is whatever systemd chose.
		if strings.ContainsRune(v, '/') && !filepath.IsAbs(v) {
			add(key, "%q is a relative path; give an absolute path, a bare library name, \"\" or %q", v, host.Skip)
		}
		if strings.ContainsRune(v, 0) {
			add(key, "%q contains a NUL byte", v)
		}
	}
	library("nvmlLibraryPath", c.NVMLLibraryPath)
	library("amdsmiLibraryPath", c.AMDSMILibraryPath)
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		add("logLevel", "%q is not one of debug, info, warn, error", c.LogLevel)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		add("logFormat", "%q is not one of text, json", c.LogFormat)
	}

	// The DVFS rules live in the dvfs package, which names each field by
	// its key under dvfs.
	for _, p := range c.DVFS.Problems() {
		add("dvfs."+p.Field, "%s", p.Msg)
	}

	if _, err := wol.ParseAddresses(c.Parking.WakeAddress); err != nil {
		add("parking.wakeAddress", "%s", err)
	}

	if v := c.PodsKubeconfig; v != NoPods && !filepath.IsAbs(v) {
		add("podsKubeconfig", "%q is not an absolute path or %q (kubeadm writes the kubelet's at %s)", v, NoPods, DefaultPodsKubeconfig)
	}

	if v := c.PodResources.Socket; v != podresources.Off {
		if !filepath.IsAbs(v) {
			add("podResources.socket", "%q is not an absolute path or %q (the kubelet's is %s)", v, podresources.Off, podresources.DefaultSocket)
		} else if len(v) > maxSocketPath {
			add("podResources.socket", "%q is %d bytes long; a Unix socket path holds at most %d", v, len(v), maxSocketPath)
		}
	}

	switch c.Backend {
	case joulie.EndpointHost:
	case joulie.EndpointHTTP:
		if c.HTTP.TelemetryURL == "" && c.HTTP.ControlURL == "" {
			add("backend", `"http" needs http.controlURL, http.telemetryURL or both`)
		}
	default:
		add("backend", "%q is not one of host, http", c.Backend)
	}
	baseURL := func(key, v string) {
		if v == "" {
			return
		}
		if msg := checkBaseURL(v); msg != "" {
			add(key, "%q %s", redactURL(v), msg)
		}
	}
	baseURL("http.telemetryURL", c.HTTP.TelemetryURL)
	baseURL("http.controlURL", c.HTTP.ControlURL)
	if d := c.HTTP.Timeout.Duration; d <= 0 {
		add("http.timeout", "%q must be more than 0", d.String())
	}

	ps = append(ps, profileProblems("standalone.profile", c.StandaloneMode.Profile)...)

	if c.Pool.Enabled {
		if c.Backend != joulie.EndpointHTTP {
			add("pool.enabled", "pool mode drives simulated nodes and needs backend \"http\", not %q", c.Backend)
		}
		if c.Standalone() {
			add("pool.enabled", "pool mode selects its nodes through the API server and needs a kubeconfig")
		}
	}
	if _, err := labels.Parse(c.Pool.NodeSelector); err != nil {
		add("pool.nodeSelector", "%q is not a label selector: %v", c.Pool.NodeSelector, err)
	}
	if c.Pool.Shards < 1 {
		add("pool.shards", "%d must be at least 1", c.Pool.Shards)
	} else if c.Pool.ShardIndex < 0 || c.Pool.ShardIndex >= c.Pool.Shards {
		add("pool.shardIndex", "%d is not in [0, %d) (pool.shards is %d)", c.Pool.ShardIndex, c.Pool.Shards, c.Pool.Shards)
	}
	return ps
}

// profileProblems applies NodePowerProfile.spec's OpenAPI rules (enum,
// watts >= 0, percentages in 0..100), so that a standalone target is
// refused exactly where the API server would refuse it.
func profileProblems(prefix string, p joulie.NodePowerProfileSpec) []problem {
	var ps []problem
	switch p.Profile {
	case joulie.ProfilePerformance, joulie.ProfileEco:
	default:
		ps = append(ps, problem{Key: prefix + ".profile", Msg: fmt.Sprintf("%q is not one of performance, eco", p.Profile)})
	}
	watts := func(key string, v *float64) {
		if v != nil && (!(*v >= 0) || math.IsInf(*v, 0)) {
			ps = append(ps, problem{Key: prefix + "." + key, Msg: fmt.Sprintf("%s must be a number of watts >= 0", fmtFloat(*v))})
		}
	}
	pct := func(key string, v *float64) {
		if v != nil && !(*v >= 0 && *v <= 100) {
			ps = append(ps, problem{Key: prefix + "." + key, Msg: fmt.Sprintf("%s is not a percentage in 0..100", fmtFloat(*v))})
		}
	}
	if cpu := p.CPU; cpu != nil {
		watts("cpu.packagePowerCapWatts", cpu.PackagePowerCapWatts)
		pct("cpu.packagePowerCapPctOfMax", cpu.PackagePowerCapPctOfMax)
	}
	if p.GPU != nil && p.GPU.PowerCap != nil {
		watts("gpu.powerCap.capWattsPerGpu", p.GPU.PowerCap.CapWattsPerGpu)
		pct("gpu.powerCap.capPctOfMax", p.GPU.PowerCap.CapPctOfMax)
	}
	return ps
}

func fmtFloat(f float64) string { return settings.FormatFloat(f) }

// checkDir says what is wrong with dir as the host root, or "".
func checkDir(dir string) string {
	fi, err := os.Stat(dir)
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return `does not exist; it must be the directory holding the host's sys/ and proc/ ("/" on the host itself)`
	case errors.As(err, &pe):
		return "cannot be read: " + pe.Err.Error()
	case err != nil:
		return "cannot be read: " + err.Error()
	case !fi.IsDir():
		return "is not a directory"
	}
	return ""
}

// checkListenAddress accepts host:port with a numeric port (a service
// name would need /etc/services, which a hardened unit may not see).
func checkListenAddress(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "is not host:port"
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "does not end in a port number from 1 to 65535"
	}
	return ""
}

// checkBaseURL holds a backend URL to pkg/baseurl's rule, which
// httpbackend.New applies when the daemon builds its client, so that a bad
// URL stops the start instead of every tick.
func checkBaseURL(raw string) string {
	_, err := baseurl.Expand(raw, "node")
	return baseurl.Reason(err)
}
