package scoring

import (
	"testing"
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// The filter rows of the design's summary table, and the label fallback
// and unknown-node rule around them.
func TestFilter(t *testing.T) {
	twin := func(class joulie.SchedulableClass) *Twin { return &Twin{Class: class, LastUpdated: now} }
	staleEco := &Twin{Class: joulie.ClassEco, LastUpdated: now.Add(-time.Hour)}
	eco := Labels{Profile: "eco"}
	perfLabel := Labels{Profile: "performance"}
	draining := Labels{Profile: "performance", Draining: "true"}
	warm := Labels{Profile: "performance", WarmReserve: "true"}

	tests := []struct {
		name        string
		performance bool
		twin        *Twin
		labels      Labels
		want        Verdict
	}{
		{"performance pod, eco twin: rejected", true, twin(joulie.ClassEco), Labels{}, RejectTwinEco},
		{"performance pod, draining twin: rejected", true, twin(joulie.ClassDraining), Labels{}, RejectTwinDraining},
		{"performance pod, performance twin: admitted", true, twin(joulie.ClassPerformance), Labels{}, Admit},
		{"twin class wins over an eco label", true, twin(joulie.ClassPerformance), eco, Admit},
		{"twin class wins over a performance label", true, twin(joulie.ClassEco), perfLabel, RejectTwinEco},
		{"stale eco twin still rejects", true, staleEco, Labels{}, RejectTwinEco},
		{"no twin, eco label: rejected by the fallback", true, nil, eco, RejectLabelEco},
		{"twin without class, eco label: rejected by the fallback", true, &Twin{LastUpdated: now}, eco, RejectLabelEco},
		{"no twin, draining label: rejected by the fallback", true, nil, draining, RejectLabelDraining},
		{"no twin, draining=false: admitted", true, nil, Labels{Profile: "performance", Draining: "false"}, Admit},
		{"no twin, performance label: admitted", true, nil, perfLabel, Admit},
		{"unknown node, performance pod: admitted", true, nil, Labels{}, Admit},
		{"unknown node, standard pod: admitted", false, nil, Labels{}, Admit},
		{"standard pod, eco twin: admitted", false, twin(joulie.ClassEco), Labels{}, Admit},
		{"standard pod, draining twin: admitted", false, twin(joulie.ClassDraining), Labels{}, Admit},
		{"standard pod, eco label: admitted", false, nil, eco, Admit},
		{"label values are case-sensitive", true, nil, Labels{Profile: "Eco", Draining: "True"}, Admit},

		{"standard pod, warm reserve: rejected", false, nil, warm, RejectWarmReserve},
		{"standard pod, warm reserve with a performance twin: rejected", false, twin(joulie.ClassPerformance), warm, RejectWarmReserve},
		{"standard pod, warm reserve on an eco node: rejected", false, nil, Labels{Profile: "eco", WarmReserve: "true"}, RejectWarmReserve},
		{"standard pod, warm-reserve=false: admitted", false, nil, Labels{WarmReserve: "false"}, Admit},
		{"performance pod, warm reserve: admitted", true, twin(joulie.ClassPerformance), warm, Admit},
		{"performance pod, warm reserve without a twin: admitted", true, nil, warm, Admit},
		{"performance pod, warm reserve on an eco twin: the eco rule still rejects", true, twin(joulie.ClassEco), warm, RejectTwinEco},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Filter(tt.performance, tt.twin, tt.labels)
			if got != tt.want {
				t.Errorf("Filter = %v, want %v", got, tt.want)
			}
			if (got == Admit) != (got.Reason() == "") {
				t.Errorf("verdict %v has reason %q", got, got.Reason())
			}
		})
	}
}

func TestEveryRejectionHasAReasonAndName(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Verdicts {
		if v.Reason() == "" || v.String() == "unknown" || seen[v.String()] {
			t.Errorf("verdict %d: reason %q, name %q", v, v.Reason(), v.String())
		}
		seen[v.String()] = true
	}
}

// Counts per verdict are arrays of 1 + len(Verdicts) indexed by Verdict:
// the list must hold every rejection, in order, and nothing past it may
// be a verdict.
func TestVerdictsListEveryRejectionInOrder(t *testing.T) {
	for i, v := range Verdicts {
		if int(v) != i+1 {
			t.Errorf("Verdicts[%d] is %v (%d), want verdict %d", i, v, v, i+1)
		}
	}
	if next := Verdict(len(Verdicts) + 1); next.String() != "unknown" || next.Reason() != "" {
		t.Errorf("verdict %d after the list is %q: add it to Verdicts", next, next)
	}
}
