package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	"joulie.io/joulie/agentd/internal/state"
)

const (
	zone0Limit = "intel-rapl:0/constraint_0_power_limit_uw"
	zone1Limit = "intel-rapl:1/constraint_0_power_limit_uw"
)

func (k *killedHost) recordedIDs(t *testing.T) []string {
	t.Helper()
	j, err := state.Open(k.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range j.Entries() {
		ids = append(ids, e.ID)
	}
	return ids
}

// A RAPL zone gone for good keeps its original in the journal, so every
// restore fails on it; --forget drops that entry and nothing else, and
// the next restore succeeds.
func TestForgetDropsTheOriginalOfAVanishedZone(t *testing.T) {
	k := newKilledHost(t, "")
	rapltest.Remove(t, k.root, "intel-rapl:1")

	out, errOut, code := runCtl("restore", "--offline", "--config", k.config)
	if code != exitFailure || !strings.Contains(errOut, "no longer exists") {
		t.Fatalf("restore with a vanished zone: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "restore --forget CONTROL") {
		t.Errorf("the failed restore does not point to --forget:\n%s", out)
	}
	if ids := k.recordedIDs(t); len(ids) != 1 || ids[0] != zone1Limit {
		t.Fatalf("journal after the partial restore: %v, want only %s", ids, zone1Limit)
	}

	out, errOut, code = runCtl("restore", "--forget", zone1Limit, "--config", k.config)
	if code != 0 || !strings.Contains(out, "Forgot rapl control "+zone1Limit) {
		t.Fatalf("--forget: exit %d: %s%s", code, out, errOut)
	}
	if ids := k.recordedIDs(t); len(ids) != 0 {
		t.Fatalf("journal after --forget: %v", ids)
	}
	out, errOut, code = runCtl("restore", "--offline", "--config", k.config)
	if code != 0 || !strings.Contains(out, "Nothing to restore") {
		t.Fatalf("restore after --forget: exit %d: %s%s", code, out, errOut)
	}
}

func TestForgetLeavesTheOtherEntriesAndSpeaksJSON(t *testing.T) {
	k := newKilledHost(t, "")
	rapltest.Remove(t, k.root, "intel-rapl:1")
	out, errOut, code := runCtl("restore", "--forget", zone1Limit, "--config", k.config, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r forgetReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Forgotten.Backend != "rapl" || r.Forgotten.ID != zone1Limit || r.Forgotten.Original != "350000000" {
		t.Fatalf("report %+v, %v\n%s", r, err, out)
	}
	ids := k.recordedIDs(t)
	if slices.Contains(ids, zone1Limit) || !slices.Contains(ids, zone0Limit) || !slices.Contains(ids, "cpu3/scaling_max_freq") {
		t.Fatalf("journal after --forget: %v", ids)
	}
	// Nothing was written to the host: the other caps are still in force.
	if got := rapltest.Attr(t, k.root, "intel-rapl:0", "constraint_0_power_limit_uw"); got != "210000000" || k.cpus.ScalingMax(t, 3) != 2000000 {
		t.Fatalf("--forget wrote to the host: intel-rapl:0 at %s µW, cpu3 ceiling %d", got, k.cpus.ScalingMax(t, 3))
	}
}

func TestForgetRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		lock     bool
		message  string
	}{
		{"a zone still on the host", zone0Limit, false, "still on this host"},
		{"an ID the journal does not hold", "intel-rapl:7/constraint_0_power_limit_uw", false, "no original of"},
		{"beside a running daemon", zone1Limit, true, "joulie-agentd is running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKilledHost(t, "")
			rapltest.Remove(t, k.root, "intel-rapl:1")
			if tc.lock {
				release, err := state.Lock(k.stateDir)
				if err != nil {
					t.Fatal(err)
				}
				defer release()
			}
			before := k.recordedIDs(t)
			_, errOut, code := runCtl("restore", "--forget", tc.id, "--config", k.config)
			if code != exitFailure || !strings.Contains(errOut, tc.message) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut, exitFailure, tc.message)
			}
			if after := k.recordedIDs(t); strings.Join(after, " ") != strings.Join(before, " ") {
				t.Fatalf("journal changed from %v to %v", before, after)
			}
		})
	}
}

func TestForgetUsage(t *testing.T) {
	for _, args := range [][]string{
		{"restore", "--forget", ""},
		{"restore", "--forget", zone1Limit, "now"},
		{"restore", "--forget"},
	} {
		if _, errOut, code := runCtl(args...); code != exitUsage {
			t.Errorf("%q: exit %d (%s), want %d", args, code, errOut, exitUsage)
		}
	}
}
