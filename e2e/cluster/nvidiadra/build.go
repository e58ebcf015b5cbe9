package nvidiadra

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// LabelManagedBy marks what the driver creates.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managerName    = "copse-nvidia-dra-sim"
)

// SliceName is the name of the ResourceSlice of a node's channels.
func SliceName(nodeName string) string { return nodeName + "-" + DriverName }

// SliceForNode returns the ResourceSlice the driver publishes for node, or
// false for a node that takes no part in multi-node NVLink: one without
// nvidia.com/gpu or without an NVLink clique label. The slice is the node's
// own pool (named after the node) with one channel device per GPU, so that
// as many single-GPU pods of one domain as the node has GPUs can each get a
// channel claim; every channel carries the node's clique as cliqueID. The
// generation is the pool's: callers bump it when the devices change.
func SliceForNode(node *corev1.Node, generation int64) (*resourcev1.ResourceSlice, bool) {
	clique := node.Labels[LabelGPUClique]
	gpus := node.Status.Allocatable[corev1.ResourceName(ResourceGPU)]
	if clique == "" || gpus.Value() <= 0 {
		return nil, false
	}
	devices := make([]resourcev1.Device, 0, gpus.Value())
	for id := range gpus.Value() {
		devices = append(devices, resourcev1.Device{
			Name: fmt.Sprintf("channel-%d", id),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				AttributeType:     {StringValue: ptr.To(DeviceTypeChannel)},
				AttributeID:       {IntValue: ptr.To(id)},
				AttributeCliqueID: {StringValue: ptr.To(clique)},
			},
		})
	}
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:   SliceName(node.Name),
			Labels: map[string]string{LabelManagedBy: managerName},
			// The garbage collector removes the slice with its node.
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}},
		},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   DriverName,
			NodeName: ptr.To(node.Name),
			Pool:     resourcev1.ResourcePool{Name: node.Name, Generation: generation, ResourceSliceCount: 1},
			Devices:  devices,
		},
	}, true
}

// ChannelDeviceClassObject is the DeviceClass a channel request names: the
// devices of DriverName whose type attribute is "channel".
func ChannelDeviceClassObject() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "DeviceClass"},
		ObjectMeta: metav1.ObjectMeta{Name: ChannelDeviceClass, Labels: map[string]string{LabelManagedBy: managerName}},
		Spec: resourcev1.DeviceClassSpec{
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
				Expression: fmt.Sprintf("device.driver == %q && device.attributes[%q].%s == %q",
					DriverName, DriverName, AttributeType, DeviceTypeChannel),
			}}},
		},
	}
}

// ChannelConfigParameters is the opaque configuration of a channel request.
// The claims made from a domain's template carry it, which is how the driver
// tells which claims belong to which domain (as NVIDIA's does).
type ChannelConfigParameters struct {
	APIVersion     string `json:"apiVersion"`
	Kind           string `json:"kind"`
	DomainID       string `json:"domainID"`
	AllocationMode string `json:"allocationMode"`
}

const channelConfigKind = "ComputeDomainChannelConfig"

// ClaimTemplateFor returns the channel ResourceClaimTemplate of cd, in its
// namespace, named as its spec.channel says and controlled by it. Each claim
// made from it asks for one channel (allocationMode Single) or for every
// channel of one node (All).
func ClaimTemplateFor(cd ComputeDomain) (*resourcev1.ResourceClaimTemplate, error) {
	mode := cd.Spec.Channel.AllocationMode
	if mode == "" {
		mode = AllocationModeSingle
	}
	request := resourcev1.ExactDeviceRequest{DeviceClassName: ChannelDeviceClass}
	switch mode {
	case AllocationModeSingle:
		request.AllocationMode, request.Count = resourcev1.DeviceAllocationModeExactCount, 1
	case AllocationModeAll:
		request.AllocationMode = resourcev1.DeviceAllocationModeAll
	default:
		return nil, fmt.Errorf("ComputeDomain %s/%s: spec.channel.allocationMode %q: want %s or %s",
			cd.Namespace, cd.Name, mode, AllocationModeSingle, AllocationModeAll)
	}
	params, err := json.Marshal(ChannelConfigParameters{
		APIVersion: GroupVersionKind.GroupVersion().String(), Kind: channelConfigKind,
		DomainID: string(cd.UID), AllocationMode: mode,
	})
	if err != nil {
		return nil, fmt.Errorf("ComputeDomain %s/%s: encode channel config: %w", cd.Namespace, cd.Name, err)
	}
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{
			Name:      cd.Spec.Channel.ResourceClaimTemplate.Name,
			Namespace: cd.Namespace,
			Labels:    map[string]string{LabelManagedBy: managerName},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: GroupVersionKind.GroupVersion().String(), Kind: GroupVersionKind.Kind,
				Name: cd.Name, UID: cd.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: ChannelRequest, Exactly: &request}},
			Config: []resourcev1.DeviceClaimConfiguration{{
				Requests: []string{ChannelRequest},
				DeviceConfiguration: resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{
					Driver: DriverName, Parameters: runtime.RawExtension{Raw: params},
				}},
			}},
		}}},
	}, nil
}

// DomainOfClaim returns the UID of the ComputeDomain whose template claim
// was made from, or "" for any other claim.
func DomainOfClaim(claim *resourcev1.ResourceClaim) string {
	for _, cfg := range claim.Spec.Devices.Config {
		if cfg.Opaque == nil || cfg.Opaque.Driver != DriverName {
			continue
		}
		var params ChannelConfigParameters
		if json.Unmarshal(cfg.Opaque.Parameters.Raw, &params) == nil && params.Kind == channelConfigKind {
			return params.DomainID
		}
	}
	return ""
}

// NodeInfo is what status.nodes says about a node besides its name.
type NodeInfo struct {
	IPAddress string
	CliqueID  string
}

// NodeInfoOf reads a node's InternalIP and NVLink clique.
func NodeInfoOf(node *corev1.Node) NodeInfo {
	info := NodeInfo{CliqueID: node.Labels[LabelGPUClique]}
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			info.IPAddress = a.Address
			break
		}
	}
	return info
}

// StatusFromClaims is the status of a domain whose claims are claims (the
// claims of that domain only) on a cluster whose nodes are nodes. Every node
// holding an allocated channel of the domain is listed, Ready, with the
// node's address and clique. A node keeps the index previous gave it; a new
// node gets the lowest index not used in its clique (indices count per
// clique, as IMEX daemons do). The domain is Ready once numNodes nodes have
// joined, at once when numNodes is 0.
func StatusFromClaims(numNodes int, previous []Node, claims []*resourcev1.ResourceClaim, nodes map[string]NodeInfo) ComputeDomainStatus {
	joined := map[string]bool{}
	for _, claim := range claims {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if r.Driver == DriverName {
				joined[r.Pool] = true // a pool is one node
			}
		}
	}
	names := slices.Sorted(maps.Keys(joined))

	kept := map[string]int{}
	for _, n := range previous {
		if joined[n.Name] && n.CliqueID == nodes[n.Name].CliqueID {
			kept[n.Name] = n.Index
		}
	}
	used := map[string]map[int]bool{} // clique -> indices taken
	for name, index := range kept {
		clique := nodes[name].CliqueID
		if used[clique] == nil {
			used[clique] = map[int]bool{}
		}
		used[clique][index] = true
	}
	status := ComputeDomainStatus{Nodes: make([]Node, 0, len(names))}
	for _, name := range names {
		info := nodes[name]
		index, ok := kept[name]
		if !ok {
			if used[info.CliqueID] == nil {
				used[info.CliqueID] = map[int]bool{}
			}
			for used[info.CliqueID][index] {
				index++
			}
			used[info.CliqueID][index] = true
		}
		status.Nodes = append(status.Nodes, Node{
			Name: name, IPAddress: info.IPAddress, CliqueID: info.CliqueID, Index: index, Status: StatusReady,
		})
	}
	status.Status = StatusNotReady
	if len(status.Nodes) >= numNodes {
		status.Status = StatusReady
	}
	return status
}
