package nvidiadra

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	// Registers Ginkgo's flags: `make test-e2e` runs every package under
	// e2e/ with -ginkgo.label-filter, which a plain test binary would refuse.
	_ "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

func gpuNode(name, clique string, gpus int64) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)},
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: "172.16.0.9"}},
		},
	}
	if clique != "" {
		n.Labels[LabelGPUClique] = clique
	}
	return n
}

func TestSliceForNode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		node      *corev1.Node
		wantSlice bool
		channels  int
	}{
		{"GPU node in a clique: one channel per GPU", gpuNode("n0", "zone-0.block-0.rack-0", 4), true, 4},
		{"one GPU", gpuNode("n1", "c", 1), true, 1},
		{"no clique label: no multi-node NVLink", gpuNode("n2", "", 4), false, 0},
		{"no GPUs", gpuNode("n3", "c", 0), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slice, ok := SliceForNode(tc.node, 7)
			if ok != tc.wantSlice {
				t.Fatalf("SliceForNode ok = %v, want %v", ok, tc.wantSlice)
			}
			if !ok {
				return
			}
			spec := slice.Spec
			if slice.Name != tc.node.Name+"-compute-domain.nvidia.com" || spec.Driver != DriverName ||
				spec.NodeName == nil || *spec.NodeName != tc.node.Name ||
				spec.Pool != (resourcev1.ResourcePool{Name: tc.node.Name, Generation: 7, ResourceSliceCount: 1}) {
				t.Errorf("slice %s spec %+v: want driver %s, node and pool %s, generation 7", slice.Name, spec, DriverName, tc.node.Name)
			}
			if refs := slice.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Node" || refs[0].UID != tc.node.UID {
				t.Errorf("owner references %+v: want the node", refs)
			}
			if len(spec.Devices) != tc.channels {
				t.Fatalf("%d devices, want %d", len(spec.Devices), tc.channels)
			}
			for i, d := range spec.Devices {
				a := d.Attributes
				if d.Name != fmt.Sprintf("channel-%d", i) || *a[AttributeType].StringValue != "channel" ||
					*a[AttributeID].IntValue != int64(i) || *a[AttributeCliqueID].StringValue != tc.node.Labels[LabelGPUClique] {
					t.Errorf("device %d = %s %+v: want channel-%d, type channel, id %d, the node's clique", i, d.Name, a, i, i)
				}
			}
		})
	}
}

func domain(mode string) ComputeDomain {
	cd := ComputeDomain{Name: "train-0", Namespace: "ns", UID: "cd-uid"}
	cd.Spec.Channel.ResourceClaimTemplate.Name = "train-0-channel"
	cd.Spec.Channel.AllocationMode = mode
	return cd
}

func TestClaimTemplateFor(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		wantMode  resourcev1.DeviceAllocationMode
		wantCount int64
	}{
		{"", resourcev1.DeviceAllocationModeExactCount, 1}, // the CRD's default
		{AllocationModeSingle, resourcev1.DeviceAllocationModeExactCount, 1},
		{AllocationModeAll, resourcev1.DeviceAllocationModeAll, 0},
	} {
		t.Run("mode "+tc.mode, func(t *testing.T) {
			rct, err := ClaimTemplateFor(domain(tc.mode))
			if err != nil {
				t.Fatal(err)
			}
			if rct.Name != "train-0-channel" || rct.Namespace != "ns" {
				t.Errorf("template %s/%s: want ns/train-0-channel", rct.Namespace, rct.Name)
			}
			if !controlledBy(rct.OwnerReferences, "cd-uid") || rct.OwnerReferences[0].Kind != "ComputeDomain" {
				t.Errorf("owner references %+v: want the ComputeDomain as controller", rct.OwnerReferences)
			}
			requests := rct.Spec.Spec.Devices.Requests
			if len(requests) != 1 || requests[0].Exactly == nil {
				t.Fatalf("requests %+v: want one exact request", requests)
			}
			r := requests[0].Exactly
			if r.DeviceClassName != ChannelDeviceClass || r.AllocationMode != tc.wantMode || r.Count != tc.wantCount {
				t.Errorf("request %+v: want class %s, mode %s, count %d", r, ChannelDeviceClass, tc.wantMode, tc.wantCount)
			}
			claim := &resourcev1.ResourceClaim{Spec: rct.Spec.Spec}
			if got := DomainOfClaim(claim); got != "cd-uid" {
				t.Errorf("DomainOfClaim of a claim made from the template = %q, want cd-uid", got)
			}
		})
	}
	if _, err := ClaimTemplateFor(domain("Some")); err == nil || !strings.Contains(err.Error(), "spec.channel.allocationMode") {
		t.Errorf("unknown allocation mode: error %v, want one naming spec.channel.allocationMode", err)
	}
}

func TestDomainOfClaimIgnoresOtherClaims(t *testing.T) {
	other := &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Config: []resourcev1.DeviceClaimConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{
			Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.nvidia.com", Parameters: runtime.RawExtension{Raw: []byte(`{"domainID":"x"}`)}},
		}}},
	}}}
	if got := DomainOfClaim(other); got != "" {
		t.Errorf("DomainOfClaim of another driver's claim = %q, want empty", got)
	}
	if got := DomainOfClaim(&resourcev1.ResourceClaim{}); got != "" {
		t.Errorf("DomainOfClaim of a claim without config = %q, want empty", got)
	}
}

func allocated(pools ...string) *resourcev1.ResourceClaim {
	claim := &resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{}}}
	for _, p := range pools {
		claim.Status.Allocation.Devices.Results = append(claim.Status.Allocation.Devices.Results,
			resourcev1.DeviceRequestAllocationResult{Request: ChannelRequest, Driver: DriverName, Pool: p, Device: "channel-0"})
	}
	return claim
}

func TestStatusFromClaims(t *testing.T) {
	nodes := map[string]NodeInfo{
		"a0": {IPAddress: "10.0.0.1", CliqueID: "A"}, "a1": {IPAddress: "10.0.0.2", CliqueID: "A"},
		"a2": {IPAddress: "10.0.0.3", CliqueID: "A"}, "b0": {IPAddress: "10.0.1.1", CliqueID: "B"},
	}
	node := func(name string, index int) Node {
		return Node{Name: name, IPAddress: nodes[name].IPAddress, CliqueID: nodes[name].CliqueID, Index: index, Status: StatusReady}
	}
	for _, tc := range []struct {
		name     string
		numNodes int
		previous []Node
		claims   []*resourcev1.ResourceClaim
		want     ComputeDomainStatus
	}{
		{
			name: "no claims yet: elastic domain is Ready with no nodes",
			want: ComputeDomainStatus{Status: StatusReady, Nodes: []Node{}},
		},
		{
			name: "unallocated claims do not count", numNodes: 1,
			claims: []*resourcev1.ResourceClaim{{}},
			want:   ComputeDomainStatus{Status: StatusNotReady, Nodes: []Node{}},
		},
		{
			name:   "each node once, indices per clique in name order",
			claims: []*resourcev1.ResourceClaim{allocated("a1"), allocated("b0"), allocated("a0"), allocated("a1")},
			want:   ComputeDomainStatus{Status: StatusReady, Nodes: []Node{node("a0", 0), node("a1", 1), node("b0", 0)}},
		},
		{
			name: "a node keeps its index; a new one takes the lowest free index of its clique", numNodes: 3,
			previous: []Node{node("a1", 0), node("a2", 2)},
			claims:   []*resourcev1.ResourceClaim{allocated("a2"), allocated("a0"), allocated("a1")},
			want:     ComputeDomainStatus{Status: StatusReady, Nodes: []Node{node("a0", 1), node("a1", 0), node("a2", 2)}},
		},
		{
			name: "a node whose claims are gone leaves; fewer than numNodes is NotReady", numNodes: 2,
			previous: []Node{node("a0", 0), node("a1", 1)},
			claims:   []*resourcev1.ResourceClaim{allocated("a1")},
			want:     ComputeDomainStatus{Status: StatusNotReady, Nodes: []Node{node("a1", 1)}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := StatusFromClaims(tc.numNodes, tc.previous, tc.claims, nodes)
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(tc.want)
			if string(gotJSON) != string(wantJSON) {
				t.Errorf("StatusFromClaims =\n %s\nwant\n %s", gotJSON, wantJSON)
			}
		})
	}
}

func TestNodeInfoOf(t *testing.T) {
	got := NodeInfoOf(gpuNode("n0", "A", 4))
	if got != (NodeInfo{IPAddress: "172.16.0.9", CliqueID: "A"}) {
		t.Errorf("NodeInfoOf = %+v, want the InternalIP and the clique label", got)
	}
}

// TestCRD: the embedded CRD decodes strictly and has what the driver and
// copse rely on: the v1beta1 fields, defaults, immutability and status.
func TestCRD(t *testing.T) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(CRDYAML, &crd); err != nil {
		t.Fatal(err)
	}
	if crd.Name != CRDName || crd.Spec.Group != GroupVersionKind.Group || crd.Spec.Names.Kind != GroupVersionKind.Kind ||
		crd.Spec.Scope != apiextensionsv1.NamespaceScoped || crd.Spec.Names.Plural != GroupVersionResource.Resource {
		t.Fatalf("CRD %s: group %s kind %s scope %s", crd.Name, crd.Spec.Group, crd.Spec.Names.Kind, crd.Spec.Scope)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != GroupVersionKind.Version || crd.Spec.Versions[0].Subresources.Status == nil {
		t.Fatalf("versions %+v: want v1beta1 with the status subresource", crd.Spec.Versions)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if len(spec.XValidations) != 1 || spec.XValidations[0].Rule != "self == oldSelf" {
		t.Errorf("spec validations %+v: want spec immutable", spec.XValidations)
	}
	if spec.Required[0] != "channel" || string(spec.Properties["numNodes"].Default.Raw) != "0" || *spec.Properties["numNodes"].Minimum != 0 {
		t.Errorf("spec: want channel required and numNodes default 0, minimum 0")
	}
	mode := spec.Properties["channel"].Properties["allocationMode"]
	if string(mode.Default.Raw) != `"Single"` || len(mode.Enum) != 2 {
		t.Errorf("allocationMode: want enum All|Single, default Single")
	}
	status := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	for _, f := range []string{"name", "ipAddress", "cliqueID", "index", "status"} {
		if _, ok := status.Properties["nodes"].Items.Schema.Properties[f]; !ok {
			t.Errorf("status.nodes[] lacks %s", f)
		}
	}
}

func TestFromUnstructured(t *testing.T) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: resource.nvidia.com/v1beta1
kind: ComputeDomain
metadata: {name: d, namespace: ns, uid: u1, finalizers: [x]}
spec: {numNodes: 2, channel: {resourceClaimTemplate: {name: d-channel}, allocationMode: All}}
status: {status: Ready, nodes: [{name: n0, cliqueID: A, index: 3, status: Ready}]}
`), &obj.Object); err != nil {
		t.Fatal(err)
	}
	cd, err := FromUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	if cd.Name != "d" || cd.Namespace != "ns" || cd.UID != "u1" || cd.Deleting || cd.Spec.NumNodes != 2 ||
		cd.Spec.Channel.ResourceClaimTemplate.Name != "d-channel" || cd.Spec.Channel.AllocationMode != "All" ||
		cd.Status.Status != "Ready" || len(cd.Status.Nodes) != 1 || cd.Status.Nodes[0].Index != 3 {
		t.Errorf("FromUnstructured = %+v", cd)
	}
}
