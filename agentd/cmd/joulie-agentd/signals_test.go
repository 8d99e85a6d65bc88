package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	"joulie.io/joulie/agentd/internal/state"
)

// These tests signal the daemon the moment its first cap shows in sysfs,
// while it is still starting up (restoring, enforcing the first target,
// opening its servers): the window in which a signal used to kill it with
// the caps in force. They repeat, since a race is rarely lost on the
// first try.

// firstLimit is the RAPL file the daemon writes first.
func (f *fixture) firstLimit() string {
	return filepath.Join(f.root, rapltest.ClassDir("intel-rapl:0"), "constraint_0_power_limit_uw")
}

// onFirstCap polls the first RAPL limit without sleeping and sends sig
// the instant it differs from original.
func (f *fixture) onFirstCap(t *testing.T, d *proc, original string, sig syscall.Signal) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(f.firstLimit())
		if err == nil && strings.TrimSpace(string(b)) != original {
			d.signal(t, sig)
			return
		}
		if d.exited() {
			t.Fatalf("joulie-agentd exited before its first cap: %s", d.cmd.ProcessState)
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the first cap")
		}
	}
}

// checkOriginals fails unless every limit is back at its original and the
// journal records nothing.
func (f *fixture) checkOriginals(t *testing.T, when string) {
	t.Helper()
	for _, zone := range []string{"intel-rapl:0", "intel-rapl:1"} {
		if got := raplLimitW(t, f, zone); got != 350 {
			t.Fatalf("%s: %s at %d W, want the original 350", when, zone, got)
		}
	}
	for i := range 8 {
		if got := gpuLimitW(t, f, i); got != 700 {
			t.Fatalf("%s: GPU %d at %d W, want the original 700", when, i, got)
		}
	}
	b, err := os.ReadFile(filepath.Join(f.state, state.FileName))
	if errors.Is(err, os.ErrNotExist) {
		return
	} else if err != nil {
		t.Fatal(err)
	}
	var j struct{ Entries []json.RawMessage }
	if err := json.Unmarshal(b, &j); err != nil || len(j.Entries) != 0 {
		t.Fatalf("%s: the journal still records originals (%v):\n%s", when, err, b)
	}
}

func TestStopSignalDuringStartUpRestoresTheOriginals(t *testing.T) {
	runs := 24
	if testing.Short() {
		runs = 6
	}
	f := newFixture(t)
	original := strings.TrimSpace(rapltest.Attr(t, f.root, "intel-rapl:0", "constraint_0_power_limit_uw"))
	early := 0
	for i := range runs {
		sig := syscall.SIGTERM
		if i%4 == 3 {
			sig = syscall.SIGINT
		}
		when := fmt.Sprintf("run %d, %v during start-up", i+1, sig)
		d := f.launch(t)
		f.onFirstCap(t, d, original, sig)
		if code := d.wait(t); code != 0 {
			t.Fatalf("%s: %s, want exit status 0", when, d.cmd.ProcessState)
		}
		f.checkOriginals(t, when)
		if b, _ := os.ReadFile(d.log); !strings.Contains(string(b), "joulie-agentd ready") {
			early++
		}
	}
	// How often the signal beat readiness; it depends on the machine.
	t.Logf("%d of %d stop signals arrived before the daemon was ready", early, runs)
}

func TestReloadSignalDuringStartUpIsHandledOnceReady(t *testing.T) {
	runs := 10
	if testing.Short() {
		runs = 3
	}
	f := newFixture(t)
	original := strings.TrimSpace(rapltest.Attr(t, f.root, "intel-rapl:0", "constraint_0_power_limit_uw"))
	for i := range runs {
		when := fmt.Sprintf("run %d, SIGHUP during start-up", i+1)
		d := f.launch(t)
		f.onFirstCap(t, d, original, syscall.SIGHUP)
		waitFor(t, "the deferred reload", func() bool {
			if d.exited() {
				t.Fatalf("%s: %s, want the daemon to keep running", when, d.cmd.ProcessState)
			}
			b, _ := os.ReadFile(d.log)
			return strings.Contains(string(b), "configuration reloaded")
		})
		b, _ := os.ReadFile(d.log)
		if ready := strings.Index(string(b), "joulie-agentd ready"); ready < 0 || ready > strings.Index(string(b), "configuration reloaded") {
			t.Fatalf("%s: the reload ran before the daemon was ready", when)
		}
		if s := status(t, f); s.CPU.Result != "applied" {
			t.Fatalf("%s: CPU control %+v after the reload", when, s.CPU)
		}
		d.signal(t, syscall.SIGTERM)
		if code := d.wait(t); code != 0 {
			t.Fatalf("%s: SIGTERM then gave %s, want exit status 0", when, d.cmd.ProcessState)
		}
		f.checkOriginals(t, when)
	}
}

// A server that cannot start after the first caps are written (here the
// metrics port is taken) is a runtime failure, but not one that may leave
// the host capped.
func TestFailedStartUpAfterTheFirstWriteRestoresTheOriginals(t *testing.T) {
	f := newFixture(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	b, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), `metricsAddress: ""`, "metricsAddress: "+taken.Addr().String(), 1)
	if err := os.WriteFile(f.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	d := f.launch(t)
	if code := d.wait(t); code != 1 {
		t.Fatalf("%s with the metrics port taken, want exit status 1", d.cmd.ProcessState)
	}
	if log, _ := os.ReadFile(d.log); !strings.Contains(string(log), "metrics endpoint") {
		t.Fatalf("the log does not say why start-up failed:\n%s", log)
	}
	f.checkOriginals(t, "after a failed start-up")
}
