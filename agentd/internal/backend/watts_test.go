package backend

import (
	"math"
	"testing"
)

func TestClampWholeWatts(t *testing.T) {
	for _, tc := range []struct {
		watts  float64
		lo, hi int64
		want   int64
	}{
		{420.4, 100_000_000, 750_000_000, 420_000_000},
		{420.6, 100_000_000, 750_000_000, 421_000_000},
		{50, 100_000_000, 750_000_000, 100_000_000},
		{9000, 100_000_000, 750_000_000, 750_000_000},
		{math.MaxFloat64, 100_000_000, 750_000_000, 750_000_000}, // no overflow
		{-5, 1_000_000, 750_000_000, 1_000_000},
	} {
		if got := ClampWholeWatts(tc.watts, tc.lo, tc.hi); got != tc.want {
			t.Errorf("ClampWholeWatts(%g, %d, %d) = %d, want %d", tc.watts, tc.lo, tc.hi, got, tc.want)
		}
	}
	if got := ClampWholeWatts(300.0, uint64(0), uint64(560_000_000)); got != 300_000_000 {
		t.Errorf("uint64: %d", got)
	}
}

func TestWholeWattRange(t *testing.T) {
	for _, tc := range []struct{ lo, hi, wantLo, wantHi uint64 }{
		{0, 750_000_000, 1_000_000, 750_000_000},             // never below 1 W
		{100_500_000, 749_900_000, 101_000_000, 749_000_000}, // whole watts inside
		{300_200_000, 300_700_000, 300_200_000, 300_700_000}, // narrower than a watt: kept
	} {
		lo, hi := WholeWattRange(tc.lo, tc.hi)
		if lo != tc.wantLo || hi != tc.wantHi {
			t.Errorf("WholeWattRange(%d, %d) = %d, %d; want %d, %d", tc.lo, tc.hi, lo, hi, tc.wantLo, tc.wantHi)
		}
	}
}
