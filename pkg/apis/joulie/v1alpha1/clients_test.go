package v1alpha1_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned/fake"
	"joulie.io/joulie/pkg/generated/informers/externalversions"
)

// TestGeneratedClientsAreClusterScoped wires the generated clientset,
// informer factory and lister together the way the programs will, and
// checks that objects are keyed by node name alone (no namespace). The
// real API server exercises the same clients in the test/ harness.
func TestGeneratedClientsAreClusterScoped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cs := fake.NewSimpleClientset()
	profiles := cs.JoulieV1alpha1().NodePowerProfiles()
	want := &joulie.NodePowerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Spec: joulie.NodePowerProfileSpec{
			Profile: joulie.ProfileEco,
			CPU:     &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(60.0)},
			GPU:     &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(60.0)}},
		},
	}
	if _, err := profiles.Create(ctx, want, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}

	factory := externalversions.NewSharedInformerFactory(cs, 0)
	informer := factory.Joulie().V1alpha1().NodePowerProfiles()
	lister := informer.Lister()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		t.Fatal("informer did not sync")
	}
	got, err := lister.Get("node-a")
	if err != nil {
		t.Fatalf("lister get by node name: %v", err)
	}
	if got.Namespace != "" || got.Spec.Profile != joulie.ProfileEco || *got.Spec.CPU.PackagePowerCapPctOfMax != 60 {
		t.Errorf("listed %+v, want the created eco profile without namespace", got)
	}

	// The agent's report goes through the status subresource.
	report := got.DeepCopy()
	report.Status = joulie.NodePowerProfileStatus{
		ObservedGeneration: 1,
		CPU:                &joulie.ControlStatus{Backend: joulie.BackendRAPL, Result: joulie.ResultApplied, AppliedCapWatts: ptr.To(216.0)},
	}
	if _, err := profiles.UpdateStatus(ctx, report, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}
	err = wait(ctx, func() bool {
		p, err := lister.Get("node-a")
		return err == nil && p.Status.CPU != nil && p.Status.CPU.Result == joulie.ResultApplied
	})
	if err != nil {
		t.Fatalf("informer never saw the status update: %v", err)
	}
}

func wait(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
