package pci

import (
	"testing"

	"joulie.io/joulie/pkg/catalog"
)

// TestKnownModelsResolveInTheCatalog guards the reason the names are
// spelled as they are: a GPU named from its PCI ID must plan with its own
// catalog figures, not a generic entry's.
func TestKnownModelsResolveInTheCatalog(t *testing.T) {
	// Parts the catalog cannot name exactly: the MI300A is an APU it does
	// not list, and one PCI ID covers both the MI250X and the MI250.
	proxies := map[string]bool{"AMD Instinct MI300A": true, "AMD Instinct MI250X/MI250": true}
	cat := catalog.Default()
	for vendor, models := range knownModels {
		for id, name := range models {
			if entry, ex := cat.ResolveGPU(name); ex != catalog.ExactnessExact && !(proxies[name] && ex == catalog.ExactnessProxy) {
				t.Errorf("%s:%s %q resolves to %s (%s), not exactly", vendor, id, name, entry.ID, ex)
			}
		}
	}
}
