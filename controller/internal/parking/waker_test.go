package parking

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

type callWaker struct {
	woken []string
	err   error
}

func (r *callWaker) Wake(_ context.Context, n *corev1.Node) error {
	r.woken = append(r.woken, n.Name)
	return r.err
}

func TestByBMCAddressUsesTheBMCOnlyWhereTheNodeNamesOne(t *testing.T) {
	bmc, lan := &callWaker{}, &callWaker{}
	w := ByBMCAddress{BMC: bmc, LAN: lan}
	withBMC := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{joulie.AnnotationBMCAddress: "10.0.0.5"}}}
	without := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	for _, n := range []*corev1.Node{withBMC, without} {
		if err := w.Wake(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(bmc.woken, ",") != "a" || strings.Join(lan.woken, ",") != "b" {
		t.Errorf("BMC woke %v and Wake-on-LAN %v, want a and b", bmc.woken, lan.woken)
	}
	bmc.err = errors.New("RAKP2 authentication code mismatch")
	if err := w.Wake(context.Background(), withBMC); err == nil || !strings.Contains(err.Error(), "through its BMC") {
		t.Errorf("a refused BMC gave %v, want an error naming the BMC", err)
	}
	if len(lan.woken) != 1 {
		t.Errorf("a refused BMC fell back to Wake-on-LAN (%v): a site that set up IPMI for the node should see the BMC's error", lan.woken)
	}
}
