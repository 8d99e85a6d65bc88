package facility

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestNodePowerKeepsReadingsAcrossFailures(t *testing.T) {
	fail := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[
			{"metric":{"node_name":"a"},"value":[1700000000,"812.5"]},
			{"metric":{"node_name":"b"},"value":[1700000000,"NaN"]},
			{"metric":{},"value":[1700000000,"99"]},
			{"metric":{"node_name":"c"},"value":[1700000000,"-4"]}]}}`))
	}))
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.PrometheusURL, cfg.Timeout = srv.URL, time.Second
	p, err := NewNodePower(cfg, DefaultKeplerQuery, DefaultKeplerNodeLabel, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := p.Latest()
	// Unlabelled, NaN and negative series are dropped.
	if len(got) != 1 || got["a"].Watts != 812.5 {
		t.Fatalf("readings %+v, want only a at 812.5 W", got)
	}
	at := got["a"].Time
	fail = true
	if err := p.Poll(context.Background()); err == nil {
		t.Fatal("a failing Prometheus gave no error")
	}
	if got := p.Latest()["a"]; got.Watts != 812.5 || !got.Time.Equal(at) {
		t.Errorf("after a failure: %+v, want the last reading with its time", got)
	}
	if _, err := NewNodePower(cfg, "", "node_name", nil); err == nil {
		t.Error("an empty query was accepted")
	}
}
