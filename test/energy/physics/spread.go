package physics

import (
	"encoding/binary"
	"hash/fnv"
	"math"
)

// Spread is how far a job's true figures may lie from its class's: the
// half-widths, in absolute units, of the ranges its clock sensitivity and
// its utilization are drawn from. A real cluster's controller knows a
// pod's class at best, never its job's own figures; the spread is what
// the benchmark's physics lets the two differ by.
type Spread struct {
	ClockSensitivity, Utilization float64
}

// Zero reports whether the spread leaves every job at its class's figures.
func (s Spread) Zero() bool { return s.ClockSensitivity == 0 && s.Utilization == 0 }

// spreadStep is the grid the true figures are drawn on: fine enough to be
// a spread, coarse enough that a job list holds a few hundred distinct
// classes, so the lower bound computes each once rather than per job.
const spreadStep = 0.02

// Truth draws each job's true figures: uniformly on the grid of
// spreadStep within ± Spread of its class's, clamped to [0, 1], from a
// hash of Seed and the job's ID. The draw depends on nothing else, so
// every arm, and the lower bound, see the same figures for the same job
// of the same job list, whatever the order the jobs come in. The zero
// Truth leaves every job at its class's figures.
type Truth struct {
	Spread Spread
	Seed   int64
}

// Class is the true figures under m of job id, of class b.
func (t Truth) Class(m *Model, b Boundness, id string) Class {
	c := m.Class(b)
	if t.Spread.Zero() {
		return c
	}
	h := fnv.New64a()
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(t.Seed))
	h.Write(seed[:])
	h.Write([]byte(id))
	// FNV spreads similar IDs poorly over its high bits; splitmix64's
	// finaliser mixes them before the sum is cut in two.
	sum := h.Sum64()
	sum ^= sum >> 30
	sum *= 0xbf58476d1ce4e5b9
	sum ^= sum >> 27
	sum *= 0x94d049bb133111eb
	sum ^= sum >> 31
	nominal := c
	c.ClockSensitivity = onGrid(c.ClockSensitivity, t.Spread.ClockSensitivity, uint32(sum))
	c.Utilization = onGrid(c.Utilization, t.Spread.Utilization, uint32(sum>>32))
	if c == nominal {
		// Drawn at the class's own figures: the class's stretch as the file
		// gives it, not a recomputation that rounding might move.
		return nominal
	}
	// The stretch the true figures give on the class device, as the
	// loader derives it for a class given by β.
	tm := m.WithClass(b, c)
	c.StretchAtTableCap = tm.Stretch(b, tm.ClassDevice(b), m.TableCapFraction)
	return c
}

// onGrid is nominal moved by one of the 2n+1 steps of spreadStep within
// ± width (n = width / spreadStep), chosen by r, clamped to [0, 1]: at
// a class's bound (β = 1, say) the draws pile up there rather than leave
// the range the figure has.
func onGrid(nominal, width float64, r uint32) float64 {
	n := int64(math.Round(width / spreadStep))
	if n <= 0 {
		return nominal
	}
	k := int64(uint64(r)%uint64(2*n+1)) - n
	return min(max(nominal+float64(k)*spreadStep, 0), 1)
}

// WithClass is m with class b's figures replaced by c: the model a job
// whose true figures are c runs under. It shares m's curves.
func (m *Model) WithClass(b Boundness, c Class) *Model {
	i := b.index()
	if i < 0 {
		panic("physics: unknown boundness class " + string(b))
	}
	mm := *m
	mm.classes[i] = c
	return &mm
}

// Truths hands out, per job, the model of its true figures, one model per
// distinct class: the simulator and the lower bound read a job's physics
// from it. Not safe for concurrent use.
type Truths struct {
	truth  Truth
	model  *Model
	models map[truthKey]*Model
}

type truthKey struct {
	b Boundness
	c Class
}

// Models returns the job models of t under m.
func (t Truth) Models(m *Model) *Truths {
	return &Truths{truth: t, model: m, models: map[truthKey]*Model{}}
}

// Of is the model job id of class b runs under: the base model itself
// when its figures are the class's.
func (ts *Truths) Of(b Boundness, id string) *Model {
	c := ts.truth.Class(ts.model, b, id)
	if c == ts.model.Class(b) {
		return ts.model
	}
	k := truthKey{b, c}
	if m, ok := ts.models[k]; ok {
		return m
	}
	m := ts.model.WithClass(b, c)
	ts.models[k] = m
	return m
}
