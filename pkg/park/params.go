package park

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// DefaultParkable is the selector of the nodes that may be parked when
// none is configured: the opt-in label.
const DefaultParkable = joulie.LabelParkable + "=true"

// Params are the parking knobs. joulie-controller's keys (parking.*)
// take their defaults from DefaultParams, and so does the simulator.
type Params struct {
	// SettleTime is how long a node must have been empty of non-DaemonSet
	// pods before it is parked (parking.settleTime): cluster-autoscaler's
	// --scale-down-unneeded-time, 10m, so a node between two jobs of a
	// stream is not switched off.
	SettleTime time.Duration
	// ReserveFloor is the number of idle awake nodes each hardware family
	// keeps beyond its expected performance demand (parking.reserveFloor).
	ReserveFloor int
	// BootTime is how long a parked node takes to become Ready after a
	// wake (parking.bootTime): the reserve covers the performance demand
	// that arrives within it.
	BootTime time.Duration
	// Lookback is the window of recent performance arrivals the reserve
	// estimates the arrival rate from (parking.lookback).
	Lookback time.Duration
	// ReserveSizing says how the performance demand per boot time is taken
	// from the lookback's arrivals (parking.reserveSizing): ReservePeak or
	// ReserveMean.
	ReserveSizing ReserveSizing
	// ReserveMaxGap prices the warm reserve (parking.reserveMaxGap): a
	// family keeps one only while its performance pods arrive at least
	// every ReserveMaxGap on average over the lookback, the last of them
	// within ReserveMaxGap. A reserve node waits idle for about the gap
	// between two arrivals before it saves one a boot, so the reserve never
	// spends more than ReserveMaxGap of a node's idle power per boot wait
	// it saves; a family whose performance work is sparser (or absent)
	// parks its idle nodes as any other, and its next performance pod
	// waits for a boot. The default, 30 minutes (two arrivals an hour,
	// the last within half an hour), was chosen on the energy benchmark's
	// tuning seeds on a sparse cluster of six families (test/energy/
	// README.md, "The reserve on a sparse cluster of six families"): it
	// kept Joulie below idle power-off's energy with a tenth of its
	// performance boot waits, where 10 minutes left five times as many
	// waits and 0 used more energy than idle power-off. 0 keeps the
	// reserve whatever the gap, floor and all (the seed documents' rule,
	// before the setting).
	ReserveMaxGap time.Duration
	// ReserveFor says which pods the warm reserve is kept for
	// (parking.reserveFor). With ReserveForAny the reserve's idle nodes go
	// to whatever pod comes first, and a burst of standard pods can leave
	// the performance pods behind them waiting for boots. With
	// ReserveForPerformance Decide names the nodes it holds (Family's
	// WarmReserve), the controller labels them joulie.io/warm-reserve, the
	// extender keeps every other pod off them, and a pending standard pod
	// wakes a parked node rather than count on one of them.
	ReserveFor ReserveFor
	// ParksPerMinute and WakesPerMinute limit how many parks and wakes
	// start within any minute (parking.parksPerMinute,
	// parking.wakesPerMinute): a wave of power-offs or power-ons at once is
	// a load step for the PSUs and the cooling; 0 stops parks or wakes.
	ParksPerMinute int
	WakesPerMinute int
	// ParkGrace is the time between tainting a node and asking its agent to
	// switch it off (parking.grace), so that the scheduler's cache has seen
	// the taint and a binding it had in flight has landed.
	ParkGrace time.Duration
	// ResumeTimeout is how long a wake may take before it is tried again
	// (parking.resumeTimeout).
	ResumeTimeout time.Duration
	// MaxWakeAttempts is how many wakes are tried before the node is
	// declared wake-failed (parking.maxWakeAttempts).
	MaxWakeAttempts int
	// Parkable selects the nodes that may be parked at all
	// (parking.nodeSelector); nil is DefaultParkable. A node it does not
	// select is never parked, and a parked one it stops selecting is
	// woken.
	Parkable labels.Selector
}

// parkable reports whether the settings let node labels l be parked.
func (s Params) parkable(l map[string]string) bool {
	sel := s.Parkable
	if sel == nil {
		sel = labels.SelectorFromSet(labels.Set{joulie.LabelParkable: "true"})
	}
	return sel.Matches(labels.Set(l))
}

// parkableText says what makes a node parkable, for reasons and events:
// "labelled joulie.io/parkable=true" by default.
func (s Params) parkableText() string {
	if s.Parkable == nil || s.Parkable.String() == DefaultParkable {
		return "labelled " + DefaultParkable
	}
	return fmt.Sprintf("selected by parking.nodeSelector %q", s.Parkable.String())
}

// ReserveSizing names a way of sizing the warm reserve.
type ReserveSizing string

const (
	// ReservePeak sizes the reserve for the largest performance demand
	// that arrived within any one boot time of the lookback: performance
	// work comes in bursts, and a reserve sized for the mean rate makes a
	// burst wait for boots.
	ReservePeak ReserveSizing = "peak"
	// ReserveMean sizes it for the mean arrival rate of the lookback,
	// scaled to one boot time.
	ReserveMean ReserveSizing = "mean"
)

// ReserveFor names the pods the warm reserve is kept for.
type ReserveFor string

const (
	// ReserveForAny leaves the reserve to any pod: the behaviour before
	// the setting existed.
	ReserveForAny ReserveFor = "any"
	// ReserveForPerformance keeps the reserve for performance pods, the
	// default: on the energy benchmark's tuning seeds it left a third
	// fewer performance pods waiting for a boot than ReserveForAny, for
	// about a point of energy (test/energy/README.md, "Parking").
	ReserveForPerformance ReserveFor = "performance"
)

// DefaultParams are the parking settings with nothing configured. Every
// call returns a fresh value.
func DefaultParams() Params {
	return Params{
		SettleTime:      10 * time.Minute,
		ReserveFloor:    1,
		BootTime:        5 * time.Minute,
		Lookback:        time.Hour,
		ReserveSizing:   ReservePeak,
		ReserveMaxGap:   30 * time.Minute,
		ReserveFor:      ReserveForPerformance,
		ParksPerMinute:  5,
		WakesPerMinute:  20,
		ParkGrace:       30 * time.Second,
		ResumeTimeout:   10 * time.Minute,
		MaxWakeAttempts: 3,
		Parkable:        labels.SelectorFromSet(labels.Set{joulie.LabelParkable: "true"}),
	}
}

// Validate reports the first setting that cannot work, naming it by its
// configuration key.
func (s Params) Validate() error {
	switch {
	case s.SettleTime < 0:
		return fmt.Errorf("parking.settleTime %s is negative", s.SettleTime)
	case s.ReserveFloor < 0:
		return fmt.Errorf("parking.reserveFloor %d is negative", s.ReserveFloor)
	case s.BootTime < 0:
		return fmt.Errorf("parking.bootTime %s is negative", s.BootTime)
	case s.Lookback <= 0:
		return fmt.Errorf("parking.lookback %s must be positive: the reserve divides the arrivals by it", s.Lookback)
	case s.ReserveSizing != ReservePeak && s.ReserveSizing != ReserveMean:
		return fmt.Errorf("parking.reserveSizing %q is not one of %s, %s", s.ReserveSizing, ReservePeak, ReserveMean)
	case s.ReserveMaxGap < 0:
		return fmt.Errorf("parking.reserveMaxGap %s is negative (0 keeps the reserve whatever the gap between performance arrivals)", s.ReserveMaxGap)
	case s.ReserveFor != ReserveForAny && s.ReserveFor != ReserveForPerformance:
		return fmt.Errorf("parking.reserveFor %q is not one of %s, %s", s.ReserveFor, ReserveForAny, ReserveForPerformance)
	case s.ParksPerMinute < 0:
		return fmt.Errorf("parking.parksPerMinute %d is negative", s.ParksPerMinute)
	case s.WakesPerMinute < 0:
		return fmt.Errorf("parking.wakesPerMinute %d is negative", s.WakesPerMinute)
	case s.ParkGrace < 0:
		return fmt.Errorf("parking.grace %s is negative", s.ParkGrace)
	case s.ResumeTimeout <= 0:
		return fmt.Errorf("parking.resumeTimeout %s must be positive", s.ResumeTimeout)
	case s.MaxWakeAttempts < 1:
		return fmt.Errorf("parking.maxWakeAttempts %d must be at least 1", s.MaxWakeAttempts)
	case s.Parkable != nil && s.Parkable.Empty():
		return fmt.Errorf("parking.nodeSelector is empty, which would select every node: name the parkable nodes (%s by default)", DefaultParkable)
	}
	return nil
}
