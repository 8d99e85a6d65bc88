package physics

import (
	"math"
	"testing"
	"time"
)

func TestPowerStatesOfTheTaurusNodes(t *testing.T) {
	p := Default().Power
	if p.OffWatts != 9.75 || p.Boot != 151520*time.Millisecond || p.Shutdown != 6100*time.Millisecond || p.GPUDriverStart != time.Minute {
		t.Errorf("power states %+v, want 9.75 W off, 151.52 s boot, 6.1 s shutdown, 60 s GPU driver start", p)
	}
	// 18,966.4228 J over 151.52 s; 616.08 J over 6.1 s.
	if want := 18966.4228 / 151.52; !near(p.BootWatts, want) || math.Abs(p.BootWatts-125.1744) > 1e-4 {
		t.Errorf("boot draws %v W on average, want %v", p.BootWatts, want)
	}
	if !near(p.ShutdownWatts, 616.08/6.1) || !near(p.ShutdownJoules(), 616.08) {
		t.Errorf("shutdown %v W, %v J; want %v W, 616.08 J", p.ShutdownWatts, p.ShutdownJoules(), 616.08/6.1)
	}
	if got := p.BootTime(false); got != 151520*time.Millisecond {
		t.Errorf("CPU node boots in %v, want 151.52 s", got)
	}
	if got := p.BootJoules(false); !near(got, 18966.4228) {
		t.Errorf("CPU node boot %v J, want 18966.4228 J", got)
	}
	// A GPU node: 60 s more at the boot's average power.
	if got := p.BootTime(true); got != 211520*time.Millisecond {
		t.Errorf("GPU node boots in %v, want 211.52 s", got)
	}
	if got, want := p.BootJoules(true), 18966.4228+60*18966.4228/151.52; !near(got, want) {
		t.Errorf("GPU node boot %v J, want %v J", got, want)
	}
}

func TestSensitivityBootsLongerAtTheSameAveragePower(t *testing.T) {
	def, sen := Default().Power, Sensitivity().Power
	if sen.OffWatts != 25 || sen.Boot != 300*time.Second {
		t.Errorf("sensitivity: %v W off, %v boot; want 25 W, 300 s", sen.OffWatts, sen.Boot)
	}
	if math.Abs(sen.BootWatts/def.BootWatts-1) > 1e-9 {
		t.Errorf("sensitivity boot draws %v W, the default %v W", sen.BootWatts, def.BootWatts)
	}
	if sen.Shutdown != def.Shutdown || sen.ShutdownWatts != def.ShutdownWatts || sen.GPUDriverStart != def.GPUDriverStart {
		t.Errorf("sensitivity changed what it does not give: %+v against %+v", sen, def)
	}
	if got := sen.BootTime(true); got != 360*time.Second {
		t.Errorf("sensitivity GPU node boots in %v, want 360 s", got)
	}
}

// Off draws less than any node idles, in every shipped model.
func TestOffIsBelowIdle(t *testing.T) {
	for _, m := range []*Model{Default(), Sensitivity()} {
		if off := m.Power.OffWatts; !(off < m.CPUNode.Idle() && off < m.GPUNode.Host.Idle()) {
			t.Errorf("%s: off %v W, idle %v W and %v W", m.Name, off, m.CPUNode.Idle(), m.GPUNode.Host.Idle())
		}
	}
}
