package nvidiadra

import (
	_ "embed"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Names the driver shares with NVIDIA's: copse's MNNVL support and any
// workload written for the real driver use them unchanged.
const (
	// DriverName is the DRA driver of ComputeDomain channels.
	DriverName = "compute-domain.nvidia.com"
	// ChannelDeviceClass selects the channel devices of DriverName.
	ChannelDeviceClass = "compute-domain-default-channel.nvidia.com"
	// Finalizer holds a ComputeDomain until its channel template is deleted.
	Finalizer = "resource.nvidia.com/computeDomain"
	// LabelGPUClique is the node label naming the node's NVLink domain, set
	// by NVIDIA's GPU feature discovery on multi-node NVLink systems.
	LabelGPUClique = "nvidia.com/gpu.clique"
	// ResourceGPU is the extended resource of the NVIDIA device plugin.
	ResourceGPU = "nvidia.com/gpu"

	// ChannelRequest names the one request of a channel claim template.
	ChannelRequest = "channel"

	// Device attributes of a channel (qualified by DriverName in CEL:
	// device.attributes["compute-domain.nvidia.com"].type).
	AttributeType     = "type"
	AttributeID       = "id"
	AttributeCliqueID = "cliqueID"
	DeviceTypeChannel = "channel"
)

// Values of spec.channel.allocationMode and of status.status and
// status.nodes[].status.
const (
	AllocationModeSingle = "Single"
	AllocationModeAll    = "All"
	StatusReady          = "Ready"
	StatusNotReady       = "NotReady"
)

// GroupVersionResource of ComputeDomains, for the dynamic client.
var GroupVersionResource = schema.GroupVersionResource{Group: "resource.nvidia.com", Version: "v1beta1", Resource: "computedomains"}

// GroupVersionKind of ComputeDomains.
var GroupVersionKind = schema.GroupVersionKind{Group: "resource.nvidia.com", Version: "v1beta1", Kind: "ComputeDomain"}

// CRDName is the name of the ComputeDomain CustomResourceDefinition.
const CRDName = "computedomains.resource.nvidia.com"

// CRDYAML is the ComputeDomain CustomResourceDefinition the driver installs.
//
//go:embed computedomain-crd.yaml
var CRDYAML []byte

// ComputeDomain is the part of a ComputeDomain the driver reads and writes.
type ComputeDomain struct {
	Name, Namespace string
	UID             types.UID
	Deleting        bool
	Finalizers      []string
	Spec            ComputeDomainSpec   `json:"spec"`
	Status          ComputeDomainStatus `json:"status"`
}

// ComputeDomainSpec is spec of a ComputeDomain.
type ComputeDomainSpec struct {
	NumNodes int           `json:"numNodes"`
	Channel  ChannelConfig `json:"channel"`
}

// ChannelConfig is spec.channel.
type ChannelConfig struct {
	ResourceClaimTemplate struct {
		Name string `json:"name"`
	} `json:"resourceClaimTemplate"`
	AllocationMode string `json:"allocationMode,omitempty"`
}

// ComputeDomainStatus is status of a ComputeDomain.
type ComputeDomainStatus struct {
	Status string `json:"status,omitempty"`
	Nodes  []Node `json:"nodes,omitempty"`
}

// Node is one entry of status.nodes.
type Node struct {
	Name      string `json:"name"`
	IPAddress string `json:"ipAddress,omitempty"`
	CliqueID  string `json:"cliqueID,omitempty"`
	Index     int    `json:"index"`
	Status    string `json:"status,omitempty"`
}

// FromUnstructured reads a ComputeDomain served by the API server.
func FromUnstructured(obj *unstructured.Unstructured) (ComputeDomain, error) {
	cd := ComputeDomain{
		Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: obj.GetUID(),
		Deleting: obj.GetDeletionTimestamp() != nil, Finalizers: obj.GetFinalizers(),
	}
	var body struct {
		Spec   ComputeDomainSpec   `json:"spec"`
		Status ComputeDomainStatus `json:"status"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &body); err != nil {
		return ComputeDomain{}, fmt.Errorf("read ComputeDomain %s/%s: %w", cd.Namespace, cd.Name, err)
	}
	cd.Spec, cd.Status = body.Spec, body.Status
	return cd, nil
}
