// Package v1alpha1 holds the joulie.io/v1alpha1 API: the objects through
// which the agent, the controller and the scheduler extender talk to each
// other (NodeHardware, NodePowerProfile, NodeTwin, TelemetryProfile), and the
// node labels and pod annotations that carry power intent to the scheduler.
//
// Every object is cluster-scoped and named after the node it describes.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +groupName=joulie.io
// +kubebuilder:object:generate=true
package v1alpha1
