package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"joulie.io/joulie/controller/internal/parking"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	jfake "joulie.io/joulie/pkg/generated/clientset/versioned/fake"
	"joulie.io/joulie/pkg/generated/informers/externalversions"
	"joulie.io/joulie/pkg/park"
)

type noWaker struct{}

func (noWaker) Wake(context.Context, *corev1.Node, parking.WakeRequest) error { return nil }

// runParking runs a real parking loop, fed to st as lead does, over fake
// clientsets holding one node recorded parked but not tainted: every
// pass reads its NodePowerProfile from the API to repair the taint. With
// hang, that read never returns, as a call to an API server that accepted
// the connection and never answers.
func runParking(t *testing.T, st *state, hang bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "p1", Labels: map[string]string{joulie.LabelParkable: "true"}}}
	npp := &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Spec: joulie.NodePowerProfileSpec{PowerState: joulie.PowerParked}}
	kube, jc := kubefake.NewClientset(node), jfake.NewSimpleClientset(npp)
	released := make(chan struct{})
	if hang {
		jc.PrependReactor("get", "nodepowerprofiles", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
			<-released
			return true, nil, context.Canceled
		})
	}
	kf, jf := informers.NewSharedInformerFactory(kube, 0), externalversions.NewSharedInformerFactory(jc, 0)
	p, err := parking.New(kube, jc, kf, jf, parking.Options{Params: park.DefaultParams(), Waker: noWaker{},
		SyncInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnSync: func(error) { st.parkingPassed() }})
	if err != nil {
		t.Fatal(err)
	}
	kf.Start(ctx.Done())
	jf.Start(ctx.Done())
	st.leading.Store(true)
	st.parkingStarted()
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() {
		close(released)
		cancel()
		<-done
		kf.Shutdown()
		jf.Shutdown()
	})
}

func healthz(st *state) (int, string) {
	rec := httptest.NewRecorder()
	st.healthz(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	return rec.Code, rec.Body.String()
}

// A leader whose parking pass hangs fails /healthz, naming the parking
// loop, once parkStall has passed without a pass; one whose passes
// finish stays healthy past the same time.
func TestHealthzFailsWhenTheParkingLoopIsStuck(t *testing.T) {
	const stall = 2 * time.Second
	t.Run("stuck", func(t *testing.T) {
		t.Parallel()
		st := &state{interval: time.Hour, parkStall: stall}
		runParking(t, st, true)
		deadline := time.Now().Add(stall + 20*time.Second)
		for {
			code, body := healthz(st)
			if code == http.StatusServiceUnavailable {
				if !strings.Contains(body, "parking loop stalled") || !strings.Contains(body, "parking.syncInterval") {
					t.Errorf("/healthz says %q, want it to name the parking loop and its setting", body)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/healthz still %d (%q) with the parking pass hung", code, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	t.Run("healthy", func(t *testing.T) {
		t.Parallel()
		st := &state{interval: time.Hour, parkStall: stall}
		runParking(t, st, false)
		for end := time.Now().Add(2 * stall); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if code, body := healthz(st); code != http.StatusOK {
				t.Fatalf("/healthz %d (%q) with the parking loop passing", code, body)
			}
		}
	})
}
