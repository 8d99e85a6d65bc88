package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dashboardPath is the chart's Grafana dashboard, from this package's
// directory.
var dashboardPath = filepath.Join("..", "..", "..", "packaging", "helm", "joulie", "files", "joulie-dashboard.json")

type dashboardPanel struct {
	Title   string           `json:"title"`
	Panels  []dashboardPanel `json:"panels"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
	FieldConfig struct {
		Overrides []struct {
			Matcher struct {
				ID      string `json:"id"`
				Options any    `json:"options"`
			} `json:"matcher"`
		} `json:"overrides"`
	} `json:"fieldConfig"`
}

// The dashboard's CPU backend panel names every mode joulie_backend_mode
// can carry, each with its own series override, so a node on a mode the
// dashboard was not written for (amdsmi, http) still shows under its name
// and colour. The modes come from the collector itself.
func TestDashboardShowsEveryBackendMode(t *testing.T) {
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	var found []dashboardPanel
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				if strings.Contains(tg.Expr, "joulie_backend_mode") {
					found = append(found, p)
					break
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(found) != 1 {
		t.Fatalf("%s: want one panel querying joulie_backend_mode, found %d", dashboardPath, len(found))
	}
	p := found[0]
	for _, tg := range p.Targets {
		// The overrides match series by display name, which is the mode
		// only when the legend says just that.
		if strings.Contains(tg.Expr, "joulie_backend_mode") && (!strings.Contains(tg.Expr, "by (mode)") || tg.LegendFormat != "{{mode}}") {
			t.Errorf("panel %q: query %q with legend %q: want series by (mode), named {{mode}}", p.Title, tg.Expr, tg.LegendFormat)
		}
	}
	named := map[string]bool{}
	for _, o := range p.FieldConfig.Overrides {
		if s, ok := o.Matcher.Options.(string); ok && o.Matcher.ID == "byName" {
			named[s] = true
		}
	}
	for _, m := range modes {
		if !named[string(m)] {
			t.Errorf("panel %q has no series override for mode %q, which joulie_backend_mode exports", p.Title, m)
		}
	}
}
