package fuzzinput

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// The generators below build the workload objects copse's webhooks admit.
// Names come from short lists, so that references (scaling group members,
// startsAfter, resource sharing filters) often hit and names often
// collide, with invalid and over-long names among them. Numbers are small,
// around the bounds the rules check, with the int32 extremes now and then.

// Object decodes data as the JSON of a T; when data is not such JSON it
// generates the T from data instead, so that every fuzz input yields an
// object: JSON seeds written from table tests mutate into nearby objects,
// and any other bytes into generated ones.
func Object[T any](data []byte, generate func(*Source) *T) *T {
	obj := new(T)
	if json.Unmarshal(data, obj) == nil {
		return obj
	}
	return generate(New(data))
}

// JSON encodes v, for seeds that Object reads back.
func JSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fuzzinput: encoding %T: %v", v, err))
	}
	return data
}

// CliqueName is a clique name: usually one of three valid ones.
func (s *Source) CliqueName() string {
	return Pick(s, "leader", "worker", "router", "leader", "worker", "router", "", "Bad_Name", strings.Repeat("r", 52))
}

// ScalingGroupName is a scaling group name, usually one of two valid ones.
func (s *Source) ScalingGroupName() string {
	return Pick(s, "decode", "prefill", "decode", "prefill", "", "de.code", strings.Repeat("d", 43))
}

// Replicas is a replica count or a bound on one: mostly -1 to 12, rarely
// an extreme.
func (s *Source) Replicas() int32 {
	if s.Maybe(32) {
		return Pick[int32](s, math.MaxInt32, math.MinInt32, 40000)
	}
	return s.Int32In(-1, 12)
}

// OptionalReplicas is nil or Replicas.
func (s *Source) OptionalReplicas() *int32 {
	if s.Bool() {
		return ptr.To(s.Replicas())
	}
	return nil
}

// AutoScalingConfig is nil or an autoscaler's bounds.
func (s *Source) AutoScalingConfig() *grovecorev1alpha1.AutoScalingConfig {
	if !s.Maybe(3) {
		return nil
	}
	return &grovecorev1alpha1.AutoScalingConfig{MinReplicas: s.OptionalReplicas(), MaxReplicas: s.Replicas()}
}

// PodSpec is a pod template: the fields copse's rules read (restart
// policy, node name, scheduler, spread constraints, priority class) and a
// few that only the generation hash reads.
func (s *Source) PodSpec() corev1.PodSpec {
	spec := corev1.PodSpec{
		Containers:        []corev1.Container{{Name: "main", Image: Pick(s, "example.com/llm:1", "example.com/llm:2")}},
		RestartPolicy:     Pick(s, "", corev1.RestartPolicyAlways, corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure),
		NodeName:          Pick(s, "", "", "", "node-1"),
		SchedulerName:     Pick(s, "", "", corev1.DefaultSchedulerName, "other"),
		PriorityClassName: Pick(s, "", "", "own"),
	}
	if s.Maybe(4) {
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: s.Int32In(0, 2), TopologyKey: "zone"}}
	}
	if s.Bool() {
		spec.TerminationGracePeriodSeconds = ptr.To(int64(s.Intn(60)))
	}
	if s.Maybe(4) {
		// Equal quantities written differently.
		spec.Containers[0].Resources.Limits = corev1.ResourceList{
			corev1.ResourceMemory: resource.MustParse(Pick(s, "1Gi", "1024Mi", "2Gi")),
		}
	}
	return spec
}

// PodCliqueSpec is a clique's spec.
func (s *Source) PodCliqueSpec() grovecorev1alpha1.PodCliqueSpec {
	spec := grovecorev1alpha1.PodCliqueSpec{
		RoleName:     s.CliqueName(),
		Replicas:     s.Replicas(),
		MinAvailable: s.OptionalReplicas(),
		ScaleConfig:  s.AutoScalingConfig(),
		PodSpec:      s.PodSpec(),
	}
	for range s.Intn(3) {
		spec.StartsAfter = append(spec.StartsAfter, s.CliqueName())
	}
	return spec
}

// TopologyConstraint is usually nil.
func (s *Source) TopologyConstraint() *grovecorev1alpha1.TopologyConstraint {
	if !s.Maybe(6) {
		return nil
	}
	return &grovecorev1alpha1.TopologyConstraint{Pack: &grovecorev1alpha1.TopologyPackConstraint{
		RequiredDomain: grovecorev1alpha1.TopologyDomain(Pick(s, "rack", "zone")),
	}}
}

// ResourceSharing is a reference to a ResourceClaim template.
func (s *Source) ResourceSharing() grovecorev1alpha1.ResourceSharingSpec {
	return grovecorev1alpha1.ResourceSharingSpec{
		Name:      Pick(s, "gpu", "gpu", "x", "", "external"),
		Namespace: Pick(s, "", "", "shared"),
		Scope:     Pick(s, grovecorev1alpha1.ResourceSharingScopePerReplica, grovecorev1alpha1.ResourceSharingScopeAllReplicas),
	}
}

// Labels is nil or a small map, its keys and values valid or not.
func (s *Source) Labels() map[string]string {
	if !s.Maybe(4) {
		return nil
	}
	labels := map[string]string{}
	for range s.IntIn(1, 3) {
		labels[Pick(s, "tier", "team", "bad key!", "example.com/x")] = Pick(s, "a", "research", "not valid!")
	}
	return labels
}

// PodCliqueTemplate is a clique of a PodCliqueSet template, or rarely nil
// (a null list entry).
func (s *Source) PodCliqueTemplate() *grovecorev1alpha1.PodCliqueTemplateSpec {
	if s.Maybe(16) {
		return nil
	}
	clique := &grovecorev1alpha1.PodCliqueTemplateSpec{
		Name:               s.CliqueName(),
		Labels:             s.Labels(),
		Annotations:        s.Labels(),
		TopologyConstraint: s.TopologyConstraint(),
		Spec:               s.PodCliqueSpec(),
	}
	for range s.Intn(3) {
		clique.ResourceSharing = append(clique.ResourceSharing, s.ResourceSharing())
	}
	return clique
}

// ScalingGroupConfig is a scaling group of a PodCliqueSet template.
func (s *Source) ScalingGroupConfig() grovecorev1alpha1.PodCliqueScalingGroupConfig {
	group := grovecorev1alpha1.PodCliqueScalingGroupConfig{
		Name:               s.ScalingGroupName(),
		Replicas:           s.OptionalReplicas(),
		MinAvailable:       s.OptionalReplicas(),
		ScaleConfig:        s.AutoScalingConfig(),
		TopologyConstraint: s.TopologyConstraint(),
	}
	for range s.Intn(4) {
		group.CliqueNames = append(group.CliqueNames, s.CliqueName())
	}
	for range s.Intn(2) {
		ref := grovecorev1alpha1.PCSGResourceSharingSpec{ResourceSharingSpec: s.ResourceSharing()}
		if s.Bool() {
			ref.Filter = &grovecorev1alpha1.PCSGResourceSharingFilter{}
			for range s.Intn(3) {
				ref.Filter.ChildCliqueNames = append(ref.Filter.ChildCliqueNames, s.CliqueName())
			}
		}
		group.ResourceSharing = append(group.ResourceSharing, ref)
	}
	return group
}

// ResourceClaimTemplate is a ResourceClaim template of a PodCliqueSet.
func (s *Source) ResourceClaimTemplate() grovecorev1alpha1.ResourceClaimTemplateConfig {
	claimTemplate := grovecorev1alpha1.ResourceClaimTemplateConfig{Name: Pick(s, "gpu", "gpu", "x", "")}
	if !s.Maybe(4) {
		claimTemplate.TemplateSpec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu"}}
	}
	return claimTemplate
}

// PodCliqueSet is a PodCliqueSet as a user might write it: anything from
// valid to broken in several ways at once.
func (s *Source) PodCliqueSet() *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{
		Name:      Pick(s, "llm", "llm", "x", "1llm", "llm.v2", strings.Repeat("l", 56)),
		Namespace: "ml",
	}}
	pcs.Spec.WorkloadType = Pick(s, "", copsev1alpha1.WorkloadTypeInference, copsev1alpha1.WorkloadTypeTraining,
		copsev1alpha1.WorkloadTypeTraining, "Batch")
	pcs.Spec.Replicas = s.Replicas()
	if s.Maybe(4) {
		pcs.Spec.UpdateStrategy = &grovecorev1alpha1.PodCliqueSetUpdateStrategy{
			Type: Pick(s, "", grovecorev1alpha1.RollingRecreateStrategy, grovecorev1alpha1.OnDeleteStrategy),
		}
	}
	if s.Maybe(4) {
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: s.OptionalReplicas()}
	}
	t := &pcs.Spec.Template
	if s.Bool() {
		t.StartupType = ptr.To(Pick(s, grovecorev1alpha1.CliqueStartupTypeAnyOrder, grovecorev1alpha1.CliqueStartupTypeInOrder,
			grovecorev1alpha1.CliqueStartupTypeExplicit))
	}
	t.PriorityClassName = Pick(s, "", "", "high")
	if s.Bool() {
		t.TerminationDelay = &metav1.Duration{Duration: Pick(s, -time.Minute, 0, 30*time.Second, 4*time.Hour)}
	}
	if s.Maybe(4) {
		t.HeadlessServiceConfig = &grovecorev1alpha1.HeadlessServiceConfig{PublishNotReadyAddresses: s.Bool()}
	}
	t.TopologyConstraint = s.TopologyConstraint()
	for range s.Intn(5) {
		t.Cliques = append(t.Cliques, s.PodCliqueTemplate())
	}
	for range s.Intn(3) {
		t.PodCliqueScalingGroupConfigs = append(t.PodCliqueScalingGroupConfigs, s.ScalingGroupConfig())
	}
	for range s.Intn(3) {
		t.ResourceClaimTemplates = append(t.ResourceClaimTemplates, s.ResourceClaimTemplate())
	}
	for range s.Intn(3) {
		ref := grovecorev1alpha1.PCSResourceSharingSpec{ResourceSharingSpec: s.ResourceSharing()}
		if s.Bool() {
			ref.Filter = &grovecorev1alpha1.PCSResourceSharingFilter{}
			for range s.Intn(3) {
				ref.Filter.ChildCliqueNames = append(ref.Filter.ChildCliqueNames, s.CliqueName())
			}
			for range s.Intn(2) {
				ref.Filter.ChildScalingGroupNames = append(ref.Filter.ChildScalingGroupNames, s.ScalingGroupName())
			}
		}
		t.ResourceSharing = append(t.ResourceSharing, ref)
	}
	return pcs
}

// PodClique is a PodClique as the operator or an autoscaler might write it.
func (s *Source) PodClique() *copsev1alpha1.PodClique {
	return &copsev1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-0-worker", Namespace: "ml", Labels: s.Labels()},
		Spec:       s.PodCliqueSpec(),
	}
}

// PodCliqueScalingGroup is a PodCliqueScalingGroup as the operator or an
// autoscaler might write it.
func (s *Source) PodCliqueScalingGroup() *copsev1alpha1.PodCliqueScalingGroup {
	pcsg := &copsev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Name: "llm-0-decode", Namespace: "ml", Labels: s.Labels()}}
	pcsg.Spec.Replicas = s.Replicas()
	pcsg.Spec.MinAvailable = s.OptionalReplicas()
	for range s.Intn(4) {
		pcsg.Spec.CliqueNames = append(pcsg.Spec.CliqueNames, s.CliqueName())
	}
	return pcsg
}
