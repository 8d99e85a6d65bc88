/*
 * A stand-in for libamd_smi.so, compiled by the amdsmi package's tests
 * (gcc -shared -fPIC) so that Open, dlsym and every call run for real.
 *
 * It exports the amd-smi functions the package calls, with amd-smi's ABI,
 * over state kept in globals: two CPU sockets and two GPUs, each GPU on
 * its own socket as current amd-smi releases arrange them. The GPUs behave
 * like amdgpu (caps in microwatts, kept in whole watts, out-of-range caps
 * refused); the CPU sockets like the EPYC SMU (milliwatts, a limit below
 * the floor raised to it).
 *
 * Each GPU also draws power and counts energy: amdsmi_get_power_info
 * reports the draw, and every amdsmi_get_energy_count call returns the
 * counter and then moves it on by one second of that draw, so successive
 * reads see it advance as the ticks of a meter would.
 *
 * Tests steer it through the exported fake_* variables (found with dlsym)
 * and, for what happens inside amdsmi_init and which release it is,
 * environment variables:
 *   FAKE_AMDSMI_NO_CPUS=1  initialising CPUs fails as without the hsmp driver
 *   FAKE_AMDSMI_NO_GPUS=1  initialising GPUs fails as without amdgpu
 *   FAKE_AMDSMI_VERSION=N  the release amdsmi_get_lib_version reports and
 *                          whose amdsmi_power_info_t layout it writes: 24
 *                          (ROCm 6.1 to 6.3, the default), 25 (ROCm 6.4),
 *                          26 and on (ROCm 7.0 on)
 * Building with -DFAKE_OMIT_SET_POWER_CAP, -DFAKE_OMIT_SOCKET_HANDLES,
 * -DFAKE_OMIT_POWER_INFO, -DFAKE_OMIT_ENERGY_COUNT or
 * -DFAKE_OMIT_LIB_VERSION leaves that function out, as an old or partial
 * library would.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	ST_SUCCESS = 0,
	ST_INVAL = 1,
	ST_INPUT_OUT_OF_BOUNDS = 17,
	ST_NOT_INIT = 32,
	ST_DRIVER_NOT_LOADED = 34,
	ST_NO_HSMP_DRV = 47,
};

enum { INIT_AMD_CPUS = 1, INIT_AMD_GPUS = 2 };
enum { TYPE_AMD_GPU = 1, TYPE_AMD_CPU = 2 };

/* The header's union, so the test exercises GCC's real bitfield layout. */
typedef union {
	struct {
		uint64_t function_number : 3;
		uint64_t device_number : 5;
		uint64_t bus_number : 8;
		uint64_t domain_number : 48;
	};
	uint64_t as_uint;
} fake_bdf;

/* amdsmi_version_t before ROCm 7.0, and since (the year dropped). */
typedef struct {
	uint32_t year, major, minor, release;
	const char *build;
} fake_version_6;

typedef struct {
	uint32_t major, minor, release;
	const char *build;
} fake_version_7;

/*
 * amdsmi_power_info_t in its three layouts, which a caller cannot tell
 * apart but by the release: ROCm 6.0 to 6.3, ROCm 6.4, ROCm 7.0 on.
 */
typedef struct {
	uint32_t current_socket_power;
	uint32_t average_socket_power;
	uint32_t gfx_voltage, soc_voltage, mem_voltage;
	uint32_t power_limit;
	uint32_t reserved[11];
} fake_power_info_6_0;

typedef struct {
	uint64_t socket_power;
	uint32_t current_socket_power;
	uint32_t average_socket_power;
	uint32_t gfx_voltage, soc_voltage, mem_voltage;
	uint32_t power_limit;
	uint32_t reserved[2];
} fake_power_info_6_4;

typedef struct {
	uint64_t socket_power;
	uint32_t current_socket_power;
	uint32_t average_socket_power;
	uint64_t gfx_voltage, soc_voltage, mem_voltage;
	uint32_t power_limit;
	uint64_t reserved[18];
} fake_power_info_7_0;

_Static_assert(sizeof(fake_power_info_6_0) == 68, "amdsmi_power_info_t of ROCm 6.0-6.3");
_Static_assert(sizeof(fake_power_info_6_4) == 40, "amdsmi_power_info_t of ROCm 6.4");
_Static_assert(sizeof(fake_power_info_7_0) == 192, "amdsmi_power_info_t of ROCm 7.0");

typedef struct {
	uint64_t power_cap;
	uint64_t default_power_cap;
	uint64_t dpm_cap;
	uint64_t min_power_cap;
	uint64_t max_power_cap;
	uint64_t reserved[3];
} fake_power_cap_info;

struct processor {
	uint32_t type;
	int index;
};

struct socket {
	struct processor *proc;
};

static struct processor cpus[2] = {{TYPE_AMD_CPU, 0}, {TYPE_AMD_CPU, 1}};
static struct processor gpus[2] = {{TYPE_AMD_GPU, 0}, {TYPE_AMD_GPU, 1}};
static struct socket sockets[4] = {{&cpus[0]}, {&cpus[1]}, {&gpus[0]}, {&gpus[1]}};

static struct {
	uint64_t domain, bus, device, function;
	uint64_t cap, def, min, max; /* microwatts */
	const char *uuid;
} gpu_state[2] = {
	{0x0000, 0xc1, 0, 0, 300000000, 300000000, 100000000, 300000000, "6aff740f-0000-1000-8000-000000000001"},
	{0x0001, 0x41, 0, 0, 750000000, 750000000, 200000000, 750000000, "85ff74a1-0000-1000-8000-000000000002"},
};

static uint32_t cpu_cap_mw[2] = {280000, 280000};
static const uint32_t cpu_max_mw = 360000;
static const uint32_t cpu_floor_mw = 50000;

static int refs;
static uint64_t inited_flags;

/* Steering and counters for the tests. */
uint32_t fake_set_power_cap_calls;
uint32_t fake_set_cpu_socket_power_cap_calls;
uint32_t fake_fail_set_power_cap;           /* status to return; 0 succeeds */
int32_t fake_fail_gpu = -1;                 /* GPU index that fails; -1 every GPU */
uint32_t fake_fail_get_power_cap_info;
uint32_t fake_fail_set_cpu_socket_power_cap;
uint32_t fake_fail_get_power_info;
uint32_t fake_fail_get_energy_count;

/*
 * The GPUs' draw in watts, as amdsmi_get_power_info reports it: GPU 0
 * gives its current socket power, as MI300 parts do; GPU 1 gives only the
 * average (0xFFFF in current_socket_power), as MI200 and older parts do.
 */
uint32_t fake_current_socket_power[2] = {212, 0xFFFF};
uint32_t fake_average_socket_power[2] = {205, 431};

/*
 * The energy counters, in counts of fake_energy_resolution microjoules.
 * fake_energy_counter_bits, when not 0, makes the counter that many bits
 * wide, so that it wraps as older parts' 32-bit accumulators did.
 */
uint64_t fake_energy_count[2] = {1000000000, 3000000000};
float fake_energy_resolution = 15.259f;
uint32_t fake_energy_counter_bits;

static int env_set(const char *name) {
	const char *v = getenv(name);
	return v != NULL && strcmp(v, "1") == 0;
}

/* lib_version is the release FAKE_AMDSMI_VERSION names, 24 by default. */
static uint32_t lib_version(void) {
	const char *v = getenv("FAKE_AMDSMI_VERSION");
	return v != NULL && v[0] != '\0' ? (uint32_t)strtoul(v, NULL, 10) : 24;
}

static int failing(uint32_t status, int gpu) {
	return status != 0 && (fake_fail_gpu < 0 || fake_fail_gpu == gpu);
}

uint32_t amdsmi_init(uint64_t flags) {
	if ((flags & INIT_AMD_CPUS) && env_set("FAKE_AMDSMI_NO_CPUS"))
		return ST_NO_HSMP_DRV;
	if ((flags & INIT_AMD_GPUS) && env_set("FAKE_AMDSMI_NO_GPUS"))
		return ST_DRIVER_NOT_LOADED;
	refs++;
	inited_flags |= flags;
	return ST_SUCCESS;
}

uint32_t amdsmi_shut_down(void) {
	if (refs == 0)
		return ST_NOT_INIT;
	if (--refs == 0)
		inited_flags = 0;
	return ST_SUCCESS;
}

/* socket_listed says whether a socket's processor kind was initialised. */
static int socket_listed(const struct socket *s) {
	uint64_t need = s->proc->type == TYPE_AMD_CPU ? INIT_AMD_CPUS : INIT_AMD_GPUS;
	return (inited_flags & need) != 0;
}

static struct socket *find_socket(void *h) {
	for (int i = 0; i < 4; i++)
		if (h == &sockets[i] && socket_listed(&sockets[i]))
			return &sockets[i];
	return NULL;
}

static int gpu_index(void *h) {
	if (refs == 0 || !(inited_flags & INIT_AMD_GPUS))
		return -1;
	for (int i = 0; i < 2; i++)
		if (h == &gpus[i])
			return i;
	return -1;
}

static int cpu_index(void *h) {
	if (refs == 0 || !(inited_flags & INIT_AMD_CPUS))
		return -1;
	for (int i = 0; i < 2; i++)
		if (h == &cpus[i])
			return i;
	return -1;
}

/* fill follows amd-smi's listing protocol: a NULL array asks for the
 * count; otherwise up to *count handles are copied and *count says how
 * many. */
static uint32_t fill(void **items, uint32_t n, uint32_t *count, void **out) {
	if (count == NULL)
		return ST_INVAL;
	if (out == NULL) {
		*count = n;
		return ST_SUCCESS;
	}
	uint32_t k = *count < n ? *count : n;
	for (uint32_t i = 0; i < k; i++)
		out[i] = items[i];
	*count = k;
	return ST_SUCCESS;
}

#ifndef FAKE_OMIT_SOCKET_HANDLES
uint32_t amdsmi_get_socket_handles(uint32_t *count, void **out) {
	if (refs == 0)
		return ST_NOT_INIT;
	void *items[4];
	uint32_t n = 0;
	for (int i = 0; i < 4; i++)
		if (socket_listed(&sockets[i]))
			items[n++] = &sockets[i];
	return fill(items, n, count, out);
}
#endif

/* amdsmi_get_processor_handles lists a socket's GPUs only, as amd-smi does. */
uint32_t amdsmi_get_processor_handles(void *socket, uint32_t *count, void **out) {
	struct socket *s = find_socket(socket);
	if (s == NULL)
		return ST_INVAL;
	void *items[1];
	uint32_t n = 0;
	if (s->proc->type == TYPE_AMD_GPU)
		items[n++] = s->proc;
	return fill(items, n, count, out);
}

uint32_t amdsmi_get_processor_handles_by_type(void *socket, uint32_t type, void **out, uint32_t *count) {
	struct socket *s = find_socket(socket);
	if (s == NULL)
		return ST_INVAL;
	void *items[1];
	uint32_t n = 0;
	if (s->proc->type == type)
		items[n++] = s->proc;
	return fill(items, n, count, out);
}

uint32_t amdsmi_get_processor_type(void *processor, uint32_t *type) {
	if (type == NULL || (gpu_index(processor) < 0 && cpu_index(processor) < 0))
		return ST_INVAL;
	*type = ((struct processor *)processor)->type;
	return ST_SUCCESS;
}

uint32_t amdsmi_get_gpu_device_bdf(void *processor, fake_bdf *bdf) {
	int i = gpu_index(processor);
	if (i < 0 || bdf == NULL)
		return ST_INVAL;
	memset(bdf, 0, sizeof *bdf);
	bdf->domain_number = gpu_state[i].domain;
	bdf->bus_number = gpu_state[i].bus;
	bdf->device_number = gpu_state[i].device;
	bdf->function_number = gpu_state[i].function;
	return ST_SUCCESS;
}

uint32_t amdsmi_get_gpu_device_uuid(void *processor, unsigned int *len, char *uuid) {
	int i = gpu_index(processor);
	if (i < 0 || len == NULL || uuid == NULL || *len < 38)
		return ST_INVAL;
	snprintf(uuid, *len, "%s", gpu_state[i].uuid);
	*len = (unsigned int)strlen(uuid) + 1;
	return ST_SUCCESS;
}

uint32_t amdsmi_get_power_cap_info(void *processor, uint32_t sensor, fake_power_cap_info *info) {
	int i = gpu_index(processor);
	if (i < 0 || sensor != 0 || info == NULL)
		return ST_INVAL;
	if (fake_fail_get_power_cap_info != 0 && (fake_fail_gpu < 0 || fake_fail_gpu == i))
		return fake_fail_get_power_cap_info;
	memset(info, 0, sizeof *info);
	info->power_cap = gpu_state[i].cap;
	info->default_power_cap = gpu_state[i].def;
	info->dpm_cap = 2100;
	info->min_power_cap = gpu_state[i].min;
	info->max_power_cap = gpu_state[i].max;
	return ST_SUCCESS;
}

#ifndef FAKE_OMIT_LIB_VERSION
uint32_t amdsmi_get_lib_version(void *out) {
	if (refs == 0)
		return ST_NOT_INIT;
	if (out == NULL)
		return ST_INVAL;
	uint32_t v = lib_version();
	if (v >= 26) {
		fake_version_7 ver = {v, 0, 0, "fake"};
		memcpy(out, &ver, sizeof ver);
	} else {
		fake_version_6 ver = {v, 7, 0, 0, "fake"};
		memcpy(out, &ver, sizeof ver);
	}
	return ST_SUCCESS;
}
#endif

#ifndef FAKE_OMIT_POWER_INFO
/* amdsmi_get_power_info writes the whole struct of its release's layout. */
uint32_t amdsmi_get_power_info(void *processor, void *out) {
	int i = gpu_index(processor);
	if (i < 0 || out == NULL)
		return ST_INVAL;
	if (failing(fake_fail_get_power_info, i))
		return fake_fail_get_power_info;
	uint32_t v = lib_version();
	uint32_t limit = (uint32_t)(gpu_state[i].cap / 1000000);
	if (v >= 26) {
		fake_power_info_7_0 info;
		memset(&info, 0, sizeof info);
		/* The average here, so that a caller reading this field
		 * for current_socket_power gets a different number. */
		info.socket_power = fake_average_socket_power[i];
		info.current_socket_power = fake_current_socket_power[i] == 0xFFFF ? UINT32_MAX : fake_current_socket_power[i];
		info.average_socket_power = fake_average_socket_power[i];
		info.gfx_voltage = info.soc_voltage = info.mem_voltage = UINT32_MAX;
		info.power_limit = limit;
		memcpy(out, &info, sizeof info);
	} else if (v == 25) {
		fake_power_info_6_4 info;
		memset(&info, 0, sizeof info);
		info.socket_power = UINT32_MAX; /* host only */
		info.current_socket_power = fake_current_socket_power[i];
		info.average_socket_power = fake_average_socket_power[i];
		info.gfx_voltage = info.soc_voltage = info.mem_voltage = 0xFFFF;
		info.power_limit = limit;
		memcpy(out, &info, sizeof info);
	} else {
		fake_power_info_6_0 info;
		memset(&info, 0, sizeof info);
		info.current_socket_power = fake_current_socket_power[i];
		info.average_socket_power = fake_average_socket_power[i];
		info.gfx_voltage = info.soc_voltage = info.mem_voltage = 0xFFFF;
		info.power_limit = limit;
		memcpy(out, &info, sizeof info);
	}
	return ST_SUCCESS;
}
#endif

#ifndef FAKE_OMIT_ENERGY_COUNT
static uint64_t energy_timestamp_ns[2];

uint32_t amdsmi_get_energy_count(void *processor, uint64_t *counts, float *resolution, uint64_t *timestamp) {
	int i = gpu_index(processor);
	if (i < 0 || counts == NULL || resolution == NULL || timestamp == NULL)
		return ST_INVAL;
	if (failing(fake_fail_get_energy_count, i))
		return fake_fail_get_energy_count;
	*counts = fake_energy_count[i];
	*resolution = fake_energy_resolution;
	*timestamp = energy_timestamp_ns[i];

	/* One second of the draw, for the next read. */
	uint32_t w = fake_current_socket_power[i] != 0xFFFF ? fake_current_socket_power[i] : fake_average_socket_power[i];
	fake_energy_count[i] += (uint64_t)((double)w * 1e6 / fake_energy_resolution);
	if (fake_energy_counter_bits > 0 && fake_energy_counter_bits < 64)
		fake_energy_count[i] &= ((uint64_t)1 << fake_energy_counter_bits) - 1;
	energy_timestamp_ns[i] += 1000000000;
	return ST_SUCCESS;
}
#endif

#ifndef FAKE_OMIT_SET_POWER_CAP
uint32_t amdsmi_set_power_cap(void *processor, uint32_t sensor, uint64_t cap) {
	int i = gpu_index(processor);
	if (i < 0 || sensor != 0)
		return ST_INVAL;
	fake_set_power_cap_calls++;
	if (fake_fail_set_power_cap != 0 && (fake_fail_gpu < 0 || fake_fail_gpu == i))
		return fake_fail_set_power_cap;
	if (cap < gpu_state[i].min || cap > gpu_state[i].max)
		return ST_INPUT_OUT_OF_BOUNDS;
	/* amdgpu divides by 10^6: the cap is kept in whole watts. */
	gpu_state[i].cap = cap / 1000000 * 1000000;
	return ST_SUCCESS;
}
#endif

uint32_t amdsmi_get_cpu_socket_power_cap(void *processor, uint32_t *mw) {
	int i = cpu_index(processor);
	if (i < 0 || mw == NULL)
		return ST_INVAL;
	*mw = cpu_cap_mw[i];
	return ST_SUCCESS;
}

uint32_t amdsmi_get_cpu_socket_power_cap_max(void *processor, uint32_t *mw) {
	if (cpu_index(processor) < 0 || mw == NULL)
		return ST_INVAL;
	*mw = cpu_max_mw;
	return ST_SUCCESS;
}

uint32_t amdsmi_set_cpu_socket_power_cap(void *processor, uint32_t mw) {
	int i = cpu_index(processor);
	if (i < 0)
		return ST_INVAL;
	fake_set_cpu_socket_power_cap_calls++;
	if (fake_fail_set_cpu_socket_power_cap != 0)
		return fake_fail_set_cpu_socket_power_cap;
	if (mw > cpu_max_mw)
		return ST_INPUT_OUT_OF_BOUNDS;
	cpu_cap_mw[i] = mw < cpu_floor_mw ? cpu_floor_mw : mw;
	return ST_SUCCESS;
}
