package httpbackend

import (
	"context"

	"joulie.io/joulie/agentd/internal/backend"
)

// BackendName is the backend's name in the API and in logs.
const BackendName = "http"

// GPUCapper is the GPU backend of a simulated node: backend.GPUCapper over
// the contract. Its methods take no context (the interface has none);
// each request is bounded by the endpoint's timeout, so SetCap, which may
// read telemetry before it writes, takes at most two timeouts.
//
// It departs from the interface's journaling rule on purpose: it records
// no originals. The state it changes lives in the simulator's memory, not
// on the host the agent runs on; in pool mode one agent drives many
// simulated nodes, and a journal kept under /var/lib/joulie would outlive
// the simulator run it describes and write stale caps into the next one.
// Putting a simulated node back is the simulator's business (its restart
// or its own reset). Restore is accordingly a no-op.
type GPUCapper struct {
	c *Client
}

var _ backend.GPUCapper = (*GPUCapper)(nil)

// NewGPUCapper returns the GPU backend speaking through c.
func NewGPUCapper(c *Client) *GPUCapper { return &GPUCapper{c: c} }

// Name is "http".
func (g *GPUCapper) Name() string { return BackendName }

// GPUs lists the simulated devices from fresh telemetry, sorted by index.
func (g *GPUCapper) GPUs() ([]backend.GPU, error) {
	return g.c.GPUs(context.Background())
}

// SetCap clamps watts to device index's reported range, skips the write
// when that limit is in force, and otherwise sends
// gpu.set_power_cap_watts; it returns the limit the simulator reads back.
func (g *GPUCapper) SetCap(index int, watts float64) (float64, error) {
	return g.c.SetGPUCap(context.Background(), index, watts)
}

// Restore does nothing and succeeds: this backend journals nothing (see
// GPUCapper), so an "http" entry can only be a leftover of another build,
// and there is nothing on this host to put back. Succeeding lets the
// journal drop such an entry instead of retrying it forever.
func (g *GPUCapper) Restore(id, original string) error { return nil }
