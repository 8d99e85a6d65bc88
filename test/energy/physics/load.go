package physics

import (
	"bytes"
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// The file's shape. A key whose tag says omitempty may be left out; every
// other key is required in the base model. A variant may leave out any
// key, and then keeps the base's value; a list it gives replaces the
// base's whole list.
type doc struct {
	Description string     `yaml:"description,omitempty"`
	CPUNode     curveDoc   `yaml:"cpuNode"`
	GPUNode     gpuNodeDoc `yaml:"gpuNode"`
	Capping     cappingDoc `yaml:"capping"`
	Clock       clockDoc   `yaml:"clock"`
	Classes     classesDoc `yaml:"classes"`
	PowerStates powerDoc   `yaml:"powerStates"`
	JobSpread   spreadDoc  `yaml:"jobSpread,omitempty"`
}

// spreadDoc is the optional jobSpread block; without it jobs run at their
// class's figures.
type spreadDoc struct {
	Source           string  `yaml:"source,omitempty"`
	ClockSensitivity float64 `yaml:"clockSensitivity"`
	Utilization      float64 `yaml:"utilization"`
}

// classesDoc has one key per Boundness, so that a class the model does
// not know is an unknown key and a missing one a missing key.
type classesDoc struct {
	GPUCompute classDoc `yaml:"gpu-compute"`
	GPUMixed   classDoc `yaml:"gpu-mixed"`
	GPULow     classDoc `yaml:"gpu-low"`
	CPUCompute classDoc `yaml:"cpu-compute"`
	CPUMemory  classDoc `yaml:"cpu-memory"`
	CPULow     classDoc `yaml:"cpu-low"`
}

// byBoundness returns the figures of each class, in boundnesses' order.
func (c *classesDoc) byBoundness() [len(boundnesses)]*classDoc {
	return [...]*classDoc{&c.GPUCompute, &c.GPUMixed, &c.GPULow, &c.CPUCompute, &c.CPUMemory, &c.CPULow}
}

type curveDoc struct {
	Source string     `yaml:"source,omitempty"`
	Points []pointDoc `yaml:"points"`
}

type pointDoc struct {
	Load  float64 `yaml:"load"`
	Watts float64 `yaml:"watts"`
}

type gpuNodeDoc struct {
	Source          string   `yaml:"source,omitempty"`
	Host            curveDoc `yaml:"host"`
	GPUIdleWatts    float64  `yaml:"gpuIdleWatts"`
	GPUDynamicWatts float64  `yaml:"gpuDynamicWatts"`
}

type cappingDoc struct {
	Source           string  `yaml:"source,omitempty"`
	TableCapFraction float64 `yaml:"tableCapFraction"`
	MinCapFraction   float64 `yaml:"minCapFraction"`
}

// clockDoc is a measured table of one job at fixed clocks.
type clockDoc struct {
	Source    string          `yaml:"source,omitempty"`
	IdleWatts float64         `yaml:"idleWatts"`
	Points    []clockPointDoc `yaml:"points"`
}

type clockPointDoc struct {
	GHz     float64 `yaml:"ghz"`
	Watts   float64 `yaml:"watts"`
	Seconds float64 `yaml:"seconds"`
}

// classDoc gives exactly one of StretchAtTableCap and ClockSensitivity;
// both are optional to the checker, and build insists on one.
type classDoc struct {
	Source            string   `yaml:"source,omitempty"`
	Utilization       float64  `yaml:"utilization"`
	StretchAtTableCap *float64 `yaml:"stretchAtTableCap,omitempty"`
	ClockSensitivity  *float64 `yaml:"clockSensitivity,omitempty"`
}

type powerDoc struct {
	Source                string  `yaml:"source,omitempty"`
	OffWatts              float64 `yaml:"offWatts"`
	BootSeconds           float64 `yaml:"bootSeconds"`
	BootJoules            float64 `yaml:"bootJoules"`
	ShutdownSeconds       float64 `yaml:"shutdownSeconds"`
	ShutdownJoules        float64 `yaml:"shutdownJoules"`
	GPUDriverStartSeconds float64 `yaml:"gpuDriverStartSeconds"`
	// A GPU node's own draw off and booting; 0 or absent: a CPU node's.
	GPUNodeOffWatts  float64 `yaml:"gpuNodeOffWatts,omitempty"`
	GPUNodeBootWatts float64 `yaml:"gpuNodeBootWatts,omitempty"`
}

// stretchKeys are a class's two ways to say how a cap slows it.
var stretchKeys = [...]string{"stretchAtTableCap", "clockSensitivity"}

// variantsKey is the top-level key holding the named overlays.
const variantsKey = "variants"

// File is a parsed physics file: its base model and its variants.
type File struct {
	base     *Model
	variants map[string]*Model
}

// Base returns the file's base model, named "default".
func (f *File) Base() *Model { return f.base }

// Variant returns the model of the named variant; "" and "default" name
// the base model.
func (f *File) Variant(name string) (*Model, error) {
	if name == "" || name == "default" {
		return f.base, nil
	}
	if m, ok := f.variants[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("physics file %s has no variant %q; it has: %s",
		f.base.Source, name, strings.Join(f.Names(), ", "))
}

// Names returns "default" and the variants' names, sorted.
func (f *File) Names() []string {
	names := []string{"default"}
	for n := range f.variants {
		names = append(names, n)
	}
	slices.Sort(names[1:])
	return names
}

//go:embed physics.yaml
var embedded []byte

// EmbeddedName is the Source of the embedded models.
const EmbeddedName = "physics.yaml (embedded)"

var parseEmbedded = sync.OnceValue(func() *File {
	f, err := Parse(embedded, EmbeddedName)
	if err != nil {
		// Compiled in and covered by the tests: a build defect.
		panic(err)
	}
	return f
})

// Embedded returns the embedded physics file.
func Embedded() *File { return parseEmbedded() }

// Default returns the embedded base model.
func Default() *Model { return Embedded().base }

// Sensitivity returns the embedded "sensitivity" variant: CPU and host
// idle at 30% of their maximum, 145 W per idle GPU.
func Sensitivity() *Model {
	m, err := Embedded().Variant("sensitivity")
	if err != nil {
		panic(err)
	}
	return m
}

// Load reads and validates the physics file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read physics file: %w", err)
	}
	return Parse(data, path)
}

// Parse reads a physics file's contents; name is the file's name for the
// errors and the models' Source. Every error names the file, the line and
// column, and the key.
func Parse(data []byte, name string) (*File, error) {
	var root, second yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%s: the file is empty; it must hold the keys cpuNode, gpuNode, capping, clock, classes and powerStates", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// A second document would otherwise be ignored without a word.
	if err := dec.Decode(&second); err != io.EOF {
		return nil, fmt.Errorf("%s:%d:%d: the file holds more than one YAML document; keep one", name, second.Line, second.Column)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: the file is empty; it must hold the keys cpuNode, gpuNode, capping, clock, classes and powerStates", name)
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d:%d: the file must be a block of keys, not %s", name, top.Line, top.Column, describe(top))
	}
	variants, dup, rest := splitVariants(top)
	if dup != nil {
		return nil, fmt.Errorf("%s:%d:%d: %s: duplicate key", name, dup.Line, dup.Column, variantsKey)
	}

	base := &checker{file: name, at: map[string]*yaml.Node{}}
	base.walk(rest, reflect.TypeFor[doc](), "", false)
	if len(base.errs) > 0 {
		return nil, errors.Join(base.errs...)
	}
	var d doc
	if err := rest.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f := &File{variants: map[string]*Model{}}
	var errs []error
	f.base, errs = build(&d, "default", name, base, nil)

	if variants != nil {
		errs = append(errs, parseVariants(f, variants, rest, name, base)...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

// parseVariants builds each variant: a fresh decoding of the base with the
// variant's keys decoded over it.
func parseVariants(f *File, vs, rest *yaml.Node, name string, base *checker) []error {
	if vs.Kind != yaml.MappingNode {
		return []error{fmt.Errorf("%s:%d:%d: %s: want a block of named variants, got %s", name, vs.Line, vs.Column, variantsKey, describe(vs))}
	}
	var errs []error
	seen := map[string]bool{}
	for i := 0; i+1 < len(vs.Content); i += 2 {
		k, v := vs.Content[i], vs.Content[i+1]
		path := variantsKey + "." + k.Value
		switch {
		case k.Kind != yaml.ScalarNode || k.Value == "" || k.Value == "default":
			errs = append(errs, fmt.Errorf("%s:%d:%d: %s: a variant needs a name other than \"default\"", name, k.Line, k.Column, path))
			continue
		case seen[k.Value]:
			errs = append(errs, fmt.Errorf("%s:%d:%d: %s: duplicate variant", name, k.Line, k.Column, path))
			continue
		}
		seen[k.Value] = true
		c := &checker{file: name, prefix: path + ".", at: map[string]*yaml.Node{}}
		c.walk(v, reflect.TypeFor[doc](), "", true)
		if len(c.errs) > 0 {
			errs = append(errs, c.errs...)
			continue
		}
		var d doc
		if err := rest.Decode(&d); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		// A class that the variant gives a stretch key drops the base's:
		// the variant chooses its one way anew.
		for i, cd := range d.Classes.byBoundness() {
			for _, k := range stretchKeys {
				if c.at["classes."+string(boundnesses[i])+"."+k] != nil {
					cd.StretchAtTableCap, cd.ClockSensitivity = nil, nil
				}
			}
		}
		if err := v.Decode(&d); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", name, path, err))
			continue
		}
		m, verrs := build(&d, k.Value, name, c, base)
		errs = append(errs, verrs...)
		if m != nil {
			f.variants[k.Value] = m
		}
	}
	return errs
}

// splitVariants returns the value of the top-level variants key, the key
// of a second one if any, and a copy of top without them.
func splitVariants(top *yaml.Node) (variants, dup, rest *yaml.Node) {
	r := *top
	r.Content = nil
	for i := 0; i+1 < len(top.Content); i += 2 {
		switch {
		case top.Content[i].Value != variantsKey:
			r.Content = append(r.Content, top.Content[i], top.Content[i+1])
		case variants == nil:
			variants = top.Content[i+1]
		case dup == nil:
			dup = top.Content[i]
		}
	}
	return variants, dup, &r
}

// build validates a decoded document and turns it into a Model. Errors are
// located in c's nodes first, then in fallback's (where a variant kept
// the base's value).
func build(d *doc, modelName, file string, c, fallback *checker) (*Model, []error) {
	v := validator{file: file, c: c, fallback: fallback}
	m := &Model{
		Name:             modelName,
		Source:           file,
		Description:      strings.TrimSpace(d.Description),
		CPUNode:          v.curve(d.CPUNode, "cpuNode"),
		TableCapFraction: d.Capping.TableCapFraction,
		MinCapFraction:   d.Capping.MinCapFraction,
	}
	m.GPUNode = GPUNode{
		Host:            v.curve(d.GPUNode.Host, "gpuNode.host"),
		GPUIdleWatts:    d.GPUNode.GPUIdleWatts,
		GPUDynamicWatts: d.GPUNode.GPUDynamicWatts,
	}
	g := m.GPUNode
	v.check(finite(g.GPUIdleWatts) && g.GPUIdleWatts >= 0, "gpuNode.gpuIdleWatts", "%v must be a number of watts, 0 or more", g.GPUIdleWatts)
	v.check(finite(g.GPUDynamicWatts) && g.GPUDynamicWatts > 0, "gpuNode.gpuDynamicWatts", "%v must be a number of watts above 0", g.GPUDynamicWatts)

	tc, mc := m.TableCapFraction, m.MinCapFraction
	v.check(tc > 0 && tc < 1, "capping.tableCapFraction", "%v must lie in (0,1): the stretch of no cap (1) is fixed at 1", tc)
	v.check(mc > 0 && mc <= 1, "capping.minCapFraction", "%v must lie in (0,1]", mc)
	v.check(!(mc > tc), "capping.minCapFraction", "%v is above tableCapFraction %v: the table's own cap would be out of reach", mc, tc)

	m.ClockFit = v.clock(d.Clock)
	given := make([]*float64, len(boundnesses)) // a class's stretchAtTableCap, if it gives one
	for i, cd := range d.Classes.byBoundness() {
		p := "classes." + string(boundnesses[i])
		v.check(cd.Utilization >= 0 && cd.Utilization <= 1, p+".utilization", "%v must lie in [0,1]", cd.Utilization)
		m.classes[i].Utilization = cd.Utilization
		switch s, beta := cd.StretchAtTableCap, cd.ClockSensitivity; {
		case (s == nil) == (beta == nil):
			v.check(false, p, "give exactly one of stretchAtTableCap (measured) and clockSensitivity (β); it gives %s",
				map[bool]string{true: "neither", false: "both"}[s == nil])
		case s != nil:
			if v.check(finite(*s) && *s >= 1, p+".stretchAtTableCap", "%v must be 1 or more: a cap never makes work faster", *s) {
				given[i] = s
			}
		default:
			v.check(*beta >= 0 && *beta <= 1, p+".clockSensitivity",
				"%v must lie in [0,1]: the share of the job's runtime that scales with the clock", *beta)
			m.classes[i].ClockSensitivity = *beta
		}
	}
	if len(v.errs) > 0 {
		return nil, v.errs
	}

	// A cap below idle would have the device draw less than it does doing
	// nothing.
	floorErr := func(key string, idle, maxW float64) {
		v.check(mc*maxW >= idle, "capping.minCapFraction",
			"%v × %s's maximum %v W = %.4g W is below its idle draw %v W; raise the floor", mc, key, maxW, mc*maxW, idle)
	}
	floorErr("cpuNode", m.CPUNode.Idle(), m.CPUNode.Max())
	floorErr("gpuNode.host", g.Host.Idle(), g.Host.Max())
	floorErr("a GPU", g.GPUIdleWatts, g.GPUMaxWatts())
	m.Power = v.power(d.PowerStates, min(m.CPUNode.Idle(), g.Host.Idle()))
	if gi := g.Host.Idle() + g.GPUIdleWatts; !(m.Power.GPUNodeOffWatts < gi) {
		v.check(false, "powerStates.gpuNodeOffWatts", "%v W is not below a GPU node's idle draw with one GPU, %v W", m.Power.GPUNodeOffWatts, gi)
	}
	v.check(d.JobSpread.ClockSensitivity >= 0 && d.JobSpread.ClockSensitivity <= 1, "jobSpread.clockSensitivity",
		"%v must lie in [0,1]: the half-width of a figure that itself lies in [0,1]", d.JobSpread.ClockSensitivity)
	v.check(d.JobSpread.Utilization >= 0 && d.JobSpread.Utilization <= 1, "jobSpread.utilization",
		"%v must lie in [0,1]: the half-width of a figure that itself lies in [0,1]", d.JobSpread.Utilization)
	m.Spread = Spread{ClockSensitivity: d.JobSpread.ClockSensitivity, Utilization: d.JobSpread.Utilization}
	if len(v.errs) > 0 {
		return nil, v.errs
	}

	// β from a measured stretch: the β at which one class device under
	// the table cap stretches by the measured figure.
	for i, b := range boundnesses {
		s := given[i]
		if s == nil {
			m.classes[i].StretchAtTableCap = m.Stretch(b, m.ClassDevice(b), tc)
			continue
		}
		m.classes[i].StretchAtTableCap = *s
		p := "classes." + string(b) + ".stretchAtTableCap"
		d := m.ClassDevice(b)
		r := m.Clock(d, tc)
		if r == 1 {
			v.check(*s == 1, p, "%v, but the class's device (natural %.4g W) stays under the table cap (%v × %.4g W): "+
				"a cap that does not bind cannot slow it; give 1, or a higher utilization", *s, d.Natural, tc, d.Max)
			continue
		}
		beta := (*s - 1) / (math.Pow(r, -m.ClockFit.A) - 1)
		if v.check(beta <= 1, p, "%v would make the class %.3g times as clock-sensitive as a clock-bound job: "+
			"at clock %.3f under the table cap a clock-bound job runs only %.4g times as long", *s, beta, r, math.Pow(r, -m.ClockFit.A)) {
			m.classes[i].ClockSensitivity = beta
		}
	}
	if len(v.errs) > 0 {
		return nil, v.errs
	}
	return m, nil
}

// clock validates the clock table and fits it: K by least squares of
// ln(watts − idle) on ln(GHz), A of ln(seconds) on −ln(GHz), MinClock the
// lowest clock over the highest.
func (v *validator) clock(cd clockDoc) ClockFit {
	ok := v.check(finite(cd.IdleWatts) && cd.IdleWatts >= 0, "clock.idleWatts", "%v must be a number of watts, 0 or more", cd.IdleWatts)
	pts := cd.Points
	if !v.check(len(pts) >= 3, "clock.points", "has %d points; give at least 3 clocks to fit two exponents", len(pts)) || !ok {
		return ClockFit{}
	}
	for i, p := range pts {
		at := fmt.Sprintf("clock.points[%d]", i)
		ok = v.check(finite(p.GHz) && p.GHz > 0, at+".ghz", "%v must be a clock above 0", p.GHz) && ok
		ok = v.check(finite(p.Watts) && p.Watts > cd.IdleWatts, at+".watts", "%v must be a number of watts above idleWatts %v", p.Watts, cd.IdleWatts) && ok
		ok = v.check(finite(p.Seconds) && p.Seconds > 0, at+".seconds", "%v must be a number of seconds above 0", p.Seconds) && ok
		if i > 0 {
			ok = v.check(!(p.GHz <= pts[i-1].GHz), at+".ghz", "%v does not rise above the previous point's %v: clocks must increase", p.GHz, pts[i-1].GHz) && ok
		}
	}
	if !ok {
		return ClockFit{}
	}
	var lnGHz, lnDyn, lnTime []float64
	for _, p := range pts {
		lnGHz = append(lnGHz, math.Log(p.GHz))
		lnDyn = append(lnDyn, math.Log(p.Watts-cd.IdleWatts))
		lnTime = append(lnTime, math.Log(p.Seconds))
	}
	f := ClockFit{
		K:        leastSquaresSlope(lnGHz, lnDyn),
		A:        -leastSquaresSlope(lnGHz, lnTime),
		MinClock: pts[0].GHz / pts[len(pts)-1].GHz,
	}
	v.check(finite(f.K) && f.K > 0, "clock.points", "the fitted power exponent k = %.4g is not above 0: dynamic power must rise with the clock", f.K)
	v.check(finite(f.A) && f.A > 0, "clock.points", "the fitted time exponent a = %.4g is not above 0: the job must run faster at a higher clock", f.A)
	return f
}

// leastSquaresSlope is the slope of the least-squares line of ys on xs.
func leastSquaresSlope(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	return sxy / sxx
}

// power validates the power states; idle is the lowest idle draw of the
// model's nodes, which off must stay below.
func (v *validator) power(pd powerDoc, idle float64) PowerStates {
	seconds := func(key string, s float64, zeroOK bool) time.Duration {
		okS := finite(s) && (s > 0 || zeroOK && s == 0) && s < 1e9
		what := "above 0"
		if zeroOK {
			what = "0 or more"
		}
		if !v.check(okS, "powerStates."+key, "%v must be a number of seconds %s (and below 10⁹)", s, what) {
			return 0
		}
		return time.Duration(math.Round(s * float64(time.Second)))
	}
	p := PowerStates{
		OffWatts:        pd.OffWatts,
		Boot:            seconds("bootSeconds", pd.BootSeconds, false),
		Shutdown:        seconds("shutdownSeconds", pd.ShutdownSeconds, false),
		GPUDriverStart:  seconds("gpuDriverStartSeconds", pd.GPUDriverStartSeconds, true),
		GPUNodeOffWatts: pd.GPUNodeOffWatts, GPUNodeBootWatts: pd.GPUNodeBootWatts,
	}
	v.check(finite(pd.GPUNodeOffWatts) && pd.GPUNodeOffWatts >= 0, "powerStates.gpuNodeOffWatts", "%v must be a number of watts, 0 or more (0: offWatts)", pd.GPUNodeOffWatts)
	v.check(finite(pd.GPUNodeBootWatts) && pd.GPUNodeBootWatts >= 0, "powerStates.gpuNodeBootWatts", "%v must be a number of watts, 0 or more (0: the boot's average)", pd.GPUNodeBootWatts)
	if v.check(finite(pd.OffWatts) && pd.OffWatts > 0, "powerStates.offWatts", "%v must be a number of watts above 0", pd.OffWatts) {
		v.check(pd.OffWatts < idle, "powerStates.offWatts", "%v W is not below the lowest idle draw of the nodes, %v W: off must draw less than idle", pd.OffWatts, idle)
	}
	if v.check(finite(pd.BootJoules) && pd.BootJoules > 0, "powerStates.bootJoules", "%v must be a number of joules above 0", pd.BootJoules) && p.Boot > 0 {
		p.BootWatts = pd.BootJoules / pd.BootSeconds
	}
	if v.check(finite(pd.ShutdownJoules) && pd.ShutdownJoules > 0, "powerStates.shutdownJoules", "%v must be a number of joules above 0", pd.ShutdownJoules) && p.Shutdown > 0 {
		p.ShutdownWatts = pd.ShutdownJoules / pd.ShutdownSeconds
	}
	return p
}

// curve validates a curve's points: from load 0 to load 1, loads rising,
// watts never falling.
func (v *validator) curve(cd curveDoc, key string) Curve {
	pts := make([]Point, len(cd.Points))
	for i, p := range cd.Points {
		pts[i] = Point{Load: p.Load, Watts: p.Watts}
	}
	pk := key + ".points"
	if !v.check(len(pts) >= 2, pk, "has %d points; give at least load 0 and load 1", len(pts)) {
		return Curve{}
	}
	ok := true
	for i, p := range pts {
		at := fmt.Sprintf("%s[%d]", pk, i)
		ok = v.check(p.Load >= 0 && p.Load <= 1, at+".load", "%v must lie in [0,1]", p.Load) && ok
		ok = v.check(finite(p.Watts) && p.Watts >= 0, at+".watts", "%v must be a number of watts, 0 or more", p.Watts) && ok
		if i == 0 {
			continue
		}
		q := pts[i-1]
		ok = v.check(!(p.Load <= q.Load), at+".load", "%v does not rise above the previous point's %v: loads must increase", p.Load, q.Load) && ok
		ok = v.check(!(p.Watts < q.Watts), at+".watts", "%v W is below the previous point's %v W: power cannot fall as load rises", p.Watts, q.Watts) && ok
	}
	ok = v.check(pts[0].Load == 0, pk+"[0].load", "%v: the first point must be at load 0 (idle)", pts[0].Load) && ok
	last := len(pts) - 1
	ok = v.check(pts[last].Load == 1, fmt.Sprintf("%s[%d].load", pk, last), "%v: the last point must be at load 1 (full load)", pts[last].Load) && ok
	if !ok {
		return Curve{}
	}
	return Curve{points: pts}
}

// validator collects validation errors, each located at the node its key
// came from.
type validator struct {
	file        string
	c, fallback *checker
	errs        []error
}

// check records an error at key unless ok, and returns ok.
func (v *validator) check(ok bool, key, format string, args ...any) bool {
	if ok {
		return true
	}
	// The key's own node, in the variant, else in the base it kept the
	// value from; failing both, the nearest enclosing key given.
	where := v.c.prefix + key
	n := v.c.at[key]
	if n == nil && v.fallback != nil {
		if n = v.fallback.at[key]; n != nil {
			where = fmt.Sprintf("%s (kept by %s from the base)", key, strings.TrimSuffix(v.c.prefix, "."))
		}
	}
	if n == nil {
		n = v.c.locate(key)
	}
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	v.errs = append(v.errs, fmt.Errorf("%s:%d:%d: %s: %s", v.file, line, col, where, fmt.Sprintf(format, args...)))
	return false
}

// checker walks a YAML tree against the Go type it decodes into, so that
// an unknown, missing or duplicate key, or a value of the wrong kind, is
// reported with its line, column and full key, before any decoding.
type checker struct {
	file   string
	prefix string // prepended to keys in messages: "variants.NAME."
	at     map[string]*yaml.Node
	errs   []error
}

func (c *checker) fail(n *yaml.Node, path, format string, args ...any) {
	where := c.prefix + path
	if path == "" {
		where = cmp.Or(strings.TrimSuffix(c.prefix, "."), "(top level)")
	}
	c.errs = append(c.errs, fmt.Errorf("%s:%d:%d: %s: %s", c.file, n.Line, n.Column, where, fmt.Sprintf(format, args...)))
}

// locate returns the node of key, or of its nearest enclosing key that was
// given, or nil.
func (c *checker) locate(key string) *yaml.Node {
	for k := key; k != ""; {
		if n, ok := c.at[k]; ok {
			return n
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return nil
}

// walk checks n against type t at path. With partial, keys may be left
// out (a variant).
func (c *checker) walk(n *yaml.Node, t reflect.Type, path string, partial bool) {
	c.at[path] = n
	if n.Kind == yaml.AliasNode {
		c.fail(n, path, "anchors and aliases are not supported; write the value out")
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		c.walkStruct(n, t, path, partial)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			c.fail(n, path, "want a list, got %s", describe(n))
			return
		}
		for i, e := range n.Content {
			// A list replaces the base's whole list, so its items are
			// complete even in a variant.
			c.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), false)
		}
	case reflect.Pointer:
		c.walk(n, t.Elem(), path, partial)
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
			c.fail(n, path, "want a number, got %s", describe(n))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			c.fail(n, path, "want text, got %s; quote it", describe(n))
		}
	default:
		panic("physics: no check for " + t.String())
	}
}

func (c *checker) walkStruct(n *yaml.Node, t reflect.Type, path string, partial bool) {
	if n.Kind != yaml.MappingNode {
		c.fail(n, path, "want a block of keys, got %s", describe(n))
		return
	}
	type field struct {
		typ      reflect.Type
		optional bool
	}
	fields := map[string]field{}
	var names []string
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		fields[name] = field{t.Field(i).Type, opts == "omitempty"}
		names = append(names, name)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		p := join(path, k.Value)
		f, ok := fields[k.Value]
		switch {
		case !ok:
			c.fail(k, p, "unknown key; the keys here are %s", strings.Join(names, ", "))
			continue
		case seen[k.Value]:
			c.fail(k, p, "duplicate key")
			continue
		}
		seen[k.Value] = true
		c.walk(n.Content[i+1], f.typ, p, partial)
	}
	if partial {
		return
	}
	for _, name := range names {
		if !fields[name].optional && !seen[name] {
			c.fail(n, join(path, name), "missing key")
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describe names a node's kind for a message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a block of keys"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing (null)"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an empty document"
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
