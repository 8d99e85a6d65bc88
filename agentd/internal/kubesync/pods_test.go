package kubesync

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"joulie.io/joulie/agentd/internal/podenergy"
)

func podMeta(ns, name, uid string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
}

func TestNodePodsNamesPodsByUIDOnceListed(t *testing.T) {
	scheme := metafake.NewTestScheme()
	metav1.AddMetaToScheme(scheme)
	c := metafake.NewSimpleMetadataClient(scheme, podMeta("ml", "train", "u1"), podMeta("web", "front", "u2"))
	var selectors []string
	c.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		selectors = append(selectors, a.(k8stesting.ListAction).GetListRestrictions().Fields.String())
		return false, nil, nil
	})
	p := NewNodePods(c, "gpu-07")
	if got := p.UIDs(); got != nil {
		t.Fatalf("UIDs before the first list: %v, want nil (not known yet)", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for p.UIDs() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := p.UIDs()
	want := map[string]podenergy.Key{"u1": {Namespace: "ml", Name: "train"}, "u2": {Namespace: "web", Name: "front"}}
	if len(got) != len(want) || got["u1"] != want["u1"] || got["u2"] != want["u2"] {
		t.Errorf("UIDs %v, want %v", got, want)
	}
	if len(selectors) == 0 || selectors[0] != "spec.nodeName=gpu-07" {
		t.Errorf("list field selectors %q, want the node's own pods asked for", selectors)
	}
}
