// Package amdsmi caps AMD GPUs and AMD EPYC CPU sockets through AMD's
// amd-smi library (libamd_smi.so, github.com/ROCm/amdsmi), loaded with
// dlopen at run time as NVML is: the agent builds with plain gcc and no
// ROCm headers, and starts on hosts without ROCm, where this backend then
// reports blocked instead of failing.
//
// The few amd-smi declarations used are written out in this file's cgo
// preamble from amdsmi.h, and every function is resolved with dlsym and
// called through a small C trampoline. Units follow amd-smi: GPU power
// caps are in microwatts, CPU socket caps in milliwatts, GPU draw in
// watts, and the GPU energy counter in counts of a resolution the library
// gives in microjoules.
//
// Thread safety: a Library and the cappers built on it are safe for
// concurrent use. Every amd-smi call is made with the Library's mutex
// held, so calls reach the C library one at a time, whatever the
// library's own locking does; Close waits for calls in flight.
package amdsmi

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// From amdsmi.h. amdsmi_status_t and processor_type_t are C enums, passed
// and returned as 32-bit integers. Handles (amdsmi_socket_handle,
// amdsmi_processor_handle) are void pointers; Go holds them as uintptr_t,
// which has the same size and representation on Linux.
typedef uint32_t jl_status;

// amdsmi_power_cap_info_t: caps in microwatts on bare-metal Linux.
typedef struct {
	uint64_t power_cap;
	uint64_t default_power_cap;
	uint64_t dpm_cap;
	uint64_t min_power_cap;
	uint64_t max_power_cap;
	uint64_t reserved[3];
} jl_power_cap_info;

typedef jl_status (*jl_init_fn)(uint64_t init_flags);
typedef jl_status (*jl_shut_down_fn)(void);
typedef jl_status (*jl_socket_handles_fn)(uint32_t *socket_count, void **socket_handles);
typedef jl_status (*jl_processor_handles_fn)(void *socket_handle, uint32_t *processor_count, void **processor_handles);
typedef jl_status (*jl_processor_handles_by_type_fn)(void *socket_handle, uint32_t processor_type, void **processor_handles, uint32_t *processor_count);
typedef jl_status (*jl_processor_type_fn)(void *processor_handle, uint32_t *processor_type);
// amdsmi_bdf_t is a union of bitfields over one uint64_t (as_uint).
typedef jl_status (*jl_bdf_fn)(void *processor_handle, uint64_t *bdf);
typedef jl_status (*jl_uuid_fn)(void *processor_handle, unsigned int *uuid_length, char *uuid);
typedef jl_status (*jl_power_cap_info_fn)(void *processor_handle, uint32_t sensor_ind, jl_power_cap_info *info);
typedef jl_status (*jl_set_power_cap_fn)(void *processor_handle, uint32_t sensor_ind, uint64_t cap);
typedef jl_status (*jl_cpu_get_fn)(void *processor_handle, uint32_t *milliwatts);
typedef jl_status (*jl_cpu_set_fn)(void *processor_handle, uint32_t milliwatts);
typedef jl_status (*jl_lib_version_fn)(void *version);
typedef jl_status (*jl_power_info_fn)(void *processor_handle, void *info);
typedef jl_status (*jl_energy_count_fn)(void *processor_handle, uint64_t *counts, float *microjoules_per_count, uint64_t *timestamp_ns);

static jl_status jl_call_init(void *f, uint64_t flags) { return ((jl_init_fn)f)(flags); }
static jl_status jl_call_shut_down(void *f) { return ((jl_shut_down_fn)f)(); }
static jl_status jl_call_socket_handles(void *f, uint32_t *n, uintptr_t *out) {
	return ((jl_socket_handles_fn)f)(n, (void **)out);
}
static jl_status jl_call_processor_handles(void *f, uintptr_t socket, uint32_t *n, uintptr_t *out) {
	return ((jl_processor_handles_fn)f)((void *)socket, n, (void **)out);
}
static jl_status jl_call_processor_handles_by_type(void *f, uintptr_t socket, uint32_t type, uintptr_t *out, uint32_t *n) {
	return ((jl_processor_handles_by_type_fn)f)((void *)socket, type, (void **)out, n);
}
static jl_status jl_call_processor_type(void *f, uintptr_t p, uint32_t *type) {
	return ((jl_processor_type_fn)f)((void *)p, type);
}
static jl_status jl_call_bdf(void *f, uintptr_t p, uint64_t *bdf) { return ((jl_bdf_fn)f)((void *)p, bdf); }
static jl_status jl_call_uuid(void *f, uintptr_t p, unsigned int *len, char *buf) {
	return ((jl_uuid_fn)f)((void *)p, len, buf);
}
static jl_status jl_call_power_cap_info(void *f, uintptr_t p, uint32_t sensor, jl_power_cap_info *info) {
	return ((jl_power_cap_info_fn)f)((void *)p, sensor, info);
}
static jl_status jl_call_set_power_cap(void *f, uintptr_t p, uint32_t sensor, uint64_t cap) {
	return ((jl_set_power_cap_fn)f)((void *)p, sensor, cap);
}
static jl_status jl_call_cpu_get(void *f, uintptr_t p, uint32_t *mw) { return ((jl_cpu_get_fn)f)((void *)p, mw); }
static jl_status jl_call_cpu_set(void *f, uintptr_t p, uint32_t mw) { return ((jl_cpu_set_fn)f)((void *)p, mw); }

// amdsmi_version_t opens with one uint32_t: the release year's last two
// digits before ROCm 7.0 (year, major, minor, release, build), the major
// version since (major, minor, release, build). Either is at most 24
// bytes; the buffer has room to spare.
static jl_status jl_call_lib_version(void *f, uint32_t *first) {
	uint64_t buf[8];
	memset(buf, 0, sizeof buf);
	jl_status st = ((jl_lib_version_fn)f)(buf);
	memcpy(first, buf, sizeof *first);
	return st;
}

// amdsmi_power_info_t has had three layouts (68 bytes up to ROCm 6.3, 40
// in 6.4, 192 since 7.0), and the library writes the whole of its own. The
// call therefore gets a buffer larger than any of them, filled with 0xff
// so that a field the library leaves alone reads as unsupported
// (UINT32_MAX), and current_socket_power and the average_socket_power
// after it are copied out from the offset the loaded release uses.
static jl_status jl_call_power_info(void *f, uintptr_t p, size_t at, uint32_t *current, uint32_t *average) {
	uint64_t buf[64];
	memset(buf, 0xff, sizeof buf);
	jl_status st = ((jl_power_info_fn)f)((void *)p, buf);
	memcpy(current, (const char *)buf + at, sizeof *current);
	memcpy(average, (const char *)buf + at + sizeof *current, sizeof *average);
	return st;
}
static jl_status jl_call_energy_count(void *f, uintptr_t p, uint64_t *counts, float *uj_per_count, uint64_t *ts) {
	return ((jl_energy_count_fn)f)((void *)p, counts, uj_per_count, ts);
}

// dlerror's text is per thread, so it is copied out in the same C call as
// the dlopen that set it.
static void *jl_dlopen(const char *path, char *err, size_t n) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, n, "%s", e != NULL ? e : "dlopen failed");
	}
	return h;
}
static void *jl_dlsym(void *h, const char *name) {
	dlerror();
	return dlsym(h, name);
}
static int jl_dlclose(void *h) { return dlclose(h); }
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"

	"joulie.io/joulie/agentd/internal/backend"
)

// Backend is the backend's name in the API and in the state journal, for
// GPU and CPU socket controls alike.
const Backend = "amdsmi"

// DefaultPaths are tried in order when Open is given no path: the loader's
// search path first (ld.so.conf usually lists ROCm's lib directory), then
// ROCm's default install location.
var DefaultPaths = []string{"libamd_smi.so", "/opt/rocm/lib/libamd_smi.so"}

// amdsmi_init_flags_t.
const (
	initAMDCPUs = 1 << 0
	initAMDGPUs = 1 << 1
)

// processor_type_t.
const (
	processorAMDGPU = 1
	processorAMDCPU = 2
)

// ErrClosed is returned by calls on a closed Library.
var ErrClosed = errors.New("amd-smi library closed")

// Library is an opened and initialised libamd_smi.so.
type Library struct {
	mu     sync.Mutex
	path   string
	handle unsafe.Pointer // nil once closed
	fn     functions
	// gpuErr and cpuErr say why GPU or CPU socket control is unavailable
	// (a symbol missing from this build of the library, an init that
	// failed for that kind of processor); nil when it is available.
	gpuErr, gpuSetErr, cpuErr, cpuSetErr error
	// powerAt is the offset of current_socket_power in the loaded
	// release's amdsmi_power_info_t, -1 when the release is none whose
	// layout is known: GPU draw is then not read.
	powerAt int
}

type functions struct {
	init, shutDown, socketHandles, processorHandles, processorType unsafe.Pointer
	bdf, uuid, powerCapInfo, setPowerCap                           unsafe.Pointer
	processorsByType, cpuCap, cpuCapMax, setCPUCap                 unsafe.Pointer
	libVersion, powerInfo, energyCount                             unsafe.Pointer
}

// Open loads libamd_smi.so from path (or from DefaultPaths when path is
// empty), resolves the functions this package calls and initialises
// amd-smi for AMD GPUs and CPUs. A library that cannot be loaded, lacks a
// function every use needs, or fails to initialise gives an error wrapping
// backend.ErrBlocked, which the caller reports as the backend's blocked
// reason. When only GPU or only CPU socket support is missing, Open
// succeeds and that half reports blocked on use.
func Open(path string) (*Library, error) {
	candidates := DefaultPaths
	if path != "" {
		candidates = []string{path}
	}
	l := &Library{}
	var reasons []string
	for _, p := range candidates {
		h, err := dlopen(p)
		if err == nil {
			l.handle, l.path = h, p
			break
		}
		reasons = append(reasons, err.Error())
	}
	if l.handle == nil {
		return nil, fmt.Errorf("%w: amd-smi unavailable: %s", backend.ErrBlocked, strings.Join(reasons, "; "))
	}
	if err := l.resolve(); err != nil {
		C.jl_dlclose(l.handle)
		return nil, err
	}
	if err := l.start(); err != nil {
		C.jl_dlclose(l.handle)
		return nil, err
	}
	l.powerAt = l.powerInfoLayout()
	return l, nil
}

// Path is the library file dlopen loaded.
func (l *Library) Path() string { return l.path }

// Close shuts amd-smi down and unloads it. Later calls return ErrClosed.
func (l *Library) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return nil
	}
	st := C.jl_call_shut_down(l.fn.shutDown)
	C.jl_dlclose(l.handle)
	l.handle = nil
	if err := statusError(uint32(st)); err != nil {
		return fmt.Errorf("amdsmi_shut_down: %w", err)
	}
	return nil
}

// resolve looks up every function. The core ones are required; the GPU
// and CPU socket groups only disable their half when missing, since
// amd-smi builds without the EPYC (ESMI) part exist.
func (l *Library) resolve() error {
	type sym struct {
		name string
		dst  *unsafe.Pointer
		miss *error
	}
	var core error
	syms := []sym{
		{"amdsmi_init", &l.fn.init, &core},
		{"amdsmi_shut_down", &l.fn.shutDown, &core},
		{"amdsmi_get_socket_handles", &l.fn.socketHandles, &core},
		{"amdsmi_get_processor_handles", &l.fn.processorHandles, &l.gpuErr},
		{"amdsmi_get_processor_type", &l.fn.processorType, &l.gpuErr},
		{"amdsmi_get_gpu_device_bdf", &l.fn.bdf, &l.gpuErr},
		{"amdsmi_get_power_cap_info", &l.fn.powerCapInfo, &l.gpuErr},
		{"amdsmi_set_power_cap", &l.fn.setPowerCap, &l.gpuSetErr},
		{"amdsmi_get_processor_handles_by_type", &l.fn.processorsByType, &l.cpuErr},
		{"amdsmi_get_cpu_socket_power_cap", &l.fn.cpuCap, &l.cpuErr},
		{"amdsmi_get_cpu_socket_power_cap_max", &l.fn.cpuCapMax, &l.cpuErr},
		{"amdsmi_set_cpu_socket_power_cap", &l.fn.setCPUCap, &l.cpuSetErr},
	}
	for _, s := range syms {
		p, err := l.lookup(s.name)
		if err != nil {
			if *s.miss == nil {
				*s.miss = fmt.Errorf("%w: amd-smi unavailable: %v", backend.ErrBlocked, err)
			}
			continue
		}
		*s.dst = p
	}
	// The UUID is optional: the PCI address stands in for it. So are the
	// readings: without them a GPU is listed and capped with no draw or
	// energy reading (HasPower, HasEnergy false).
	l.fn.uuid, _ = l.lookup("amdsmi_get_gpu_device_uuid")
	l.fn.libVersion, _ = l.lookup("amdsmi_get_lib_version")
	l.fn.powerInfo, _ = l.lookup("amdsmi_get_power_info")
	l.fn.energyCount, _ = l.lookup("amdsmi_get_energy_count")
	return core
}

// powerInfoLayout asks the library its version (which needs amdsmi_init)
// and returns where its amdsmi_power_info_t keeps current_socket_power,
// or -1 when it cannot tell.
func (l *Library) powerInfoLayout() int {
	if l.fn.powerInfo == nil || l.fn.libVersion == nil {
		return -1
	}
	var first C.uint32_t
	if statusError(uint32(C.jl_call_lib_version(l.fn.libVersion, &first))) != nil {
		return -1
	}
	return powerInfoOffset(uint32(first))
}

// powerInfoOffset maps the first field of amdsmi_version_t to the offset
// of current_socket_power: releases 23.x and 24.x (ROCm 6.0 to 6.3) start
// the struct with it; 25.x (ROCm 6.4) and 26.x on (ROCm 7.0 on, where the
// field holds the major version) put a uint64_t socket_power before it.
// Older releases had no current_socket_power at all.
func powerInfoOffset(version uint32) int {
	switch {
	case version == 23 || version == 24:
		return 0
	case version >= 25:
		return 8
	}
	return -1
}

// lookup resolves a symbol of the loaded library.
func (l *Library) lookup(name string) (unsafe.Pointer, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	p := C.jl_dlsym(l.handle, cname)
	if p == nil {
		return nil, fmt.Errorf("%s has no %s (an amd-smi release too old or built without it)", l.path, name)
	}
	return p, nil
}

// start initialises amd-smi for GPUs and CPUs together, else for the one
// kind that works: amdsmi_init fails as a whole when one kind cannot be
// set up (no amdgpu driver, no hsmp driver), and a host with only one of
// them must still get that one.
func (l *Library) start() error {
	st := uint32(C.jl_call_init(l.fn.init, initAMDGPUs|initAMDCPUs))
	if st == 0 {
		return nil
	}
	both := statusError(st)
	if st = uint32(C.jl_call_init(l.fn.init, initAMDGPUs)); st == 0 {
		if l.cpuErr == nil {
			l.cpuErr = fmt.Errorf("%w: amd-smi could not initialise AMD CPUs (%v)", backend.ErrBlocked, both)
		}
		return nil
	}
	gpus := statusError(st)
	if st = uint32(C.jl_call_init(l.fn.init, initAMDCPUs)); st == 0 {
		if l.gpuErr == nil {
			l.gpuErr = fmt.Errorf("%w: amd-smi could not initialise AMD GPUs (%v)", backend.ErrBlocked, gpus)
		}
		return nil
	}
	return fmt.Errorf("%w: amd-smi unavailable: amdsmi_init failed for GPUs (%v) and for CPUs (%v)", backend.ErrBlocked, gpus, statusError(st))
}

// usable is checked, with l.mu held, before every call.
func (l *Library) usable() error {
	if l.handle == nil {
		return fmt.Errorf("%w: %w", backend.ErrBlocked, ErrClosed)
	}
	return nil
}

func dlopen(path string) (unsafe.Pointer, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var buf [512]C.char
	h := C.jl_dlopen(cpath, &buf[0], C.size_t(len(buf)))
	if h == nil {
		return nil, errors.New(C.GoString(&buf[0]))
	}
	return h, nil
}

// The raw calls below run with l.mu held and return amd-smi's status.

// socketHandles lists amd-smi's sockets (one per CPU socket, one per GPU
// on current releases).
func (l *Library) socketHandles() ([]uintptr, error) {
	return listHandles("amdsmi_get_socket_handles", func(n *C.uint32_t, out *C.uintptr_t) C.jl_status {
		return C.jl_call_socket_handles(l.fn.socketHandles, n, out)
	})
}

// processorHandles lists a socket's processors; amd-smi returns GPUs here.
func (l *Library) processorHandles(socket uintptr) ([]uintptr, error) {
	return listHandles("amdsmi_get_processor_handles", func(n *C.uint32_t, out *C.uintptr_t) C.jl_status {
		return C.jl_call_processor_handles(l.fn.processorHandles, C.uintptr_t(socket), n, out)
	})
}

// processorsByType lists a socket's processors of one type.
func (l *Library) processorsByType(socket uintptr, typ uint32) ([]uintptr, error) {
	return listHandles("amdsmi_get_processor_handles_by_type", func(n *C.uint32_t, out *C.uintptr_t) C.jl_status {
		return C.jl_call_processor_handles_by_type(l.fn.processorsByType, C.uintptr_t(socket), C.uint32_t(typ), out, n)
	})
}

// listHandles runs amd-smi's two-step listing: the count with a NULL
// array, then the handles.
func listHandles(name string, call func(n *C.uint32_t, out *C.uintptr_t) C.jl_status) ([]uintptr, error) {
	var n C.uint32_t
	if err := statusError(uint32(call(&n, nil))); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if n == 0 {
		return nil, nil
	}
	out := make([]uintptr, n)
	if err := statusError(uint32(call(&n, (*C.uintptr_t)(unsafe.Pointer(&out[0]))))); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out[:min(int(n), len(out))], nil
}

func (l *Library) processorType(p uintptr) (uint32, error) {
	var t C.uint32_t
	if err := statusError(uint32(C.jl_call_processor_type(l.fn.processorType, C.uintptr_t(p), &t))); err != nil {
		return 0, fmt.Errorf("amdsmi_get_processor_type: %w", err)
	}
	return uint32(t), nil
}

// pciAddress decodes amdsmi_bdf_t: function in bits 0-2, device in 3-7,
// bus in 8-15, domain above, as GCC lays out the header's bitfields on
// little-endian Linux.
func (l *Library) pciAddress(p uintptr) (string, error) {
	var v C.uint64_t
	if err := statusError(uint32(C.jl_call_bdf(l.fn.bdf, C.uintptr_t(p), &v))); err != nil {
		return "", fmt.Errorf("amdsmi_get_gpu_device_bdf: %w", err)
	}
	bdf := uint64(v)
	return fmt.Sprintf("%04x:%02x:%02x.%x", bdf>>16, (bdf>>8)&0xff, (bdf>>3)&0x1f, bdf&0x7), nil
}

// gpuUUID returns the GPU's UUID, or "" when this amd-smi cannot say.
func (l *Library) gpuUUID(p uintptr) string {
	if l.fn.uuid == nil {
		return ""
	}
	var buf [128]C.char
	n := C.uint(len(buf))
	if uint32(C.jl_call_uuid(l.fn.uuid, C.uintptr_t(p), &n, &buf[0])) != 0 {
		return ""
	}
	buf[len(buf)-1] = 0
	return C.GoString(&buf[0])
}

// capInfo is amdsmi_power_cap_info_t's caps, in microwatts.
type capInfo struct{ cur, def, min, max uint64 }

func (l *Library) powerCapInfo(p uintptr) (capInfo, error) {
	var info C.jl_power_cap_info
	if err := statusError(uint32(C.jl_call_power_cap_info(l.fn.powerCapInfo, C.uintptr_t(p), 0, &info))); err != nil {
		return capInfo{}, fmt.Errorf("amdsmi_get_power_cap_info: %w", err)
	}
	return capInfo{
		cur: uint64(info.power_cap), def: uint64(info.default_power_cap),
		min: uint64(info.min_power_cap), max: uint64(info.max_power_cap),
	}, nil
}

// unsupported are the values amd-smi puts in a power field it cannot
// fill: UINT32_MAX (documented since ROCm 7.0), and the 0xFFFF that 6.x
// releases set first and gpu_metrics uses for a missing 16-bit value.
func unsupported(w uint32) bool { return w == math.MaxUint32 || w == math.MaxUint16 }

// gpuPower reads the GPU's draw in watts from amdsmi_get_power_info:
// current_socket_power where the GPU reports it (MI300 and later), else
// average_socket_power (MI200, Navi and older parts), as the hwmon
// backend reads power1_input or power1_average. A zero is taken only when
// the other field has nothing better. ok is false when there is no
// reading: an unknown layout, a failed call, both fields unsupported. A
// failed reading is no error of the GPU's listing, which goes on without
// it. l.mu is held.
func (l *Library) gpuPower(p uintptr) (watts float64, ok bool) {
	if l.powerAt < 0 {
		return 0, false
	}
	var cur, avg C.uint32_t
	if statusError(uint32(C.jl_call_power_info(l.fn.powerInfo, C.uintptr_t(p), C.size_t(l.powerAt), &cur, &avg))) != nil {
		return 0, false
	}
	for _, w := range []uint32{uint32(cur), uint32(avg)} {
		if !unsupported(w) && w > 0 {
			return float64(w), true
		}
	}
	for _, w := range []uint32{uint32(cur), uint32(avg)} {
		if !unsupported(w) {
			return float64(w), true
		}
	}
	return 0, false
}

// gpuEnergy reads the GPU's energy counter in joules from
// amdsmi_get_energy_count: counts times the resolution, which amd-smi
// gives in microjoules per count (about 15.3 µJ on current parts). The
// counter runs from the driver's load; the meter above treats one that
// goes backwards (a reload, or an older part's 32-bit counter wrapping)
// as a reset. ok is false when there is no reading. l.mu is held.
func (l *Library) gpuEnergy(p uintptr) (joules float64, ok bool) {
	if l.fn.energyCount == nil {
		return 0, false
	}
	var counts, ts C.uint64_t
	var res C.float
	if statusError(uint32(C.jl_call_energy_count(l.fn.energyCount, C.uintptr_t(p), &counts, &res, &ts))) != nil {
		return 0, false
	}
	uj := float64(res)
	if !(uj > 0) || math.IsInf(uj, 0) {
		return 0, false
	}
	return float64(counts) * uj / 1e6, true
}

func (l *Library) setPowerCap(p uintptr, uw uint64) error {
	if err := statusError(uint32(C.jl_call_set_power_cap(l.fn.setPowerCap, C.uintptr_t(p), 0, C.uint64_t(uw)))); err != nil {
		return fmt.Errorf("amdsmi_set_power_cap(%d µW): %w", uw, err)
	}
	return nil
}

func (l *Library) cpuSocketCap(p uintptr) (uint32, error) {
	var mw C.uint32_t
	if err := statusError(uint32(C.jl_call_cpu_get(l.fn.cpuCap, C.uintptr_t(p), &mw))); err != nil {
		return 0, fmt.Errorf("amdsmi_get_cpu_socket_power_cap: %w", err)
	}
	return uint32(mw), nil
}

func (l *Library) cpuSocketCapMax(p uintptr) (uint32, error) {
	var mw C.uint32_t
	if err := statusError(uint32(C.jl_call_cpu_get(l.fn.cpuCapMax, C.uintptr_t(p), &mw))); err != nil {
		return 0, fmt.Errorf("amdsmi_get_cpu_socket_power_cap_max: %w", err)
	}
	return uint32(mw), nil
}

func (l *Library) setCPUSocketCap(p uintptr, mw uint32) error {
	if err := statusError(uint32(C.jl_call_cpu_set(l.fn.setCPUCap, C.uintptr_t(p), C.uint32_t(mw)))); err != nil {
		return fmt.Errorf("amdsmi_set_cpu_socket_power_cap(%d mW): %w", mw, err)
	}
	return nil
}
