package httpbackend

import (
	"context"
	"fmt"
	"math"

	"joulie.io/joulie/agentd/internal/backend"
)

// inForce is how close a limit in force must be to a target for a write
// to be skipped; JSON carries float64 exactly, so this only absorbs a
// simulator's own rounding.
const inForce = 0.01 // W or percentage points

// CPUPower reads the node's CPU telemetry afresh: the observed package
// power the DVFS loop smooths, with the cap and throttle in force. A
// simulator that reports no CPU makes it fail with backend.ErrBlocked.
func (c *Client) CPUPower(ctx context.Context) (*CPUTelemetry, error) {
	t, err := c.Telemetry(ctx)
	if err != nil {
		return nil, err
	}
	if t.CPU == nil {
		return nil, fmt.Errorf("%w: the simulator reports no CPU for node %s", backend.ErrBlocked, c.node)
	}
	return t.CPU, nil
}

// GPUs lists the node's GPUs from fresh telemetry, sorted by index.
func (c *Client) GPUs(ctx context.Context) ([]backend.GPU, error) {
	t, err := c.Telemetry(ctx)
	if err != nil {
		return nil, err
	}
	return t.PowerGPUs(), nil
}

// SetPackageCapWatts sets the per-package CPU limit with
// rapl.set_power_cap_watts, after clamping watts to the package range the
// telemetry reports. It skips the request when that limit is already in
// force, and returns the limit in force.
func (c *Client) SetPackageCapWatts(ctx context.Context, watts float64) (float64, error) {
	what := fmt.Sprintf("set CPU package cap of node %s to %g W", c.node, watts)
	if math.IsNaN(watts) {
		return 0, fmt.Errorf("%s: not a number", what)
	}
	t, err := c.snapshot(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: read the package range: %w", what, err)
	}
	if t.CPU == nil {
		return 0, fmt.Errorf("%s: %w: the simulator reports no CPU, so there is no range to clamp to", what, backend.ErrBlocked)
	}
	target := clamp(watts, t.CPU.MinWattsPerPackage, t.CPU.MaxWattsPerPackage)
	if math.Abs(t.CPU.CapWatts-target) < inForce {
		return t.CPU.CapWatts, nil
	}
	resp, err := c.Control(ctx, ControlRequest{Action: ActionSetPackageCap, Watts: &target})
	if err != nil {
		c.forget()
		return 0, err
	}
	applied := *resp.AppliedWatts
	c.fold(func(t *Telemetry) {
		if t.CPU != nil {
			t.CPU.CapWatts = applied
		}
	})
	return applied, nil
}

// SetThrottlePct sets the DVFS throttle with dvfs.set_throttle_pct after
// clamping pct to 0..100, and returns the throttle in force. It always
// sends: the DVFS loop acts rarely (trip count, cooldown) and a throttle
// needs no range from telemetry.
func (c *Client) SetThrottlePct(ctx context.Context, pct float64) (float64, error) {
	if math.IsNaN(pct) {
		return 0, fmt.Errorf("set DVFS throttle of node %s: not a number", c.node)
	}
	target := clamp(pct, 0, 100)
	resp, err := c.Control(ctx, ControlRequest{Action: ActionSetThrottle, Pct: &target})
	if err != nil {
		c.forget()
		return 0, err
	}
	applied := *resp.AppliedPct
	c.fold(func(t *Telemetry) {
		if t.CPU != nil {
			t.CPU.ThrottlePct = applied
		}
	})
	return applied, nil
}

// SetGPUCap sets the limit of GPU index with gpu.set_power_cap_watts,
// after clamping watts to the device's reported range. It skips the
// request when that limit is already in force, and returns the limit in
// force.
func (c *Client) SetGPUCap(ctx context.Context, index int, watts float64) (float64, error) {
	what := fmt.Sprintf("set cap of GPU %d of node %s to %g W", index, c.node, watts)
	if math.IsNaN(watts) {
		return 0, fmt.Errorf("%s: not a number", what)
	}
	t, err := c.snapshot(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: read the device range: %w", what, err)
	}
	g, ok := t.gpu(index)
	if !ok {
		return 0, fmt.Errorf("%s: the simulator reports no GPU %d (%d GPUs)", what, index, len(t.GPUs))
	}
	target := clamp(watts, g.MinWatts, g.MaxWatts)
	if math.Abs(g.CapWatts-target) < inForce {
		return g.CapWatts, nil
	}
	resp, err := c.Control(ctx, ControlRequest{Action: ActionSetGPUCap, GPU: &index, Watts: &target})
	if err != nil {
		c.forget()
		return 0, err
	}
	applied := *resp.AppliedWatts
	c.fold(func(t *Telemetry) {
		if g, ok := t.gpu(index); ok {
			g.CapWatts = applied
		}
	})
	return applied, nil
}

// snapshot returns the latest telemetry when it is younger than the
// maximum age, else reads it afresh. The result may be shared: read only.
func (c *Client) snapshot(ctx context.Context) (*Telemetry, error) {
	c.mu.Lock()
	t := c.last
	if t != nil && (c.maxAge < 0 || c.now().Sub(c.lastAt) > c.maxAge) {
		t = nil
	}
	c.mu.Unlock()
	if t != nil {
		return t, nil
	}
	return c.Telemetry(ctx)
}

// fold records an applied write in the latest telemetry, so the next
// write in the same tick sees it. The stored reading is replaced, never
// changed in place, because snapshot hands it out.
func (c *Client) fold(update func(*Telemetry)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		return
	}
	t := c.last.Clone()
	update(t)
	c.last = t
}

// forget drops the latest telemetry after a failed write, whose effect is
// unknown.
func (c *Client) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = nil
}

// clamp bounds v to lo..hi; v is not NaN.
func clamp(v, lo, hi float64) float64 {
	return math.Min(math.Max(v, lo), hi)
}

// PowerOff switches the simulated node off with host.power_off: the
// simulator's counterpart of the park's power-off through logind. A
// simulator that does not model power states answers blocked (501), and
// the error wraps backend.ErrBlocked. The cached telemetry is dropped:
// what a switched-off node reports is the simulator's to say.
func (c *Client) PowerOff(ctx context.Context) error {
	_, err := c.Control(ctx, ControlRequest{Action: ActionPowerOff})
	c.forget()
	return err
}
