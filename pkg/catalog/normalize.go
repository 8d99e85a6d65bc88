package catalog

// Normalization turns a raw model string into words and a comparison key
// without touching the heap: the controller resolves every node on every
// tick, so the common path must not allocate. The caller owns two
// stack buffers and normalize only appends into them.

const (
	// maxRawLen bounds the part of a raw string that is looked at. Real
	// model strings are far shorter: the kernel's "model name" holds at
	// most 48 characters and an NVML name 96.
	maxRawLen = 256
	// maxWords bounds the number of words kept; later words are ignored.
	maxWords = 24
	// bufLen is the size of the caller's buffers. '+' becomes "plus", so
	// the text can grow past maxRawLen; append moves to the heap in the
	// rare case that it outgrows even this.
	bufLen = 2 * maxRawLen
)

// span locates one word inside words.text.
type span struct{ lo, hi int }

// words is a normalized model string.
type words struct {
	// text holds the kept words, lower case, back to back.
	text  []byte
	spans [maxWords]span
	n     int
	// key is the kept words without vendor names, concatenated: the
	// exact-match key.
	key []byte
}

// word returns the i-th kept word.
func (w *words) word(i int) []byte {
	s := w.spans[i]
	return w.text[s.lo:s.hi]
}

// has reports whether some kept word equals s.
func (w *words) has(s string) bool {
	for i := 0; i < w.n; i++ {
		if string(w.word(i)) == s {
			return true
		}
	}
	return false
}

// hasAny reports whether some kept word equals one of list.
func (w *words) hasAny(list []string) bool {
	for _, s := range list {
		if w.has(s) {
			return true
		}
	}
	return false
}

// memoryGiB returns the number of the first word shaped like "80gb", or
// -1. NVML names carry the board's memory that way ("NVIDIA H100 80GB
// HBM3"), which tells apart variants that share a model number.
func (w *words) memoryGiB() int {
	for i := 0; i < w.n; i++ {
		wd := w.word(i)
		if len(wd) > 2 && string(wd[len(wd)-2:]) == "gb" && allDigits(wd[:len(wd)-2]) {
			return leadingNumber(wd)
		}
	}
	return -1
}

// normalize splits raw into words and builds the comparison key, using
// textBuf and keyBuf (both empty, with capacity) for storage. The rules,
// documented for users in doc.go:
//   - ASCII letters are folded to lower case; letters, digits and '.' form
//     words; '+' is spelled "plus" so that "8480+" and the label-safe
//     "8480plus" or "8480-plus" agree; every other byte separates words.
//   - "(R)" and "(TM)" are dropped, and so is everything from '@' on, where
//     the kernel puts the nominal frequency ("CPU @ 2.30GHz").
//   - the words "cpu" and "processor", frequencies ("2.30ghz") and core
//     counts ("96-Core", "96core") are dropped.
//   - the key leaves out the vendor words "amd", "intel" and "nvidia", so
//     "EPYC-9654" and "AMD EPYC 9654 96-Core Processor" meet.
func normalize(raw string, textBuf, keyBuf []byte) words {
	if len(raw) > maxRawLen {
		raw = raw[:maxRawLen]
	}
	w := words{text: textBuf}
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.':
			w.text = append(w.text, c)
			continue
		case c >= 'A' && c <= 'Z':
			w.text = append(w.text, c+('a'-'A'))
			continue
		case c == '+':
			w.text = append(w.text, "plus"...)
			continue
		case c == '@':
			i = len(raw)
		case c == '(':
			i += trademarkLen(raw[i:])
		}
		start = w.endWord(start)
	}
	w.endWord(start)

	w.key = keyBuf
	for i := 0; i < w.n; i++ {
		if wd := w.word(i); !isVendorWord(wd) {
			w.key = append(w.key, wd...)
		}
	}
	return w
}

// endWord closes the word that began at text[start], keeping or dropping
// it, and returns where the next word begins.
func (w *words) endWord(start int) int {
	lo, hi := start, len(w.text)
	for lo < hi && w.text[lo] == '.' {
		lo++
	}
	for hi > lo && w.text[hi-1] == '.' {
		hi--
	}
	wd := w.text[lo:hi]
	switch {
	case len(wd) == 0, w.n == maxWords, isNoiseWord(wd):
		// dropped
	case string(wd) == "core" || string(wd) == "cores":
		// "96-Core": the count before it goes too. A lone "core", as in
		// "Intel Core i9", is part of the name.
		if w.n > 0 && allDigits(w.word(w.n-1)) {
			w.n--
			w.text = w.text[:w.spans[w.n].lo]
			return len(w.text)
		}
		w.spans[w.n] = span{lo, hi}
		w.n++
		return len(w.text)
	default:
		w.spans[w.n] = span{lo, hi}
		w.n++
		return len(w.text)
	}
	w.text = w.text[:start]
	return start
}

// trademarkLen returns how many bytes of s, which starts with '(', the
// normalizer should skip beyond the '(' itself: 2 for "(R)", 3 for "(TM)",
// 0 otherwise.
func trademarkLen(s string) int {
	switch {
	case len(s) >= 3 && lower(s[1]) == 'r' && s[2] == ')':
		return 2
	case len(s) >= 4 && lower(s[1]) == 't' && lower(s[2]) == 'm' && s[3] == ')':
		return 3
	}
	return 0
}

// isNoiseWord reports words that say nothing about the model.
func isNoiseWord(wd []byte) bool {
	switch string(wd) {
	case "cpu", "processor":
		return true
	}
	if n := len(wd); n > 3 {
		unit := string(wd[n-3:])
		if unit == "ghz" || unit == "mhz" {
			return isDecimal(wd[:n-3])
		}
		if n > 4 && string(wd[n-4:]) == "core" {
			return allDigits(wd[:n-4])
		}
	}
	return false
}

func isVendorWord(wd []byte) bool {
	switch string(wd) {
	case "amd", "intel", "nvidia":
		return true
	}
	return false
}

// matchPattern reports whether the whole word matches p, in which '#'
// stands for one decimal digit, a trailing '*' for any rest (possibly
// empty), and every other byte for itself.
func matchPattern(p string, wd []byte) bool {
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '*':
			return true
		case i >= len(wd):
			return false
		case c == '#':
			if !isDigit(wd[i]) {
				return false
			}
		case c != wd[i]:
			return false
		}
	}
	return len(wd) == len(p)
}

// leadingNumber returns the value of the first run of digits in wd (at
// most nine of them, so it cannot overflow), or 0 when there is none:
// 9654 for "9654p", 300 for "mi300x".
func leadingNumber(wd []byte) int {
	i := 0
	for i < len(wd) && !isDigit(wd[i]) {
		i++
	}
	n := 0
	for j := 0; i < len(wd) && isDigit(wd[i]) && j < 9; i, j = i+1, j+1 {
		n = n*10 + int(wd[i]-'0')
	}
	return n
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return len(b) > 0
}

// isDecimal reports whether b is a number such as "2" or "2.30".
func isDecimal(b []byte) bool {
	digits := 0
	for _, c := range b {
		switch {
		case isDigit(c):
			digits++
		case c != '.':
			return false
		}
	}
	return digits > 0
}
