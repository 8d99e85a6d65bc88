package simulated

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/kubesync"
	"joulie.io/joulie/agentd/internal/simulated/httpbackend"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	client "joulie.io/joulie/pkg/generated/clientset/versioned/typed/joulie/v1alpha1"
)

// Nodes is the resource the agent reads node labels from. Only metadata
// is fetched: the agent needs labels, and the metadata client keeps the
// core API group's types out of the daemon.
var Nodes = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// Route looks for the TelemetryProfile that routes this node's telemetry
// and control to an HTTP backend (a simulator): among the profiles whose
// nodeSelector matches the node's labels (an absent selector matches every
// node), the first by name. ok is false when none routes the node, which
// leaves it on its host backends. The agent reads the routing at start;
// a changed profile takes effect on restart.
func Route(ctx context.Context, cfg config.Config, log *slog.Logger) (hc httpbackend.Config, profile string, ok bool, err error) {
	rc, err := kubesync.RestConfig(cfg)
	if err != nil {
		return hc, "", false, err
	}
	meta, err := metadata.NewForConfig(rc)
	if err != nil {
		return hc, "", false, err
	}
	cs, err := client.NewForConfig(rc)
	if err != nil {
		return hc, "", false, err
	}
	node, err := meta.Resource(Nodes).Get(ctx, cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return hc, "", false, fmt.Errorf("read the labels of node %s: %w", cfg.NodeName, err)
	}
	list, err := cs.TelemetryProfiles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return hc, "", false, fmt.Errorf("list TelemetryProfiles: %w", err)
	}
	matching, err := Matching(list.Items, node.Labels)
	if err != nil {
		return hc, "", false, err
	}
	if len(matching) == 0 {
		return hc, "", false, nil
	}
	if len(matching) > 1 {
		names := make([]string, len(matching))
		for i, p := range matching {
			names[i] = p.Name
		}
		log.Warn("several TelemetryProfiles select this node; the first by name applies", "profiles", strings.Join(names, ","))
	}
	hc, ok = httpbackend.ConfigFor(&matching[0].Spec, cfg.NodeName)
	return hc, matching[0].Name, ok, nil
}

// Matching returns the profiles that select a node with these labels,
// sorted by name.
func Matching(profiles []joulie.TelemetryProfile, nodeLabels map[string]string) ([]joulie.TelemetryProfile, error) {
	var out []joulie.TelemetryProfile
	for _, p := range profiles {
		sel := labels.Everything()
		if p.Spec.NodeSelector != nil {
			s, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
			if err != nil {
				return nil, fmt.Errorf("TelemetryProfile %s: nodeSelector: %w", p.Name, err)
			}
			sel = s
		}
		if sel.Matches(labels.Set(nodeLabels)) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b joulie.TelemetryProfile) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
