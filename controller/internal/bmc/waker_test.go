package bmc

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"joulie.io/joulie/controller/internal/bmc/ipmisim"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

type recordingWaker struct{ woken []string }

func (r *recordingWaker) Wake(_ context.Context, n *corev1.Node) error {
	r.woken = append(r.woken, n.Name)
	return nil
}

// A node with a BMC Secret is woken through its BMC, one without through
// the fallback, whatever the nodes' annotations say; a BMC that fails is
// the error, not a reason for Wake-on-LAN.
func TestWakerChoosesByTheSecret(t *testing.T) {
	sim := ipmisim.Start(t, ipmisim.Options{Users: []ipmisim.User{wakeAccount}})
	lan := &recordingWaker{}
	c := testClient(t, localConfig(),
		credentials("joulie-bmc-with-bmc", map[string]string{"address": sim.Addr(), "username": wakeUser, "password": wakePassword}),
		credentials("joulie-bmc-bad-password", map[string]string{"address": sim.Addr(), "username": wakeUser, "password": wrongPassword}))
	w := Waker{BMC: c, Fallback: lan}

	withBMC := testNode("with-bmc")
	// An annotation naming a BMC does not make a node without a Secret
	// a BMC node: it is woken by Wake-on-LAN.
	without := testNode("without")
	without.Annotations[joulie.AnnotationBMCAddress] = sim.Addr()
	for _, n := range []*corev1.Node{withBMC, without} {
		if err := w.Wake(t.Context(), n); err != nil {
			t.Fatalf("Wake %s: %v", n.Name, err)
		}
	}
	if !sim.PowerIsOn(t) {
		t.Errorf("with-bmc's BMC was not asked to power on")
	}
	if !slices.Equal(lan.woken, []string{"without"}) {
		t.Errorf("Wake-on-LAN woke %v, want only the node without a Secret", lan.woken)
	}
	err := w.Wake(t.Context(), testNode("bad-password"))
	if err == nil || !strings.Contains(err.Error(), "wake bad-password through its BMC") {
		t.Errorf("Wake with a refused password: %v, want the BMC's error", err)
	}
	if len(lan.woken) != 1 {
		t.Errorf("a refused BMC fell back to Wake-on-LAN (%v)", lan.woken)
	}

	noLAN := Waker{BMC: c}
	if err := noLAN.Wake(t.Context(), testNode("without")); err == nil || !strings.Contains(err.Error(), "Wake-on-LAN is not available") {
		t.Errorf("Wake without a Secret or Wake-on-LAN: %v", err)
	}
}

// Each node still carrying a BMC annotation gets one Warning Event naming
// its Secret and the migration, however often it is seen.
func TestLegacyNoticeOncePerNode(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	l := &LegacyNotice{Namespace: "joulie-bmc", Recorder: rec}
	old := testNode("old")
	old.Annotations[joulie.AnnotationBMCAddress] = "10.0.0.5"
	old.Annotations[joulie.AnnotationBMCSecret] = "rack-7"
	if !l.Check(old) {
		t.Fatal("no notice for a node with both annotations")
	}
	if l.Check(old) {
		t.Error("a second notice for the same node")
	}
	if l.Check(testNode("clean")) {
		t.Error("a notice for a node without the annotations")
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != 1 {
		t.Fatalf("events %q, want one", got)
	}
	for _, want := range []string{"Warning BMCAnnotationIgnored", "annotations joulie.io/bmc-address and joulie.io/bmc-secret are ignored",
		"Secret joulie-bmc/joulie-bmc-old", "keys address, username, password", "Migrating from the BMC annotations"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("event %q does not say %q", got[0], want)
		}
	}
}
