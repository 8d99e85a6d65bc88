// Package podcgroup reads how much CPU time each pod on the host has used,
// from the pod cgroups the kubelet makes, and the host's busy CPU time from
// /proc/stat: the two figures the per-pod CPU energy estimate divides
// (package podenergy).
//
// The kubelet puts every pod in a cgroup named after its UID, under
// kubepods and its QoS class. Both cgroup drivers and both cgroup versions
// are read:
//
//	systemd, v2   sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/cpu.stat
//	cgroupfs, v2  sys/fs/cgroup/kubepods/burstable/pod<uid>/cpu.stat
//	v1            sys/fs/cgroup/cpu,cpuacct/kubepods…/cpuacct.usage
//
// (Guaranteed pods sit directly under kubepods.) The systemd driver writes
// the UID's dashes as underscores. A host without pod cgroups (no kubelet,
// or another layout) reads as no pods, which is not an error.
package podcgroup

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"joulie.io/joulie/agentd/internal/sysfs"
)

// Usage is one read of the host's CPU time.
type Usage struct {
	// Host is the host's cumulative busy CPU time, every CPU and every
	// mode but idle and iowait; HasHost is false when /proc/stat could not
	// be read.
	Host    time.Duration
	HasHost bool
	// Pods is each pod's cumulative CPU time, by pod UID.
	Pods map[string]time.Duration
	// Layout says which layout the pods were found in (for status):
	// "cgroup v2, systemd driver", "cgroup v2, cgroupfs driver",
	// "cgroup v1", or "" when none was found.
	Layout string
}

// layout is one way the kubelet lays pod cgroups out.
type layout struct {
	name string
	// globs find the pod directories, below sys/fs/cgroup.
	globs []string
	// uid takes the pod UID from a directory's name.
	uid func(dir string) (string, bool)
	// file is the CPU time counter in the directory, read by usage.
	file  string
	usage func(text string) (time.Duration, error)
}

var layouts = []layout{
	{
		name: "cgroup v2, systemd driver",
		globs: []string{
			"kubepods.slice/kubepods-pod*.slice",
			"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod*.slice",
			"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod*.slice",
		},
		uid:  sliceNamed,
		file: "cpu.stat", usage: usageUsec,
	},
	{
		name:  "cgroup v2, cgroupfs driver",
		globs: []string{"kubepods/pod*", "kubepods/burstable/pod*", "kubepods/besteffort/pod*"},
		uid:   podPrefixed,
		file:  "cpu.stat", usage: usageUsec,
	},
	{
		name: "cgroup v1",
		globs: []string{
			"cpu,cpuacct/kubepods/pod*", "cpu,cpuacct/kubepods/burstable/pod*", "cpu,cpuacct/kubepods/besteffort/pod*",
			"cpu,cpuacct/kubepods.slice/kubepods-pod*.slice",
			"cpu,cpuacct/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod*.slice",
			"cpu,cpuacct/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod*.slice",
		},
		uid: func(dir string) (string, bool) {
			if strings.HasSuffix(dir, ".slice") {
				return sliceNamed(dir)
			}
			return podPrefixed(dir)
		},
		file: "cpuacct.usage", usage: usageNanos,
	},
}

// sliceNamed takes the UID from a systemd slice name,
// kubepods-burstable-pod<uid_>.slice, where the UID's dashes are
// underscores (a dash means nesting in a slice name).
func sliceNamed(dir string) (string, bool) {
	base := strings.TrimSuffix(path.Base(dir), ".slice")
	i := strings.LastIndex(base, "-pod")
	if i < 0 || i+4 == len(base) {
		return "", false
	}
	return strings.ReplaceAll(base[i+4:], "_", "-"), true
}

// podPrefixed takes the UID from a cgroupfs directory name, pod<uid>.
func podPrefixed(dir string) (string, bool) {
	base := path.Base(dir)
	if !strings.HasPrefix(base, "pod") || len(base) == 3 {
		return "", false
	}
	return base[3:], true
}

// Read reads the host's and the pods' CPU time under fs's root. A pod
// whose counter cannot be read (it ended between the listing and the
// read) is left out; only /proc/stat failing is reported, as HasHost.
func Read(fs *sysfs.FS) Usage {
	u := Usage{Pods: map[string]time.Duration{}}
	if busy, err := hostBusy(fs); err == nil {
		u.Host, u.HasHost = busy, true
	}
	for _, l := range layouts {
		for _, g := range l.globs {
			dirs, err := fs.Glob(path.Join("sys/fs/cgroup", g))
			if err != nil {
				continue
			}
			for _, dir := range dirs {
				uid, ok := l.uid(dir)
				if !ok {
					continue
				}
				text, err := fs.ReadString(path.Join(dir, l.file))
				if err != nil {
					continue
				}
				d, err := l.usage(text)
				if err != nil {
					continue
				}
				u.Pods[uid] = d
				u.Layout = l.name
			}
		}
		if u.Layout != "" {
			// One layout per host: the kubelet uses one driver and one
			// version.
			break
		}
	}
	return u
}

// hostBusy is the busy CPU time of /proc/stat's cpu line.
func hostBusy(fs *sysfs.FS) (time.Duration, error) {
	p, err := procfs.NewFS(fs.Path("proc"))
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", fs.Path("proc", "stat"), err)
	}
	c := st.CPUTotal
	// Guest time is already counted in user time.
	secs := c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
	return time.Duration(secs * float64(time.Second)), nil
}

// usageUsec takes usage_usec from a cgroup v2 cpu.stat.
func usageUsec(text string) (time.Duration, error) {
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && k == "usage_usec" {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 63)
			if err != nil {
				return 0, fmt.Errorf("cpu.stat usage_usec %q: %w", v, err)
			}
			return time.Duration(n) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("cpu.stat has no usage_usec")
}

// usageNanos reads cgroup v1's cpuacct.usage, in nanoseconds.
func usageNanos(text string) (time.Duration, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(text), 10, 63)
	if err != nil {
		return 0, fmt.Errorf("cpuacct.usage %q: %w", strings.TrimSpace(text), err)
	}
	return time.Duration(n), nil
}
