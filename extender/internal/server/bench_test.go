package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"joulie.io/joulie/extender/internal/fixture"
	"joulie.io/joulie/extender/internal/state"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// The numbers the extender promises, for a cluster of 5,000 nodes:
//
//   - one whole prioritize request by name, decoding and encoding
//     included, under 1 ms;
//   - the same with 5,000 full Nodes of about 5 KB (a 24 MB body) under
//     100 ms;
//   - over 1,000 requests/s by name from 8 concurrent clients.
//
// The HTTP benchmarks go through a real http.Server over loopback, client
// included (their allocations count both sides); the Handler benchmarks
// call the handler directly and count the extender's own allocations.
//
//	go test -run '^$' -bench . -benchmem -benchtime 2s ./extender/internal/server

const benchNodes = 5000

// benchSnapshot is a 5,000-node cluster: every node has a twin, hardware
// and pods on it, one in three is eco, one in fifty is stale.
func benchSnapshot() *state.Snapshot {
	twins := make([]*joulie.NodeTwin, benchNodes)
	hw := make([]*joulie.NodeHardware, benchNodes)
	nodes := make([]*corev1.Node, benchNodes)
	requests := make(map[string]state.Requests, benchNodes)
	for i := range benchNodes {
		name := fixture.NodeName(i)
		class := joulie.ClassPerformance
		if fixture.Profile(i) == joulie.ProfileEco {
			class = joulie.ClassEco
		}
		age := time.Duration(i%60) * time.Second
		if i%50 == 0 {
			age = time.Hour
		}
		twins[i] = twinObj(name, twinSpec{class: class, cappedW: 4000, measuredW: float64(500 + i%3000), cool: float64(i % 70), trend: float64(i%41 - 20), age: age})
		hw[i] = &joulie.NodeHardware{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: joulie.NodeHardwareStatus{
			CPU: joulie.CPUHardware{Sockets: 2, TotalCores: 192, CapRange: &joulie.PowerRange{MaxWatts: 360}},
			GPU: &joulie.GPUHardware{Count: 8, CapRange: &joulie.PowerRange{MaxWatts: 700}},
		}}
		nodes[i] = node(name, map[string]string{joulie.LabelPowerProfile: string(fixture.Profile(i))}, "190", "8")
		requests[name] = state.Requests{CPUMilli: int64(i%190) * 1000, GPUMilli: int64(i%8) * 1000}
	}
	return state.Build(twins, hw, nodes, requests, true)
}

var benchBodies = sync.OnceValues(func() (byName, withNodes []byte) {
	p := fixture.Pod("")
	byName, err1 := json.Marshal(fixture.ByName(p, benchNodes))
	withNodes, err2 := json.Marshal(fixture.WithNodes(p, benchNodes))
	if err1 != nil || err2 != nil {
		panic(fmt.Sprint(err1, err2))
	}
	return byName, withNodes
})

func benchServer(b *testing.B) *testServer {
	opts := defaultOptions()
	opts.MaxRequestBytes = 64 << 20
	opts.MaxInFlightBytes = 160 << 20
	opts.ReadTimeout = time.Minute
	opts.WriteTimeout = time.Minute
	return newTestServer(b, opts, benchSnapshot())
}

// benchHTTP posts body to path over loopback b.N times.
func benchHTTP(b *testing.B, path string, body []byte) {
	ts := benchServer(b)
	srv := httptest.NewUnstartedServer(ts.Handler())
	srv.Config = ts.HTTPServer()
	srv.Start()
	defer srv.Close()
	client := srv.Client()
	url := srv.URL + path
	var respBytes int64
	var took []time.Duration
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		respBytes = doPost(b, client, url, body)
		took = append(took, time.Since(start))
	}
	b.ReportMetric(float64(respBytes), "resp-bytes")
	reportLatency(b, took)
}

// reportLatency reports the median and 99th percentile of the calls'
// round trips, client included, in microseconds.
func reportLatency(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	at := func(q float64) float64 {
		return float64(took[min(len(took)-1, int(q*float64(len(took))))].Microseconds())
	}
	b.ReportMetric(at(0.5), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

func doPost(b *testing.B, client *http.Client, url string, body []byte) int64 {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	return n
}

func BenchmarkHTTPPrioritizeByName5000(b *testing.B) {
	byName, _ := benchBodies()
	benchHTTP(b, "/prioritize", byName)
}

func BenchmarkHTTPPrioritizeFullNodes5000(b *testing.B) {
	_, withNodes := benchBodies()
	benchHTTP(b, "/prioritize", withNodes)
}

func BenchmarkHTTPFilterByName5000(b *testing.B) {
	byName, _ := benchBodies()
	benchHTTP(b, "/filter", byName)
}

// The filter hands the kept Nodes back: for the standard pod here, all
// 24 MB of them.
func BenchmarkHTTPFilterFullNodes5000(b *testing.B) {
	_, withNodes := benchBodies()
	benchHTTP(b, "/filter", withNodes)
}

// BenchmarkHTTPPrioritizeByName5000Clients8 runs 8 clients, each with its
// own connection, posting as fast as the server answers; req/s is the
// server's throughput.
func BenchmarkHTTPPrioritizeByName5000Clients8(b *testing.B) {
	const clients = 8
	byName, _ := benchBodies()
	ts := benchServer(b)
	srv := httptest.NewUnstartedServer(ts.Handler())
	srv.Config = ts.HTTPServer()
	srv.Start()
	defer srv.Close()
	url := srv.URL + "/prioritize"
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		n := b.N / clients
		if c < b.N%clients {
			n++
		}
		wg.Go(func() {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for range n {
				doPost(b, client, url, byName)
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// discardWriter is a ResponseWriter that keeps nothing, so the handler
// benchmarks measure the handler alone.
type discardWriter struct {
	header http.Header
	code   int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

func benchHandler(b *testing.B, path string, body []byte) {
	ts := benchServer(b)
	h := ts.Handler()
	req := httptest.NewRequest(http.MethodPost, path, nil)
	reader := bytes.NewReader(body)
	req.Body = io.NopCloser(reader)
	req.ContentLength = int64(len(body))
	w := &discardWriter{header: http.Header{}}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		reader.Reset(body)
		w.code = 0
		h.ServeHTTP(w, req)
		if w.code != 0 && w.code != http.StatusOK {
			b.Fatalf("status %d", w.code)
		}
	}
}

func BenchmarkHandlerPrioritizeByName5000(b *testing.B) {
	byName, _ := benchBodies()
	benchHandler(b, "/prioritize", byName)
}

func BenchmarkHandlerPrioritizeFullNodes5000(b *testing.B) {
	_, withNodes := benchBodies()
	benchHandler(b, "/prioritize", withNodes)
}

func BenchmarkHandlerFilterByName5000(b *testing.B) {
	byName, _ := benchBodies()
	benchHandler(b, "/filter", byName)
}

func BenchmarkHandlerFilterFullNodes5000(b *testing.B) {
	_, withNodes := benchBodies()
	benchHandler(b, "/filter", withNodes)
}

// TestBenchmarkBodies keeps the benchmarks honest about their sizes.
func TestBenchmarkBodies(t *testing.T) {
	byName, withNodes := benchBodies()
	if mb := float64(len(withNodes)) / 1e6; mb < 22 || mb > 27 {
		t.Errorf("full-node body is %.1f MB, want about 24", mb)
	}
	t.Logf("by name %d bytes, with nodes %d bytes", len(byName), len(withNodes))
	ts := newTestServer(t, defaultOptions(), benchSnapshot())
	ts.opts.MaxRequestBytes = 64 << 20
	for _, body := range [][]byte{byName, withNodes} {
		if rec := post(t, ts.Handler(), "/prioritize", body); rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
