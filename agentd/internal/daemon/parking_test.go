package daemon

import (
	"log/slog"
	"testing"

	"joulie.io/joulie/agentd/internal/config"
)

// Only a cluster-mode agent driving its own host may power it off or
// send Wake-on-LAN packets: never in standalone mode, never for a
// simulated node.
func TestOnlyAClusterAgentOnItsHostMayPowerOff(t *testing.T) {
	cluster := config.Default()
	cluster.Kubeconfig = "/etc/joulie/kubeconfig"
	for _, tc := range []struct {
		name   string
		cfg    config.Config
		onHost bool
		want   bool
	}{
		{"cluster, host", cluster, true, true},
		{"standalone, host", config.Default(), true, false},
		{"cluster, simulated", cluster, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Daemon{log: slog.New(slog.DiscardHandler), onHost: tc.onHost}
			p := d.agentOptions(tc.cfg).Parking
			if (p.PowerOff != nil) != tc.want || (p.WakeOnLAN != nil) != tc.want || (p.CheckEmpty != nil) != tc.want {
				t.Fatalf("power-off wired %v, its last check wired %v, Wake-on-LAN wired %v; want %v",
					p.PowerOff != nil, p.CheckEmpty != nil, p.WakeOnLAN != nil, tc.want)
			}
			// The host's consent is its owner's: off unless configured.
			if p.AllowPowerOff || p.StateDir != tc.cfg.StateDir {
				t.Fatalf("parking options %+v", p)
			}
		})
	}
}
