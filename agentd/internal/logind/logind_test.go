package logind_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"joulie.io/joulie/agentd/internal/logind"
	"joulie.io/joulie/agentd/internal/logind/logindtest"
)

// The real D-Bus path to a fake logind on a private bus: the call
// arrives, non-interactive, and a refusal comes back as an error that
// says what to do.
func TestPowerOffOverARealBus(t *testing.T) {
	bus := logindtest.StartBus(t)
	fake := logindtest.Serve(t, bus, nil)
	c := logind.Client{Address: bus}
	if err := c.PowerOff(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls := fake.Calls(); len(calls) != 1 || calls[0] {
		t.Fatalf("PowerOff calls (interactive flags) %v, want one non-interactive", calls)
	}

	fake.Refuse(true)
	err := c.PowerOff(context.Background())
	if err == nil || !strings.Contains(err.Error(), "CAP_SYS_BOOT") || !strings.Contains(err.Error(), "Interactive authentication required") {
		t.Fatalf("refused PowerOff: %v", err)
	}
}

func TestPowerOffWithoutLogind(t *testing.T) {
	bus := logindtest.StartBus(t)
	err := logind.Client{Address: bus}.PowerOff(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no systemd-logind") {
		t.Fatalf("no logind on the bus: %v", err)
	}
}

func TestPowerOffWithoutABus(t *testing.T) {
	missing := "unix:path=" + filepath.Join(t.TempDir(), "no-bus")
	err := logind.Client{Address: missing}.PowerOff(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot reach the D-Bus system bus") {
		t.Fatalf("no bus: %v", err)
	}
}

// The system bus is found through DBUS_SYSTEM_BUS_ADDRESS, as logind's
// clients find it.
func TestPowerOffFindsTheSystemBusFromTheEnvironment(t *testing.T) {
	bus := logindtest.StartBus(t)
	fake := logindtest.Serve(t, bus, nil)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", bus)
	if err := (logind.Client{}).PowerOff(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(fake.Calls()) != 1 {
		t.Fatalf("calls %v", fake.Calls())
	}
}
