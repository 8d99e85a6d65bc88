package nvml

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/dl"
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/state"
)

// DefaultLibraryPath is the NVML library the driver installs; a bare
// soname is looked up by the dynamic loader (ld.so.cache, LD_LIBRARY_PATH).
const DefaultLibraryPath = "libnvidia-ml.so.1"

// Open loads NVML from libraryPath (DefaultLibraryPath when empty) and
// initialises it. It always returns a backend: when the library is missing
// or NVML does not initialise (no driver, a driver/library mismatch), the
// backend reports backend.ErrBlocked with the reason from every method, and
// Unavailable says why.
func Open(libraryPath string, journal *state.Journal) *Backend {
	if libraryPath == "" {
		libraryPath = DefaultLibraryPath
	}
	b := newBackend(Wrap(gonvml.New(gonvml.WithLibraryPath(libraryPath))), journal)
	if b.ret == gonvml.ERROR_LIBRARY_NOT_FOUND {
		b.down = fmt.Errorf("%w: NVML unavailable: %s", backend.ErrBlocked, loadProblem(libraryPath))
	}
	return b
}

// loadProblem says why libraryPath could not be loaded. go-nvml turns every
// dlopen failure into ERROR_LIBRARY_NOT_FOUND and drops dlerror's text; a
// second dlopen recovers it, so that a library that is present but cannot
// be loaded (another architecture, a missing dependency) is not reported
// as missing. Go never calls setlocale, so dlerror's text is glibc's
// English.
func loadProblem(libraryPath string) string {
	lib := dl.New(libraryPath, dl.RTLD_LAZY|dl.RTLD_LOCAL)
	err := lib.Open()
	switch {
	case err == nil:
		// It loads now: it appeared between the two attempts.
		_ = lib.Close()
		return libraryPath + " could not be loaded"
	case strings.Contains(err.Error(), "No such file or directory"):
		return libraryPath + " not found"
	default:
		return fmt.Sprintf("cannot load %s: %v", libraryPath, err)
	}
}
