package amdsmi

import (
	"fmt"

	"joulie.io/joulie/agentd/internal/backend"
)

// Status is a failed amd-smi call's amdsmi_status_t.
type Status uint32

// statusNames are amdsmi_status_t's values as amdsmi.h names them.
var statusNames = map[Status]string{
	1:          "AMDSMI_STATUS_INVAL",
	2:          "AMDSMI_STATUS_NOT_SUPPORTED",
	3:          "AMDSMI_STATUS_NOT_YET_IMPLEMENTED",
	4:          "AMDSMI_STATUS_FAIL_LOAD_MODULE",
	5:          "AMDSMI_STATUS_FAIL_LOAD_SYMBOL",
	6:          "AMDSMI_STATUS_DRM_ERROR",
	7:          "AMDSMI_STATUS_API_FAILED",
	8:          "AMDSMI_STATUS_TIMEOUT",
	9:          "AMDSMI_STATUS_RETRY",
	10:         "AMDSMI_STATUS_NO_PERM",
	11:         "AMDSMI_STATUS_INTERRUPT",
	12:         "AMDSMI_STATUS_IO",
	13:         "AMDSMI_STATUS_ADDRESS_FAULT",
	14:         "AMDSMI_STATUS_FILE_ERROR",
	15:         "AMDSMI_STATUS_OUT_OF_RESOURCES",
	16:         "AMDSMI_STATUS_INTERNAL_EXCEPTION",
	17:         "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS",
	18:         "AMDSMI_STATUS_INIT_ERROR",
	19:         "AMDSMI_STATUS_REFCOUNT_OVERFLOW",
	20:         "AMDSMI_STATUS_DIRECTORY_NOT_FOUND",
	30:         "AMDSMI_STATUS_BUSY",
	31:         "AMDSMI_STATUS_NOT_FOUND",
	32:         "AMDSMI_STATUS_NOT_INIT",
	33:         "AMDSMI_STATUS_NO_SLOT",
	34:         "AMDSMI_STATUS_DRIVER_NOT_LOADED",
	39:         "AMDSMI_STATUS_MORE_DATA",
	40:         "AMDSMI_STATUS_NO_DATA",
	41:         "AMDSMI_STATUS_INSUFFICIENT_SIZE",
	42:         "AMDSMI_STATUS_UNEXPECTED_SIZE",
	43:         "AMDSMI_STATUS_UNEXPECTED_DATA",
	44:         "AMDSMI_STATUS_NON_AMD_CPU",
	45:         "AMDSMI_STATUS_NO_ENERGY_DRV",
	46:         "AMDSMI_STATUS_NO_MSR_DRV",
	47:         "AMDSMI_STATUS_NO_HSMP_DRV",
	48:         "AMDSMI_STATUS_NO_HSMP_SUP",
	49:         "AMDSMI_STATUS_NO_HSMP_MSG_SUP",
	50:         "AMDSMI_STATUS_HSMP_TIMEOUT",
	51:         "AMDSMI_STATUS_NO_DRV",
	52:         "AMDSMI_STATUS_FILE_NOT_FOUND",
	53:         "AMDSMI_STATUS_ARG_PTR_NULL",
	54:         "AMDSMI_STATUS_AMDGPU_RESTART_ERR",
	55:         "AMDSMI_STATUS_SETTING_UNAVAILABLE",
	0xFFFFFFFE: "AMDSMI_STATUS_MAP_ERROR",
	0xFFFFFFFF: "AMDSMI_STATUS_UNKNOWN_ERROR",
}

func (s Status) Error() string {
	if name, ok := statusNames[s]; ok {
		return fmt.Sprintf("%s (%d)", name, uint32(s))
	}
	return fmt.Sprintf("amd-smi status %d", uint32(s))
}

// Blocked reports whether the status means the host cannot do this at all
// (not supported, no permission, a driver missing) rather than a failed
// attempt; Is makes errors.Is(err, backend.ErrBlocked) true for these.
func (s Status) Blocked() bool {
	switch s {
	case 2, 3, // NOT_SUPPORTED, NOT_YET_IMPLEMENTED
		10,     // NO_PERM
		34, 51, // DRIVER_NOT_LOADED, NO_DRV
		44, 45, 46, 47, 48, 49, 55: // NON_AMD_CPU, NO_ENERGY_DRV, NO_MSR_DRV, NO_HSMP_DRV, NO_HSMP_SUP, NO_HSMP_MSG_SUP, SETTING_UNAVAILABLE
		return true
	}
	return false
}

// Is lets a blocked status match backend.ErrBlocked.
func (s Status) Is(target error) bool { return target == backend.ErrBlocked && s.Blocked() }

// statusError turns amdsmi_status_t into an error, nil for success.
func statusError(st uint32) error {
	if st == 0 {
		return nil
	}
	return Status(st)
}
