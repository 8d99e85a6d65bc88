package scoring

import (
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
// weight from that value.
func TestChartWeight(t *testing.T) {
	const chart = "../../packaging/helm/joulie/"
	data, err := os.ReadFile(chart + "values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Extender struct {
			Scheduler struct {
				Weight *int64 `json:"weight"`
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
	tpl, err := os.ReadFile(chart + "templates/_helpers.tpl")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tpl), "weight: {{ .Values.extender.scheduler.weight }}\n") {
		t.Error("templates/_helpers.tpl: the scheduler configuration's weight is not extender.scheduler.weight")
	}
}
