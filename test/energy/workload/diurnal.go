package workload

import (
	"fmt"
	"math"
	"time"
)

// Diurnal names the daily shape of the arrival rate.
type Diurnal string

const (
	// DiurnalOpenB follows the hourly creation counts of Alibaba's openb
	// trace (openbHourly), linear between the middles of the hours.
	DiurnalOpenB Diurnal = "openb"
	// DiurnalSinusoid follows a sinusoid over 24 h set by
	// Config.DayNightRatio and Config.PeakHour: the generator's shape
	// before the openb curve, kept so that older lists can be made again.
	DiurnalSinusoid Diurnal = "sinusoid"
)

// openbHourly is the number of pods created in each hour of the day in
// alibaba/clusterdata, cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv
// (8,152 pods over 149 days): the pods counted by (creation_time mod
// 86400) / 3600, creation_time being seconds from the trace's start.
//
// The trace does not say at what time of day it starts (its first pod is
// created at 0), so hour 0 here is the trace's own first hour, not
// midnight. The shape is what the table records: busiest from hour 17 to
// hour 1, quietest from hour 8 to hour 16, the busiest hour (18, 550
// pods) 4.0 times the quietest (14, 137 pods).
var openbHourly = [24]float64{
	515, 456, 362, 436, 426, 318, 291, 331, 242, 146, 222, 204,
	152, 149, 137, 271, 301, 425, 550, 466, 352, 430, 432, 538,
}

// dayShape returns the arrival rate at t seconds from the start of the
// list, relative to its mean over a day (so the curve's mean is 1), and
// the curve's highest value.
func (c *Config) dayShape() (shape func(t float64) float64, peak float64) {
	f, peak := c.dayShape24()
	if c.Day <= 0 || c.Day == 24*time.Hour {
		return f, peak
	}
	// A compressed day: the 24 h curve run faster, so that its mean stays
	// 1 over each Day.
	scale := 86400 / c.Day.Seconds()
	return func(t float64) float64 { return f(t * scale) }, peak
}

// dayShape24 is dayShape over a 24 h day.
func (c *Config) dayShape24() (shape func(t float64) float64, peak float64) {
	switch c.Diurnal {
	case DiurnalSinusoid:
		amp := (c.DayNightRatio - 1) / (c.DayNightRatio + 1)
		at := c.PeakHour * 3600
		return func(t float64) float64 { return 1 + amp*math.Cos(2*math.Pi*(t-at)/86400) }, 1 + amp
	case DiurnalOpenB:
		var sum float64
		for _, n := range openbHourly {
			sum += n
		}
		var rel [24]float64
		for h, n := range openbHourly {
			rel[h] = n * 24 / sum
			peak = max(peak, rel[h])
		}
		// Each hour's value sits at its middle; in between the rate goes
		// linearly from one to the next, across midnight too. The mean of
		// such a curve over the day is the mean of the 24 values: 1.
		return func(t float64) float64 {
			p := math.Mod(t/3600-0.5, 24)
			if p < 0 {
				p += 24
			}
			h := int(p)
			f := p - float64(h)
			return rel[h%24]*(1-f) + rel[(h+1)%24]*f
		}, peak
	}
	panic(fmt.Sprintf("workload: unknown Diurnal %q", c.Diurnal))
}
