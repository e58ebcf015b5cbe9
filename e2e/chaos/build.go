package chaos

import (
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

// Labels the harness puts on what it creates.
const (
	labelWorkload = "chaos.copse.dev/workload"
	labelFeature  = "chaos.copse.dev/feature"
)

// Kueue objects: one ResourceFlavor and two priorities for every queued
// workload, and per workload a ClusterQueue (named after its namespace)
// with a LocalQueue of that name.
const (
	kueueFlavor       = "chaos"
	kueueLowPriority  = "chaos-low"
	kueueHighPriority = "chaos-high"
	kueueLocalQueue   = "chaos"
	// RuntimeName is the TrainingRuntime of a TrainJob workload, in its
	// namespace.
	RuntimeName = "chaos-runtime"
	// topologyKeyPrefix prefixes the node label key a topology workload
	// packs by: one key per workload, carried by every node with its rack
	// as value, so that changing the binding concerns no other workload.
	topologyKeyPrefix = "chaos.copse.dev/"
)

// simulatedRun is the annotations that make the simulated runtime play
// the clique's history.
func (c Clique) simulatedRun() map[string]string {
	a := map[string]string{cluster.AnnotationExitCode: "0"}
	if c.RunFor > 0 {
		a[cluster.AnnotationRunDuration] = c.RunFor.String()
	}
	if codes := c.ExitCodesByAttempt(); codes != "" {
		a[cluster.AnnotationExitCodesByAttempt] = codes
	}
	return a
}

func (w Workload) workloadLabels() map[string]string {
	return map[string]string{labelWorkload: w.Name, labelFeature: string(w.Feature)}
}

// queueLabels put an object in the workload's LocalQueue at low priority.
func queueLabels(l map[string]string, priority string) map[string]string {
	l[copsekueue.QueueNameLabel] = kueueLocalQueue
	l[copsekueue.PriorityClassLabel] = priority
	return l
}

// PodCliqueSet builds the workload's Training PodCliqueSet. The history is
// in the clique templates' annotations, which the simulated runtime reads
// from every pod: how long each run lasts and its exit code per attempt.
func (w Workload) PodCliqueSet(namespace string) *copsev1alpha1.PodCliqueSet {
	var cliques []*grovecorev1alpha1.PodCliqueTemplateSpec
	var grouped []string
	var afterSucceeded []copsev1alpha1.CliqueSuccessDependency
	for _, c := range w.Cliques {
		spec := framework.PodSpec(c.GPUs)
		spec.TerminationGracePeriodSeconds = ptr.To(w.GracePeriodSeconds)
		t := framework.CliqueTemplate(c.Name, c.Pods, spec)
		t.Spec.MinAvailable = ptr.To(c.MinAvailable)
		t.Spec.StartsAfter = c.StartsAfter
		t.Annotations = c.simulatedRun()
		if w.OldRunsEndFirst && c.RunFor > 0 {
			t.Annotations[cluster.AnnotationExitBeforeRestart] = "true"
		}
		cliques = append(cliques, t)
		if c.Grouped {
			grouped = append(grouped, c.Name)
		}
		if len(c.AfterSucceeded) > 0 {
			afterSucceeded = append(afterSucceeded, copsev1alpha1.CliqueSuccessDependency{Clique: c.Name, Cliques: c.AfterSucceeded})
		}
	}
	pcs := framework.NewPodCliqueSet(namespace, w.ObjectName, w.Replicas, cliques...)
	pcs.Labels = w.workloadLabels()
	pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To(w.MaxRestarts), StartsAfterSucceeded: afterSucceeded}
	if w.RestartInPlace {
		pcs.Spec.TrainingSpec.RestartStrategy = copsev1alpha1.TrainingRestartInPlace
	}
	if w.MaxRuntime > 0 {
		pcs.Spec.TrainingSpec.MaxRuntime = &metav1.Duration{Duration: w.MaxRuntime}
	}
	if w.FailureRules {
		pcs.Spec.TrainingSpec.FailurePolicy = &copsev1alpha1.TrainingFailurePolicy{MaxUncountedRestarts: ptr.To(w.MaxUncounted),
			Rules: []copsev1alpha1.FailureRule{
				{Name: "infrastructure", Action: copsev1alpha1.FailureActionRestartReplicaWithoutCount,
					OnPodConditions: []copsev1alpha1.PodConditionRequirement{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
				{Name: "bug", Action: copsev1alpha1.FailureActionFailWorkload,
					OnExitCodes: &copsev1alpha1.ExitCodesRequirement{Operator: copsev1alpha1.ExitCodesIn, Values: []int32{42}}},
			}}
	}
	if w.SuccessPolicy != nil {
		pcs.Spec.TrainingSpec.SuccessPolicy = &copsev1alpha1.SuccessPolicy{
			Operator: copsev1alpha1.SuccessPolicyOperator(w.SuccessPolicy.Operator), TargetCliques: w.SuccessPolicy.Targets}
	}
	if w.StartupType != "" {
		pcs.Spec.Template.StartupType = ptr.To(w.StartupType)
	}
	if w.Group != nil {
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
			Name: w.Group.Name, CliqueNames: grouped,
			Replicas: ptr.To(w.Group.Replicas), MinAvailable: ptr.To(w.Group.MinAvailable),
		}}
	}
	if w.Queue != nil {
		queueLabels(pcs.Labels, kueueLowPriority)
	}
	if w.Topology != nil {
		pcs.Spec.Template.TopologyConstraint = &grovecorev1alpha1.TopologyConstraint{TopologyName: BindingName(namespace),
			Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: grovecorev1alpha1.TopologyDomainRack}}
	}
	return pcs
}

// TrainingRuntime builds the runtime of a TrainJob workload: one
// replicated job per clique, the trainer "node" of the GPU pods, an
// initializer before it when the history has one; a failure restarts the
// TrainJob within maxRestarts; gang-scheduled on the Workload API, packed
// at the workload's own level when it has a topology.
func (w Workload) TrainingRuntime(namespace string) *trainerv1alpha1.TrainingRuntime {
	var jobs []jobsetv1alpha2.ReplicatedJob
	nodes := int32(1)
	for _, c := range w.Cliques {
		ancestor := trainjob.AncestorTrainer
		if c.Name == trainjob.DatasetInitializerName {
			ancestor = trainjob.AncestorDatasetInitializer
		} else {
			nodes = c.Pods
		}
		pod := framework.PodSpec(c.GPUs)
		pod.RestartPolicy = corev1.RestartPolicyNever
		pod.TerminationGracePeriodSeconds = ptr.To(w.GracePeriodSeconds)
		pod.Containers[0].Name = c.Name
		job := jobsetv1alpha2.ReplicatedJob{Name: c.Name, Replicas: 1, Template: batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{trainjob.AncestorLabel: ancestor}},
			Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: c.simulatedRun()}, Spec: pod}},
		}}
		if w.FailureRules && c.Name == trainjob.NodeName {
			job.Template.Spec.PodFailurePolicy = failJobOnDisruptionOrExit42()
		}
		switch c.DependsOn {
		case "Ready":
			job.DependsOn = []jobsetv1alpha2.DependsOn{{Name: trainjob.DatasetInitializerName, Status: jobsetv1alpha2.DependencyReady}}
		case "Complete":
			job.DependsOn = []jobsetv1alpha2.DependsOn{{Name: trainjob.DatasetInitializerName, Status: jobsetv1alpha2.DependencyComplete}}
		}
		jobs = append(jobs, job)
	}
	failurePolicy := &jobsetv1alpha2.FailurePolicy{MaxRestarts: w.MaxRestarts}
	if w.FailureRules {
		failurePolicy.Rules = jobSetRulesByPodRule()
	}
	gang := &trainerv1alpha1.WorkloadPodGroupPolicySource{}
	if w.Topology != nil {
		gang.TopologyConstraint = &trainerv1alpha1.WorkloadTopologyConstraint{Level: TopologyKey(namespace)}
	}
	return &trainerv1alpha1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: RuntimeName, Labels: w.workloadLabels()},
		Spec: trainerv1alpha1.TrainingRuntimeSpec{
			Backend:        w.Backend,
			MLPolicy:       &trainerv1alpha1.MLPolicy{NumNodes: ptr.To(nodes)},
			PodGroupPolicy: &trainerv1alpha1.PodGroupPolicy{Workload: gang},
			Template: trainerv1alpha1.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
				ReplicatedJobs: jobs,
				FailurePolicy:  failurePolicy,
			}},
		},
	}
}

// failJobOnDisruptionOrExit42 is the trainer Job's pod failure policy of a
// failure-rules workload: rule 0 fails the Job on a disruption, rule 1 on
// exit 42; jobSetRulesByPodRule tells the two apart (docs/trainjob.md).
func failJobOnDisruptionOrExit42() *batchv1.PodFailurePolicy {
	return &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionFailJob,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
		{Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
	}}
}

// jobSetRulesByPodRule: a disruption restarts without counting, exit 42
// fails the JobSet.
func jobSetRulesByPodRule() []jobsetv1alpha2.FailurePolicyRule {
	reasons := []string{string(batchv1.JobReasonPodFailurePolicy)}
	return []jobsetv1alpha2.FailurePolicyRule{
		{Name: "infrastructure", Action: jobsetv1alpha2.RestartJobSetAndIgnoreMaxRestarts,
			OnJobFailureReasons: reasons, OnJobFailureMessagePatterns: []string{"matching FailJob rule at index 0$"}},
		{Name: "bug", Action: jobsetv1alpha2.FailJobSet,
			OnJobFailureReasons: reasons, OnJobFailureMessagePatterns: []string{"matching FailJob rule at index 1$"}},
	}
}

// TrainJob builds the workload's TrainJob on its runtime.
func (w Workload) TrainJob(namespace string) *trainerv1alpha1.TrainJob {
	tj := &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: w.ObjectName, Labels: w.workloadLabels()},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef: trainerv1alpha1.RuntimeRef{Name: RuntimeName, Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
		},
	}
	for _, c := range w.Cliques {
		if c.Name == trainjob.NodeName {
			tj.Spec.Trainer = &trainerv1alpha1.Trainer{NumNodes: ptr.To(c.Pods)}
		}
	}
	if w.Queue != nil {
		queueLabels(tj.Labels, kueueLowPriority)
	}
	return tj
}

// Preemptor is the higher-priority PodCliqueSet that preempts a queued
// workload: one pod asking for the whole quota, which exits 0 after 3 s.
func (w Workload) Preemptor(namespace string) *copsev1alpha1.PodCliqueSet {
	c := Clique{Name: "p", Pods: 1, MinAvailable: 1, RunFor: 3 * time.Second, GPUs: w.Queue.GPUQuota}
	spec := framework.PodSpec(c.GPUs)
	t := framework.CliqueTemplate(c.Name, 1, spec)
	t.Annotations = c.simulatedRun()
	pcs := framework.NewPodCliqueSet(namespace, PreemptorName, 1, t)
	pcs.Labels = queueLabels(w.workloadLabels(), kueueHighPriority)
	pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](0)}
	return pcs
}

// KueueShared are the queue objects every queued workload uses: the
// ResourceFlavor of the kwok nodes and the two priorities.
func KueueShared() []client.Object {
	return []client.Object{
		&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: kueueFlavor},
			Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{cluster.LabelType: cluster.TypeKwok}}},
		&kueue.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: kueueLowPriority}, Value: 10},
		&kueue.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: kueueHighPriority}, Value: 1000},
	}
}

// ClusterQueue is the workload's own ClusterQueue of GPUQuota GPUs, in
// which a higher priority preempts a lower one.
func (w Workload) ClusterQueue(namespace string) *kueue.ClusterQueue {
	return &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: w.workloadLabels()},
		Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}},
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{cluster.ResourceGPU},
				Flavors: []kueue.FlavorQuotas{{Name: kueueFlavor, Resources: []kueue.ResourceQuota{
					{Name: cluster.ResourceGPU, NominalQuota: *resource.NewQuantity(w.Queue.GPUQuota, resource.DecimalSI)}}}},
			}},
			Preemption: &kueue.ClusterQueuePreemption{WithinClusterQueue: kueue.PreemptionPolicyLowerPriority},
		},
	}
}

// LocalQueue points the namespace at its ClusterQueue.
func LocalQueue(namespace string) *kueue.LocalQueue {
	return &kueue.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: kueueLocalQueue},
		Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(namespace)},
	}
}

// TopologyKey is the node label key a topology workload of the namespace
// packs by; rekeyed, its binding's level gets TopologyKey + "-b".
func TopologyKey(namespace string) string {
	return topologyKeyPrefix + "rack-" + strings.TrimPrefix(namespace, "chaos-")
}

// BindingName is the ClusterTopologyBinding of a topology workload of the
// namespace; a binding added later is named to come before it.
func BindingName(namespace string) string { return namespace + "-b" }

// addedBindingName is the binding TopologyAdded creates: first by name.
func addedBindingName(namespace string) string { return namespace + "-a" }

// Binding is the workload's ClusterTopologyBinding: one rack level keyed
// by key.
func Binding(name, key string) *copsev1alpha1.ClusterTopologyBinding {
	b := &copsev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	b.Spec.Levels = []grovecorev1alpha1.TopologyLevel{{Domain: grovecorev1alpha1.TopologyDomainRack, Key: key}}
	return b
}

// victimCliqueSelector selects the pods a tolerated-failure workload picks
// its victim from: the victim clique's pods of replica 0 in its first run
// (and of group replica 0 when the clique is grouped).
func (w Workload) victimCliqueSelector() (map[string]string, error) {
	c, err := w.Clique(w.Victim.Clique)
	if err != nil {
		return nil, err
	}
	sel := map[string]string{labels.ReplicaKey: "0", labels.AttemptKey: "0", labels.CliqueTemplateKey: c.Name}
	if c.Grouped {
		sel[labels.ScalingGroupReplicaKey] = "0"
	}
	return sel, nil
}
