package catalog

import (
	"slices"
	"strings"
	"testing"
)

func normalizeString(raw string) (wordList []string, key string) {
	var text, k [bufLen]byte
	w := normalize(raw, text[:0], k[:0])
	for i := 0; i < w.n; i++ {
		wordList = append(wordList, string(w.word(i)))
	}
	return wordList, string(w.key)
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name  string
		raw   string
		words []string
		key   string
	}{
		{"cpuinfo AMD drops core count and Processor", "AMD EPYC 9654 96-Core Processor",
			[]string{"amd", "epyc", "9654"}, "epyc9654"},
		{"cpuinfo Intel drops trademarks and frequency", "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz",
			[]string{"intel", "xeon", "platinum", "8380"}, "xeonplatinum8380"},
		{"capitals and plus", "INTEL(R) XEON(R) PLATINUM 8592+",
			[]string{"intel", "xeon", "platinum", "8592plus"}, "xeonplatinum8592plus"},
		{"label with spelled-out plus", "Intel-Xeon-Platinum-8480-plus",
			[]string{"intel", "xeon", "platinum", "8480", "plus"}, "xeonplatinum8480plus"},
		{"trademark sign", "Foo(TM) Bar(tm)", []string{"foo", "bar"}, "foobar"},
		{"non-ASCII registered sign separates", "Intel® Xeon® 6980P",
			[]string{"intel", "xeon", "6980p"}, "xeon6980p"},
		{"underscores, dashes and runs of space", "  nvidia__A100--SXM4   80GB ",
			[]string{"nvidia", "a100", "sxm4", "80gb"}, "a100sxm480gb"},
		{"dots stay inside words but not at their ends", "A100 MIG 1g.10gb. .x",
			[]string{"a100", "mig", "1g.10gb", "x"}, "a100mig1g.10gbx"},
		{"label-safe frequency is dropped", "Intel-Xeon-Gold-6338-CPU-2.00GHz",
			[]string{"intel", "xeon", "gold", "6338"}, "xeongold6338"},
		{"glued core count is dropped", "EPYC 9654 96core", []string{"epyc", "9654"}, "epyc9654"},
		{"a lone Core is part of the name", "Intel(R) Core(TM) i9-13900K",
			[]string{"intel", "core", "i9", "13900k"}, "corei913900k"},
		{"noise only", "CPU @ 2.00GHz", nil, ""},
		{"parenthesis that is no trademark", "Xeon (Icelake)", []string{"xeon", "icelake"}, "xeonicelake"},
		{"empty", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotWords, gotKey := normalizeString(tt.raw)
			if !slices.Equal(gotWords, tt.words) || gotKey != tt.key {
				t.Errorf("normalize(%q) = %q, key %q; want %q, key %q", tt.raw, gotWords, gotKey, tt.words, tt.key)
			}
		})
	}
}

func TestNormalizeBoundsItsInput(t *testing.T) {
	many := strings.Repeat("w ", 3*maxWords)
	if got, _ := normalizeString(many); len(got) != maxWords {
		t.Errorf("kept %d words of %d, want the first %d", len(got), 3*maxWords, maxWords)
	}
	long := strings.Repeat("a", maxRawLen) + " tail"
	if got, _ := normalizeString(long); len(got) != 1 || len(got[0]) != maxRawLen {
		t.Errorf("long input kept %d words; want only the first %d bytes", len(got), maxRawLen)
	}
	plusses := strings.Repeat("+", maxRawLen)
	if got, _ := normalizeString(plusses); len(got) != 1 || len(got[0]) != 4*maxRawLen {
		t.Errorf("'+' expansion past the buffer lost text: got %d words", len(got))
	}
}

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		pattern, word string
		want          bool
	}{
		{"9##5*", "9655", true},
		{"9##5*", "9175f", true},
		{"9##5*", "9654", false},
		{"9##5*", "965", false},
		{"#4##*", "8480plus", true},
		{"#4##*", "x480", false},
		{"6###p", "6980p", true},
		{"6###p", "6980px", false},
		{"h100", "h100", true},
		{"h100", "h1000", false},
		{"l40*", "l40", true},
		{"l40*", "l4", false},
	}
	for _, tt := range tests {
		if got := matchPattern(tt.pattern, []byte(tt.word)); got != tt.want {
			t.Errorf("matchPattern(%q, %q) = %v, want %v", tt.pattern, tt.word, got, tt.want)
		}
	}
}
