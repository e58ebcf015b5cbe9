package v1alpha1

import (
	"fmt"
	"slices"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// This file is the one home of spec defaults and of the values derived from
// a spec. The defaulting webhook writes these defaults into new objects
// (ApplyDefaults); the controllers, internal/blueprint and internal/scheduler
// read the same functions, and the PodCliques internal/blueprint builds get
// their clique template's defaults (DefaultCliqueSpec), so an object that
// was never defaulted (created while the webhook was down, or by an older
// version) behaves exactly like one that was.

// Defaults that do not depend on the workload type, as Grove sets them.
const (
	// DefaultCliqueReplicas: Grove treats a missing (zero) replica count of
	// a clique template as one pod.
	DefaultCliqueReplicas                   int32 = 1
	DefaultScalingGroupReplicas             int32 = 1
	DefaultScalingGroupMinAvailable         int32 = 1
	DefaultPodTerminationGracePeriodSeconds int64 = 30
	// DefaultPublishNotReadyAddresses: pods find their peers through the
	// replica's headless Service while they start, i.e. before they are
	// ready.
	DefaultPublishNotReadyAddresses = true
	DefaultCliqueStartupType        = grovecorev1alpha1.CliqueStartupTypeAnyOrder
	DefaultUpdateStrategyType       = grovecorev1alpha1.RollingRecreateStrategy
)

// DefaultInferenceTerminationDelay is Grove's wait before a breached
// Inference replica is torn down, so the scheduler has time to bring it back.
const DefaultInferenceTerminationDelay = 4 * time.Hour

// OrDefault is the workload type, Inference when unset.
func (t WorkloadType) OrDefault() WorkloadType {
	if t == "" {
		return WorkloadTypeInference
	}
	return t
}

// DefaultTerminationDelay is the terminationDelay of a workload of this
// type when the template sets none: Grove's 4h for Inference, 0 for
// Training, where a missing worker stops all progress (GREP-0285).
func (t WorkloadType) DefaultTerminationDelay() time.Duration {
	if t.OrDefault() == WorkloadTypeTraining {
		return 0
	}
	return DefaultInferenceTerminationDelay
}

// DefaultRestartPolicy is the pods' restartPolicy when the template sets
// none: Always for Inference, as Grove; Never for Training, whose restarts
// are the operator's, per replica and within the budget.
func (t WorkloadType) DefaultRestartPolicy() corev1.RestartPolicy {
	if t.OrDefault() == WorkloadTypeTraining {
		return corev1.RestartPolicyNever
	}
	return corev1.RestartPolicyAlways
}

// IsTraining reports whether the PodCliqueSet is a Training workload; nil is not.
func (pcs *PodCliqueSet) IsTraining() bool {
	return pcs != nil && pcs.Spec.WorkloadType.OrDefault() == WorkloadTypeTraining
}

// TerminationDelay is how long a replica may stay below minAvailable before
// it is recreated: the template's value, or the workload type's default.
func (pcs *PodCliqueSet) TerminationDelay() time.Duration {
	if d := pcs.Spec.Template.TerminationDelay; d != nil {
		return d.Duration
	}
	return pcs.Spec.WorkloadType.DefaultTerminationDelay()
}

// MaxRestarts is trainingSpec.maxRestarts, 0 when unset.
func (pcs *PodCliqueSet) MaxRestarts() int32 {
	if ts := pcs.Spec.TrainingSpec; ts != nil && ts.MaxRestarts != nil {
		return *ts.MaxRestarts
	}
	return 0
}

// MaxRuntime is trainingSpec.maxRuntime; nil means no limit.
func (pcs *PodCliqueSet) MaxRuntime() *time.Duration {
	if ts := pcs.Spec.TrainingSpec; ts != nil && ts.MaxRuntime != nil {
		d := ts.MaxRuntime.Duration
		return &d
	}
	return nil
}

// DefaultMaxUncountedRestarts is failurePolicy.maxUncountedRestarts when unset.
const DefaultMaxUncountedRestarts int32 = 10

// FailurePolicy is trainingSpec.failurePolicy of a Training workload; nil
// when unset or for Inference.
func (pcs *PodCliqueSet) FailurePolicy() *TrainingFailurePolicy {
	if !pcs.IsTraining() || pcs.Spec.TrainingSpec == nil {
		return nil
	}
	return pcs.Spec.TrainingSpec.FailurePolicy
}

// RestartsInPlace reports whether a Training workload restarts its
// replicas in place (trainingSpec.restartStrategy InPlace).
func (pcs *PodCliqueSet) RestartsInPlace() bool {
	return pcs.IsTraining() && pcs.Spec.TrainingSpec != nil && pcs.Spec.TrainingSpec.RestartStrategy == TrainingRestartInPlace
}

// MaxUncountedRestarts is failurePolicy.maxUncountedRestarts, its default
// when unset.
func (pcs *PodCliqueSet) MaxUncountedRestarts() int32 {
	if fp := pcs.FailurePolicy(); fp != nil && fp.MaxUncountedRestarts != nil {
		return *fp.MaxUncountedRestarts
	}
	return DefaultMaxUncountedRestarts
}

// IsSuspended reports whether spec.suspend is true.
func (pcs *PodCliqueSet) IsSuspended() bool {
	return pcs.Spec.Suspend != nil && *pcs.Spec.Suspend
}

// SchedulingDirectivesMutable reports whether a Training PodCliqueSet's pod
// templates may change their scheduling directives now (the admission
// webhook's window, as the Job API's for suspended Jobs): it is suspended
// with no run in progress, that is status.startTime is unset (cleared once
// a suspension has removed every pod; one created suspended never had it).
func (pcs *PodCliqueSet) SchedulingDirectivesMutable() bool {
	return pcs.IsSuspended() && pcs.Status.StartTime == nil
}

// SuccessPolicy is trainingSpec.successPolicy of a Training workload; nil
// when unset or for Inference.
func (pcs *PodCliqueSet) SuccessPolicy() *SuccessPolicy {
	if !pcs.IsTraining() || pcs.Spec.TrainingSpec == nil {
		return nil
	}
	return pcs.Spec.TrainingSpec.SuccessPolicy
}

// ApplyDefaults fills every unset field of the PodCliqueSet that has a
// default, leaving the fields the user set alone; the defaulting webhook
// applies it. It is idempotent, so it is safe on update too. An unknown
// workload type is left alone (the CRD's enum rejects it; defaulting is not
// the place to guess for one).
func (pcs *PodCliqueSet) ApplyDefaults() {
	pcs.Spec.WorkloadType = pcs.Spec.WorkloadType.OrDefault()
	workload := pcs.Spec.WorkloadType
	if workload != WorkloadTypeInference && workload != WorkloadTypeTraining {
		return
	}
	if pcs.Spec.UpdateStrategy == nil {
		pcs.Spec.UpdateStrategy = &grovecorev1alpha1.PodCliqueSetUpdateStrategy{}
	}
	if pcs.Spec.UpdateStrategy.Type == "" {
		pcs.Spec.UpdateStrategy.Type = DefaultUpdateStrategyType
	}
	template := &pcs.Spec.Template
	if template.StartupType == nil {
		template.StartupType = ptr.To(DefaultCliqueStartupType)
	}
	if template.TerminationDelay == nil {
		template.TerminationDelay = &metav1.Duration{Duration: workload.DefaultTerminationDelay()}
	}
	if template.HeadlessServiceConfig == nil {
		template.HeadlessServiceConfig = &grovecorev1alpha1.HeadlessServiceConfig{PublishNotReadyAddresses: DefaultPublishNotReadyAddresses}
	}
	for _, clique := range template.Cliques {
		if clique != nil {
			DefaultCliqueSpec(&clique.Spec, workload)
		}
	}
	for i := range template.PodCliqueScalingGroupConfigs {
		defaultScalingGroup(&template.PodCliqueScalingGroupConfigs[i])
	}
	if ts := pcs.Spec.TrainingSpec; ts != nil && ts.FailurePolicy != nil {
		defaultFailurePolicy(ts.FailurePolicy)
	}
}

// defaultFailurePolicy sets maxUncountedRestarts and each pod condition's
// status (True) where unset.
func defaultFailurePolicy(fp *TrainingFailurePolicy) {
	if fp.MaxUncountedRestarts == nil {
		fp.MaxUncountedRestarts = ptr.To(DefaultMaxUncountedRestarts)
	}
	for i := range fp.Rules {
		for j := range fp.Rules[i].OnPodConditions {
			if fp.Rules[i].OnPodConditions[j].Status == "" {
				fp.Rules[i].OnPodConditions[j].Status = corev1.ConditionTrue
			}
		}
	}
}

// DefaultCliqueSpec fills the unset fields of a clique template's spec for
// a workload of type t: replicas (DefaultCliqueReplicas), minAvailable (its
// replicas), the autoscaler's minReplicas (its replicas), the pods'
// restartPolicy (DefaultRestartPolicy) and termination grace period. It is
// idempotent. ApplyDefaults applies it to the template, and
// internal/blueprint to the spec of every PodClique it builds.
func DefaultCliqueSpec(spec *grovecorev1alpha1.PodCliqueSpec, t WorkloadType) {
	spec.Replicas = CliqueReplicas(*spec)
	if spec.MinAvailable == nil {
		spec.MinAvailable = ptr.To(CliqueMinAvailable(*spec))
	}
	if spec.ScaleConfig != nil && spec.ScaleConfig.MinReplicas == nil {
		spec.ScaleConfig.MinReplicas = ptr.To(spec.Replicas)
	}
	if spec.PodSpec.RestartPolicy == "" {
		spec.PodSpec.RestartPolicy = t.DefaultRestartPolicy()
	}
	if spec.PodSpec.TerminationGracePeriodSeconds == nil {
		spec.PodSpec.TerminationGracePeriodSeconds = ptr.To(DefaultPodTerminationGracePeriodSeconds)
	}
}

func defaultScalingGroup(group *grovecorev1alpha1.PodCliqueScalingGroupConfig) {
	if group.Replicas == nil {
		group.Replicas = ptr.To(ScalingGroupReplicas(*group))
	}
	if group.MinAvailable == nil {
		group.MinAvailable = ptr.To(ScalingGroupMinAvailable(*group))
	}
	if group.ScaleConfig != nil && group.ScaleConfig.MinReplicas == nil {
		group.ScaleConfig.MinReplicas = ptr.To(*group.Replicas)
	}
}

// CliqueReplicas is a clique template's replica count: its own, or
// DefaultCliqueReplicas when unset (0).
func CliqueReplicas(spec grovecorev1alpha1.PodCliqueSpec) int32 {
	if spec.Replicas == 0 {
		return DefaultCliqueReplicas
	}
	return spec.Replicas
}

// CliqueMinAvailable is a clique's minAvailable, which defaults to its
// replicas (for a template: after DefaultCliqueSpec, CliqueReplicas).
func CliqueMinAvailable(spec grovecorev1alpha1.PodCliqueSpec) int32 {
	if spec.MinAvailable != nil {
		return *spec.MinAvailable
	}
	return spec.Replicas
}

// UpdateStrategyType is spec.updateStrategy.type, DefaultUpdateStrategyType
// when unset.
func (pcs *PodCliqueSet) UpdateStrategyType() grovecorev1alpha1.UpdateStrategyType {
	if s := pcs.Spec.UpdateStrategy; s != nil && s.Type != "" {
		return s.Type
	}
	return DefaultUpdateStrategyType
}

// UpdatesOnDelete reports whether the update strategy is OnDelete: a
// changed template reaches a pod only when it is deleted (the default,
// RollingRecreate, replaces the replicas one at a time).
func (pcs *PodCliqueSet) UpdatesOnDelete() bool {
	return pcs.UpdateStrategyType() == grovecorev1alpha1.OnDeleteStrategy
}

// PublishNotReadyAddresses is whether the replicas' headless Services
// publish pods before they are ready: the template's headlessServiceConfig,
// DefaultPublishNotReadyAddresses when unset.
func (pcs *PodCliqueSet) PublishNotReadyAddresses() bool {
	if cfg := pcs.Spec.Template.HeadlessServiceConfig; cfg != nil {
		return cfg.PublishNotReadyAddresses
	}
	return DefaultPublishNotReadyAddresses
}

// ScalingGroupReplicas is a scaling group's template replica count.
func ScalingGroupReplicas(group grovecorev1alpha1.PodCliqueScalingGroupConfig) int32 {
	if group.Replicas != nil {
		return *group.Replicas
	}
	return DefaultScalingGroupReplicas
}

// ScalingGroupMinAvailable is a scaling group's template minAvailable.
func ScalingGroupMinAvailable(group grovecorev1alpha1.PodCliqueScalingGroupConfig) int32 {
	if group.MinAvailable != nil {
		return *group.MinAvailable
	}
	return DefaultScalingGroupMinAvailable
}

// AutoScalingMinReplicas is the minReplicas of an autoscaling config: its
// own, else the template replica count of the clique or scaling group it
// scales (as the defaulting webhook sets it, and as Grove defaults it), and
// that default never below 1, the least a HorizontalPodAutoscaler accepts.
func AutoScalingMinReplicas(config grovecorev1alpha1.AutoScalingConfig, templateReplicas int32) int32 {
	if config.MinReplicas != nil {
		return *config.MinReplicas
	}
	return max(templateReplicas, 1)
}

// MinAvailable is the PodCliqueScalingGroup object's minAvailable.
func (pcsg *PodCliqueScalingGroup) MinAvailable() int32 {
	if pcsg.Spec.MinAvailable != nil {
		return *pcsg.Spec.MinAvailable
	}
	return DefaultScalingGroupMinAvailable
}

// MinAvailable is the PodClique object's minAvailable.
func (pclq *PodClique) MinAvailable() int32 {
	return CliqueMinAvailable(pclq.Spec)
}

// GroupedCliqueNames are the names of the template's cliques that belong to
// a scaling group.
func (pcs *PodCliqueSet) GroupedCliqueNames() map[string]bool {
	grouped := map[string]bool{}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		for _, name := range g.CliqueNames {
			grouped[name] = true
		}
	}
	return grouped
}

// StandaloneCliques are the template's cliques that belong to no scaling
// group, in template order: each replica has one PodClique per such clique.
func (pcs *PodCliqueSet) StandaloneCliques() []*grovecorev1alpha1.PodCliqueTemplateSpec {
	grouped := pcs.GroupedCliqueNames()
	var out []*grovecorev1alpha1.PodCliqueTemplateSpec
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && !grouped[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// CliqueTemplate finds a clique of the template by name; nil if none.
func (pcs *PodCliqueSet) CliqueTemplate(name string) *grovecorev1alpha1.PodCliqueTemplateSpec {
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.Name == name {
			return c
		}
	}
	return nil
}

// ScalingGroupPods is the number of pods in one replica of the scaling group
// that clique belongs to: the sum of the template replicas of the group's
// member cliques (Grove's GROVE_PCSG_TEMPLATE_NUM_PODS). It is read from the
// template, not from live objects, so every pod of the group sees the same
// number regardless of scaling or creation order.
func (pcs *PodCliqueSet) ScalingGroupPods(clique string) (int32, error) {
	for _, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if !slices.Contains(group.CliqueNames, clique) {
			continue
		}
		var total int32
		for _, member := range group.CliqueNames {
			c := pcs.CliqueTemplate(member)
			if c == nil {
				return 0, fmt.Errorf("scaling group %q lists clique %q, which the PodCliqueSet template does not define", group.Name, member)
			}
			total += CliqueReplicas(c.Spec)
		}
		return total, nil
	}
	return 0, fmt.Errorf("no scaling group of the PodCliqueSet template contains clique %q", clique)
}

// MembersPerReplica is how many PodCliques make up one replica of a
// Training PodCliqueSet with the given scaling-group replica counts (by
// template name; a group without an entry uses its template count): every
// standalone clique, and every member clique of every group replica.
func (pcs *PodCliqueSet) MembersPerReplica(groupReplicas map[string]int32) int {
	n := len(pcs.StandaloneCliques())
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		replicas, ok := groupReplicas[g.Name]
		if !ok {
			replicas = ScalingGroupReplicas(g)
		}
		n += int(replicas) * len(g.CliqueNames)
	}
	return n
}
