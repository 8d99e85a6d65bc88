package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"joulie.io/joulie/test/energy/sim"
)

// Bound is the lower bound (package bound) of one seed's job list, in
// joules over the window the seed's arms share: Physical for every arm
// whose caps hardware can set, SliceCaps for f-oracle, whose cap on each
// job's own slice of the CPUs no hardware has.
type Bound struct {
	Physical, SliceCaps float64
}

// boundTolerance is the relative shortfall below the bound still taken as
// rounding: the bound and the arms sum the same joules in different orders.
const boundTolerance = 1e-9

// Limit is a level's arms measured against the bound.
type Limit struct {
	// Bounds are the seeds' bounds, by seed.
	Bounds map[int64]Bound
	// Distances are, per arm, the mean over seeds of the arm's window
	// energy over the bound's (1 would be the bound itself), with its 95%
	// CI.
	Distances []Ratio
	// GapShare is the mean over seeds of j-joulie's share of the gap
	// between b-binpack and the bound, 100 × (E_b − E_j) / (E_b − E_bound)
	// in percent, with its 95% CI; N is 0 when either arm was not run.
	GapShare Ratio
}

// Ratio is a mean over seeds of a ratio, with its 95% confidence interval.
type Ratio struct {
	Arm          sim.Arm
	N            int
	Mean, Lo, Hi float64
}

// AddBound records the bound of seed's job list at level.
func (acc *Accumulator) AddBound(level float64, seed int64, b Bound) error {
	if !(b.Physical > 0) || !(b.SliceCaps > 0) || b.SliceCaps > b.Physical*(1+boundTolerance) {
		return fmt.Errorf("seed %d at level %v: bound %+v is not a pair of positive energies with the slice caps' the lower", seed, level, b)
	}
	if acc.bounds == nil {
		acc.bounds = map[float64]map[int64]Bound{}
	}
	if acc.bounds[level] == nil {
		acc.bounds[level] = map[int64]Bound{}
	}
	if _, dup := acc.bounds[level][seed]; dup {
		return fmt.Errorf("seed %d at level %v: bound added twice", seed, level)
	}
	acc.bounds[level][seed] = b
	return nil
}

// limit measures level l's arms against its seeds' bounds; nil when no
// bound was added. An arm below its bound is an error: the simulator or
// the bound is wrong, and no figure of the report can be trusted.
func (acc *Accumulator) limit(l *Level) (*Limit, error) {
	bounds := acc.bounds[l.Level]
	if len(bounds) == 0 {
		return nil, nil
	}
	for _, seed := range l.Seeds {
		if _, ok := bounds[seed]; !ok {
			return nil, fmt.Errorf("level %v: seed %d has no lower bound while other seeds have one", l.Level, seed)
		}
	}
	of := func(r *Run) float64 {
		b := bounds[r.Seed]
		if s, err := sim.Spec(r.Arm); err == nil && s.Oracle == sim.OracleSlices {
			return b.SliceCaps
		}
		return b.Physical
	}
	for _, r := range l.Runs {
		got, floor := r.EnergyKWh*joulesPerKWh, of(r)
		if got < floor*(1-boundTolerance) {
			return nil, fmt.Errorf("arm %s, seed %d, level %v: %.6g J in the window, below the lower bound's %.6g J: the simulator or the bound (package bound) is wrong", r.Arm, r.Seed, l.Level, got, floor)
		}
	}
	lim := &Limit{Bounds: bounds}
	for _, a := range l.Arms {
		var xs []float64
		for _, seed := range l.Seeds {
			r := l.Run(a, seed)
			xs = append(xs, r.EnergyKWh*joulesPerKWh/of(r))
		}
		n, mean, lo, hi := MeanCI(xs)
		lim.Distances = append(lim.Distances, Ratio{Arm: a, N: n, Mean: mean, Lo: lo, Hi: hi})
	}
	lim.GapShare = Ratio{Arm: sim.ArmJoulie, Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if l.Has(sim.ArmJoulie) && l.Has(sim.ArmBinPack) {
		var xs []float64
		for _, seed := range l.Seeds {
			b := l.Run(sim.ArmBinPack, seed).EnergyKWh * joulesPerKWh
			j := l.Run(sim.ArmJoulie, seed).EnergyKWh * joulesPerKWh
			if gap := b - bounds[seed].Physical; gap > 0 {
				xs = append(xs, 100*(b-j)/gap)
			}
		}
		lim.GapShare.N, lim.GapShare.Mean, lim.GapShare.Lo, lim.GapShare.Hi = MeanCI(xs)
	}
	return lim, nil
}

// Distance returns arm's distance to the bound.
func (lim *Limit) Distance(a sim.Arm) (Ratio, bool) {
	i := slices.IndexFunc(lim.Distances, func(r Ratio) bool { return r.Arm == a })
	if i < 0 {
		return Ratio{}, false
	}
	return lim.Distances[i], true
}

// limitSection is the report's section on the physical limit of level l.
func limitSection(p printer, l *Level) {
	lim := l.Limit
	if lim == nil {
		return
	}
	p("### Against the physical limit\n\n")
	p("The lower bound (package `test/energy/bound`, whose documentation proves it) is what no schedule of the seed's job list can go below in the window under this physics: every node at least at its off draw; at each instant the fewest awake nodes of each family that can hold the jobs surely running (each from the latest start any arm gave it until its arrival plus its work at full speed, split freely across nodes, CPU-only work free to use every GPU node's spare CPUs), each at its idle draw; a shutdown and a boot for each level of that count that falls and rises again, where that costs less than staying on, with perfect foresight; and each job's least dynamic energy per second of work over every node load and cap, times the least work it can do inside the window; or, where that is more, each job's share of its host's whole draw, idle included, at the load and cap where that is least per second of work, plus the GPUs' idle and dynamic draw. The report fails when an arm spends less. %s is measured against the same bound with its per-slice CPU caps allowed, which no hardware has. %s and %s are heuristics with foresight, not bounds. Energy over the window, mean over seeds, 95%% CI.\n\n",
		sim.ArmOracle, sim.ArmOraclePhysical, sim.ArmOracle)
	p("| arm | energy over the bound's |\n|---|---|\n")
	for _, d := range lim.Distances {
		p("| %s | %s |\n", d.Arm, ratioCI(d))
	}
	if g := lim.GapShare; g.N > 0 {
		p("\n%s closes %s (95%% CI %s) of the gap between %s and the bound.\n", sim.ArmJoulie, plainPct(g.Mean), shareCI(OracleShare{N: g.N, Mean: g.Mean, Lo: g.Lo, Hi: g.Hi}), sim.ArmBinPack)
	}
	p("\n| seed | bound (kWh) | with slice caps (kWh) |\n|---|---|---|\n")
	for _, seed := range l.Seeds {
		b := lim.Bounds[seed]
		p("| %d | %.1f | %.1f |\n", seed, b.Physical/joulesPerKWh, b.SliceCaps/joulesPerKWh)
	}
	p("\n")
}

func ratioCI(r Ratio) string {
	if r.N < 2 || math.IsNaN(r.Lo) {
		return num(r.Mean, 3)
	}
	return fmt.Sprintf("%s (%s … %s)", num(r.Mean, 3), num(r.Lo, 3), num(r.Hi, 3))
}

// limitSummary is the summary's sentence on the headline level's distance
// to the bound, none without a bound.
func limitSummary(l *Level) []string {
	if l.Limit == nil {
		return nil
	}
	var cells []string
	for _, d := range l.Limit.Distances {
		cells = append(cells, fmt.Sprintf("%s %s", d.Arm, num(d.Mean, 3)))
	}
	s := fmt.Sprintf("Window energy over the physical lower bound at level %s: %s.", levelName(l.Level), strings.Join(cells, "; "))
	if g := l.Limit.GapShare; g.N > 0 {
		s += fmt.Sprintf(" %s closes %s of the gap between %s and the bound.", sim.ArmJoulie, plainPct(g.Mean), sim.ArmBinPack)
	}
	return []string{s}
}
