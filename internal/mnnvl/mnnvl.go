// Package mnnvl holds copse's multi-node NVLink rules (Grove's GREP-417
// contract, the grove.io/mnnvl-group form): which MNNVL group a clique's
// pods belong to, which pods take part (those requesting GPUs), the NVIDIA
// ComputeDomain of a group and the channel claim its pods carry. Everything
// here is a pure function of plain values; the PodCliqueSet and TrainJob
// controllers and a pod decorator apply it.
package mnnvl

import (
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// GPUResource is the extended resource whose request makes a container take
// part in MNNVL.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// ClaimName is the pod's resourceClaims entry (and each GPU container's
// resources.claims entry) for the ComputeDomain's channel, as in Grove.
const ClaimName = "mnnvl-claim"

// NoGroup is what a clique with no grove.io/mnnvl-group annotation anywhere
// above it resolves to: as in Grove, its pods take no part in MNNVL. (The
// operator's mnnvl.defaultGroup gives new workloads the annotation instead,
// WithDefaultGroup.)
const NoGroup = ""

// ComputeDomain API, served by NVIDIA's DRA driver
// (resource.nvidia.com/v1beta1). copse builds it unstructured, so that it
// does not depend on the driver's Go module.
const (
	ComputeDomainCRD = "computedomains.resource.nvidia.com"
	// ComponentComputeDomain is the component label value of the
	// ComputeDomains copse creates.
	ComponentComputeDomain = "computedomain"
	// allocationModeSingle: one IMEX channel per pod, the driver's default.
	allocationModeSingle = "Single"
)

// ComputeDomainGVK is the ComputeDomain kind.
var ComputeDomainGVK = schema.GroupVersionKind{Group: "resource.nvidia.com", Version: "v1beta1", Kind: "ComputeDomain"}

// GroupAnnotation is the annotation naming a group; a value of
// copsev1alpha1.MNNVLGroupNone opts out.
const GroupAnnotation = copsev1alpha1.AnnotationMNNVLGroup

// NewComputeDomain returns an empty ComputeDomain, for reads and watches.
func NewComputeDomain() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ComputeDomainGVK)
	return u
}

// NewComputeDomainList returns an empty ComputeDomain list, for listing.
func NewComputeDomainList() *unstructured.UnstructuredList {
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(ComputeDomainGVK.GroupVersion().WithKind(ComputeDomainGVK.Kind + "List"))
	return u
}

// CliqueGroup is the MNNVL group of a clique of pcs: the nearest
// grove.io/mnnvl-group annotation, looking at the clique's template, then
// its scaling group's config, then the PodCliqueSet's metadata. It returns
// NoGroup when none of them has one, and copsev1alpha1.MNNVLGroupNone when
// the nearest opts out. A clique the template does not have gets the
// PodCliqueSet's group.
func CliqueGroup(pcs *copsev1alpha1.PodCliqueSet, clique string) string {
	if tmpl := pcs.CliqueTemplate(clique); tmpl != nil {
		if g, ok := tmpl.Annotations[GroupAnnotation]; ok {
			return g
		}
	}
	for _, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if slices.Contains(group.CliqueNames, clique) {
			if g, ok := group.Annotations[GroupAnnotation]; ok {
				return g
			}
			break
		}
	}
	if g, ok := pcs.Annotations[GroupAnnotation]; ok {
		return g
	}
	return NoGroup
}

// TakesPart reports whether a clique's group (CliqueGroup) makes its GPU
// pods share a ComputeDomain: a named group does, no group and the opt-out
// do not. MNNVL is opt-in, as in Grove.
func TakesPart(group string) bool {
	return group != NoGroup && group != copsev1alpha1.MNNVLGroupNone
}

// ReplicaGroups are the groups that have a ComputeDomain in every replica of
// pcs: those of its cliques whose pods request GPUs, sorted, without
// duplicates. A clique without GPUs is left out, whatever group it names
// or inherits, as in Grove.
func ReplicaGroups(pcs *copsev1alpha1.PodCliqueSet) []string {
	var out []string
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique == nil || !RequestsGPUs(&clique.Spec.PodSpec) {
			continue
		}
		if g := CliqueGroup(pcs, clique.Name); TakesPart(g) && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// RequestsGPUs reports whether a container or an init container of spec
// requests nvidia.com/gpu (in limits or requests).
func RequestsGPUs(spec *corev1.PodSpec) bool {
	return slices.ContainsFunc(spec.Containers, containerRequestsGPUs) ||
		slices.ContainsFunc(spec.InitContainers, containerRequestsGPUs)
}

func containerRequestsGPUs(c corev1.Container) bool {
	for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		if q, ok := list[GPUResource]; ok && q.Sign() > 0 {
			return true
		}
	}
	return false
}

// ComputeDomainName is the ComputeDomain of one group in one PodCliqueSet
// replica, as Grove names it: <pcs>-<replica>-<group>. Its channel's
// ResourceClaimTemplate has the same name.
func ComputeDomainName(pcs string, replica int, group string) string {
	return pcs + "-" + strconv.Itoa(replica) + "-" + group
}

// WithDefaultGroup is the operator's mnnvl.defaultGroup applied to a new
// workload's (a PodCliqueSet's or a TrainJob's) metadata annotations: when
// defaultGroup is set and they name no group (not even "none"), a copy of
// them with grove.io/mnnvl-group: defaultGroup, and true; else annotations
// as they are, and false. The group is then the workload's own, fixed at
// creation like any group annotation, so a later change of the option never
// changes a workload that exists; as with any group, only GPU pods take
// part.
func WithDefaultGroup(annotations map[string]string, defaultGroup string) (map[string]string, bool) {
	if defaultGroup == NoGroup {
		return annotations, false
	}
	if _, named := annotations[GroupAnnotation]; named {
		return annotations, false
	}
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[GroupAnnotation] = defaultGroup
	return out, true
}

// trainJobDomainSuffix ends the name of a TrainJob's ComputeDomain. No
// group may be it or end in "-" and it (copsev1alpha1.MNNVLGroupNameErrors),
// so no PodCliqueSet replica's ComputeDomain name does either.
const trainJobDomainSuffix = "mnnvl"

// TrainJobComputeDomainName is the ComputeDomain of a TrainJob on the JobSet
// backend: <trainjob>-mnnvl. Its channel's ResourceClaimTemplate has the
// same name. A PodCliqueSet replica's ComputeDomain (ComputeDomainName) is
// <pcs>-<replica>, ending in a digit, or <pcs>-<replica>-<group>, ending in
// a group, which is never "mnnvl" nor ends in "-mnnvl": so the two never
// share a name, whatever the PodCliqueSet and the TrainJob are called. The
// suffix is no longer than the shortest suffix a JobSet adds to the
// TrainJob's name for its indexed pods' hostnames ("-<job>-<i>-<j>", 6
// characters at least), so a TrainJob whose JobSet's pod names are valid
// has a ComputeDomain name within a DNS label; the TrainJob webhook refuses
// the others (trainjob.ValidateComputeDomainName).
func TrainJobComputeDomainName(trainJob string) string {
	return trainJob + "-" + trainJobDomainSuffix
}

// ComputeDomain builds a ComputeDomain whose channel ResourceClaimTemplate
// has the ComputeDomain's own name. numNodes is 0, as NVIDIA recommends with
// IMEX daemons found by DNS name, so the domain grows and shrinks with its
// pods; the spec is immutable, so it is never updated.
func ComputeDomain(namespace, name string, objLabels map[string]string) *unstructured.Unstructured {
	cd := NewComputeDomain()
	cd.SetNamespace(namespace)
	cd.SetName(name)
	cd.SetLabels(objLabels)
	cd.Object["spec"] = map[string]any{
		"numNodes": int64(0),
		"channel": map[string]any{
			"resourceClaimTemplate": map[string]any{"name": name},
			"allocationMode":        allocationModeSingle,
		},
	}
	return cd
}

// AddClaim gives a pod the channel claim of a ComputeDomain: a
// resourceClaims entry ClaimName from the template templateName, and that
// claim on every container and init container that requests GPUs.
// Containers without GPUs are left alone, and a pod without GPU containers
// is not changed at all. Applying it twice changes nothing more. It reports
// whether the pod takes part.
func AddClaim(spec *corev1.PodSpec, templateName string) bool {
	if !RequestsGPUs(spec) {
		return false
	}
	entry := corev1.PodResourceClaim{Name: ClaimName, ResourceClaimTemplateName: &templateName}
	if i := slices.IndexFunc(spec.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == ClaimName }); i >= 0 {
		spec.ResourceClaims[i] = entry
	} else {
		spec.ResourceClaims = append(spec.ResourceClaims, entry)
	}
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			c := &containers[i]
			if !containerRequestsGPUs(*c) {
				continue
			}
			if !slices.ContainsFunc(c.Resources.Claims, func(rc corev1.ResourceClaim) bool { return rc.Name == ClaimName }) {
				c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: ClaimName})
			}
		}
	}
	return true
}

// RenameClaimTemplate points a pod's channel claim (ClaimName), if it has
// one, at the template templateName.
func RenameClaimTemplate(spec *corev1.PodSpec, templateName string) {
	for i := range spec.ResourceClaims {
		if spec.ResourceClaims[i].Name == ClaimName {
			spec.ResourceClaims[i].ResourceClaimTemplateName = &templateName
		}
	}
}

// RemoveClaim takes a pod's channel claim away, from the pod and from every
// container and init container: the inverse of AddClaim.
func RemoveClaim(spec *corev1.PodSpec) {
	isChannel := func(c corev1.PodResourceClaim) bool { return c.Name == ClaimName }
	spec.ResourceClaims = slices.DeleteFunc(spec.ResourceClaims, isChannel)
	if len(spec.ResourceClaims) == 0 {
		spec.ResourceClaims = nil
	}
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			c := &containers[i]
			c.Resources.Claims = slices.DeleteFunc(c.Resources.Claims, func(rc corev1.ResourceClaim) bool { return rc.Name == ClaimName })
			if len(c.Resources.Claims) == 0 {
				c.Resources.Claims = nil
			}
		}
	}
}
