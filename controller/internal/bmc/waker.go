package bmc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// NodeWaker wakes one node; parking.Waker has this method.
type NodeWaker interface {
	Wake(ctx context.Context, node *corev1.Node) error
}

// Waker wakes a node through its BMC when an administrator has given it a
// BMC Secret, and through Fallback (Wake-on-LAN) when not: a site that
// set up IPMI for a node means it to be used, and one that has not still
// has the network. Whether a node has a BMC is the Secret's to say, never
// the Node's.
type Waker struct {
	BMC      *Client
	Fallback NodeWaker
}

// Wake implements parking's Waker. A BMC that fails is the error: falling
// back to Wake-on-LAN then would hide a wrong password or a dead BMC.
func (w Waker) Wake(ctx context.Context, node *corev1.Node) error {
	err := w.BMC.Wake(ctx, node)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, ErrNoSecret):
		return fmt.Errorf("wake %s through its BMC: %w", node.Name, err)
	case w.Fallback == nil:
		return fmt.Errorf("wake %s: %w, and Wake-on-LAN is not available", node.Name, err)
	}
	return w.Fallback.Wake(ctx, node)
}

// EventLegacyAnnotation is the reason of the Warning Event on a node that
// still carries the BMC annotations the controller no longer reads.
const EventLegacyAnnotation = "BMCAnnotationIgnored"

// legacyAnnotations were read for a node's BMC before its Secret held the
// address; a node's kubelet may write them, so they are ignored now.
var legacyAnnotations = []string{joulie.AnnotationBMCAddress, joulie.AnnotationBMCSecret}

// LegacyNotice tells, once per node and process, that a node's
// joulie.io/bmc-address or joulie.io/bmc-secret annotation is ignored and
// how to move it into the node's BMC Secret. Safe for concurrent use.
type LegacyNotice struct {
	Namespace string // the BMC Secrets' namespace
	Recorder  record.EventRecorder
	Log       *slog.Logger

	told sync.Map // node name → struct{}
}

// Check warns about node if it carries one of the annotations and has not
// been warned about before; it reports whether it warned.
func (l *LegacyNotice) Check(node *corev1.Node) bool {
	var found []string
	for _, k := range legacyAnnotations {
		if _, ok := node.Annotations[k]; ok {
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		return false
	}
	if _, told := l.told.LoadOrStore(node.Name, struct{}{}); told {
		return false
	}
	which := "annotation " + found[0] + " is"
	if len(found) > 1 {
		which = "annotations " + strings.Join(found, " and ") + " are"
	}
	msg := fmt.Sprintf("%s ignored: the controller reads the BMC's address, username and password only from Secret %s/%s (keys %s, %s, %s); create that Secret (controller/README.md, \"Migrating from the BMC annotations\"), then remove the annotations from the node",
		which, l.Namespace, SecretName(node.Name), SecretKeyAddress, SecretKeyUsername, SecretKeyPassword)
	if l.Log != nil {
		l.Log.Warn("node carries BMC annotations the controller ignores", "node", node.Name, "annotations", found, "secret", l.Namespace+"/"+SecretName(node.Name))
	}
	if l.Recorder != nil {
		l.Recorder.Event(node, corev1.EventTypeWarning, EventLegacyAnnotation, msg)
	}
	return true
}
