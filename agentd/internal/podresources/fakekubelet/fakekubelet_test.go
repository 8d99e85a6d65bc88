package fakekubelet

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	v1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// The fake answers Get as the kubelet does, through the generated client.
func TestGet(t *testing.T) {
	k := Start(t)
	k.SetPods(Pod("ml", "train", Container("c", Devices("nvidia.com/gpu", "GPU-a"))))
	conn, err := grpc.NewClient("unix://"+k.Socket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	api := v1.NewPodResourcesListerClient(conn)

	resp, err := api.Get(t.Context(), &v1.GetPodResourcesRequest{PodNamespace: "ml", PodName: "train"})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetPodResources().GetContainers()[0].GetDevices()[0].GetDeviceIds(); len(got) != 1 || got[0] != "GPU-a" {
		t.Errorf("Get gave %v", resp)
	}
	_, err = api.Get(t.Context(), &v1.GetPodResourcesRequest{PodNamespace: "ml", PodName: "gone"})
	if want := "pod gone in namespace ml not found"; status.Convert(err).Message() != want {
		t.Errorf("Get of a missing pod: %v, want %q", err, want)
	}
	_, err = api.GetAllocatableResources(t.Context(), &v1.AllocatableResourcesRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("GetAllocatableResources: %v, want Unimplemented", err)
	}
}
