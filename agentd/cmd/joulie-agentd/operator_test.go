package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/pkg/cliapp"
)

// A journal the agent cannot read fails every start the same way. The
// daemon exits with its own status, which the unit's
// RestartPreventExitStatus= lists, and says which file and what to run,
// on stderr and in the STATUS= line systemctl status shows.
func TestCorruptJournalNeedsAnOperator(t *testing.T) {
	f := newFixture(t)
	journal := filepath.Join(f.state, state.FileName)
	torn := `{"version":1,"entries":[{"backend":"rapl","id":"intel-rapl:0/constraint_0_power_limit_uw","orig`
	if err := os.WriteFile(journal, []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	notify := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notify, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	d := f.launch(t, "NOTIFY_SOCKET="+notify)
	if code := d.wait(t); code != cliapp.ExitNeedsOperator {
		t.Fatalf("%s, want exit status %d", d.cmd.ProcessState, cliapp.ExitNeedsOperator)
	}
	log, _ := os.ReadFile(d.log)
	advice := "mv " + journal + " " + journal + ".bad"
	if !strings.Contains(string(log), "needs an operator") || !strings.Contains(string(log), advice) {
		t.Fatalf("the log does not tell the operator what to do (%q):\n%s", advice, log)
	}
	var status string
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 8192)
	for status == "" {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no STATUS= from the daemon: %v", err)
		}
		for _, line := range strings.Split(string(buf[:n]), "\n") {
			status, _ = strings.CutPrefix(line, "STATUS=")
		}
	}
	if !strings.Contains(status, advice) {
		t.Errorf("STATUS=%s\ndoes not say %q", status, advice)
	}
	if b, _ := os.ReadFile(journal); string(b) != torn {
		t.Fatal("the daemon modified the journal it could not read")
	}
	if raplLimitW(t, f, "intel-rapl:0") != 350 || gpuLimitW(t, f, 0) != 700 {
		t.Fatal("the daemon wrote a control without a usable journal")
	}
}

// The unit must not restart a daemon that needs an operator: it would
// fail every RestartSec for ever without reaching the start limit.
func TestUnitDoesNotRestartADaemonThatNeedsAnOperator(t *testing.T) {
	fh, err := os.Open("../../../systemd/joulie-agentd.service")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var statuses []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "RestartPreventExitStatus="); ok {
			statuses = append(statuses, strings.Fields(v)...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(statuses, strconv.Itoa(cliapp.ExitNeedsOperator)) {
		t.Fatalf("RestartPreventExitStatus= lists %v, not %d", statuses, cliapp.ExitNeedsOperator)
	}
}

// A RAPL zone that disappears for good keeps its original in the journal,
// and every stop fails on it; joulie-agentctl restore --forget is the way
// out, after which the daemon stops cleanly again.
func TestVanishedZoneIsForgottenAndStopsSucceedAgain(t *testing.T) {
	f := newFixture(t)
	d := f.start(t)
	waitFor(t, "caps in force", func() bool { return raplLimitW(t, f, "intel-rapl:1") == 210 })
	rapltest.Remove(t, f.root, "intel-rapl:1")
	d.signal(t, syscall.SIGTERM)
	if code := d.wait(t); code != 1 {
		t.Fatalf("stop with a zone gone: %s, want exit status 1", d.cmd.ProcessState)
	}
	log, _ := os.ReadFile(d.log)
	if !strings.Contains(string(log), "restore --forget") {
		t.Fatalf("the failed stop does not point to restore --forget:\n%s", log)
	}

	id := "intel-rapl:1/constraint_0_power_limit_uw"
	forget := exec.Command(bin.agentctl, "restore", "--forget", id, "--config", f.config)
	forget.Env = append(os.Environ(), "FAKE_NVML_DIR="+f.gpus)
	if out, err := forget.CombinedOutput(); err != nil || !strings.Contains(string(out), "Forgot rapl control "+id) {
		t.Fatalf("restore --forget: %v: %s", err, out)
	}

	d = f.start(t)
	waitFor(t, "caps in force again", func() bool { return raplLimitW(t, f, "intel-rapl:0") == 210 })
	d.signal(t, syscall.SIGTERM)
	if code := d.wait(t); code != 0 {
		t.Fatalf("stop after --forget: %s, want exit status 0", d.cmd.ProcessState)
	}
	if got := raplLimitW(t, f, "intel-rapl:0"); got != 350 {
		t.Fatalf("intel-rapl:0 at %d W after the stop, want the original 350", got)
	}
}
