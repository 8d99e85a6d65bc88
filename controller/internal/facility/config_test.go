package facility

import (
	"strings"
	"testing"
)

// A bad URL only matters when the poller is going to use it.
func TestConfigURLCheckedOnlyWhenEnabled(t *testing.T) {
	off := DefaultConfig()
	off.PrometheusURL = "not a url"
	if err := off.Validate(); err != nil {
		t.Errorf("disabled poller refused for its URL: %v", err)
	}
	c := DefaultConfig()
	c.Enabled = true
	c.PrometheusURL = ""
	err := c.Validate()
	// The key, as the configuration file spells it: the loader adds the
	// source (file, flag or variable), which this package cannot know.
	if err == nil || !strings.Contains(err.Error(), "facility.prometheusURL: is empty") || strings.Contains(err.Error(), "FACILITY_") {
		t.Errorf("enabled with an empty URL: got %v", err)
	}
}

func TestConfigEmptyQueryRefused(t *testing.T) {
	c := DefaultConfig()
	c.ITPowerQuery = " "
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "facility.itPowerMetric: is empty") {
		t.Errorf("empty IT power query: got %v", err)
	}
}
