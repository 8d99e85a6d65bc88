package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultEndpointTimeout bounds each request to an http Endpoint that
// sets no timeout; the agent's http.timeout key defaults to it too.
const DefaultEndpointTimeout = 2 * time.Second

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=tp,categories=joulie
// +kubebuilder:printcolumn:name="Telemetry",type=string,JSONPath=`.spec.telemetry.type`
// +kubebuilder:printcolumn:name="Control",type=string,JSONPath=`.spec.control.type`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TelemetryProfile routes the agents of the nodes it selects to a telemetry
// source and a control backend other than the host's own, typically a
// simulator reached over HTTP. It is optional: without one, agents use the
// host. When several profiles select a node, the one whose name sorts first
// wins, and the agent warns.
type TelemetryProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the routing, written by an admin.
	Spec TelemetryProfileSpec `json:"spec"`
}

// TelemetryProfileSpec is a telemetry and control routing.
type TelemetryProfileSpec struct {
	// NodeSelector selects the nodes this profile applies to; an empty
	// selector selects every node.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	// Telemetry is where the agent reads power from.
	// +optional
	Telemetry *Endpoint `json:"telemetry,omitempty"`
	// Control is where the agent sends cap settings.
	// +optional
	Control *Endpoint `json:"control,omitempty"`
}

// EndpointType is where telemetry or control is routed.
// +kubebuilder:validation:Enum=host;http
type EndpointType string

const (
	// EndpointHost: the host's own sysfs, NVML and amd-smi.
	EndpointHost EndpointType = "host"
	// EndpointHTTP: an HTTP endpoint speaking the agent's control
	// contract.
	EndpointHTTP EndpointType = "http"
)

// Endpoint is one routing target.
// +kubebuilder:validation:XValidation:rule="self.type != 'http' || has(self.url)",message="url is required when type is http"
type Endpoint struct {
	// Type is host or http.
	Type EndpointType `json:"type"`
	// URL is the base address of an http endpoint; `{node}` in it is
	// replaced by the node name, so one simulator can serve many nodes.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	URL string `json:"url,omitempty"`
	// Timeout bounds each request to the endpoint (default 2s).
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// TelemetryProfileList is a list of TelemetryProfile.
type TelemetryProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TelemetryProfile `json:"items"`
}
