package facility

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// vectorAnswer is what Prometheus answers to an instant query that
// matches these series: {"status":"success","data":{"resultType":"vector",...}}.
func vectorAnswer(series ...sample) []byte {
	type entry struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	entries := make([]entry, len(series))
	for i, s := range series {
		m := s.labels
		if m == nil {
			m = map[string]string{}
		}
		entries[i] = entry{Metric: m, Value: [2]any{1.7e9, strconv.FormatFloat(s.value, 'g', -1, 64)}}
	}
	b, err := json.Marshal(map[string]any{
		"status": "success",
		"data":   map[string]any{"resultType": "vector", "result": entries},
	})
	if err != nil {
		panic(err)
	}
	return b
}

func one(name string, v float64) sample {
	return sample{labels: map[string]string{"__name__": name}, value: v}
}

func TestDecodeResponse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		want    []float64
		wantErr string
	}{
		{"one series", string(vectorAnswer(one("x", 42.5))), []float64{42.5}, ""},
		{"several series", string(vectorAnswer(one("x", 1), one("x", 2))), []float64{1, 2}, ""},
		{"NaN is decoded, for the signal to refuse", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]}]}}`, []float64{math.NaN()}, ""},
		{"+Inf", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"+Inf"]}]}}`, []float64{math.Inf(1)}, ""},
		{"out of range is infinite", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1e999"]}]}}`, []float64{math.Inf(1)}, ""},
		{"scalar", `{"status":"success","data":{"resultType":"scalar","result":[1700000000.5,"7"]}}`, []float64{7}, ""},
		{"empty vector", `{"status":"success","data":{"resultType":"vector","result":[]}}`, nil, "no data"},
		{"error status", `{"status":"error","errorType":"bad_data","error":"parse error at char 4"}`, nil, "query refused: bad_data: parse error at char 4"},
		{"matrix", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, nil, `result type "matrix", want a vector`},
		{"string result", `{"status":"success","data":{"resultType":"string","result":[1,"a"]}}`, nil, `result type "string"`},
		{"not JSON", `<html>Bad Gateway</html>`, nil, "not a Prometheus API answer"},
		{"unknown status", `{"status":"maybe"}`, nil, `status "maybe"`},
		{"no data field", `{"status":"success"}`, nil, "not a query result"},
		{"value not a string", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}`, nil, "value is not a string"},
		{"value not a number", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"lots"]}]}}`, nil, `value "lots" is not a number`},
		{"short pair", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}}`, nil, "want [time"},
		{"time not a number", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":["now","1"]}]}}`, nil, "time is not a number"},
		{"native histogram", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"h","job":"a"},"histogram":[1,{}]}]}}`, nil, `series h{job="a"} has no float value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeResponse([]byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d samples, want %d", len(got), len(tc.want))
			}
			for i, s := range got {
				if !sameFloat(s.value, tc.want[i]) {
					t.Errorf("sample %d: got %g, want %g", i, s.value, tc.want[i])
				}
			}
		})
	}
}

func TestEmptyVectorIsNoData(t *testing.T) {
	_, err := decodeResponse([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	if !errors.Is(err, errNoData) {
		t.Errorf("got %v, want errNoData", err)
	}
}

func sameFloat(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}
