package catalog

// class is the resolution index of one class of hardware (CPUs or GPUs).
// Positions refer to the class's entry slice, models first, then generics.
type class struct {
	exact    map[string]int // comparison key -> model position
	byID     map[string]int // ID -> position, models and generics
	families []family
	models   []model   // one per model, by position
	generics []generic // in catalog order; the last is the catch-all
}

// family holds the rules that recognise a part of one product family.
type family struct {
	requireAny []string // some word must be one of these (none: no rule)
	rejectAny  []string // no word may be one of these
	patterns   []string // some word must match one of these
	members    []int    // model positions, in catalog order
}

// model is what proxy selection needs to know about one model.
type model struct {
	number int      // the leading number of the model word, 9654 or 100
	memGiB int      // GPU memory, 0 for CPUs
	words  []string // distinct words of the name and aliases
}

// generic is a generic entry and the words that select it.
type generic struct {
	pos        int
	requireAny []string // empty for the catch-all
}

// resolve returns the position of the entry for w and how exact it is.
func (k *class) resolve(w *words) (int, Exactness) {
	catchAll := k.generics[len(k.generics)-1].pos
	if w.n == 0 {
		return catchAll, ExactnessGeneric
	}
	if i, ok := k.exact[string(w.key)]; ok {
		return i, ExactnessExact
	}
	for fi := range k.families {
		f := &k.families[fi]
		if w.hasAny(f.rejectAny) || len(f.requireAny) > 0 && !w.hasAny(f.requireAny) {
			continue
		}
		if wi := f.modelWord(w); wi >= 0 {
			return k.nearest(f, w, w.word(wi)), ExactnessProxy
		}
	}
	for _, g := range k.generics {
		if len(g.requireAny) == 0 || w.hasAny(g.requireAny) {
			return g.pos, ExactnessGeneric
		}
	}
	return catchAll, ExactnessGeneric
}

// modelWord returns the index of the first word of w that matches one of
// the family's model patterns, or -1.
func (f *family) modelWord(w *words) int {
	for i := 0; i < w.n; i++ {
		for _, p := range f.patterns {
			if matchPattern(p, w.word(i)) {
				return i
			}
		}
	}
	return -1
}

// nearest picks the family member that best stands in for a part the
// catalog does not list, by in turn: the closest model number, the most
// words shared with the raw string, the closest memory size when the raw
// string states one, and catalog order.
func (k *class) nearest(f *family, w *words, modelWord []byte) int {
	num := leadingNumber(modelWord)
	mem := w.memoryGiB()
	best, bestNum, bestShared, bestMem := -1, 0, 0, 0
	for _, pos := range f.members {
		m := &k.models[pos]
		dNum := distance(num, m.number)
		shared := m.shared(w)
		dMem := 0
		if mem >= 0 {
			dMem = distance(mem, m.memGiB)
		}
		better := best < 0 || dNum < bestNum ||
			dNum == bestNum && (shared > bestShared ||
				shared == bestShared && dMem < bestMem)
		if better {
			best, bestNum, bestShared, bestMem = pos, dNum, shared, dMem
		}
	}
	return best
}

// shared counts the words of w that also occur in the model's names.
func (m *model) shared(w *words) int {
	n := 0
	for i := 0; i < w.n; i++ {
		wd := w.word(i)
		for _, s := range m.words {
			if string(wd) == s {
				n++
				break
			}
		}
	}
	return n
}

func distance(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}
