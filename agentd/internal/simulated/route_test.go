package simulated

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func TestMatchingTelemetryProfiles(t *testing.T) {
	profile := func(name string, sel *metav1.LabelSelector) joulie.TelemetryProfile {
		return joulie.TelemetryProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: joulie.TelemetryProfileSpec{NodeSelector: sel}}
	}
	sim := &metav1.LabelSelector{MatchLabels: map[string]string{"joulie.io/simulated": "true"}}
	gpu := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "joulie.io/hw.gpu-count", Operator: metav1.LabelSelectorOpExists}}}
	all := []joulie.TelemetryProfile{profile("z-sim", sim), profile("a-gpu", gpu), profile("m-everyone", nil)}

	got, err := Matching(all, map[string]string{"joulie.io/simulated": "true", "joulie.io/hw.gpu-count": "8"})
	if err != nil || len(got) != 3 || got[0].Name != "a-gpu" || got[2].Name != "z-sim" {
		t.Fatalf("matching %v, %v", got, err)
	}
	got, _ = Matching(all, map[string]string{})
	if len(got) != 1 || got[0].Name != "m-everyone" {
		t.Fatalf("an absent selector selects every node: %v", got)
	}
	bad := profile("bad", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Sometimes"}}})
	if _, err := Matching([]joulie.TelemetryProfile{bad}, nil); err == nil {
		t.Fatal("a broken selector should be an error naming the profile")
	}
}
