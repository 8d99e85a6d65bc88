package bmc

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

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
