package rapl

import (
	"time"

	"joulie.io/joulie/agentd/internal/sysfs"
)

// CPUMeter is the power of all CPU packages, summed from their energy
// meters. Each EnergyMeter turns the energy since its previous read into
// watts, so a second read in the same tick would measure next to
// nothing: CPUMeter reads once per tick and gives the DVFS controller and
// the status report the same figure. It implements enforce.PowerMeter and
// is not safe for concurrent use (the host serializes its ticks).
type CPUMeter struct {
	meters []*EnergyMeter
	at     time.Time
	watts  float64
	ok     bool
}

// NewCPUMeter meters the packages of pkgs. It returns nil when no
// package has an energy counter, and nil with a warning when only some
// have: a sum over part of the CPUs would under-report.
// opts.MaxWatts is the per-package maximum to use where the zone gives
// none (the catalog TDP).
func NewCPUMeter(fs *sysfs.FS, pkgs []Package, opts MeterOptions) (*CPUMeter, string) {
	var meters []*EnergyMeter
	for _, p := range pkgs {
		if p.HasEnergy {
			meters = append(meters, NewEnergyMeter(fs, p, opts))
		}
	}
	switch {
	case len(meters) == 0:
		return nil, ""
	case len(meters) < len(pkgs):
		return nil, "RAPL energy is readable on only some packages; CPU power is not measured"
	}
	return &CPUMeter{meters: meters}, ""
}

// CPUPowerWatts is the packages' summed power over the tick at now; ok is
// false when any package has no reading (the first tick, a counter
// reset).
func (m *CPUMeter) CPUPowerWatts(now time.Time) (float64, bool) {
	if now.Equal(m.at) {
		return m.watts, m.ok
	}
	m.at, m.watts, m.ok = now, 0, true
	for _, e := range m.meters {
		w, ok, err := e.Read()
		if err != nil || !ok {
			m.ok = false
			continue
		}
		m.watts += w
	}
	if !m.ok {
		m.watts = 0
	}
	return m.watts, m.ok
}
