package catalog

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"sigs.k8s.io/yaml"
)

// The file's shape. Models and generic entries have separate types so
// that strict decoding refuses keys that do not belong (a model takes its
// vendor from its family; only generic entries have requireAny).

type document struct {
	CPU cpuSection `json:"cpu"`
	GPU gpuSection `json:"gpu"`
}

type cpuSection struct {
	DensityReference  string          `json:"densityReference"`
	IdleFractionOfTDP float64         `json:"idleFractionOfTdp"`
	Families          []familyDoc     `json:"families"`
	Models            []cpuModelDoc   `json:"models"`
	Generic           []cpuGenericDoc `json:"generic"`
}

type gpuSection struct {
	DensityReference  string          `json:"densityReference"`
	IdleFractionOfTDP float64         `json:"idleFractionOfTdp"`
	Families          []familyDoc     `json:"families"`
	Models            []gpuModelDoc   `json:"models"`
	Generic           []gpuGenericDoc `json:"generic"`
}

type familyDoc struct {
	ID            string   `json:"id"`
	Vendor        string   `json:"vendor"`
	Name          string   `json:"name"`
	RequireAny    []string `json:"requireAny"`
	RejectAny     []string `json:"rejectAny"`
	ModelPatterns []string `json:"modelPatterns"`
	Source        string   `json:"source"`
}

type cpuFigures struct {
	Cores       int     `json:"cores"`
	Threads     int     `json:"threads"`
	BaseMHz     int     `json:"baseMHz"`
	BoostMHz    int     `json:"boostMHz"`
	TDPWatts    float64 `json:"tdpWatts"`
	CapMinWatts float64 `json:"capMinWatts"`
	CapMaxWatts float64 `json:"capMaxWatts"`
	Source      string  `json:"source"`
}

type cpuModelDoc struct {
	ID      string   `json:"id"`
	Family  string   `json:"family"`
	Name    string   `json:"name"`
	Aliases []string `json:"aliases"`
	cpuFigures
}

type cpuGenericDoc struct {
	ID         string   `json:"id"`
	Vendor     string   `json:"vendor"`
	Name       string   `json:"name"`
	RequireAny []string `json:"requireAny"`
	cpuFigures
}

type gpuFigures struct {
	MemoryGiB   int     `json:"memoryGiB"`
	TDPWatts    float64 `json:"tdpWatts"`
	CapMinWatts float64 `json:"capMinWatts"`
	CapMaxWatts float64 `json:"capMaxWatts"`
	FP16TFLOPS  float64 `json:"fp16TFLOPS"`
	Source      string  `json:"source"`
}

type gpuModelDoc struct {
	ID      string   `json:"id"`
	Family  string   `json:"family"`
	Name    string   `json:"name"`
	Aliases []string `json:"aliases"`
	gpuFigures
}

type gpuGenericDoc struct {
	ID         string   `json:"id"`
	Vendor     string   `json:"vendor"`
	Name       string   `json:"name"`
	RequireAny []string `json:"requireAny"`
	gpuFigures
}

// Parse decodes and validates a catalog. Decoding is strict: unknown or
// repeated keys are errors. Validation reports every problem it finds,
// each naming the class, the entry and the field.
func Parse(data []byte) (*Catalog, error) {
	var doc document
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("decode hardware catalog: %w", err)
	}
	var errs []error
	c := &Catalog{}
	c.cpus, c.cpu = buildCPUs(&doc.CPU, &errs)
	c.gpus, c.gpu = buildGPUs(&doc.GPU, &errs)
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid hardware catalog: %w", errors.Join(errs...))
	}
	return c, nil
}

func buildCPUs(s *cpuSection, errs *[]error) ([]CPU, class) {
	b := newBuilder("cpu", s.Families, errs)
	var out []CPU
	for _, d := range s.Models {
		fam := b.family(d.ID, d.Family)
		e := CPU{ID: d.ID, Name: d.Name, Family: d.Family, Aliases: slices.Clip(d.Aliases)}
		setCPUFigures(&e, &d.cpuFigures)
		if fam != nil {
			e.Vendor = fam.Vendor
			if e.Source == "" {
				e.Source = fam.Source
			}
		}
		b.checkCPU(&e)
		b.addModel(d.ID, d.Family, d.Name, d.Aliases, 0)
		out = append(out, e)
	}
	for _, d := range s.Generic {
		e := CPU{ID: d.ID, Vendor: d.Vendor, Name: d.Name, Generic: true}
		setCPUFigures(&e, &d.cpuFigures)
		b.checkCPU(&e)
		b.addGeneric(d.ID, d.Vendor, d.Name, d.RequireAny)
		out = append(out, e)
	}
	b.finish()
	if ref, ok := b.reference(s.DensityReference, len(s.Models)); ok {
		unit := float64(out[ref].Cores) * float64(out[ref].BaseMHz)
		for i := range out {
			out[i].Density = round3(float64(out[i].Cores) * float64(out[i].BaseMHz) / unit)
		}
	}
	if f, ok := b.idleFraction(s.IdleFractionOfTDP); ok {
		for i := range out {
			if !out[i].Generic {
				out[i].IdleWatts = round1(f * out[i].TDPWatts)
			}
		}
	}
	return out, b.cls
}

func buildGPUs(s *gpuSection, errs *[]error) ([]GPU, class) {
	b := newBuilder("gpu", s.Families, errs)
	var out []GPU
	for _, d := range s.Models {
		fam := b.family(d.ID, d.Family)
		e := GPU{ID: d.ID, Name: d.Name, Family: d.Family, Aliases: slices.Clip(d.Aliases)}
		setGPUFigures(&e, &d.gpuFigures)
		if fam != nil {
			e.Vendor = fam.Vendor
			if e.Source == "" {
				e.Source = fam.Source
			}
		}
		b.checkGPU(&e)
		b.addModel(d.ID, d.Family, d.Name, d.Aliases, d.MemoryGiB)
		out = append(out, e)
	}
	for _, d := range s.Generic {
		e := GPU{ID: d.ID, Vendor: d.Vendor, Name: d.Name, Generic: true}
		setGPUFigures(&e, &d.gpuFigures)
		b.checkGPU(&e)
		b.addGeneric(d.ID, d.Vendor, d.Name, d.RequireAny)
		out = append(out, e)
	}
	b.finish()
	if ref, ok := b.reference(s.DensityReference, len(s.Models)); ok {
		unit := out[ref].FP16TFLOPS
		for i := range out {
			out[i].Density = round3(out[i].FP16TFLOPS / unit)
		}
	}
	if f, ok := b.idleFraction(s.IdleFractionOfTDP); ok {
		for i := range out {
			if !out[i].Generic {
				out[i].IdleWatts = round1(f * out[i].TDPWatts)
			}
		}
	}
	return out, b.cls
}

func setCPUFigures(e *CPU, f *cpuFigures) {
	e.Cores, e.Threads = f.Cores, f.Threads
	e.BaseMHz, e.BoostMHz = f.BaseMHz, f.BoostMHz
	e.TDPWatts, e.CapMinWatts, e.CapMaxWatts = f.TDPWatts, f.CapMinWatts, f.CapMaxWatts
	e.Source = f.Source
}

func setGPUFigures(e *GPU, f *gpuFigures) {
	e.MemoryGiB = f.MemoryGiB
	e.TDPWatts, e.CapMinWatts, e.CapMaxWatts = f.TDPWatts, f.CapMinWatts, f.CapMaxWatts
	e.FP16TFLOPS = f.FP16TFLOPS
	e.Source = f.Source
}

// builder validates one class and builds its index.
type builder struct {
	kind     string
	errs     *[]error
	cls      class
	famDocs  []familyDoc
	famIndex map[string]int
	keyOwner map[string]string // comparison key -> ID of the entry owning it
	genIDs   []string          // IDs of the generic entries, in order
}

func newBuilder(kind string, fams []familyDoc, errs *[]error) *builder {
	b := &builder{
		kind:     kind,
		errs:     errs,
		famDocs:  fams,
		famIndex: map[string]int{},
		keyOwner: map[string]string{},
		cls: class{
			exact: map[string]int{},
			byID:  map[string]int{},
		},
	}
	for i, f := range fams {
		if !validID(f.ID) {
			b.failf("family %q: id must be lower-case letters, digits and dashes", f.ID)
		}
		if _, dup := b.famIndex[f.ID]; dup {
			b.failf("family %q: duplicate id", f.ID)
		} else {
			b.famIndex[f.ID] = i
		}
		if f.Vendor == "" {
			b.failf("family %q: vendor is missing", f.ID)
		}
		if f.Name == "" {
			b.failf("family %q: name is missing", f.ID)
		}
		if len(f.ModelPatterns) == 0 {
			b.failf("family %q: modelPatterns is empty: its parts could never be recognised", f.ID)
		}
		for _, p := range f.ModelPatterns {
			if msg := checkPattern(p); msg != "" {
				b.failf("family %q: modelPatterns %q: %s", f.ID, p, msg)
			}
		}
		b.checkWords("family", f.ID, "requireAny", f.RequireAny)
		b.checkWords("family", f.ID, "rejectAny", f.RejectAny)
		b.cls.families = append(b.cls.families, family{
			requireAny: f.RequireAny,
			rejectAny:  f.RejectAny,
			patterns:   f.ModelPatterns,
		})
	}
	return b
}

func (b *builder) failf(format string, args ...any) {
	*b.errs = append(*b.errs, fmt.Errorf("%s %s", b.kind, fmt.Sprintf(format, args...)))
}

// family returns the document of the model's family, or nil after
// reporting that it does not exist.
func (b *builder) family(id, fam string) *familyDoc {
	i, ok := b.famIndex[fam]
	if !ok {
		b.failf("%q: family %q is not defined", id, fam)
		return nil
	}
	return &b.famDocs[i]
}

func (b *builder) addID(id string, pos int) {
	if !validID(id) {
		b.failf("%q: id must be lower-case letters, digits and dashes", id)
	}
	if _, dup := b.cls.byID[id]; dup {
		b.failf("%q: duplicate id", id)
		return
	}
	b.cls.byID[id] = pos
}

// addModel indexes a model's name, aliases and ID for exact matching and
// records what proxy selection needs.
func (b *builder) addModel(id, fam, name string, aliases []string, memGiB int) {
	pos := len(b.cls.models)
	b.addID(id, pos)
	m := model{memGiB: memGiB}
	fi, famOK := b.famIndex[fam]
	if name == "" {
		b.failf("%q: name is missing", id)
	}
	seen := map[string]bool{}
	spellings := append([]string{id, name}, aliases...)
	for si, s := range spellings {
		what := "alias"
		switch si {
		case 0:
			what = "id"
		case 1:
			what = "name"
		}
		if si > 1 && seen[s] {
			b.failf("%q: alias %q is listed twice", id, s)
			continue
		}
		seen[s] = true
		var text, key [bufLen]byte
		w := normalize(s, text[:0], key[:0])
		if len(w.key) == 0 {
			if s != "" || si > 1 {
				b.failf("%q: %s %q has nothing left to match once normalized", id, what, s)
			}
			continue
		}
		k := string(w.key)
		if owner, taken := b.keyOwner[k]; taken && owner != id {
			b.failf("%q: %s %q matches the same strings as entry %q", id, what, s, owner)
			continue
		}
		b.keyOwner[k] = id
		b.cls.exact[k] = pos
		if si == 0 {
			continue // the ID repeats the name; its words add nothing
		}
		for i := 0; i < w.n; i++ {
			if wd := string(w.word(i)); !slices.Contains(m.words, wd) {
				m.words = append(m.words, wd)
			}
		}
		if si == 1 && famOK {
			f := &b.cls.families[fi]
			if wi := f.modelWord(&w); wi >= 0 {
				m.number = leadingNumber(w.word(wi))
			} else {
				b.failf("%q: name %q has no word matching the modelPatterns of family %q", id, name, fam)
			}
		}
	}
	if famOK {
		b.cls.families[fi].members = append(b.cls.families[fi].members, pos)
	}
	b.cls.models = append(b.cls.models, m)
}

func (b *builder) addGeneric(id, vendor, name string, requireAny []string) {
	pos := len(b.cls.models) + len(b.genIDs)
	b.genIDs = append(b.genIDs, id)
	b.addID(id, pos)
	if vendor == "" {
		b.failf("%q: vendor is missing", id)
	}
	if name == "" {
		b.failf("%q: name is missing", id)
	}
	b.checkWords("generic entry", id, "requireAny", requireAny)
	b.cls.generics = append(b.cls.generics, generic{pos: pos, requireAny: requireAny})
}

// finish checks what needs the whole class.
func (b *builder) finish() {
	g := b.cls.generics
	if len(g) == 0 {
		b.failf("has no generic entries: resolution needs at least the catch-all one")
		b.cls.generics = []generic{{pos: 0}} // keeps a failed build consistent
		return
	}
	for i, x := range g[:len(g)-1] {
		if len(x.requireAny) == 0 {
			b.failf("%q: requireAny is empty, but only the last generic entry may be the catch-all", b.genIDs[i])
		}
	}
	if last := len(g) - 1; len(g[last].requireAny) != 0 {
		b.failf("%q: the last generic entry must have no requireAny: it is the catch-all that makes resolution total", b.genIDs[last])
	}
	for i, f := range b.cls.families {
		if len(f.members) == 0 {
			b.failf("family %q has no models", b.famDocs[i].ID)
		}
	}
}

// reference returns the position of the density reference model.
func (b *builder) reference(id string, nModels int) (int, bool) {
	if id == "" {
		b.failf("densityReference is missing")
		return 0, false
	}
	pos, ok := b.cls.byID[id]
	if !ok || pos >= nModels {
		b.failf("densityReference %q names no model", id)
		return 0, false
	}
	return pos, len(*b.errs) == 0
}

// idleFraction checks the class's idleFractionOfTdp; ok is false when it
// is absent (the catalog then gives no idle figures) or invalid.
func (b *builder) idleFraction(f float64) (float64, bool) {
	switch {
	case f == 0:
		return 0, false
	case !(f > 0 && f < 1):
		b.failf("idleFractionOfTdp must lie between 0 and 1 (exclusive), got %g", f)
		return 0, false
	}
	return f, len(*b.errs) == 0
}

func (b *builder) checkWords(what, id, field string, list []string) {
	for _, s := range list {
		if !isWord(s) {
			b.failf("%s %q: %s %q must be one lower-case word of letters and digits", what, id, field, s)
		}
	}
}

func (b *builder) checkPower(id string, tdp, lo, hi float64) {
	switch {
	case !(tdp > 0) || math.IsInf(tdp, 0):
		b.failf("%q: tdpWatts must be positive, got %g", id, tdp)
	case !(lo > 0):
		b.failf("%q: capMinWatts must be positive, got %g", id, lo)
	case lo > hi:
		b.failf("%q: capMinWatts %g is above capMaxWatts %g", id, lo, hi)
	case tdp < lo || tdp > hi:
		b.failf("%q: tdpWatts %g lies outside the cap range %g..%g", id, tdp, lo, hi)
	}
}

func (b *builder) checkCPU(e *CPU) {
	b.checkPower(e.ID, e.TDPWatts, e.CapMinWatts, e.CapMaxWatts)
	switch {
	case e.Cores <= 0:
		b.failf("%q: cores must be positive, got %d", e.ID, e.Cores)
	case e.Threads < e.Cores:
		b.failf("%q: threads %d is below cores %d", e.ID, e.Threads, e.Cores)
	}
	switch {
	case e.BaseMHz <= 0:
		b.failf("%q: baseMHz must be positive, got %d", e.ID, e.BaseMHz)
	case e.BoostMHz < e.BaseMHz:
		b.failf("%q: boostMHz %d is below baseMHz %d", e.ID, e.BoostMHz, e.BaseMHz)
	}
	if e.Source == "" {
		b.failf("%q: source is missing (on the entry and on its family)", e.ID)
	}
}

func (b *builder) checkGPU(e *GPU) {
	b.checkPower(e.ID, e.TDPWatts, e.CapMinWatts, e.CapMaxWatts)
	if e.MemoryGiB <= 0 {
		b.failf("%q: memoryGiB must be positive, got %d", e.ID, e.MemoryGiB)
	}
	if !(e.FP16TFLOPS > 0) || math.IsInf(e.FP16TFLOPS, 0) {
		b.failf("%q: fp16TFLOPS must be positive, got %g", e.ID, e.FP16TFLOPS)
	}
	if e.Source == "" {
		b.failf("%q: source is missing (on the entry and on its family)", e.ID)
	}
}

// checkPattern returns what is wrong with a model pattern, or "".
func checkPattern(p string) string {
	literal := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '*':
			if i != len(p)-1 {
				return "'*' may only end a pattern"
			}
		case c == '#':
		case c >= 'a' && c <= 'z', isDigit(c):
			literal = true
		default:
			return fmt.Sprintf("byte %q is not a lower-case letter, digit, '#' or a final '*'", c)
		}
	}
	if !literal {
		return "needs at least one literal letter or digit"
	}
	return ""
}

// isWord reports whether s is one normalized word.
func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || isDigit(c)) {
			return false
		}
	}
	return s != ""
}

// validID reports whether id is lower-case letters, digits and inner
// dashes, so that it can serve as a label value.
func validID(id string) bool {
	if id == "" || len(id) > 63 || id[0] == '-' || id[len(id)-1] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || isDigit(c) || c == '-') {
			return false
		}
	}
	return true
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func round1(x float64) float64 { return math.Round(x*10) / 10 }
