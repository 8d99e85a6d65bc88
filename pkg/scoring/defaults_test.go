package scoring

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"joulie.io/joulie/pkg/powerest"
)

func TestDefaultParams(t *testing.T) {
	p := DefaultParams()
	if p.Mode != ModePack || p.Coefficients != powerest.DefaultCoefficients() || p.FacilityMetrics || p.StalenessThreshold != 5*time.Minute {
		t.Errorf("DefaultParams() = %+v", p)
	}
}

// TestChartWeight: the chart's values set extender.scheduler.weight to
// ChartWeight, and the scheduler configuration it renders takes its
// weight from that value; its profile packs with MostAllocated, weighing
// GPUs as the pack formula does (GPUFillWeight against CPU's 1).
func TestChartWeight(t *testing.T) {
	const chart = "../../packaging/helm/joulie/"
	data, err := os.ReadFile(chart + "values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Extender struct {
			ScoringMode Mode `json:"scoringMode"`
			Scheduler   struct {
				Weight           *int64 `json:"weight"`
				NodeResourcesFit struct {
					ScoringStrategy string `json:"scoringStrategy"`
					Resources       []struct {
						Name   string `json:"name"`
						Weight int    `json:"weight"`
					} `json:"resources"`
				} `json:"nodeResourcesFit"`
			} `json:"scheduler"`
		} `json:"extender"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	switch w := values.Extender.Scheduler.Weight; {
	case w == nil:
		t.Errorf("values.yaml sets no extender.scheduler.weight; want ChartWeight %d", ChartWeight)
	case *w != ChartWeight:
		t.Errorf("values.yaml: extender.scheduler.weight is %d, want ChartWeight %d", *w, ChartWeight)
	}
	if m := values.Extender.ScoringMode; m != DefaultParams().Mode {
		t.Errorf("values.yaml: extender.scoringMode is %q, want the extender's default %q", m, DefaultParams().Mode)
	}
	fit := values.Extender.Scheduler.NodeResourcesFit
	weights := map[string]int{}
	for _, r := range fit.Resources {
		weights[r.Name] = r.Weight
	}
	want := map[string]int{"cpu": cpuFillWeight, "memory": 1, "nvidia.com/gpu": GPUFillWeight, "amd.com/gpu": GPUFillWeight}
	if fit.ScoringStrategy != "MostAllocated" || fmt.Sprint(weights) != fmt.Sprint(want) {
		t.Errorf("values.yaml: extender.scheduler.nodeResourcesFit is %s over %v; want MostAllocated over %v", fit.ScoringStrategy, weights, want)
	}
	tpl, err := os.ReadFile(chart + "templates/_helpers.tpl")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tpl), "weight: {{ .Values.extender.scheduler.weight }}\n") {
		t.Error("templates/_helpers.tpl: the scheduler configuration's weight is not extender.scheduler.weight")
	}
}
