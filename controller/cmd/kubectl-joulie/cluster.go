package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
)

// cluster reads the objects the commands show, and turns the API
// server's refusals into messages an operator can act on.
type cluster struct {
	kc kubernetes.Interface
	jc versioned.Interface
}

func newCluster(flags *genericclioptions.ConfigFlags) (*cluster, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	// A workstation tool lists a whole cluster at once: client-go's
	// default of 5 requests per second would make a refresh wait on
	// itself.
	cfg.QPS, cfg.Burst = 50, 100
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("core client: %w", err)
	}
	jc, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("joulie.io client: %w", err)
	}
	return &cluster{kc: kc, jc: jc}, nil
}

// viewerHint says how to get the permissions the plugin needs.
const viewerHint = "bind the ClusterRole joulie-viewer to your user or group " +
	"(the chart ships it with --set viewer.enabled=true; then kubectl create clusterrolebinding joulie-viewer-<you> --clusterrole=joulie-viewer --user=<you>)"

// crdHint says how to install the CRDs.
const crdHint = "install Joulie's chart (helm install joulie packaging/helm/joulie -n joulie-system --create-namespace), " +
	"or at least its CRDs (kubectl apply -f packaging/helm/joulie/crds/)"

// apiError explains a failed call: verb on resource (plural.group),
// within namespace ("" for the cluster scope).
func apiError(err error, verb, resource, namespace string) error {
	where := "at the cluster scope"
	if namespace != "" {
		where = "in namespace " + namespace
	}
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("no permission to %s %s %s (%v): %s", verb, resource, where, err, viewerHint)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s %s: the API server did not accept the credentials of your kubeconfig (%v)", verb, resource, err)
	case apierrors.IsNotFound(err) && strings.HasSuffix(resource, "."+joulie.GroupName):
		// A list answers 404 only when the resource is not served.
		return fmt.Errorf("the API server does not serve %s: Joulie's CRDs are not installed in this cluster; %s", resource, crdHint)
	}
	return fmt.Errorf("%s %s %s: %w", verb, resource, where, err)
}

// snapshot is what status and explain read: every Joulie object, the
// nodes and the pods, listed once.
type snapshot struct {
	nodes    []corev1.Node
	profiles []joulie.NodePowerProfile
	twins    []joulie.NodeTwin
	hardware []joulie.NodeHardware
	pods     []corev1.Pod
}

// read lists everything a status or an explanation needs. selector
// limits the nodes (a label selector); the Joulie objects of every node
// are read, as they are few and small.
func (c *cluster) read(ctx context.Context, selector string) (*snapshot, error) {
	var s snapshot
	// The Joulie resources first: without the CRDs nothing else matters.
	profiles, err := c.jc.JoulieV1alpha1().NodePowerProfiles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, apiError(err, "list", "nodepowerprofiles."+joulie.GroupName, "")
	}
	twins, err := c.jc.JoulieV1alpha1().NodeTwins().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, apiError(err, "list", "nodetwins."+joulie.GroupName, "")
	}
	hardware, err := c.jc.JoulieV1alpha1().NodeHardwares().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, apiError(err, "list", "nodehardwares."+joulie.GroupName, "")
	}
	nodes, err := c.kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		if apierrors.IsBadRequest(err) {
			return nil, usageError{fmt.Errorf("label selector %q: %v", selector, err)}
		}
		return nil, apiError(err, "list", "nodes", "")
	}
	// Pods that may hold something on a node: every pod but those that
	// ended. Unbound ones count as pending demand in explain's class
	// line only, so they are skipped by the field selector as well.
	pods, err := c.kc.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: "spec.nodeName!=,status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed),
	})
	if err != nil {
		return nil, apiError(err, "list", "pods", "")
	}
	s.profiles, s.twins, s.hardware, s.nodes, s.pods = profiles.Items, twins.Items, hardware.Items, nodes.Items, pods.Items
	slices.SortFunc(s.nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return &s, nil
}

// pod reads one pod.
func (c *cluster) pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	p, err := c.kc.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod %s not found in namespace %s (-n to name another)", name, namespace)
	}
	if err != nil {
		return nil, apiError(err, "get", "pods", namespace)
	}
	return p, nil
}

// energyReports lists the EnergyReport events of namespace ("" for all).
func (c *cluster) energyReports(ctx context.Context, namespace string) ([]eventsv1.Event, error) {
	list, err := c.kc.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=EnergyReport"})
	if err != nil {
		return nil, apiError(err, "list", "events.events.k8s.io", namespace)
	}
	return list.Items, nil
}

// activePods lists the pods of namespace ("" for all) that have not
// ended.
func (c *cluster) activePods(ctx context.Context, namespace string) ([]corev1.Pod, error) {
	list, err := c.kc.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed),
	})
	if err != nil {
		return nil, apiError(err, "list", "pods", namespace)
	}
	return list.Items, nil
}
