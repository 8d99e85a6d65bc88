package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParkRecordRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "joulie")
	if _, ok, err := LoadPark(dir); ok || err != nil {
		t.Fatalf("no record yet: %v %v", ok, err)
	}
	want := ParkRecord{Since: time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC), BootID: "b1", At: time.Date(2026, 11, 27, 15, 0, 3, 0, time.UTC), Outcome: ParkPending}
	if err := SavePark(dir, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := LoadPark(dir)
	if !ok || err != nil || !got.Since.Equal(want.Since) || got.BootID != "b1" || got.Outcome != ParkPending {
		t.Fatalf("%+v %v %v", got, ok, err)
	}
	if err := os.WriteFile(filepath.Join(dir, ParkFileName), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadPark(dir); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("corrupt record: %v", err)
	}
}
