package podresources_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"joulie.io/joulie/agentd/internal/podresources"
	fk "joulie.io/joulie/agentd/internal/podresources/fakekubelet"
)

const (
	gpu0 = "GPU-0b5e1c6a-6c2f-4f0e-9a57-1d2b3c4d5e6f"
	gpu1 = "GPU-7f3a9e21-1b44-4c8d-b0e2-6a5b4c3d2e1f"
	mig  = "MIG-4d1e7f0a-2b3c-5d6e-8f90-a1b2c3d4e5f6"
)

// poll polls with the default resources and checks the state.
func poll(t *testing.T, c *podresources.Client, want podresources.State) podresources.Snapshot {
	t.Helper()
	snap := c.Poll(t.Context(), nil)
	if snap.Status.State != want {
		t.Fatalf("state %s, want %s: %s", snap.Status.State, want, snap.Status)
	}
	if snap.GPUs == nil {
		t.Fatal("nil GPU map")
	}
	return snap
}

func newClient(t *testing.T, socket string, timeout time.Duration) *podresources.Client {
	c := podresources.New(socket, timeout)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestPodsComeAndGo(t *testing.T) {
	k := fk.Start(t)
	c := newClient(t, k.Socket(), 0)

	poll(t, c, podresources.StateConnected) // no pods yet
	k.SetPods(fk.Pod("ml", "train", fk.Container("trainer", fk.Devices("nvidia.com/gpu", gpu0))))
	snap := poll(t, c, podresources.StateConnected)
	if want := map[string][]podresources.Holder{gpu0: {{Namespace: "ml", Pod: "train", Container: "trainer", Replicas: 1}}}; !reflect.DeepEqual(snap.GPUs, want) {
		t.Errorf("GPUs %v, want %v", snap.GPUs, want)
	}
	if got, want := snap.Status.String(), "kubelet pod-resources API at "+k.Socket()+": 1 pod, 1 GPU assigned"; got != want {
		t.Errorf("status %q, want %q", got, want)
	}

	k.SetPods(
		fk.Pod("ml", "train", fk.Container("trainer", fk.Devices("nvidia.com/gpu", gpu0))),
		fk.Pod("web", "infer", fk.Container("server", fk.Devices("nvidia.com/gpu", gpu1))),
		fk.Pod("kube-system", "dns", fk.Container("coredns")),
	)
	snap = poll(t, c, podresources.StateConnected)
	if snap.Status.Pods != 3 || snap.Status.GPUs != 2 || len(snap.GPUs[gpu1]) != 1 {
		t.Errorf("after a pod came: %s, %v", snap.Status, snap.GPUs)
	}

	k.SetPods(fk.Pod("kube-system", "dns", fk.Container("coredns")))
	snap = poll(t, c, podresources.StateConnected)
	if snap.Status.Pods != 1 || len(snap.GPUs) != 0 {
		t.Errorf("after the GPU pods went: %s, %v", snap.Status, snap.GPUs)
	}
	if !strings.HasSuffix(snap.Status.String(), ": 1 pod, 0 GPUs assigned") {
		t.Errorf("status %q", snap.Status)
	}

	// One tick after another on one connection.
	if n := k.Connections(); n != 1 {
		t.Errorf("%d connections for %d polls, want 1", n, k.Lists())
	}
}

// List gives plain values: every pod, sorted, every container in the
// kubelet's order, every device of any resource, GPU or not.
func TestListCopiesEverything(t *testing.T) {
	k := fk.Start(t)
	k.SetPods(
		fk.Pod("web", "infer",
			fk.Container("server", fk.Devices("nvidia.com/gpu", gpu0+"::0", gpu0+"::1")),
			fk.Container("proxy")),
		fk.Pod("net", "router", fk.Container("dp",
			fk.Devices("intel.com/sriov_netdevice", "0000:3b:02.1"),
			fk.Devices("nvidia.com/mig-1g.10gb", mig))),
		fk.Pod("ml", "empty"),
	)
	pods, err := newClient(t, k.Socket(), 0).List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []podresources.Pod{
		{Namespace: "ml", Name: "empty"},
		{Namespace: "net", Name: "router", Containers: []podresources.Container{{Name: "dp", Devices: []podresources.Allocation{
			{Resource: "intel.com/sriov_netdevice", IDs: []string{"0000:3b:02.1"}},
			{Resource: "nvidia.com/mig-1g.10gb", IDs: []string{mig}},
		}}}},
		{Namespace: "web", Name: "infer", Containers: []podresources.Container{
			{Name: "server", Devices: []podresources.Allocation{{Resource: "nvidia.com/gpu", IDs: []string{gpu0 + "::0", gpu0 + "::1"}}}},
			{Name: "proxy"},
		}},
	}
	if !reflect.DeepEqual(pods, want) {
		t.Errorf("List\n got %+v\nwant %+v", pods, want)
	}
}

// A GPU in time-slicing replicas held by several pods, and MIG devices,
// through the real protocol.
func TestSharedGPUsAndMIG(t *testing.T) {
	k := fk.Start(t)
	k.SetPods(
		fk.Pod("web", "a", fk.Container("server", fk.Devices("nvidia.com/gpu", gpu0+"::0", gpu0+"::2"))),
		fk.Pod("web", "b", fk.Container("server", fk.Devices("nvidia.com/gpu", gpu0+"::1"))),
		fk.Pod("ml", "m", fk.Container("c", fk.Devices("nvidia.com/mig-3g.40gb", mig))),
	)
	snap := poll(t, newClient(t, k.Socket(), 0), podresources.StateConnected)
	want := map[string][]podresources.Holder{
		gpu0: {{Namespace: "web", Pod: "a", Container: "server", Replicas: 2}, {Namespace: "web", Pod: "b", Container: "server", Replicas: 1}},
		mig:  {{Namespace: "ml", Pod: "m", Container: "c", Replicas: 1}},
	}
	if !reflect.DeepEqual(snap.GPUs, want) {
		t.Errorf("GPUs\n got %v\nwant %v", snap.GPUs, want)
	}
}

// No socket is a state, not a failure: said with the path and what
// would help, at the cost of a stat.
func TestAbsentSocket(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "pod-resources", "kubelet.sock")
	c := newClient(t, socket, 0)
	for range 3 {
		snap := poll(t, c, podresources.StateAbsent)
		if snap.Pods != nil || len(snap.GPUs) != 0 || snap.Status.Err != nil {
			t.Errorf("absent socket gave %+v", snap)
		}
		for _, want := range []string{socket, "pod-resources API", "Kubernetes 1.28"} {
			if !strings.Contains(snap.Status.String(), want) {
				t.Errorf("status %q does not say %q", snap.Status, want)
			}
		}
	}
	if _, err := os.Stat(filepath.Dir(socket)); !os.IsNotExist(err) {
		t.Errorf("the client created something at %s: %v", filepath.Dir(socket), err)
	}
}

func TestOffAsksNothing(t *testing.T) {
	snap := poll(t, newClient(t, podresources.Off, 0), podresources.StateOff)
	if got := snap.Status.String(); !strings.Contains(got, "switched off") {
		t.Errorf("status %q", got)
	}
}

// A kubelet restart replaces the socket file: the next tick dials the
// new kubelet and sees its pods, with no failed tick in between.
func TestKubeletRestartRedials(t *testing.T) {
	k := fk.Start(t)
	k.SetPods(fk.Pod("ml", "before", fk.Container("c", fk.Devices("nvidia.com/gpu", gpu0))))
	c := newClient(t, k.Socket(), 0)
	poll(t, c, podresources.StateConnected)

	k.SetPods(fk.Pod("ml", "after", fk.Container("c", fk.Devices("nvidia.com/gpu", gpu1))))
	k.Restart()
	snap := poll(t, c, podresources.StateConnected)
	if len(snap.Pods) != 1 || snap.Pods[0].Name != "after" || len(snap.GPUs[gpu1]) != 1 {
		t.Errorf("after the restart: %+v", snap)
	}
	if n := k.Connections(); n != 2 {
		t.Errorf("%d connections, want 2: one per kubelet", n)
	}

	// Down for a while (socket gone), then back.
	k.Stop()
	poll(t, c, podresources.StateAbsent)
	k.Restart()
	poll(t, c, podresources.StateConnected)
	if n := k.Connections(); n != 3 {
		t.Errorf("%d connections, want 3", n)
	}
}

// A killed kubelet leaves its socket behind; nothing answers on it.
func TestCrashedKubelet(t *testing.T) {
	k := fk.Start(t)
	c := newClient(t, k.Socket(), 0)
	poll(t, c, podresources.StateConnected)
	k.Crash()
	for range 2 {
		snap := poll(t, c, podresources.StateError)
		for _, want := range []string{k.Socket(), "is the kubelet running?"} {
			if !strings.Contains(snap.Status.String(), want) {
				t.Errorf("status %q does not say %q", snap.Status, want)
			}
		}
	}
	k.Restart()
	poll(t, c, podresources.StateConnected)
}

func TestKubeletErrors(t *testing.T) {
	k := fk.Start(t)
	c := newClient(t, k.Socket(), 0)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{status.Error(codes.ResourceExhausted, "rejected by rate limit"),
			"refused List: rejected by rate limit; the kubelet limits calls to this API per second"},
		{status.Error(codes.Internal, "device manager not ready"),
			"the kubelet's pod-resources API at " + k.Socket() + " failed List: Internal: device manager not ready"},
		{status.Error(codes.Unimplemented, "unknown method List"), "does not serve List"},
	} {
		k.Fail(tc.err)
		snap := poll(t, c, podresources.StateError)
		if got := snap.Status.String(); !strings.HasPrefix(got, "per-pod figures unavailable: ") || !strings.Contains(got, tc.want) {
			t.Errorf("status %q does not say %q", got, tc.want)
		}
		if snap.Pods != nil || len(snap.GPUs) != 0 {
			t.Errorf("a failed List gave %+v", snap)
		}
	}
	k.Fail(nil)
	poll(t, c, podresources.StateConnected)
	// The kubelet answered every time: the connection was never given up.
	if n := k.Connections(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// A kubelet that does not answer costs a tick no more than the timeout,
// and the next tick starts afresh.
func TestSlowKubeletHitsTheTimeout(t *testing.T) {
	k := fk.Start(t)
	k.Delay(time.Minute)
	c := newClient(t, k.Socket(), 200*time.Millisecond)
	start := time.Now()
	snap := poll(t, c, podresources.StateError)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Poll took %v with a timeout of 200ms", took)
	}
	if want := "did not answer List within 200ms"; !strings.Contains(snap.Status.String(), want) {
		t.Errorf("status %q does not say %q", snap.Status, want)
	}
	k.Delay(0)
	poll(t, c, podresources.StateConnected)
}

// An answer over gRPC's default 4 MiB is read: a node's List grows with
// its pods, and the kubelet's own client reads up to 16 MiB.
func TestLargeAnswer(t *testing.T) {
	k := fk.Start(t)
	var pods []*v1.PodResources
	for i := range 400 {
		ids := make([]string, 100)
		for j := range ids {
			ids[j] = fmt.Sprintf("GPU-%08d-0000-0000-0000-%012d::%d", i, j, j)
		}
		pods = append(pods, fk.Pod("ns", fmt.Sprintf("pod-%d", i), fk.Container("c", fk.Devices("nvidia.com/gpu", ids...))))
	}
	k.SetPods(pods...)
	snap := poll(t, newClient(t, k.Socket(), 10*time.Second), podresources.StateConnected)
	if snap.Status.Pods != 400 || snap.Status.GPUs != 400*100 {
		t.Errorf("status %s", snap.Status)
	}
}

func TestNotASocket(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kubelet.sock")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	snap := poll(t, newClient(t, file, 0), podresources.StateError)
	if want := file + " is not a socket but a regular file"; !strings.Contains(snap.Status.String(), want) {
		t.Errorf("status %q does not say %q", snap.Status, want)
	}
}

// A gRPC server without the pod-resources service on the path: some
// other program's socket.
func TestSomeOtherServer(t *testing.T) {
	dir, err := os.MkdirTemp("", "podres-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "other.sock")
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	go server.Serve(lis)
	t.Cleanup(server.Stop)
	snap := poll(t, newClient(t, socket, 0), podresources.StateError)
	if want := "does not serve List"; !strings.Contains(snap.Status.String(), want) {
		t.Errorf("status %q does not say %q", snap.Status, want)
	}
}

// Ticks from several goroutines while the kubelet restarts and its pods
// change: run with -race, every poll ends in a state, none hangs.
func TestConcurrentPollsDuringRestarts(t *testing.T) {
	k := fk.Start(t)
	c := newClient(t, k.Socket(), 2*time.Second)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				switch s := c.Poll(t.Context(), nil).Status; s.State {
				case podresources.StateConnected, podresources.StateAbsent, podresources.StateError:
				default:
					t.Errorf("state %s: %s", s.State, s)
					return
				}
			}
		})
	}
	for i := range 10 {
		k.SetPods(fk.Pod("ml", fmt.Sprintf("p%d", i), fk.Container("c", fk.Devices("nvidia.com/gpu", gpu0))))
		k.Restart()
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	snap := poll(t, c, podresources.StateConnected)
	if snap.Pods[0].Name != "p9" {
		t.Errorf("pods %+v", snap.Pods)
	}
}
