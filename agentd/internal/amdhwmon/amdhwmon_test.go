package amdhwmon

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
)

var _ backend.GPUCapper = (*Capper)(nil)

func newCapper(t *testing.T, root string, w sysfs.Writer) (*Capper, *state.Journal, string) {
	t.Helper()
	dir := t.TempDir()
	j, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fsys := sysfs.New(root)
	if w != nil {
		fsys = fsys.WithWriter(w)
	}
	return New(fsys, j), j, dir
}

func TestGPUsAreFoundByPCIAddressNotByHwmonOrCardNumber(t *testing.T) {
	root := buildHost(t, mi300x(), mi210())
	c, _, _ := newCapper(t, root, nil)
	got, err := c.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	want := []backend.GPU{
		{
			Index: 0, UUID: "0000:03:00.0", PCIBusID: "0000:03:00.0", Name: "AMD Instinct MI210",
			MinWatts: 100, MaxWatts: 300, DefaultWatts: 300, CapWatts: 300,
			PowerWatts: 121, HasPower: true,
		},
		{
			// No product_name: the name comes from the device id.
			Index: 1, UUID: "0001:41:00.0", PCIBusID: "0001:41:00.0", Name: "AMD Instinct MI300X",
			MinWatts: 200, MaxWatts: 750, DefaultWatts: 750, CapWatts: 750,
			PowerWatts: 452.5, HasPower: true,
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GPUs:\n got  %+v\n want %+v", got, want)
	}
	if c.Name() != "hwmon" {
		t.Errorf("Name = %q", c.Name())
	}
}

func TestSetCapClampsRoundsToWholeWattsAndReadsBack(t *testing.T) {
	root := buildHost(t, mi210(), mi300x())
	capAttrOf := func(g fakeGPU) string { return filepath.Join(g.hwmonDir(), "power1_cap") }
	for _, tc := range []struct {
		name      string
		index     int
		watts     float64
		wantWatts float64
		wantFile  string
	}{
		{"within range, rounded", 0, 150.4, 150, "150000000"},
		{"above the maximum", 0, 1000, 300, "300000000"},
		{"below the minimum", 0, 10, 100, "100000000"},
		{"second GPU on its own domain", 1, 500.6, 501, "501000000"},
		{"absurdly large request", 1, 1e300, 750, "750000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := newCapper(t, root, nil)
			applied, err := c.SetCap(tc.index, tc.watts)
			if err != nil {
				t.Fatal(err)
			}
			if applied != tc.wantWatts {
				t.Errorf("applied %v W, want %v", applied, tc.wantWatts)
			}
			g := []fakeGPU{mi210(), mi300x()}[tc.index]
			if got := readAttr(t, root, capAttrOf(g)); got != tc.wantFile {
				t.Errorf("power1_cap = %s, want %s", got, tc.wantFile)
			}
		})
	}
}

func TestSetCapRejectsMeaninglessRequests(t *testing.T) {
	root := buildHost(t, mi210())
	c, j, _ := newCapper(t, root, nil)
	for _, w := range []float64{0, -5, math.NaN(), math.Inf(1)} {
		if _, err := c.SetCap(0, w); err == nil {
			t.Errorf("SetCap(0, %v) succeeded", w)
		}
	}
	if _, err := c.SetCap(7, 200); err == nil || backend.IsBlocked(err) {
		t.Errorf("SetCap on a missing index: %v, want a plain error", err)
	}
	if j.Len() != 0 {
		t.Errorf("journal has %d entries after refused requests", j.Len())
	}
}

func TestSetCapJournalsTheOriginalBeforeTheFirstWriteOnly(t *testing.T) {
	root := buildHost(t, mi210())
	c, j, _ := newCapper(t, root, nil)
	for _, w := range []float64{200, 250, 180} {
		if _, err := c.SetCap(0, w); err != nil {
			t.Fatal(err)
		}
	}
	want := []state.Entry{{Backend: "hwmon", Kind: state.KindGPU, ID: "0000:03:00.0/power1_cap", Original: "300000000"}}
	got := j.Entries()
	for i := range got {
		got[i].RecordedAt = want[0].RecordedAt
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("journal = %+v, want %+v", got, want)
	}
}

func TestSetCapSkipsTheWriteWhenTheLimitIsInPlace(t *testing.T) {
	root := buildHost(t, mi210())
	w := &recordingWriter{}
	c, j, _ := newCapper(t, root, w)
	// 300 W is the limit in force: nothing to write and nothing to journal.
	if applied, err := c.SetCap(0, 300); err != nil || applied != 300 {
		t.Fatalf("SetCap(300) = %v, %v", applied, err)
	}
	if w.count() != 0 || j.Len() != 0 {
		t.Fatalf("limit already in place: %d writes, %d journal entries", w.count(), j.Len())
	}
	// 199.7 W rounds to the 200 W written the first time: one write only.
	for _, watts := range []float64{200, 199.7, 200.2} {
		if applied, err := c.SetCap(0, watts); err != nil || applied != 200 {
			t.Fatalf("SetCap(%v) = %v, %v", watts, applied, err)
		}
	}
	if w.count() != 1 {
		t.Fatalf("%d writes for an unchanged target, want 1: %v", w.count(), w.writes)
	}
}

func TestReadOnlyCapIsBlockedAndTheOtherGPUGoesOn(t *testing.T) {
	ro := mi300x()
	ro.readOnly = []string{"power1_cap"}
	root := buildHost(t, mi210(), ro)
	c, j, _ := newCapper(t, root, nil)

	gpus, err := c.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	if gpus[0].CapBlocked != "" || !strings.Contains(gpus[1].CapBlocked, "read-only") {
		t.Errorf("CapBlocked: %q, %q", gpus[0].CapBlocked, gpus[1].CapBlocked)
	}
	_, err = c.SetCap(1, 400)
	if !errors.Is(err, backend.ErrBlocked) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("read-only power1_cap: %v, want blocked with the reason", err)
	}
	if got := readAttr(t, root, filepath.Join(ro.hwmonDir(), "power1_cap")); got != "750000000" {
		t.Errorf("read-only limit changed to %s", got)
	}
	if applied, err := c.SetCap(0, 200); err != nil || applied != 200 {
		t.Fatalf("other GPU: %v, %v", applied, err)
	}
	if j.Has("hwmon", "0001:41:00.0/power1_cap") {
		t.Error("a control that was never written has a journal entry")
	}
}

func TestGPUWithoutLimitOrRangeIsBlocked(t *testing.T) {
	noCap := mi210()
	delete(noCap.attrs, "power1_cap")
	noRange := mi300x()
	delete(noRange.attrs, "power1_cap_max")
	// A third GPU that only DRM knows about (amdgpu link missing), with an
	// unknown device id and no product name.
	other := fakeGPU{
		addr: "0000:c1:00.0", bridge: "pci0000:c0/0000:c0:01.1", card: 3, hwmon: 9,
		deviceID: "0x7fff", unbound: true,
		attrs: map[string]string{"power1_cap": "200000000", "power1_cap_max": "250000000"},
	}
	root := buildHost(t, noCap, noRange, other)
	c, j, _ := newCapper(t, root, nil)

	gpus, err := c.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	// By address: 0000:03:00.0, 0000:c1:00.0, 0001:41:00.0.
	if len(gpus) != 3 || gpus[0].CapWatts != 0 || gpus[2].MaxWatts != 0 || gpus[1].Name != "AMD GPU 0x7fff" || gpus[1].PCIBusID != "0000:c1:00.0" {
		t.Fatalf("GPUs = %+v", gpus)
	}
	// Discovery learns which GPUs cannot be capped, and why, before any write.
	if !strings.Contains(gpus[0].CapBlocked, "no power1_cap") || !strings.Contains(gpus[2].CapBlocked, "power1_cap_max") || gpus[1].CapBlocked != "" {
		t.Errorf("CapBlocked: %q, %q, %q", gpus[0].CapBlocked, gpus[1].CapBlocked, gpus[2].CapBlocked)
	}
	if _, err := c.SetCap(0, 200); !errors.Is(err, backend.ErrBlocked) || !strings.Contains(err.Error(), "no power1_cap") {
		t.Errorf("no power1_cap: %v", err)
	}
	if _, err := c.SetCap(2, 400); !errors.Is(err, backend.ErrBlocked) || !strings.Contains(err.Error(), "power1_cap_max") {
		t.Errorf("no range: %v", err)
	}
	if applied, err := c.SetCap(1, 240); err != nil || applied != 240 {
		t.Errorf("GPU found through DRM: %v, %v", applied, err)
	}
	if j.Len() != 1 {
		t.Errorf("journal has %d entries, want 1", j.Len())
	}
}

func TestWriteErrorIsAnErrorNotBlocked(t *testing.T) {
	root := buildHost(t, mi210(), mi300x())
	w := &recordingWriter{failSuffix: "0000:03:00.0/hwmon/hwmon5/power1_cap", failErr: syscall.EIO}
	c, j, _ := newCapper(t, root, w)

	_, err := c.SetCap(0, 200)
	if err == nil || backend.IsBlocked(err) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("EIO: %v, want an error that is not blocked", err)
	}
	if !strings.Contains(err.Error(), "0000:03:00.0") {
		t.Errorf("error %q does not name the GPU", err)
	}
	// The original was recorded before the attempt, as it must be.
	if orig, ok := j.Original("hwmon", "0000:03:00.0/power1_cap"); !ok || orig != "300000000" {
		t.Errorf("original = %q, %v", orig, ok)
	}
	if applied, err := c.SetCap(1, 400); err != nil || applied != 400 {
		t.Fatalf("other GPU after an EIO: %v, %v", applied, err)
	}
}

func TestReadOnlySysfsMountIsBlockedAndSaysHowToAllowIt(t *testing.T) {
	root := buildHost(t, mi210())
	// power1_cap is 0644, but the agent's mount namespace has /sys/devices
	// read-only, as the shipped systemd unit does.
	w := &recordingWriter{failSuffix: "power1_cap", failErr: syscall.EROFS}
	c, _, _ := newCapper(t, root, w)
	_, err := c.SetCap(0, 200)
	if !backend.IsBlocked(err) || !strings.Contains(err.Error(), "ReadWritePaths=-/sys/devices") {
		t.Fatalf("EROFS: %v, want blocked with the drop-in that allows the write", err)
	}
}

func TestVanishedGPUIsAnErrorAndIndicesDoNotShift(t *testing.T) {
	root := buildHost(t, mi210(), mi300x())
	c, j, _ := newCapper(t, root, nil)
	if _, err := c.SetCap(0, 200); err != nil {
		t.Fatal(err)
	}
	removeGPU(t, root, mi210())

	_, err := c.SetCap(0, 250)
	if err == nil || backend.IsBlocked(err) || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("vanished GPU: %v, want an error saying it is gone", err)
	}
	// Index 1 is still the MI300X, not shifted onto index 0.
	if applied, err := c.SetCap(1, 400); err != nil || applied != 400 {
		t.Fatalf("remaining GPU: %v, %v", applied, err)
	}
	gpus, err := c.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 1 || gpus[0].Index != 1 || gpus[0].PCIBusID != "0001:41:00.0" {
		t.Fatalf("GPUs after removal = %+v", gpus)
	}
	// Its original cannot be restored and must stay recorded.
	if err := j.Restore(map[string]state.Restorer{"hwmon": c}); err == nil || !strings.Contains(err.Error(), "0000:03:00.0") {
		t.Fatalf("restore with a GPU gone: %v", err)
	}
	if !j.Has("hwmon", "0000:03:00.0/power1_cap") || j.Has("hwmon", "0001:41:00.0/power1_cap") {
		t.Errorf("journal after a partial restore = %+v", j.Entries())
	}
}

func TestRestoreAfterCrashWithRenumberedHwmon(t *testing.T) {
	root := buildHost(t, mi210(), mi300x())
	c, _, dir := newCapper(t, root, nil)
	if _, err := c.SetCap(0, 200); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetCap(1, 400); err != nil {
		t.Fatal(err)
	}
	// The agent dies with the caps in place. After a reboot the GPUs'
	// hwmon directories have other numbers.
	for _, g := range []fakeGPU{mi210(), mi300x()} {
		renamed := filepath.Join(root, g.devDir(), "hwmon", "hwmon1"+filepath.Base(g.hwmonDir())[len("hwmon"):])
		if err := os.Rename(filepath.Join(root, g.hwmonDir()), renamed); err != nil {
			t.Fatal(err)
		}
	}
	j2, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if j2.Len() != 2 {
		t.Fatalf("journal on disk has %d entries, want 2", j2.Len())
	}
	c2 := New(sysfs.New(root), j2)
	if err := j2.Restore(map[string]state.Restorer{"hwmon": c2}); err != nil {
		t.Fatal(err)
	}
	gpus, err := c2.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 2 || gpus[0].CapWatts != 300 || gpus[1].CapWatts != 750 {
		t.Fatalf("caps after restore = %+v", gpus)
	}
	if j2.Len() != 0 {
		t.Errorf("%d entries left after a full restore", j2.Len())
	}
}

func TestRestoreRefusesForeignIDsAndBadOriginals(t *testing.T) {
	root := buildHost(t, mi210())
	c, _, _ := newCapper(t, root, nil)
	for _, tc := range [][2]string{
		{"hwmon5/power1_cap", "300000000"},
		{"0000:03:00.0/power1_cap_max", "300000000"},
		{"0000:03:00.0/power1_cap", "-1"},
		{"0000:03:00.0/power1_cap", "lots"},
	} {
		if err := c.Restore(tc[0], tc[1]); err == nil {
			t.Errorf("Restore(%q, %q) succeeded", tc[0], tc[1])
		}
	}
	if got := readAttr(t, root, filepath.Join(mi210().hwmonDir(), "power1_cap")); got != "300000000" {
		t.Errorf("power1_cap changed to %s", got)
	}
}

func TestUnreadableAttributeIsReportedButTheListIsComplete(t *testing.T) {
	bad := mi210()
	bad.attrs["power1_cap_max"] = "garbage"
	root := buildHost(t, bad, mi300x())
	c, _, _ := newCapper(t, root, nil)
	gpus, err := c.GPUs()
	if err == nil || !strings.Contains(err.Error(), "0000:03:00.0") {
		t.Fatalf("err = %v, want one naming the GPU", err)
	}
	if len(gpus) != 2 || gpus[1].MaxWatts != 750 {
		t.Fatalf("GPUs = %+v", gpus)
	}
	if _, err := c.SetCap(0, 200); err == nil || backend.IsBlocked(err) {
		t.Errorf("SetCap with an unreadable range: %v, want an error", err)
	}
}

func TestNoAMDGPUs(t *testing.T) {
	c, _, _ := newCapper(t, buildHost(t), nil)
	gpus, err := c.GPUs()
	if err != nil || len(gpus) != 0 {
		t.Fatalf("GPUs on a host without AMD GPUs = %+v, %v", gpus, err)
	}
	// Without amdgpu loaded at all, the driver directory is missing.
	c2, _, _ := newCapper(t, t.TempDir(), nil)
	if gpus, err := c2.GPUs(); err != nil || len(gpus) != 0 {
		t.Fatalf("GPUs on an empty root = %+v, %v", gpus, err)
	}
}

func TestMissingMinimumNeverLeadsToAZeroLimit(t *testing.T) {
	g := mi300x()
	delete(g.attrs, "power1_cap_min")
	root := buildHost(t, g)
	c, _, _ := newCapper(t, root, nil)
	applied, err := c.SetCap(0, 0.3)
	if err != nil || applied != 1 {
		t.Fatalf("SetCap(0.3 W) without power1_cap_min = %v, %v; want 1 W", applied, err)
	}
	if got := readAttr(t, root, filepath.Join(g.hwmonDir(), "power1_cap")); got != "1000000" {
		t.Errorf("power1_cap = %s", got)
	}
}

func TestPresentFollowsTheGPUsOnThePCIBus(t *testing.T) {
	root := buildHost(t, mi210(), mi300x())
	c, _, _ := newCapper(t, root, nil)
	removeGPU(t, root, mi210())
	for id, want := range map[string]bool{
		"0001:41:00.0/power1_cap": true,
		"0000:03:00.0/power1_cap": false,
		"0001:41:00.0/power2_cap": false,
		"GPU-1234":                false,
	} {
		if got, err := c.Present(id); got != want || err != nil {
			t.Errorf("Present(%q) = %v, %v; want %v", id, got, err, want)
		}
	}
}

// Where amdgpu exposes the hwmon energy counter (energy1_input, in
// microjoules), the GPU reports it, so per-pod energy is measured rather
// than integrated from the draw; elsewhere HasEnergy stays false.
func TestEnergyCounterIsReadWhereTheDriverHasOne(t *testing.T) {
	withCounter := mi300x()
	withCounter.attrs["energy1_input"] = "123456789000"
	root := buildHost(t, withCounter, mi210())
	c, _, _ := newCapper(t, root, nil)
	got, err := c.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	if g := got[1]; !g.HasEnergy || g.EnergyJoules != 123456.789 {
		t.Errorf("MI300X with energy1_input: HasEnergy %v, %v J; want 123456.789 J", g.HasEnergy, g.EnergyJoules)
	}
	if g := got[0]; g.HasEnergy {
		t.Errorf("MI210 without energy1_input reports energy %v J", g.EnergyJoules)
	}
}
