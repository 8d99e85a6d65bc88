package physics

// Scaled is the curve with every point's watts multiplied by f (> 0): the
// same shape for a machine whose draw is f times this one's, as the
// simulator models a replayed trace's node from its catalog figures.
func (c Curve) Scaled(f float64) Curve {
	if f == 1 {
		return c
	}
	pts := make([]Point, len(c.points))
	for i, p := range c.points {
		pts[i] = Point{Load: p.Load, Watts: p.Watts * f}
	}
	return Curve{points: pts}
}

// Scaled is the GPU node with its host curve scaled by host and each
// GPU's idle and dynamic draw by gpu.
func (g GPUNode) Scaled(host, gpu float64) GPUNode {
	return GPUNode{Host: g.Host.Scaled(host), GPUIdleWatts: g.GPUIdleWatts * gpu, GPUDynamicWatts: g.GPUDynamicWatts * gpu}
}
