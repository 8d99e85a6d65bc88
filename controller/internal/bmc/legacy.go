package bmc

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

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
