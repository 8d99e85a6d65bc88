package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"joulie.io/joulie/extender/internal/fixture"
)

// BenchmarkMemoryUnderAttack measures the resident memory of the real
// joulie-extender binary through the attack of issue 13 and the load
// after it; it reports figures, it asserts nothing (TestAnnounced... in
// internal/server holds the bound). One run takes about 20 s:
//
//	go test -run '^$' -bench MemoryUnderAttack -benchtime 1x ./extender/cmd/joulie-extender
//
// JOULIE_EXTENDER_BIN measures another build (an older one, say) instead
// of building this one; JOULIE_MEMBENCH_CLIENTS and JOULIE_MEMBENCH_LOAD
// (a duration) shape the normal load, 200 clients for 10 s by default.
//
// Phases: start (after a few calls), during the attack (40 connections,
// each announcing a 64 MiB body and sending 1 KiB, all held open), after
// it (the connections closed), then calls by name for 5,000 nodes from
// the clients, with the peak sampled every 50 ms, and after the load.
// The extender runs against a kubeconfig whose API server does not
// answer: its cache never syncs, which changes nothing in how it reads
// and answers calls.
func BenchmarkMemoryUnderAttack(b *testing.B) {
	bin := extenderBinary(b)
	clients := envInt(b, "JOULIE_MEMBENCH_CLIENTS", 200)
	load := envDuration(b, "JOULIE_MEMBENCH_LOAD", 10*time.Second)

	addr, pid := startExtender(b, bin)
	rss := func() (cur, peak int64) { return procStatus(b, pid, "VmRSS"), procStatus(b, pid, "VmHWM") }
	report := func(phase string) {
		cur, peak := rss()
		heap := heapInUse(b, addr)
		b.ReportMetric(float64(cur)/1024, "MiB-rss-"+phase)
		b.ReportMetric(float64(heap)/(1<<20), "MiB-heap-"+phase)
		b.Logf("%-14s VmRSS %4d MiB   VmHWM %4d MiB   Go heap in use %4d MiB", phase, cur>>10, peak>>10, heap>>20)
	}

	body, err := json.Marshal(fixture.ByName(fixture.Pod("performance"), 5000))
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	call := func(path string) int {
		resp, err := client.Post("http://"+addr+path, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/filter", "/prioritize", "/filter", "/prioritize"} {
		if code := call(path); code != http.StatusOK {
			b.Fatalf("warm-up %s: status %d", path, code)
		}
	}
	report("start")

	var conns []net.Conn
	for i := range 40 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, conn)
		path := []string{"/filter", "/prioritize"}[i%2]
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: extender\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, 64<<20)
		if _, err := conn.Write(body[:1024]); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second)
	report("attack")
	for _, c := range conns {
		c.Close()
	}
	time.Sleep(2 * time.Second)
	report("after-attack")

	var codes sync.Map // status → *atomic.Int64
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				cur, _ := rss()
				peak.Store(max(peak.Load(), cur))
			}
		}
	})
	deadline := time.Now().Add(load)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				n, _ := codes.LoadOrStore(call([]string{"/filter", "/prioritize"}[(c+i)%2]), new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	b.ReportMetric(float64(peak.Load())/1024, "MiB-rss-load-peak")
	b.Logf("%-14s VmRSS %4d MiB (peak sampled during %s of %d clients)", "load", peak.Load()>>10, load, clients)
	var summary []string
	codes.Range(func(k, v any) bool {
		summary = append(summary, fmt.Sprintf("%d: %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	b.Logf("calls by status (0: no answer): %s", strings.Join(summary, ", "))
	time.Sleep(time.Second)
	report("after-load")
}

// BenchmarkMemoryFullNodes measures the resident memory of the real
// joulie-extender binary answering filter calls that carry 5,000 whole
// Nodes, as kube-scheduler sends them without nodeCacheCapable: each Node
// with a kubelet's labels, capacity, allocatable, conditions and image
// list (package fixture, about 5 KB of JSON). Half the calls are for a
// performance pod (one node in three turned away), half for a standard
// pod (all kept), so the replies carry most of the Nodes back. It reports
// the peak (VmHWM) and figures, and asserts only that the calls are
// answered:
//
//	go test -run '^$' -bench MemoryFullNodes -benchtime 1x ./extender/cmd/joulie-extender
//
// JOULIE_EXTENDER_BIN, JOULIE_MEMBENCH_CLIENTS (2 by default here: a
// scheduler makes one call at a time, two schedulers or a retry overlap)
// and JOULIE_MEMBENCH_LOAD (10 s) as for BenchmarkMemoryUnderAttack.
func BenchmarkMemoryFullNodes(b *testing.B) {
	bin := extenderBinary(b)
	clients := envInt(b, "JOULIE_MEMBENCH_CLIENTS", 2)
	load := envDuration(b, "JOULIE_MEMBENCH_LOAD", 10*time.Second)
	addr, pid := startExtender(b, bin)

	var bodies [][]byte
	for _, class := range []string{"performance", ""} {
		body, err := json.Marshal(fixture.WithNodes(fixture.Pod(class), 5000))
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	b.Logf("request bodies of %d and %d bytes", len(bodies[0]), len(bodies[1]))
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var replied atomic.Int64
	call := func(body []byte) int {
		resp, err := client.Post("http://"+addr+"/filter", "application/json", bytes.NewReader(body))
		if err != nil {
			return 0
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		replied.Add(n)
		return resp.StatusCode
	}
	for _, body := range bodies {
		if code := call(body); code != http.StatusOK {
			b.Fatalf("first call: status %d", code)
		}
	}
	b.Logf("%-14s VmRSS %4d MiB   VmHWM %4d MiB   replies of %d bytes", "start",
		procStatus(b, pid, "VmRSS")>>10, procStatus(b, pid, "VmHWM")>>10, replied.Load())

	var codes sync.Map // status → *atomic.Int64
	var calls atomic.Int64
	deadline := time.Now().Add(load)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				n, _ := codes.LoadOrStore(call(bodies[(c+i)%2]), new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	var summary []string
	codes.Range(func(k, v any) bool {
		summary = append(summary, fmt.Sprintf("%d: %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	if v, ok := codes.Load(http.StatusOK); !ok || v.(*atomic.Int64).Load() == 0 {
		b.Fatalf("no call answered 200: %s", strings.Join(summary, ", "))
	}
	peak := procStatus(b, pid, "VmHWM")
	b.ReportMetric(float64(peak)/1024, "MiB-rss-peak")
	b.ReportMetric(float64(heapInUse(b, addr))/(1<<20), "MiB-heap-after")
	b.Logf("%-14s VmRSS %4d MiB   VmHWM %4d MiB after %d calls from %d clients in %s (by status, 0: no answer: %s)", "load",
		procStatus(b, pid, "VmRSS")>>10, peak>>10, calls.Load(), clients, load, strings.Join(summary, ", "))
}

// extenderBinary is JOULIE_EXTENDER_BIN, or this package built afresh.
func extenderBinary(b *testing.B) string {
	if bin := os.Getenv("JOULIE_EXTENDER_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "joulie-extender")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func envDuration(b *testing.B, key string, def time.Duration) time.Duration {
	return envPositive(b, key, def, time.ParseDuration, "duration")
}

func envInt(b *testing.B, key string, def int) int {
	return envPositive(b, key, def, strconv.Atoi, "integer")
}

// envPositive is the environment variable key parsed by parse, or def
// when it is unset; anything but a positive value ends the benchmark.
func envPositive[T int | time.Duration](b *testing.B, key string, def T, parse func(string) (T, error), what string) T {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil || x <= 0 {
		b.Fatalf("%s = %q: not a positive %s", key, v, what)
	}
	return x
}

// startExtender runs bin on a free loopback port against an API server
// that does not answer, and stops it when the benchmark ends.
func startExtender(b *testing.B, bin string) (addr string, pid int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	// Port 1 on loopback: nothing listens there, so every list and watch
	// fails fast and the extender keeps retrying.
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "--addr", addr, "--kubeconfig", kubeconfig, "--log-level", "error")
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s did not listen on %s", bin, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr, cmd.Process.Pid
}

// heapInUse is go_memstats_heap_inuse_bytes from the extender's /metrics:
// heap the Go runtime holds, whether or not its pages are resident yet.
func heapInUse(b *testing.B, addr string) int64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("go_memstats_heap_inuse_bytes %q: %v", v, err)
			}
			return int64(f)
		}
	}
	b.Fatal("/metrics has no go_memstats_heap_inuse_bytes")
	return 0
}

// procStatus reads a field of /proc/PID/status, in KiB.
func procStatus(b *testing.B, pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("/proc/%d/status %s: %v", pid, field, err)
			}
			return kib
		}
	}
	b.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}
