package powerpub

import (
	"testing"
	"time"
)

func TestChanged(t *testing.T) {
	for _, tc := range []struct {
		published, current float64
		want               bool
	}{
		{500, 500, false},
		{500, 520, false},
		{500, 550, false}, // exactly 10% is not more than 10%
		{500, 550.1, true},
		{500, 449.9, true},
		{500, 450, false},
		{0, 0, false},
		{0, 0.1, true},
		{500, 0, true},
	} {
		if got := Changed(tc.published, tc.current); got != tc.want {
			t.Errorf("Changed(%v, %v) = %v, want %v", tc.published, tc.current, got, tc.want)
		}
	}
}

func TestDue(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name               string
		after              time.Duration
		published, current float64
		want               bool
	}{
		{"same power a second later", time.Second, 500, 520, false},
		{"same power just under the interval", Interval - time.Nanosecond, 500, 500, false},
		{"same power at the interval", Interval, 500, 500, true},
		{"a change a second later", time.Second, 500, 560, true},
		{"from zero", 0, 0, 1, true},
	} {
		if got := Due(t0, t0.Add(tc.after), tc.published, tc.current); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
