// Package fakekubelet serves the kubelet's pod-resources API, the real
// gRPC service of k8s.io/kubelet's podresources/v1, on a Unix socket in
// a temporary directory, so that tests drive the agent's client over the
// same protocol, socket and connection handling it meets on a node. A
// test sets the pods and their devices while it runs, stops and restarts
// the kubelet (the socket file is replaced, as a real restart does),
// leaves a dead socket behind, makes List fail with a gRPC status, or
// slows it down.
//
// It is test support: nothing in the daemon imports it, and
// joulie-agentd's TestBinaryLinksNoTestSupport fails if anything does.
package fakekubelet

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Kubelet is a fake kubelet serving List and Get of the pod-resources
// API. GetAllocatableResources answers Unimplemented.
type Kubelet struct {
	v1.UnimplementedPodResourcesListerServer

	t      testing.TB
	socket string

	mu     sync.Mutex
	pods   []*v1.PodResources
	fail   error
	delay  time.Duration
	server *grpc.Server
	lis    *net.UnixListener
	conns  int
	lists  int
}

// Start serves the API on kubelet.sock in a new temporary directory; the
// server stops and the directory goes when the test ends.
func Start(t testing.TB) *Kubelet {
	t.Helper()
	// Not t.TempDir(): its path carries the test's name, and a Unix
	// socket's path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "fakekubelet-")
	if err != nil {
		t.Fatal(err)
	}
	k := &Kubelet{t: t, socket: filepath.Join(dir, "kubelet.sock")}
	t.Cleanup(func() {
		k.Stop()
		os.RemoveAll(dir)
	})
	k.listen()
	return k
}

// Socket is the path the kubelet serves on.
func (k *Kubelet) Socket() string { return k.socket }

func (k *Kubelet) listen() {
	k.t.Helper()
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: k.socket, Net: "unix"})
	if err != nil {
		k.t.Fatalf("fake kubelet: listen on %s: %v", k.socket, err)
	}
	server := grpc.NewServer()
	v1.RegisterPodResourcesListerServer(server, k)
	k.mu.Lock()
	k.server, k.lis = server, lis
	k.mu.Unlock()
	go server.Serve(countingListener{lis, k})
}

// Stop stops serving, closes every connection and removes the socket,
// as a kubelet that exits cleanly does. Stopping a stopped kubelet does
// nothing.
func (k *Kubelet) Stop() {
	k.mu.Lock()
	server := k.server
	k.server, k.lis = nil, nil
	k.mu.Unlock()
	if server != nil {
		// Stop closes the listener, which removes the socket file.
		server.Stop()
	}
}

// Crash stops serving but leaves the socket file behind, as a kubelet
// that was killed does: connecting is then refused.
func (k *Kubelet) Crash() {
	k.mu.Lock()
	server, lis := k.server, k.lis
	k.server, k.lis = nil, nil
	k.mu.Unlock()
	if server != nil {
		lis.SetUnlinkOnClose(false)
		server.Stop()
	}
}

// Restart stops the kubelet if it runs and starts it again on a new
// socket file at the same path, keeping the pods. A crashed kubelet's
// leftover socket is removed first, as the kubelet does.
func (k *Kubelet) Restart() {
	k.t.Helper()
	k.Stop()
	if err := os.Remove(k.socket); err != nil && !os.IsNotExist(err) {
		k.t.Fatalf("fake kubelet: remove the old socket: %v", err)
	}
	k.listen()
}

// SetPods replaces the pods List reports; Pod, Container and Devices
// build them.
func (k *Kubelet) SetPods(pods ...*v1.PodResources) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pods = pods
}

// Fail makes List and Get fail with err, which should be a gRPC status
// (status.Error(codes.ResourceExhausted, ...)); nil answers again.
func (k *Kubelet) Fail(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fail = err
}

// Delay makes every answer wait d, or until the caller gives up.
func (k *Kubelet) Delay(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.delay = d
}

// Connections is how many connections the kubelet has accepted, over
// all its restarts.
func (k *Kubelet) Connections() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.conns
}

// Lists is how many List calls reached the kubelet.
func (k *Kubelet) Lists() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lists
}

// List answers with a copy of the pods set, so that a later SetPods does
// not change an answer on its way.
func (k *Kubelet) List(ctx context.Context, _ *v1.ListPodResourcesRequest) (*v1.ListPodResourcesResponse, error) {
	k.mu.Lock()
	k.lists++
	pods, fail, delay := k.pods, k.fail, k.delay
	k.mu.Unlock()
	if err := wait(ctx, delay); err != nil {
		return nil, err
	}
	if fail != nil {
		return nil, fail
	}
	resp := &v1.ListPodResourcesResponse{}
	for _, p := range pods {
		resp.PodResources = append(resp.PodResources, proto.Clone(p).(*v1.PodResources))
	}
	return resp, nil
}

// Get answers for one pod, failing as the kubelet does when it runs no
// such pod.
func (k *Kubelet) Get(ctx context.Context, req *v1.GetPodResourcesRequest) (*v1.GetPodResourcesResponse, error) {
	k.mu.Lock()
	pods, fail, delay := k.pods, k.fail, k.delay
	k.mu.Unlock()
	if err := wait(ctx, delay); err != nil {
		return nil, err
	}
	if fail != nil {
		return nil, fail
	}
	i := slices.IndexFunc(pods, func(p *v1.PodResources) bool {
		return p.GetNamespace() == req.GetPodNamespace() && p.GetName() == req.GetPodName()
	})
	if i < 0 {
		return nil, status.Errorf(codes.Unknown, "pod %s in namespace %s not found", req.GetPodName(), req.GetPodNamespace())
	}
	return &v1.GetPodResourcesResponse{PodResources: proto.Clone(pods[i]).(*v1.PodResources)}, nil
}

func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// Pod builds a pod's resources.
func Pod(namespace, name string, containers ...*v1.ContainerResources) *v1.PodResources {
	return &v1.PodResources{Namespace: namespace, Name: name, Containers: containers}
}

// Container builds a container's resources.
func Container(name string, devices ...*v1.ContainerDevices) *v1.ContainerResources {
	return &v1.ContainerResources{Name: name, Devices: devices}
}

// Devices builds the devices of one resource given to a container.
func Devices(resource string, ids ...string) *v1.ContainerDevices {
	return &v1.ContainerDevices{ResourceName: resource, DeviceIds: ids}
}

// countingListener counts the connections the kubelet accepts, so that
// a test can tell a reused connection from a new one.
type countingListener struct {
	*net.UnixListener
	k *Kubelet
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.UnixListener.Accept()
	if err == nil {
		l.k.mu.Lock()
		l.k.conns++
		l.k.mu.Unlock()
	}
	return conn, err
}
