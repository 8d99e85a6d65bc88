package podcgroup

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/sysfs"
)

// write lays files out under a temp root, as the kernel shows them.
func write(t *testing.T, files map[string]string) *sysfs.FS {
	t.Helper()
	root := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sysfs.New(root)
}

// procStat is a /proc/stat whose cpu line adds up to 1234.56 s busy:
// user 100000, nice 500, system 20000, idle 900000, iowait 7000, irq 956,
// softirq 2000, steal 0 (USER_HZ ticks of 10 ms); guest is within user.
const procStat = "cpu  100000 500 20000 900000 7000 956 2000 0 3000 0\ncpu0 50000 250 10000 450000 3500 478 1000 0 1500 0\nintr 0\nctxt 0\nbtime 0\nprocesses 1\nprocs_running 1\nprocs_blocked 0\n"

func cpuStat(usec string) string {
	return "usage_usec " + usec + "\nuser_usec 1\nsystem_usec 1\nnr_periods 0\n"
}

func TestReadsEachLayout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  map[string]string
		want   map[string]time.Duration
		layout string
	}{
		{
			name: "systemd driver",
			files: map[string]string{
				"sys/fs/cgroup/kubepods.slice/kubepods-pod0a1b2c3d_0000_4000_8000_000000000001.slice/cpu.stat":                                                cpuStat("5000000"),
				"sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_0000_4000_8000_000000000002.slice/cpu.stat":             cpuStat("250"),
				"sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0a1b2c3d_0000_4000_8000_000000000003.slice/cpu.stat":           cpuStat("0"),
				"sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_0000_4000_8000_000000000002.slice/cri-x.scope/cpu.stat": cpuStat("1"),
			},
			want: map[string]time.Duration{
				"0a1b2c3d-0000-4000-8000-000000000001": 5 * time.Second,
				"0a1b2c3d-0000-4000-8000-000000000002": 250 * time.Microsecond,
				"0a1b2c3d-0000-4000-8000-000000000003": 0,
			},
			layout: "cgroup v2, systemd driver",
		},
		{
			name: "cgroupfs driver",
			files: map[string]string{
				"sys/fs/cgroup/kubepods/podaaaa/cpu.stat":            cpuStat("10"),
				"sys/fs/cgroup/kubepods/burstable/podbbbb/cpu.stat":  cpuStat("20"),
				"sys/fs/cgroup/kubepods/besteffort/podcccc/cpu.stat": cpuStat("30"),
				"sys/fs/cgroup/kubepods/burstable/cpu.stat":          cpuStat("60"),
			},
			want:   map[string]time.Duration{"aaaa": 10 * time.Microsecond, "bbbb": 20 * time.Microsecond, "cccc": 30 * time.Microsecond},
			layout: "cgroup v2, cgroupfs driver",
		},
		{
			name: "cgroup v1",
			files: map[string]string{
				"sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/poddddd/cpuacct.usage": "123456789\n",
			},
			want:   map[string]time.Duration{"dddd": 123456789},
			layout: "cgroup v1",
		},
		{
			name: "a counter that is not a number and one without usage are left out",
			files: map[string]string{
				"sys/fs/cgroup/kubepods/podgood/cpu.stat":  cpuStat("7"),
				"sys/fs/cgroup/kubepods/podbad/cpu.stat":   cpuStat("lots"),
				"sys/fs/cgroup/kubepods/podempty/cpu.stat": "nr_periods 0\n",
				"sys/fs/cgroup/kubepods/pod/cpu.stat":      cpuStat("9"),
			},
			want:   map[string]time.Duration{"good": 7 * time.Microsecond},
			layout: "cgroup v2, cgroupfs driver",
		},
		{
			name:  "no kubelet",
			files: map[string]string{"sys/fs/cgroup/system.slice/cpu.stat": cpuStat("1")},
			want:  map[string]time.Duration{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.files["proc/stat"] = procStat
			u := Read(write(t, tc.files))
			if !maps.Equal(u.Pods, tc.want) || u.Layout != tc.layout {
				t.Errorf("pods %v in %q, want %v in %q", u.Pods, u.Layout, tc.want, tc.layout)
			}
			if want := 1234560 * time.Millisecond; !u.HasHost || u.Host != want {
				t.Errorf("host busy %v (%v), want %v", u.Host, u.HasHost, want)
			}
		})
	}
}

func TestNoProcStatIsNoHostFigure(t *testing.T) {
	u := Read(write(t, map[string]string{"sys/fs/cgroup/kubepods/poda/cpu.stat": cpuStat("1")}))
	if u.HasHost || len(u.Pods) != 1 {
		t.Errorf("read %+v, want the pod and no host figure", u)
	}
}
