/*
 * fake_nvml.c is a stand-in for libnvidia-ml.so.1 on machines without an
 * NVIDIA GPU. It exports the NVML functions Joulie's nvml backend calls,
 * in the versions go-nvml picks when it loads the library, and keeps the
 * devices in plain files under $FAKE_NVML_DIR so that tests and
 * simulations drive the real agent binary and change the "hardware" while
 * it runs. The Go package around it (fakenvml) builds it and lays out the
 * files; its doc comment describes the layout.
 *
 * The types and return codes are declared here rather than taken from
 * nvml.h so that building needs nothing but gcc; the values and layouts
 * are nvml.h's, which go-nvml's generated Go types also mirror.
 *
 * Build: gcc -shared -fPIC -O2 -Wall -Werror -o libnvidia-ml.so.1 fake_nvml.c
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

/*
 * nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it: 68 bytes, no padding.
 * go-nvml's PciInfo has the same fields, so a wrong size here would
 * corrupt the Go caller's stack.
 */
typedef struct {
	char busIdLegacy[16]; /* "%04X:%02X:%02X.0" */
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId; /* device id << 16 | vendor id */
	unsigned int pciSubSystemId;
	char busId[32]; /* "%08X:%02X:%02X.0" */
} nvmlPciInfo_t;

_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t must match nvml.h");

/*
 * A handle points at one of these. Its only content is the index, so a
 * handle stays valid across nvmlShutdown and nvmlInit, and one for a GPU
 * that has since disappeared from "count" reports the GPU lost.
 */
struct nvmlDevice_st {
	unsigned int index;
};
typedef struct nvmlDevice_st *nvmlDevice_t;

#define FAKE_MAX_GPUS 64
/* Longest value file the library reads: names and UUIDs are under 96. */
#define FAKE_MAX_VALUE 256

static struct nvmlDevice_st devices[FAKE_MAX_GPUS];

/* MIG devices: handles of their own, mig_devices[gpu][slot], whose index
 * is the slot; a GPU has MIG mode on when gpu<N>/mig_mode holds 1, and its
 * MIG devices' UUIDs in gpu<N>/mig<K>_uuid. */
#define FAKE_MAX_MIGS 7
static struct nvmlDevice_st mig_devices[FAKE_MAX_GPUS][FAKE_MAX_MIGS];

/*
 * One lock for everything: NVML calls are short and a test needs each
 * call to see one consistent state, not a throughput.
 */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* NVML counts nvmlInit calls; the library is usable while this is > 0. */
static unsigned int init_count;
/* $FAKE_NVML_DIR as the last successful nvmlInit found it. */
static char state_dir[PATH_MAX];

/* TOP names a file at the top of the state directory, not in a gpu<N>/. */
#define TOP UINT_MAX

static int state_path(char *out, size_t size, unsigned int gpu, const char *name)
{
	int n;

	if (gpu == TOP)
		n = snprintf(out, size, "%s/%s", state_dir, name);
	else
		n = snprintf(out, size, "%s/gpu%u/%s", state_dir, gpu, name);
	return n > 0 && (size_t)n < size ? 0 : -1;
}

/*
 * read_value reads a state file into buf without its trailing white
 * space. It returns 0, or -ENOENT when the file does not exist, or -EIO
 * for anything else (unreadable, too long).
 */
static int read_value(unsigned int gpu, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	size_t len = 0;
	ssize_t n;
	int fd;

	if (state_path(path, sizeof(path), gpu, name) != 0)
		return -EIO;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? -ENOENT : -EIO;
	while (len < size) {
		n = read(fd, buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return -EIO;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len == size)
		return -EIO; /* no room for the terminator: too long to be a value */
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ' ||
			   buf[len - 1] == '\t' || buf[len - 1] == '\r'))
		len--;
	buf[len] = '\0';
	return 0;
}

static int exists(unsigned int gpu, const char *name)
{
	char path[PATH_MAX];

	return state_path(path, sizeof(path), gpu, name) == 0 && access(path, F_OK) == 0;
}

/* parse_uint accepts plain decimal only: strtoull alone would take "-1". */
static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

/*
 * read_number reads a numeric device file. A missing file means the
 * device lacks the feature (NOT_SUPPORTED, as a board without power
 * readings answers); a file that is there but not a number is a broken
 * fixture (UNKNOWN).
 */
static nvmlReturn_t read_number(unsigned int gpu, const char *name, unsigned long long max,
				unsigned long long *out)
{
	char buf[FAKE_MAX_VALUE];
	int err = read_value(gpu, name, buf, sizeof(buf));

	if (err == -ENOENT)
		return NVML_ERROR_NOT_SUPPORTED;
	if (err != 0 || parse_uint(buf, max, out) != 0)
		return NVML_ERROR_UNKNOWN;
	return NVML_SUCCESS;
}

/*
 * read_fault reads a fault file holding a return code. It returns
 * NVML_SUCCESS when the file is absent; unparsable content fails as
 * UNKNOWN so that a typo in a test still fails the call.
 */
static nvmlReturn_t read_fault(unsigned int gpu, const char *name)
{
	char buf[FAKE_MAX_VALUE];
	unsigned long long code;
	int err = read_value(gpu, name, buf, sizeof(buf));

	if (err == -ENOENT)
		return NVML_SUCCESS;
	if (err != 0 || parse_uint(buf, INT_MAX, &code) != 0)
		return NVML_ERROR_UNKNOWN;
	return (nvmlReturn_t)code;
}

static nvmlReturn_t read_count(unsigned int *count)
{
	unsigned long long n;
	nvmlReturn_t ret = read_number(TOP, "count", FAKE_MAX_GPUS, &n);

	if (ret != NVML_SUCCESS)
		return NVML_ERROR_UNKNOWN;
	*count = (unsigned int)n;
	return NVML_SUCCESS;
}

/*
 * write_value replaces a state file atomically (a temporary file renamed
 * over it), so that a test reading it, or another process sharing the
 * state, never sees half a value.
 */
static nvmlReturn_t write_value(unsigned int gpu, const char *name, const char *value)
{
	char path[PATH_MAX], tmp[PATH_MAX], tmpname[64];
	size_t len = strlen(value), done = 0;
	ssize_t n;
	int fd, saved;

	snprintf(tmpname, sizeof(tmpname), ".%s.%ld.tmp", name, (long)getpid());
	if (state_path(path, sizeof(path), gpu, name) != 0 ||
	    state_path(tmp, sizeof(tmp), gpu, tmpname) != 0)
		return NVML_ERROR_UNKNOWN;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	while (done < len) {
		n = write(fd, value + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			saved = errno;
			close(fd);
			unlink(tmp);
			errno = saved;
			goto fail;
		}
		done += (size_t)n;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		saved = errno;
		unlink(tmp);
		errno = saved;
		goto fail;
	}
	return NVML_SUCCESS;
fail:
	/* A state directory the caller may not write is a refused write. */
	if (errno == EACCES || errno == EPERM || errno == EROFS)
		return NVML_ERROR_NO_PERMISSION;
	return NVML_ERROR_UNKNOWN;
}

/*
 * device_index checks that NVML is initialised and dev is one of our
 * handles for a GPU that is still there, and gives its index. A GPU that
 * is gone from "count" or has a "lost" file has fallen off the bus.
 */
static nvmlReturn_t device_index(nvmlDevice_t dev, unsigned int *index)
{
	uintptr_t p, base;
	unsigned int count;
	nvmlReturn_t ret;

	if (init_count == 0)
		return NVML_ERROR_UNINITIALIZED;
	/* Compared as integers: ordering pointers into different objects is
	 * undefined in C, and a bogus handle is exactly that. */
	p = (uintptr_t)dev;
	base = (uintptr_t)devices;
	if (p < base || p >= base + sizeof(devices) || (p - base) % sizeof(devices[0]) != 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	ret = read_count(&count);
	if (ret != NVML_SUCCESS)
		return ret;
	if (dev->index >= count || exists(dev->index, "lost"))
		return NVML_ERROR_GPU_IS_LOST;
	*index = dev->index;
	return NVML_SUCCESS;
}

/* read_string copies a text file into a caller's buffer of length bytes. */
static nvmlReturn_t read_string(nvmlDevice_t dev, const char *name, char *out, unsigned int length)
{
	char buf[FAKE_MAX_VALUE];
	unsigned int index;
	nvmlReturn_t ret = device_index(dev, &index);

	if (ret != NVML_SUCCESS)
		return ret;
	if (out == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (read_value(index, name, buf, sizeof(buf)) != 0)
		return NVML_ERROR_UNKNOWN;
	if (strlen(buf) >= length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(out, buf, strlen(buf) + 1);
	return NVML_SUCCESS;
}

/* read_mw reads a milliwatt file of GPU index into *out. */
static nvmlReturn_t read_mw(unsigned int index, const char *name, unsigned int *out)
{
	unsigned long long v;
	nvmlReturn_t ret = read_number(index, name, UINT32_MAX, &v);

	if (ret == NVML_SUCCESS)
		*out = (unsigned int)v;
	return ret;
}

/* get_mw is the body of the getters that return one milliwatt file. */
static nvmlReturn_t get_mw(nvmlDevice_t device, const char *name, unsigned int *out)
{
	unsigned int index;
	nvmlReturn_t ret = device_index(device, &index);

	if (ret != NVML_SUCCESS)
		return ret;
	if (out == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	return read_mw(index, name, out);
}

static nvmlReturn_t read_constraints(unsigned int index, unsigned int *lo, unsigned int *hi)
{
	nvmlReturn_t ret = read_mw(index, "min_mw", lo);

	if (ret != NVML_SUCCESS)
		return ret;
	return read_mw(index, "max_mw", hi);
}

static nvmlReturn_t init_locked(void)
{
	const char *dir = getenv("FAKE_NVML_DIR");
	struct stat st;
	unsigned int count;
	nvmlReturn_t ret;

	/* No state directory is a host without the kernel module. */
	if (dir == NULL || dir[0] == '\0' || strlen(dir) >= sizeof(state_dir) ||
	    stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return NVML_ERROR_DRIVER_NOT_LOADED;
	/*
	 * The directory is taken from every nvmlInit, not only the first, so
	 * that a test process can point one loaded library at a new state.
	 */
	strcpy(state_dir, dir);
	ret = read_fault(TOP, "init_error");
	if (ret != NVML_SUCCESS)
		return ret;
	ret = read_count(&count);
	if (ret != NVML_SUCCESS)
		return ret;
	init_count++;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void)
{
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = init_locked();
	pthread_mutex_unlock(&mu);
	return ret;
}

/*
 * The flags (no GPUs, no attach) change nothing here: there is nothing to
 * attach, and a count of 0 already initialises.
 */
nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
	(void)flags;
	return nvmlInit_v2();
}

nvmlReturn_t nvmlShutdown(void)
{
	nvmlReturn_t ret = NVML_SUCCESS;

	pthread_mutex_lock(&mu);
	if (init_count == 0)
		ret = NVML_ERROR_UNINITIALIZED;
	else
		init_count--;
	pthread_mutex_unlock(&mu);
	return ret;
}

/* Callable before nvmlInit, as the real one is; go-nvml uses it for Error(). */
const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
	case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT: return "Timeout";
	case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
	case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
	case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
	case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
	case NVML_ERROR_RESET_REQUIRED: return "GPU requires reset";
	case NVML_ERROR_OPERATING_SYSTEM: return "GPU access blocked by the operating system";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
	case NVML_ERROR_IN_USE: return "In use by another client";
	case NVML_ERROR_MEMORY: return "Insufficient Memory";
	case NVML_ERROR_NO_DATA: return "No data";
	default: return "Unknown Error";
	}
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	if (init_count == 0)
		ret = NVML_ERROR_UNINITIALIZED;
	else if (deviceCount == NULL)
		ret = NVML_ERROR_INVALID_ARGUMENT;
	else
		ret = read_count(deviceCount);
	pthread_mutex_unlock(&mu);
	return ret;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	unsigned int count;
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	if (init_count == 0)
		ret = NVML_ERROR_UNINITIALIZED;
	else if (device == NULL)
		ret = NVML_ERROR_INVALID_ARGUMENT;
	else if ((ret = read_count(&count)) != NVML_SUCCESS)
		;
	else if (index >= count)
		ret = NVML_ERROR_INVALID_ARGUMENT;
	else if (exists(index, "lost"))
		ret = NVML_ERROR_GPU_IS_LOST;
	else {
		devices[index].index = index;
		*device = &devices[index];
	}
	pthread_mutex_unlock(&mu);
	return ret;
}

/*
 * A lost GPU is still matched by the UUID in its files, and then reported
 * lost, rather than NOT_FOUND: the caller learns the GPU it asked for is
 * there but unreachable.
 */
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
	char buf[FAKE_MAX_VALUE];
	unsigned int count, i;
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	if (init_count == 0)
		ret = NVML_ERROR_UNINITIALIZED;
	else if (uuid == NULL || device == NULL)
		ret = NVML_ERROR_INVALID_ARGUMENT;
	else if ((ret = read_count(&count)) == NVML_SUCCESS) {
		ret = NVML_ERROR_NOT_FOUND;
		for (i = 0; i < count; i++) {
			if (read_value(i, "uuid", buf, sizeof(buf)) != 0 || strcmp(buf, uuid) != 0)
				continue;
			if (exists(i, "lost")) {
				ret = NVML_ERROR_GPU_IS_LOST;
			} else {
				devices[i].index = i;
				*device = &devices[i];
				ret = NVML_SUCCESS;
			}
			break;
		}
	}
	pthread_mutex_unlock(&mu);
	return ret;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = read_string(device, "name", name, length);
	pthread_mutex_unlock(&mu);
	return ret;
}

/* mig_of finds the GPU and slot of a MIG device handle; -1 for any other. */
static int mig_of(nvmlDevice_t dev, unsigned int *gpu, unsigned int *slot)
{
	uintptr_t p = (uintptr_t)dev, base = (uintptr_t)mig_devices;
	size_t off;

	if (p < base || p >= base + sizeof(mig_devices) || (p - base) % sizeof(mig_devices[0][0]) != 0)
		return -1;
	off = (p - base) / sizeof(mig_devices[0][0]);
	*gpu = (unsigned int)(off / FAKE_MAX_MIGS);
	*slot = (unsigned int)(off % FAKE_MAX_MIGS);
	return 0;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	char name[32], buf[FAKE_MAX_VALUE];
	unsigned int gpu, slot;
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	if (mig_of(device, &gpu, &slot) == 0) {
		snprintf(name, sizeof(name), "mig%u_uuid", slot);
		if (init_count == 0)
			ret = NVML_ERROR_UNINITIALIZED;
		else if (uuid == NULL)
			ret = NVML_ERROR_INVALID_ARGUMENT;
		else if (read_value(gpu, name, buf, sizeof(buf)) != 0)
			ret = NVML_ERROR_NOT_FOUND;
		else if (strlen(buf) >= length)
			ret = NVML_ERROR_INSUFFICIENT_SIZE;
		else {
			memcpy(uuid, buf, strlen(buf) + 1);
			ret = NVML_SUCCESS;
		}
	} else {
		ret = read_string(device, "uuid", uuid, length);
	}
	pthread_mutex_unlock(&mu);
	return ret;
}

/* A GPU without gpu<N>/mig_mode is not MIG-capable: NOT_SUPPORTED, as on
 * boards before A100. */
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
	char buf[FAKE_MAX_VALUE];
	unsigned long long mode;
	unsigned int index;
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = device_index(device, &index);
	if (ret == NVML_SUCCESS) {
		if (currentMode == NULL || pendingMode == NULL)
			ret = NVML_ERROR_INVALID_ARGUMENT;
		else if (read_value(index, "mig_mode", buf, sizeof(buf)) != 0 || parse_uint(buf, 1, &mode) != 0)
			ret = NVML_ERROR_NOT_SUPPORTED;
		else
			*currentMode = *pendingMode = (unsigned int)mode;
	}
	pthread_mutex_unlock(&mu);
	return ret;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
	unsigned int index;
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = device_index(device, &index);
	if (ret == NVML_SUCCESS) {
		if (count == NULL)
			ret = NVML_ERROR_INVALID_ARGUMENT;
		else if (!exists(index, "mig_mode"))
			ret = NVML_ERROR_NOT_SUPPORTED;
		else
			*count = FAKE_MAX_MIGS;
	}
	pthread_mutex_unlock(&mu);
	return ret;
}

/* A slot without gpu<N>/mig<K>_uuid holds no MIG device: NOT_FOUND. */
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)
{
	char name[32];
	unsigned int gpu;
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = device_index(device, &gpu);
	if (ret == NVML_SUCCESS) {
		snprintf(name, sizeof(name), "mig%u_uuid", index);
		if (migDevice == NULL || index >= FAKE_MAX_MIGS)
			ret = NVML_ERROR_INVALID_ARGUMENT;
		else if (!exists(gpu, "mig_mode"))
			ret = NVML_ERROR_NOT_SUPPORTED;
		else if (!exists(gpu, name))
			ret = NVML_ERROR_NOT_FOUND;
		else {
			mig_devices[gpu][index].index = index;
			*migDevice = &mig_devices[gpu][index];
		}
	}
	pthread_mutex_unlock(&mu);
	return ret;
}

/*
 * pci_bus_id holds domain:bus:device.function in hex, with a four- or
 * eight-digit domain ("0000:18:00.0" as sysfs writes it, or NVML's
 * "00000000:18:00.0"). The bus IDs come back in NVML's spelling.
 */
static nvmlReturn_t pci_info_locked(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	char buf[FAKE_MAX_VALUE], tail;
	unsigned int index, domain, bus, dev, fn;
	nvmlReturn_t ret = device_index(device, &index);

	if (ret != NVML_SUCCESS)
		return ret;
	if (pci == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (read_value(index, "pci_bus_id", buf, sizeof(buf)) != 0 ||
	    sscanf(buf, "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) != 4 ||
	    domain > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
		return NVML_ERROR_UNKNOWN;
	memset(pci, 0, sizeof(*pci));
	pci->domain = domain;
	pci->bus = bus;
	pci->device = dev;
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X", domain, bus, dev, fn);
	snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.%X", domain, bus, dev, fn);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = pci_info_locked(device, pci);
	pthread_mutex_unlock(&mu);
	return ret;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device, unsigned int *minLimit,
							  unsigned int *maxLimit)
{
	unsigned int index, lo, hi;
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = device_index(device, &index);
	if (ret == NVML_SUCCESS && (minLimit == NULL || maxLimit == NULL))
		ret = NVML_ERROR_INVALID_ARGUMENT;
	if (ret == NVML_SUCCESS)
		ret = read_constraints(index, &lo, &hi);
	if (ret == NVML_SUCCESS) {
		*minLimit = lo;
		*maxLimit = hi;
	}
	pthread_mutex_unlock(&mu);
	return ret;
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned int *defaultLimit)
{
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = get_mw(device, "default_mw", defaultLimit);
	pthread_mutex_unlock(&mu);
	return ret;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit)
{
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = get_mw(device, "limit_mw", limit);
	pthread_mutex_unlock(&mu);
	return ret;
}

/*
 * The enforced limit is the lowest of every limit acting on the GPU. An
 * "enforced_mw" file stands for one set elsewhere (by the board, or
 * another tool); without it the management limit is the only one.
 */
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
	unsigned int index, mw, other;
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = device_index(device, &index);
	if (ret == NVML_SUCCESS && limit == NULL)
		ret = NVML_ERROR_INVALID_ARGUMENT;
	if (ret == NVML_SUCCESS)
		ret = read_mw(index, "limit_mw", &mw);
	if (ret == NVML_SUCCESS && exists(index, "enforced_mw")) {
		ret = read_mw(index, "enforced_mw", &other);
		if (ret == NVML_SUCCESS && other < mw)
			mw = other;
	}
	if (ret == NVML_SUCCESS)
		*limit = mw;
	pthread_mutex_unlock(&mu);
	return ret;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = get_mw(device, "power_mw", power);
	pthread_mutex_unlock(&mu);
	return ret;
}

/*
 * advance_energy makes the counter run: with "energy_since_ms" (a Unix
 * time in milliseconds), energy_mj is the counter at that moment and the
 * GPU has drawn power_mw ever since, so the counter reads
 * energy_mj + power_mw x elapsed. Without the file the counter stands.
 */
static nvmlReturn_t advance_energy(unsigned int gpu, unsigned long long *energy)
{
	unsigned long long since, mw;
	struct timespec now;
	long long now_ms;
	nvmlReturn_t ret = read_number(gpu, "energy_since_ms", UINT64_MAX, &since);

	if (ret == NVML_ERROR_NOT_SUPPORTED)
		return NVML_SUCCESS;
	if (ret != NVML_SUCCESS)
		return ret;
	ret = read_number(gpu, "power_mw", UINT32_MAX, &mw);
	if (ret == NVML_ERROR_NOT_SUPPORTED)
		return NVML_SUCCESS;
	if (ret != NVML_SUCCESS)
		return ret;
	clock_gettime(CLOCK_REALTIME, &now);
	now_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	if (now_ms > (long long)since)
		*energy += mw * (unsigned long long)(now_ms - (long long)since) / 1000;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)
{
	unsigned int index;
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = device_index(device, &index);
	if (ret == NVML_SUCCESS && energy == NULL)
		ret = NVML_ERROR_INVALID_ARGUMENT;
	if (ret == NVML_SUCCESS)
		ret = read_number(index, "energy_mj", UINT64_MAX, energy);
	if (ret == NVML_SUCCESS)
		ret = advance_energy(index, energy);
	pthread_mutex_unlock(&mu);
	return ret;
}

/*
 * The driver checks the range itself and refuses a limit outside it with
 * INVALID_ARGUMENT; "set_error" stands in for the refusals that do not
 * depend on the value (NO_PERMISSION without root, NOT_SUPPORTED on boards
 * without power management).
 */
static nvmlReturn_t set_limit_locked(nvmlDevice_t device, unsigned int limit)
{
	char value[16];
	unsigned int index, lo, hi;
	nvmlReturn_t ret = device_index(device, &index);

	if (ret != NVML_SUCCESS)
		return ret;
	ret = read_fault(index, "set_error");
	if (ret != NVML_SUCCESS)
		return ret;
	ret = read_constraints(index, &lo, &hi);
	if (ret != NVML_SUCCESS)
		return ret;
	if (limit < lo || limit > hi)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(value, sizeof(value), "%u\n", limit);
	return write_value(index, "limit_mw", value);
}

nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit)
{
	nvmlReturn_t ret;

	pthread_mutex_lock(&mu);
	ret = set_limit_locked(device, limit);
	pthread_mutex_unlock(&mu);
	return ret;
}
