package cluster

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node labels of simulated GPU nodes.
const (
	LabelZone     = corev1.LabelTopologyZone // topology.kubernetes.io/zone
	LabelBlock    = "topology.copse.dev/block"
	LabelRack     = "topology.copse.dev/rack"
	LabelHostname = corev1.LabelHostname // kubernetes.io/hostname
	// LabelGPUClique names the NVLink domain, as NVIDIA's GPU feature
	// discovery does on GB200 NVL72 systems. One rack is one clique.
	LabelGPUClique    = "nvidia.com/gpu.clique"
	LabelGPUProduct   = "nvidia.com/gpu.product"
	LabelGPUCount     = "nvidia.com/gpu.count"
	LabelInstanceType = corev1.LabelInstanceTypeStable // node.kubernetes.io/instance-type
	// LabelType=TypeKwok marks the nodes kwok manages.
	LabelType = "type"
	TypeKwok  = "kwok"

	// ResourceGPU is the extended resource the NVIDIA device plugin reports.
	ResourceGPU corev1.ResourceName = "nvidia.com/gpu"
)

// NodeShape is the hardware of one simulated node.
type NodeShape struct {
	GPUs         int    // nvidia.com/gpu allocatable
	CPU          string // quantity, e.g. "144"
	Memory       string // quantity, e.g. "960Gi"
	Pods         int
	InstanceType string
	GPUProduct   string
}

// DefaultNodeShape is one GB200 compute tray: 4 GPUs, 2 Grace CPUs.
func DefaultNodeShape() NodeShape {
	return NodeShape{GPUs: 4, CPU: "144", Memory: "960Gi", Pods: 110, InstanceType: "sim-gb200", GPUProduct: "NVIDIA-GB200"}
}

// withDefaults fills zero fields from DefaultNodeShape, so callers can set
// only what they care about.
func (s NodeShape) withDefaults() NodeShape {
	d := DefaultNodeShape()
	if s.GPUs == 0 {
		s.GPUs = d.GPUs
	}
	if s.CPU == "" {
		s.CPU = d.CPU
	}
	if s.Memory == "" {
		s.Memory = d.Memory
	}
	if s.Pods == 0 {
		s.Pods = d.Pods
	}
	if s.InstanceType == "" {
		s.InstanceType = d.InstanceType
	}
	if s.GPUProduct == "" {
		s.GPUProduct = d.GPUProduct
	}
	return s
}

func (s NodeShape) validate() error {
	if s.GPUs < 0 || s.Pods < 0 {
		return fmt.Errorf("node shape: negative gpus (%d) or pods (%d)", s.GPUs, s.Pods)
	}
	if _, err := resource.ParseQuantity(s.CPU); err != nil {
		return fmt.Errorf("node shape: cpu %q: %w", s.CPU, err)
	}
	if _, err := resource.ParseQuantity(s.Memory); err != nil {
		return fmt.Errorf("node shape: memory %q: %w", s.Memory, err)
	}
	return nil
}

// Topology is the initial set of simulated nodes: zones contain blocks,
// blocks contain racks, racks contain nodes. A rack is one NVLink domain.
type Topology struct {
	Zones         int
	BlocksPerZone int
	RacksPerBlock int
	NodesPerRack  int
	Shape         NodeShape
}

// DefaultTopology is 1 zone x 2 blocks x 2 racks x 4 nodes: 16 nodes, 64
// GPUs, four cliques of 16 GPUs. Small enough to start fast, big enough that
// a gang placed at random would rarely land in one clique.
func DefaultTopology() Topology {
	return Topology{Zones: 1, BlocksPerZone: 2, RacksPerBlock: 2, NodesPerRack: 4, Shape: DefaultNodeShape()}
}

func (t Topology) validate() error {
	if t.Zones < 0 || t.BlocksPerZone < 0 || t.RacksPerBlock < 0 || t.NodesPerRack < 0 {
		return fmt.Errorf("topology %+v: counts must not be negative", t)
	}
	return t.Shape.validate()
}

// Placements lists every node of the topology in zone, block, rack, index
// order.
func (t Topology) Placements() []Placement {
	var out []Placement
	for z := range t.Zones {
		for b := range t.BlocksPerZone {
			for r := range t.RacksPerBlock {
				for n := range t.NodesPerRack {
					out = append(out, Placement{Zone: z, Block: b, Rack: r, Index: n})
				}
			}
		}
	}
	return out
}

// Placement is the position of one node in the topology. Block, rack and
// clique names embed their parents' indices so that label values are unique
// cluster-wide: "rack-0" in two blocks must not look like one domain to a
// topology-aware scheduler.
type Placement struct {
	Zone, Block, Rack, Index int
}

func (p Placement) ZoneName() string  { return fmt.Sprintf("zone-%d", p.Zone) }
func (p Placement) BlockName() string { return fmt.Sprintf("zone-%d-block-%d", p.Zone, p.Block) }
func (p Placement) RackName() string {
	return fmt.Sprintf("zone-%d-block-%d-rack-%d", p.Zone, p.Block, p.Rack)
}

// CliqueName is the nvidia.com/gpu.clique value of the rack.
func (p Placement) CliqueName() string {
	return fmt.Sprintf("zone-%d.block-%d.rack-%d", p.Zone, p.Block, p.Rack)
}

// NodeName is also the node's kubernetes.io/hostname.
func (p Placement) NodeName() string {
	return fmt.Sprintf("gpu-z%d-b%d-r%d-n%d", p.Zone, p.Block, p.Rack, p.Index)
}

// Labels are the labels of the node at p.
func (p Placement) Labels(shape NodeShape) map[string]string {
	return map[string]string{
		LabelZone:                p.ZoneName(),
		LabelBlock:               p.BlockName(),
		LabelRack:                p.RackName(),
		LabelGPUClique:           p.CliqueName(),
		LabelHostname:            p.NodeName(),
		LabelInstanceType:        shape.InstanceType,
		LabelType:                TypeKwok,
		LabelGPUProduct:          shape.GPUProduct,
		LabelGPUCount:            fmt.Sprint(shape.GPUs),
		"nvidia.com/gpu.present": "true",
		corev1.LabelOSStable:     "linux",
		corev1.LabelArchStable:   "amd64",
	}
}

// NodeObject builds the Node that copse creates for a placement. Status is
// set at creation (the apiserver keeps it) so the scheduler sees the GPUs
// from the start; kwok only adds the Ready condition. No taint: workloads
// schedule here without tolerations, as on real GPU nodes.
func NodeObject(p Placement, shape NodeShape, internalIP string) (*corev1.Node, error) {
	shape = shape.withDefaults()
	if err := shape.validate(); err != nil {
		return nil, err
	}
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(shape.CPU),
		corev1.ResourceMemory:           resource.MustParse(shape.Memory),
		corev1.ResourcePods:             *resource.NewQuantity(int64(shape.Pods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
		ResourceGPU:                     *resource.NewQuantity(int64(shape.GPUs), resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   p.NodeName(),
			Labels: p.Labels(shape),
		},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: internalIP},
				{Type: corev1.NodeHostName, Address: p.NodeName()},
			},
		},
	}, nil
}

// nodeIPBase is the first address handed to simulated nodes; pods get
// theirs from kwok's separate --cidr.
var nodeIPBase = netip.MustParseAddr("172.16.0.1")

// freeNodeIPs returns n addresses counting up from nodeIPBase that are not in
// used, so nodes added later never share an address with existing ones.
func freeNodeIPs(used map[string]bool, n int) []string {
	out := make([]string, 0, n)
	for ip := nodeIPBase; len(out) < n; ip = ip.Next() {
		if s := ip.String(); !used[s] {
			out = append(out, s)
		}
	}
	return out
}
