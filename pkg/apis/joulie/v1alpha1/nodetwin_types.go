package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ntw,categories=joulie
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.status.schedulableClass`
// +kubebuilder:printcolumn:name="Headroom",type=number,JSONPath=`.status.predictedPowerHeadroomScore`
// +kubebuilder:printcolumn:name="Cooling",type=number,JSONPath=`.status.predictedCoolingStressScore`
// +kubebuilder:printcolumn:name="PSU",type=number,JSONPath=`.status.predictedPsuStressScore`
// +kubebuilder:printcolumn:name="Power-W",type=number,JSONPath=`.status.powerMeasurement.measuredNodePowerW`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.status.powerMeasurement.source`,priority=1
// +kubebuilder:printcolumn:name="Updated",type=date,JSONPath=`.status.lastUpdated`

// NodeTwin is the controller's digital twin of a node: the scores the
// scheduler extender ranks nodes by. It is named after the node and carries
// status only.
type NodeTwin struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Status is the twin's output.
	// +optional
	Status NodeTwinStatus `json:"status,omitempty"`
}

// SchedulableClass is the supply class the scheduler sees for a node.
// +kubebuilder:validation:Enum=performance;eco;draining
type SchedulableClass string

const (
	// ClassPerformance: the node supplies performance capacity.
	ClassPerformance SchedulableClass = "performance"
	// ClassEco: the node runs capped.
	ClassEco SchedulableClass = "eco"
	// ClassDraining: the node is planned for eco but still runs
	// performance-sensitive pods; new performance pods stay off it.
	ClassDraining SchedulableClass = "draining"
)

// NodeTwinStatus is the twin's output for one node. Scores run from 0 to
// 100.
type NodeTwinStatus struct {
	// SchedulableClass is the class the extender filters on.
	// +optional
	SchedulableClass SchedulableClass `json:"schedulableClass,omitempty"`
	// PredictedPowerHeadroomScore is the room left for more work: 100 is
	// an uncapped, cool node, 0 a node at its cap or cooling limit.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	PredictedPowerHeadroomScore float64 `json:"predictedPowerHeadroomScore"`
	// PredictedCoolingStressScore is the predicted share of the node's
	// cooling capacity in use.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	PredictedCoolingStressScore float64 `json:"predictedCoolingStressScore"`
	// PredictedPsuStressScore is the predicted share of the rack's power
	// supply in use; the same for every node of a rack.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	PredictedPsuStressScore float64 `json:"predictedPsuStressScore"`
	// HardwareDensityScore is the node's compute density normalized over
	// the managed nodes (100 for the densest).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	HardwareDensityScore float64 `json:"hardwareDensityScore"`
	// EstimatedPUE is the facility's power usage effectiveness, (IT +
	// cooling) / IT, when facility metrics are enabled.
	// +kubebuilder:validation:Minimum=1
	// +optional
	EstimatedPUE *float64 `json:"estimatedPUE,omitempty"`
	// PowerMeasurement holds the measured and budgeted power the
	// extender projects headroom from.
	// +optional
	PowerMeasurement *PowerMeasurement `json:"powerMeasurement,omitempty"`
	// LastUpdated is when the controller computed this status; the
	// extender treats older twins as stale.
	// +optional
	LastUpdated metav1.Time `json:"lastUpdated,omitempty"`
}

// MeasurementSource says where a node's power figure came from.
// +kubebuilder:validation:Enum=agent;kepler;utilization;static
type MeasurementSource string

const (
	// SourceAgent: the agent's own RAPL and GPU readings.
	SourceAgent MeasurementSource = "agent"
	// SourceKepler: Kepler metrics through Prometheus.
	SourceKepler MeasurementSource = "kepler"
	// SourceUtilization: a utilization-based model.
	SourceUtilization MeasurementSource = "utilization"
	// SourceStatic: an estimate from the caps, when nothing is measured.
	SourceStatic MeasurementSource = "static"
)

// PowerMeasurement is a node's measured power and power budget, in watts.
type PowerMeasurement struct {
	// Source says where MeasuredNodePowerW came from.
	Source MeasurementSource `json:"source"`
	// MeasuredNodePowerW is the node's current draw.
	// +kubebuilder:validation:Minimum=0
	MeasuredNodePowerW float64 `json:"measuredNodePowerW"`
	// CPUCappedPowerW is the CPU budget: cap share times CPU max.
	// +kubebuilder:validation:Minimum=0
	CPUCappedPowerW float64 `json:"cpuCappedPowerW"`
	// GPUCappedPowerW is the GPU budget: cap share times GPU max.
	// +kubebuilder:validation:Minimum=0
	GPUCappedPowerW float64 `json:"gpuCappedPowerW"`
	// NodeCappedPowerW is CPU plus GPU budget.
	// +kubebuilder:validation:Minimum=0
	NodeCappedPowerW float64 `json:"nodeCappedPowerW"`
	// CPUTdpW is the CPUs' thermal design power.
	// +kubebuilder:validation:Minimum=0
	CPUTdpW float64 `json:"cpuTdpW"`
	// GPUTdpW is the GPUs' thermal design power.
	// +kubebuilder:validation:Minimum=0
	GPUTdpW float64 `json:"gpuTdpW"`
	// NodeTdpW is CPU plus GPU TDP.
	// +kubebuilder:validation:Minimum=0
	NodeTdpW float64 `json:"nodeTdpW"`
	// PowerTrendWPerMin is the rolling derivative of the node's draw:
	// positive when rising.
	PowerTrendWPerMin float64 `json:"powerTrendWPerMin"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// NodeTwinList is a list of NodeTwin.
type NodeTwinList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeTwin `json:"items"`
}
