package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/cpufreq/cpufreqtest"
	"joulie.io/joulie/agentd/internal/cpuinfo/cpuinfotest"
	"joulie.io/joulie/agentd/internal/localapi"
	"joulie.io/joulie/agentd/internal/nvml/fakenvml"
	"joulie.io/joulie/agentd/internal/rapl/rapltest"
)

// These tests run the real binaries, as systemd and an operator would:
// joulie-agentd against a fixture host (2-socket Xeon with RAPL and
// cpufreq) and the fake libnvidia-ml's eight GPUs, joulie-agentctl against
// its socket.

var bin struct{ dir, agentd, agentctl, nvml, amdsmi string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "joulie-agentd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// nobody must reach agentctl for the permission test.
	_ = os.Chmod(dir, 0o755)
	bin.dir = dir
	bin.agentd, bin.agentctl = filepath.Join(dir, "joulie-agentd"), filepath.Join(dir, "joulie-agentctl")
	for path, pkg := range map[string]string{bin.agentd: ".", bin.agentctl: "../joulie-agentctl"} {
		// Built as the Makefile ships it, so the measured footprint is
		// the product's.
		cmd := exec.Command("go", "build", "-trimpath", "-tags", "osusergo", "-ldflags", "-s -w", "-o", path, pkg)
		cmd.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -Wno-deprecated-declarations")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	if bin.nvml, err = fakenvml.Compile(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The amdsmi package's fake libamd_smi.so: two AMD GPUs and two EPYC
	// sockets in the library's own state.
	bin.amdsmi = filepath.Join(dir, "libamd_smi.so")
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-Wall", "-Werror", "-o", bin.amdsmi,
		filepath.Join("..", "..", "internal", "amdsmi", "testdata", "fake_amdsmi.c")).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the fake libamd_smi.so (gcc is needed): %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixture is one host: sysfs tree, fake GPUs, state, socket and config;
// nvml and metrics are the nvmlLibraryPath and metricsAddress it is
// configured with.
type fixture struct {
	root, gpus, state, socket, config string
	nvml, metrics                     string
	amdsmi                            string // amdsmiLibraryPath, "none" unless a test sets it
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir(), gpus: t.TempDir(), state: t.TempDir(), nvml: bin.nvml, amdsmi: "none"}
	cpuinfotest.Write(t, f.root, cpuinfotest.Xeon2S())
	rapltest.TwoSocketXeon(t, f.root, 350)
	cpufreqtest.Build(t, f.root, cpufreqtest.Spec{Packages: 2, CoresPerPackage: 32, ThreadsPerCore: 2, MinKHz: 800000, MaxKHz: 3800000})
	fakenvml.WriteState(t, f.gpus, fakenvml.DGXH100())
	// A short, world-traversable socket directory (sun_path is 108 bytes).
	sockDir, err := os.MkdirTemp("", "jsock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	_ = os.Chmod(sockDir, 0o755)
	f.socket = filepath.Join(sockDir, "agentd.sock")
	f.config = filepath.Join(t.TempDir(), "agentd.yaml")
	f.writeConfig(t, 60)
	return f
}

// writeConfig sets the standalone profile to eco at pct percent.
func (f *fixture) writeConfig(t testing.TB, pct int) {
	t.Helper()
	cfg := fmt.Sprintf(`nodeName: node-a
hostRoot: %s
stateDir: %s
socket: %s
metricsAddress: %q
reconcileInterval: 1s
nvmlLibraryPath: %s
amdsmiLibraryPath: %s
standalone:
  profile:
    profile: eco
    cpu:
      packagePowerCapPctOfMax: %d
    gpu:
      powerCap:
        capPctOfMax: %d
`, f.root, f.state, f.socket, f.metrics, f.nvml, f.amdsmi, pct, pct)
	if err := os.WriteFile(f.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

type proc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed once the process has exited
}

// start launches the daemon and waits for its socket.
func (f *fixture) start(t testing.TB, env ...string) *proc {
	t.Helper()
	d := f.launch(t, env...)
	waitFor(t, "the daemon's socket", func() bool { _, err := os.Stat(f.socket); return err == nil })
	return d
}

// launch starts the daemon and returns at once, while it is still
// starting up.
func (f *fixture) launch(t testing.TB, env ...string) *proc {
	t.Helper()
	d := &proc{log: filepath.Join(t.TempDir(), "agentd.log"), done: make(chan struct{})}
	logf, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	d.cmd = exec.Command(bin.agentd, "--config", f.config)
	d.cmd.Env = append(os.Environ(), append([]string{"FAKE_NVML_DIR=" + f.gpus}, env...)...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	go func() {
		_ = d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		if !d.exited() {
			_ = d.cmd.Process.Kill()
			<-d.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(d.log)
			t.Logf("joulie-agentd log:\n%s", b)
		}
	})
	return d
}

func (d *proc) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

func (d *proc) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

func (d *proc) wait(t testing.TB) int {
	t.Helper()
	select {
	case <-d.done:
		return d.cmd.ProcessState.ExitCode()
	case <-time.After(20 * time.Second):
		t.Fatal("joulie-agentd did not exit")
		return -1
	}
}

func ctl(t *testing.T, f *fixture, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin.agentctl, append([]string{"--socket", f.socket}, args...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		code = cmd.ProcessState.ExitCode()
	}
	return out.String(), errOut.String(), code
}

func status(t *testing.T, f *fixture) localapi.Status {
	t.Helper()
	var s localapi.Status
	ctlJSON(t, f, "status", &s)
	return s
}

// ctlJSON runs joulie-agentctl verb with -o json and decodes its output
// into v.
func ctlJSON(t *testing.T, f *fixture, verb string, v any) {
	t.Helper()
	out, errOut, code := ctl(t, f, verb, "-o", "json")
	if code != 0 {
		t.Fatalf("agentctl %s: exit %d: %s", verb, code, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%s JSON: %v\n%s", verb, err, out)
	}
}

func raplLimitW(t testing.TB, f *fixture, zone string) int64 {
	t.Helper()
	// The fixture is a regular file, which the daemon's write truncates
	// before it fills it (a real sysfs attribute never reads empty): an
	// empty read is a write in progress, so read again.
	var raw string
	for range 100 {
		if raw = strings.TrimSpace(rapltest.Attr(t, f.root, zone, "constraint_0_power_limit_uw")); raw != "" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v / 1_000_000
}

func gpuLimitW(t *testing.T, f *fixture, i int) uint32 {
	return fakenvml.ReadState(t, f.gpus)[i].LimitMW / 1000
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDaemonCapsReloadsAndRestoresOnSIGTERM(t *testing.T) {
	f := newFixture(t)
	d := f.start(t)
	waitFor(t, "RAPL at 60% of 350 W", func() bool { return raplLimitW(t, f, "intel-rapl:0") == 210 })
	waitFor(t, "GPU 7 at 60% of 700 W", func() bool { return gpuLimitW(t, f, 7) == 420 })

	s := status(t, f)
	if s.Node != "node-a" || !s.Standalone || s.CPU.Result != "applied" || s.CPU.Backend != "rapl" || s.GPU.Backend != "nvml" || s.GPU.Result != "applied" {
		t.Fatalf("status %+v / cpu %+v / gpu %+v", s, s.CPU, s.GPU)
	}
	if s.OriginalsRecorded == 0 {
		t.Fatal("the journal records no originals while caps are in force")
	}
	if out, _, code := ctl(t, f, "status"); code != 0 || !strings.Contains(out, "node-a") {
		t.Fatalf("table status: %d %s", code, out)
	}
	if out, _, code := ctl(t, f, "hardware", "-o", "json"); code != 0 || !strings.Contains(out, `"catalogModel"`) || !strings.Contains(out, `"count": 8`) {
		t.Fatalf("hardware: %d %s", code, out)
	}

	// SIGHUP: an edited profile takes effect without a restart.
	f.writeConfig(t, 40)
	d.signal(t, syscall.SIGHUP)
	waitFor(t, "RAPL at 40% after SIGHUP", func() bool { return raplLimitW(t, f, "intel-rapl:1") == 140 })
	waitFor(t, "GPU 0 at 40% after SIGHUP", func() bool { return gpuLimitW(t, f, 0) == 280 })

	// SIGTERM: originals back, journal empty, exit 0.
	d.signal(t, syscall.SIGTERM)
	if code := d.wait(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if got := raplLimitW(t, f, "intel-rapl:0"); got != 350 {
		t.Fatalf("RAPL after SIGTERM: %d W, want the original 350", got)
	}
	for i := range 8 {
		if got := gpuLimitW(t, f, i); got != 700 {
			t.Fatalf("GPU %d after SIGTERM: %d W", i, got)
		}
	}
}

func TestDaemonRestoresOriginalsAfterKill9(t *testing.T) {
	f := newFixture(t)
	d := f.start(t)
	waitFor(t, "caps in force", func() bool { return raplLimitW(t, f, "intel-rapl:0") == 210 && gpuLimitW(t, f, 3) == 420 })
	d.signal(t, syscall.SIGKILL)
	d.wait(t)
	if raplLimitW(t, f, "intel-rapl:0") != 210 {
		t.Fatal("a SIGKILL cannot restore; the caps must still be there for this test to mean anything")
	}
	// The next start finds the journal, restores the originals first,
	// then applies its own target: lift it so only the restore shows.
	f.writeConfig(t, 100)
	d2 := f.start(t)
	waitFor(t, "the restart's originals", func() bool { return raplLimitW(t, f, "intel-rapl:0") == 350 && gpuLimitW(t, f, 3) == 700 })
	b, _ := os.ReadFile(d2.log)
	if !strings.Contains(string(b), "did not stop cleanly") {
		t.Fatalf("the log should say why originals were restored:\n%s", b)
	}
}

// TestOfflineRestoreAfterKill9 is what joulie-agentd.service's
// ExecStopPost= does after a SIGKILL: joulie-agentctl restore --offline
// puts RAPL and GPU limits back from the journal. While the daemon runs,
// neither a second daemon nor an offline restore may touch the journal.
func TestOfflineRestoreAfterKill9(t *testing.T) {
	f := newFixture(t)
	d := f.start(t)
	waitFor(t, "caps in force", func() bool { return raplLimitW(t, f, "intel-rapl:0") == 210 && gpuLimitW(t, f, 5) == 420 })

	second := exec.Command(bin.agentd, "--config", f.config)
	second.Env = append(os.Environ(), "FAKE_NVML_DIR="+f.gpus)
	if out, err := second.CombinedOutput(); second.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "another joulie-agentd running") {
		t.Fatalf("a second daemon on the same state directory: %v: %s", err, out)
	}
	offline := func() (string, int) {
		cmd := exec.Command(bin.agentctl, "restore", "--offline", "--config", f.config)
		cmd.Env = append(os.Environ(), "FAKE_NVML_DIR="+f.gpus)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := offline(); code != 1 || !strings.Contains(out, "joulie-agentd is running") {
		t.Fatalf("offline restore beside the daemon: exit %d: %s", code, out)
	}

	d.signal(t, syscall.SIGKILL)
	d.wait(t)
	if out, code := offline(); code != 0 || !strings.Contains(out, "Restored 10 controls") {
		t.Fatalf("offline restore after SIGKILL: exit %d: %s", code, out)
	}
	if got := raplLimitW(t, f, "intel-rapl:1"); got != 350 {
		t.Errorf("RAPL after the offline restore: %d W, want the original 350", got)
	}
	for i := range 8 {
		if got := gpuLimitW(t, f, i); got != 700 {
			t.Errorf("GPU %d after the offline restore: %d W, want 700", i, got)
		}
	}
}

// TestOfflineRestoreDespiteARefusedConfig is issue 13's host left
// capped: an edit the daemon refuses on SIGHUP (it keeps running), then
// SIGKILL. The next start refuses the file too, so ExecStopPost='s
// restore --offline must still put the originals back, warning about the
// file instead of refusing it.
func TestOfflineRestoreDespiteARefusedConfig(t *testing.T) {
	f := newFixture(t)
	d := f.start(t)
	waitFor(t, "caps in force", func() bool { return raplLimitW(t, f, "intel-rapl:0") == 210 && gpuLimitW(t, f, 2) == 420 })

	cfg, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.config, append(cfg, "dvfs: {stepPct: 500}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	// SIGHUP before the daemon handles it would end the process.
	waitFor(t, "the daemon's signal handling", func() bool {
		b, _ := os.ReadFile(d.log)
		return strings.Contains(string(b), "joulie-agentd ready")
	})
	d.signal(t, syscall.SIGHUP)
	waitFor(t, "the refused reload in the log", func() bool {
		b, _ := os.ReadFile(d.log)
		return strings.Contains(string(b), "reload refused") && strings.Contains(string(b), "dvfs.stepPct")
	})
	if s := status(t, f); s.CPU == nil || s.CPU.Result != "applied" {
		t.Fatalf("the daemon should keep running on its last good configuration: %+v", s)
	}
	d.signal(t, syscall.SIGKILL)
	d.wait(t)

	restart := exec.Command(bin.agentd, "--config", f.config)
	if out, _ := restart.CombinedOutput(); restart.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "dvfs.stepPct") {
		t.Fatalf("a start with the refused file: exit %d: %s", restart.ProcessState.ExitCode(), out)
	}
	if raplLimitW(t, f, "intel-rapl:0") != 210 {
		t.Fatal("the refused start changed the caps; this test needs them in force")
	}

	cmd := exec.Command(bin.agentctl, "restore", "--offline", "--config", f.config)
	cmd.Env = append(os.Environ(), "FAKE_NVML_DIR="+f.gpus)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(out.String(), "Restored 10 controls") {
		t.Fatalf("offline restore: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if want := "warning: dvfs.stepPct: must be in (0, 100], got 500 (from " + f.config + ")"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
	}
	for _, zone := range []string{"intel-rapl:0", "intel-rapl:1"} {
		if got := raplLimitW(t, f, zone); got != 350 {
			t.Errorf("%s after the offline restore: %d W, want the original 350", zone, got)
		}
	}
	for i := range 8 {
		if got := gpuLimitW(t, f, i); got != 700 {
			t.Errorf("GPU %d after the offline restore: %d W, want 700", i, got)
		}
	}
}

// TestBadConfigExitsTwoNamingTheKey: values that used to be refused
// without a key (.nan) or accepted (a missing hostRoot) stop the start
// with exit 2, naming key, value and source.
func TestBadConfigExitsTwoNamingTheKey(t *testing.T) {
	f := newFixture(t)
	missing := filepath.Join(t.TempDir(), "no-such-host")
	for _, tc := range []struct {
		name, extra string
		args, env   []string
		want        string
	}{
		{name: "NaN watts in the file", extra: "    cpu: {packagePowerCapWatts: .nan}\n",
			want: f.config + ": standalone.profile.cpu.packagePowerCapWatts: .nan is not a number"},
		{name: "infinite GPU watts in the file", extra: "    gpu: {powerCap: {capWattsPerGpu: .inf}}\n",
			want: f.config + ": standalone.profile.gpu.powerCap.capWattsPerGpu: .inf is not a number"},
		{name: "infinite DVFS step from the variable", env: []string{"JOULIE_DVFS_STEP_PCT=+Inf"},
			want: `dvfs.stepPct: JOULIE_DVFS_STEP_PCT="+Inf" is not a number`},
		{name: "missing host root from the flag", args: []string{"--host-root", missing},
			want: fmt.Sprintf("hostRoot: %q does not exist", missing)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := filepath.Join(t.TempDir(), "agentd.yaml")
			body := fmt.Sprintf("nodeName: node-a\nhostRoot: %s\nstateDir: %s\nsocket: %s\nmetricsAddress: \"\"\n"+
				"nvmlLibraryPath: none\namdsmiLibraryPath: none\nstandalone:\n  profile:\n    profile: eco\n%s",
				f.root, f.state, f.socket, tc.extra)
			if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			tc.want = strings.ReplaceAll(tc.want, f.config, config)
			// A daemon that accepts the configuration would run until killed.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin.agentd, append([]string{"--config", config}, tc.args...)...)
			cmd.Env = append(os.Environ(), tc.env...)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), tc.want) {
				t.Errorf("exit %d, want 2 with %q:\n%s", code, tc.want, out)
			}
			if _, err := os.Stat(f.socket); err == nil {
				t.Error("the daemon got as far as serving its socket")
			}
		})
	}
}

// TestManPage is what the packages ship as joulie-agentd.8: every flag,
// nothing hidden.
func TestManPage(t *testing.T) {
	out, err := exec.Command(bin.agentd, "--man-page").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".TH joulie-agentd 8", "--host-root", "--keep-caps-on-stop", "JOULIE_STATE_DIR", "SIGHUP"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("manual page lacks %q", want)
		}
	}
	if strings.Contains(string(out), "man-page") {
		t.Error("the manual page shows the hidden --man-page flag")
	}
}

func TestDaemonRefusesAgentctlFromAnUnprivilegedUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test runs agentctl as nobody and needs root to do so")
	}
	f := newFixture(t)
	f.start(t)
	cmd := exec.Command(bin.agentctl, "--socket", f.socket, "status")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "permission denied") {
		t.Fatalf("agentctl as nobody: %v: %s", err, out)
	}
}

func TestDaemonTalksToSystemd(t *testing.T) {
	f := newFixture(t)
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	d := f.start(t, "NOTIFY_SOCKET="+path, "WATCHDOG_USEC=400000")
	seen := map[string]bool{}
	deadline := time.After(20 * time.Second)
	for !(seen["READY=1"] && seen["STATUS="] && seen["WATCHDOG=1"]) {
		select {
		case m := <-got:
			for _, line := range strings.Split(m, "\n") {
				for _, k := range []string{"READY=1", "STATUS=", "WATCHDOG=1", "STOPPING=1"} {
					if strings.HasPrefix(line, k) {
						seen[k] = true
					}
				}
			}
		case <-deadline:
			t.Fatalf("systemd saw only %v", seen)
		}
	}
	d.signal(t, syscall.SIGTERM)
	d.wait(t)
	for len(got) > 0 {
		if strings.HasPrefix(<-got, "STOPPING=1") {
			return
		}
	}
	t.Fatal("no STOPPING=1 on SIGTERM")
}

// BenchmarkDaemonIdleCost measures the daemon's CPU use and memory at a
// 1 s tick with the caps in force (targets: under 0.5% of a core, under
// 30 MiB): go test -run '^$' -bench DaemonIdleCost -benchtime 1x
// ./agentd/cmd/joulie-agentd/. It is a benchmark, not a test, because it
// spends 12 s watching an idle process and its figures are only worth
// reading on a quiet machine. b.N is ignored: one sample is the figure.
func BenchmarkDaemonIdleCost(b *testing.B) {
	f := newFixture(b)
	d := f.start(b)
	waitFor(b, "caps in force", func() bool { return raplLimitW(b, f, "intel-rapl:0") == 210 })
	pid := d.cmd.Process.Pid
	ticks := func() int64 {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatal(err)
		}
		fields := strings.Fields(string(raw)[strings.LastIndexByte(string(raw), ')')+2:])
		u, _ := strconv.ParseInt(fields[11], 10, 64)
		s, _ := strconv.ParseInt(fields[12], 10, 64)
		return u + s
	}
	time.Sleep(2 * time.Second)
	b.ResetTimer()
	t0, c0 := time.Now(), ticks()
	time.Sleep(10 * time.Second)
	cpu := float64(ticks()-c0) / 100 / time.Since(t0).Seconds() * 100 // USER_HZ is 100 on Linux
	b.StopTimer()
	kib := map[string]float64{}
	if fh, err := os.Open(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && (strings.HasPrefix(k, "Rss") || k == "VmRSS") {
				kib[k], _ = strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			}
		}
		fh.Close()
	}
	// RssFile is pages of the binary and libraries, shared and reclaimable;
	// RssAnon is the daemon's own memory.
	b.ReportMetric(cpu, "%core")
	b.ReportMetric(kib["VmRSS"]/1024, "RSS-MiB")
	b.ReportMetric(kib["RssAnon"]/1024, "anon-MiB")
	b.ReportMetric(kib["RssFile"]/1024, "file-MiB")
	b.ReportMetric(0, "ns/op") // the timer's figure is the sleep, not a cost
}

func TestDaemonServesTheSocketSystemdPasses(t *testing.T) {
	f := newFixture(t)
	activated := filepath.Join(filepath.Dir(f.socket), "activated.sock")
	l, err := net.Listen("unix", activated)
	if err != nil {
		t.Fatal(err)
	}
	ul := l.(*net.UnixListener)
	lf, err := ul.File()
	if err != nil {
		t.Fatal(err)
	}
	// The daemon owns the socket from here; closing the test's copy must
	// not unlink it.
	ul.SetUnlinkOnClose(false)
	ul.Close()
	logPath := filepath.Join(t.TempDir(), "agentd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"`, bin.agentd, "--config", f.config)
	cmd.Env = append(os.Environ(), "FAKE_NVML_DIR="+f.gpus)
	cmd.ExtraFiles = []*os.File{lf}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lf.Close()
	logf.Close()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("joulie-agentd log:\n%s", b)
		}
	}()
	waitFor(t, "a status on the activated socket", func() bool {
		out, _, code := ctl(t, &fixture{socket: activated}, "status", "-o", "json")
		return code == 0 && strings.Contains(out, `"node": "node-a"`)
	})
	if _, err := os.Stat(f.socket); err == nil {
		t.Fatal("the daemon made its own socket although systemd passed one")
	}
	b, _ := os.ReadFile(logPath)
	if !strings.Contains(string(b), "socket systemd passed") {
		t.Fatalf("the log should say the socket came from systemd:\n%s", b)
	}
}
