// Command fake-kubelet serves the kubelet's pod-resources gRPC API on a
// Unix socket, answering List from a JSON file it reads on every call, so
// that tests outside this module (the integration tests under test/, which
// cannot import package fakekubelet) can run the real joulie-agentd
// against pods that come and go. It is test support and never shipped.
//
//	fake-kubelet --socket /tmp/x/kubelet.sock --pods /tmp/x/pods.json
//
// The file is a list of pods:
//
//	[{"namespace": "ml", "name": "train", "containers": [
//	  {"name": "main", "devices": [{"resource": "nvidia.com/gpu", "ids": ["GPU-…"]}]}]}]
//
// A missing file is no pods; a file that does not parse fails List with
// codes.Internal.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"joulie.io/joulie/agentd/internal/podresources/fakekubelet"
)

type pod struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Containers []struct {
		Name    string `json:"name"`
		Devices []struct {
			Resource string   `json:"resource"`
			IDs      []string `json:"ids"`
		} `json:"devices"`
	} `json:"containers"`
}

type server struct {
	v1.UnimplementedPodResourcesListerServer
	file string
}

func (s server) List(context.Context, *v1.ListPodResourcesRequest) (*v1.ListPodResourcesResponse, error) {
	raw, err := os.ReadFile(s.file)
	if errors.Is(err, os.ErrNotExist) {
		return &v1.ListPodResourcesResponse{}, nil
	}
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	var pods []pod
	if err := json.Unmarshal(raw, &pods); err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", s.file, err)
	}
	resp := &v1.ListPodResourcesResponse{}
	for _, p := range pods {
		var containers []*v1.ContainerResources
		for _, c := range p.Containers {
			var devices []*v1.ContainerDevices
			for _, d := range c.Devices {
				devices = append(devices, fakekubelet.Devices(d.Resource, d.IDs...))
			}
			containers = append(containers, fakekubelet.Container(c.Name, devices...))
		}
		resp.PodResources = append(resp.PodResources, fakekubelet.Pod(p.Namespace, p.Name, containers...))
	}
	return resp, nil
}

func main() {
	socket := flag.String("socket", "", "Unix socket to serve on")
	file := flag.String("pods", "", "JSON file of the pods List answers")
	flag.Parse()
	if *socket == "" || *file == "" {
		fmt.Fprintln(os.Stderr, "fake-kubelet: --socket and --pods are required")
		os.Exit(2)
	}
	_ = os.Remove(*socket)
	lis, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-kubelet:", err)
		os.Exit(1)
	}
	srv := grpc.NewServer()
	v1.RegisterPodResourcesListerServer(srv, server{file: *file})
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-stop; srv.Stop() }()
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, "fake-kubelet:", err)
		os.Exit(1)
	}
}
