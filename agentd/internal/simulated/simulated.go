// Package simulated is everything that lets joulie-agentd drive nodes
// whose power lives in a simulator instead of in the host's hardware: the
// demo and the scale runs. Nothing on the host path (daemon → agent → host
// → rapl, cpufreq, nvml, amdhwmon → sysfs) imports it; the daemon reaches it
// at one seam, daemon/simulated.go, in three cases:
//
//   - backend: http sends this node's telemetry and control to the http.*
//     endpoints (Endpoints, Open);
//   - a TelemetryProfile selecting the node routes it to a simulator
//     (Route, then Open);
//   - pool mode runs many simulated nodes in one process (sub-package pool).
//
// The sub-packages are the layers of a simulated node: httpbackend is the
// HTTP client and the wire contract (its CONTRACT.md is for simulator
// authors), httphost is the agent's Hardware over that client, pool runs
// one agent loop per simulated node. httpbackend/httpbackendtest is a
// simulator for tests only.
package simulated

import (
	"fmt"
	"net"
	"strings"

	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/simulated/httpbackend"
	"joulie.io/joulie/agentd/internal/simulated/httphost"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/version"
)

// Endpoints is the client configuration the http.* keys give one node.
func Endpoints(h config.HTTP, node string) httpbackend.Config {
	return httpbackend.Config{
		Node:      node,
		Telemetry: httpbackend.Endpoint{URL: h.TelemetryURL, Timeout: h.Timeout.Duration},
		Control:   httpbackend.Endpoint{URL: h.ControlURL, Timeout: h.Timeout.Duration},
	}
}

// Open reaches the simulator at hc and returns the node's hardware, with
// the DVFS settings of cfg. cpuModel names the node's CPUs when known
// (telemetry carries no model). It reads the node's telemetry once.
func Open(hc httpbackend.Config, cfg config.Config, cpuModel string, network []joulie.NetworkInterface) (*httphost.Host, error) {
	c, err := httpbackend.New(hc)
	if err != nil {
		return nil, err
	}
	return httphost.New(c, httphost.Options{CPUModel: cpuModel, Network: network, DVFS: cfg.DVFS, Version: version.Version})
}

// Network reads a simulated node's joulie.io/hw.macs annotation
// (comma-separated MAC addresses) as its NICs, named sim0, sim1, ...
// and armed for Wake-on-LAN. An address that does not parse is left out:
// the node is then not woken at it, which the controller's wake error
// names.
func Network(macs string) []joulie.NetworkInterface {
	var out []joulie.NetworkInterface
	for _, s := range strings.Split(macs, ",") {
		mac, err := net.ParseMAC(strings.TrimSpace(s))
		if err != nil || len(mac) != 6 {
			continue
		}
		out = append(out, joulie.NetworkInterface{Name: fmt.Sprintf("sim%d", len(out)), MAC: mac.String(), WakeOnLAN: true})
	}
	return out
}
