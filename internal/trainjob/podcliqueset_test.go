package trainjob

import (
	"strconv"
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/topology"
	pcswebhook "github.com/copse-dev/copse/internal/webhook/podcliqueset"
)

func onPodCliqueSet(rt Runtime) Runtime {
	rt.Spec.Backend = trainerv1alpha1.RuntimeBackendPodCliqueSet
	return rt
}

func pcsTrainJob(nodes int32) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns", UID: "tj-uid"},
		Spec: trainerv1alpha1.TrainJobSpec{Trainer: &trainerv1alpha1.Trainer{
			NumNodes: ptr.To(nodes),
			Image:    ptr.To("registry.example/train:v2"),
			Env:      []corev1.EnvVar{{Name: "LR", Value: "0.1"}},
		}},
	}
}

func torchPolicy() *trainerv1alpha1.MLPolicy {
	return &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), Torch: &trainerv1alpha1.TorchMLPolicySource{}}
}

func mpiPolicy(launcherTrains bool) *trainerv1alpha1.MLPolicy {
	return &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), MPI: &trainerv1alpha1.MPIMLPolicySource{
		NumProcPerNode: ptr.To[int32](2), RunLauncherAsNode: ptr.To(launcherTrains), SSHAuthMountPath: ptr.To("/root/.ssh"),
		MPIImplementation: ptr.To(trainerv1alpha1.MPIImplementationOpenMPI)}}
}

func dependsOn(rjob jobsetv1alpha2.ReplicatedJob, status jobsetv1alpha2.DependsOnStatus, names ...string) jobsetv1alpha2.ReplicatedJob {
	for _, n := range names {
		rjob.DependsOn = append(rjob.DependsOn, jobsetv1alpha2.DependsOn{Name: n, Status: status})
	}
	return rjob
}

func cliqueNamed(t *testing.T, pcs *copsev1alpha1.PodCliqueSet, name string) *grovecorev1alpha1.PodCliqueTemplateSpec {
	t.Helper()
	if clique := pcs.CliqueTemplate(name); clique != nil {
		return clique
	}
	t.Fatalf("PodCliqueSet has no clique %s", name)
	return nil
}

func envNamed(spec corev1.PodSpec, container, name string) *corev1.EnvVar {
	for _, c := range spec.Containers {
		if c.Name != container {
			continue
		}
		for i := range c.Env {
			if c.Env[i].Name == name {
				return &c.Env[i]
			}
		}
	}
	return nil
}

// TestBuildPodCliqueSetShape: one Training PodCliqueSet named and owned as
// the TrainJob, one replica, one clique per replicated job with its pod count
// as replicas and minAvailable, and the JobSet backend's pod templates.
func TestBuildPodCliqueSetShape(t *testing.T) {
	rt := onPodCliqueSet(runtimeWith(&trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1)},
		replicatedJob("dataset-initializer", AncestorDatasetInitializer, DatasetInitializerName),
		dependsOn(replicatedJob("node", AncestorTrainer, NodeName), jobsetv1alpha2.DependencyComplete, "dataset-initializer")))
	rt.Spec.Template.Labels = map[string]string{"team": "vision"}
	rt.Spec.Template.Annotations = map[string]string{"note": "x"}
	tj := pcsTrainJob(3)
	tj.Spec.Initializer = &trainerv1alpha1.Initializer{Dataset: &trainerv1alpha1.DatasetInitializer{StorageUri: ptr.To("hf://org/data")}}

	objects, err := BuildPodCliqueSetObjects(tj, rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	pcs := objects.PodCliqueSet
	if pcs.Name != "tj" || pcs.Namespace != "ns" || !metav1.IsControlledBy(pcs, tj) {
		t.Errorf("PodCliqueSet %s/%s owners %v, want ns/tj controlled by the TrainJob", pcs.Namespace, pcs.Name, pcs.OwnerReferences)
	}
	if pcs.Spec.WorkloadType != copsev1alpha1.WorkloadTypeTraining || pcs.Spec.Replicas != 1 || ptr.Deref(pcs.Spec.Suspend, true) {
		t.Errorf("workloadType %s, replicas %d, suspend %v; want Training, 1, false", pcs.Spec.WorkloadType, pcs.Spec.Replicas, pcs.Spec.Suspend)
	}
	if pcs.Labels["team"] != "vision" || pcs.Labels[TrainJobNameLabel] != "tj" || pcs.Labels[labels.ManagedByKey] != labels.ManagedByValue || pcs.Annotations["note"] != "x" {
		t.Errorf("labels %v annotations %v", pcs.Labels, pcs.Annotations)
	}
	if objects.MPIHostfile != nil || objects.NeedsMPISSHSecret {
		t.Error("a runtime without MPI got MPI objects")
	}

	// The JobSet backend would put its pods into the Workload's pod groups;
	// the PodCliqueSet controller makes the gangs on this backend.
	jobSetRuntime := Runtime{Kind: rt.Kind, Name: rt.Name, Spec: *rt.Spec.DeepCopy()}
	jobSetRuntime.Spec.PodGroupPolicy = nil
	jobSetObjects, err := BuildJobSetObjects(tj, jobSetRuntime)
	if err != nil {
		t.Fatal(err)
	}
	wantCounts := map[string]int32{"dataset-initializer": 1, "node": 3}
	if len(pcs.Spec.Template.Cliques) != len(wantCounts) {
		t.Fatalf("%d cliques, want %d", len(pcs.Spec.Template.Cliques), len(wantCounts))
	}
	for i, rjob := range jobSetObjects.JobSet.Spec.ReplicatedJobs {
		clique := pcs.Spec.Template.Cliques[i]
		if clique.Name != rjob.Name || clique.Spec.RoleName != rjob.Name {
			t.Errorf("clique %d is %s (role %s), want %s", i, clique.Name, clique.Spec.RoleName, rjob.Name)
		}
		if clique.Spec.Replicas != wantCounts[rjob.Name] || ptr.Deref(clique.Spec.MinAvailable, 0) != wantCounts[rjob.Name] {
			t.Errorf("clique %s: replicas %d minAvailable %v, want %d", clique.Name, clique.Spec.Replicas, clique.Spec.MinAvailable, wantCounts[rjob.Name])
		}
		// Without an ML policy nothing depends on the pods' identities: the
		// pod spec is exactly the JobSet backend's.
		if diff := cmp.Diff(rjob.Template.Spec.Template.Spec, clique.Spec.PodSpec); diff != "" {
			t.Errorf("clique %s pod spec differs from the JobSet backend's (-jobset +pcs):\n%s", clique.Name, diff)
		}
		if clique.Labels[AncestorLabel] != rjob.Template.Labels[AncestorLabel] {
			t.Errorf("clique %s labels %v lack the Job template's ancestor label", clique.Name, clique.Labels)
		}
	}
	node := cliqueNamed(t, pcs, "node").Spec.PodSpec
	if c := node.Containers[0]; c.Image != "registry.example/train:v2" || envNamed(node, NodeName, "LR") == nil {
		t.Errorf("trainer container %+v lacks the TrainJob's image and env", c)
	}
	if e := envNamed(cliqueNamed(t, pcs, "dataset-initializer").Spec.PodSpec, DatasetInitializerName, StorageURIEnv); e == nil || e.Value != "hf://org/data" {
		t.Errorf("dataset initializer STORAGE_URI %+v", e)
	}
	want := []copsev1alpha1.CliqueSuccessDependency{{Clique: "node", Cliques: []string{"dataset-initializer"}}}
	if diff := cmp.Diff(want, pcs.Spec.TrainingSpec.StartsAfterSucceeded); diff != "" {
		t.Errorf("startsAfterSucceeded (-want +got):\n%s", diff)
	}
	if pcs.Spec.Template.StartupType != nil || len(cliqueNamed(t, pcs, "node").Spec.StartsAfter) != 0 {
		t.Errorf("dependsOn Complete also became a startup order: %v", pcs.Spec.Template.StartupType)
	}
}

// TestBuildPodCliqueSetPolicies: the JobSet's policies map onto the
// PodCliqueSet's.
func TestBuildPodCliqueSetPolicies(t *testing.T) {
	twoJobs := func(edit func(*jobsetv1alpha2.JobSetSpec)) Runtime {
		rt := onPodCliqueSet(runtimeWith(mpiPolicy(false), replicatedJob("launcher", AncestorTrainer, NodeName), replicatedJob("node", "", NodeName)))
		edit(&rt.Spec.Template.Spec)
		return rt
	}
	cases := []struct {
		name    string
		runtime Runtime
		check   func(t *testing.T, pcs *copsev1alpha1.PodCliqueSet)
	}{
		{"no policies: no restarts, every clique must succeed, any order",
			twoJobs(func(*jobsetv1alpha2.JobSetSpec) {}),
			func(t *testing.T, pcs *copsev1alpha1.PodCliqueSet) {
				ts := pcs.Spec.TrainingSpec
				if ptr.Deref(ts.MaxRestarts, -1) != 0 || ts.SuccessPolicy != nil || pcs.Spec.Template.StartupType != nil || pcs.Spec.Template.HeadlessServiceConfig != nil {
					t.Errorf("trainingSpec %+v, startupType %v, headless %v", ts, pcs.Spec.Template.StartupType, pcs.Spec.Template.HeadlessServiceConfig)
				}
			}},
		{"failurePolicy.maxRestarts is trainingSpec.maxRestarts",
			twoJobs(func(s *jobsetv1alpha2.JobSetSpec) { s.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 3} }),
			func(t *testing.T, pcs *copsev1alpha1.PodCliqueSet) {
				if got := ptr.Deref(pcs.Spec.TrainingSpec.MaxRestarts, -1); got != 3 {
					t.Errorf("maxRestarts %d, want 3", got)
				}
			}},
		{"failurePolicy.restartStrategy InPlaceRestart is trainingSpec.restartStrategy InPlace",
			twoJobs(func(s *jobsetv1alpha2.JobSetSpec) {
				s.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 2, RestartStrategy: jobsetv1alpha2.InPlaceRestart}
			}),
			func(t *testing.T, pcs *copsev1alpha1.PodCliqueSet) {
				if got := pcs.Spec.TrainingSpec.RestartStrategy; got != copsev1alpha1.TrainingRestartInPlace {
					t.Errorf("restartStrategy %q, want InPlace", got)
				}
			}},
		{"failurePolicy.restartStrategy Recreate keeps the default",
			twoJobs(func(s *jobsetv1alpha2.JobSetSpec) {
				s.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 2, RestartStrategy: jobsetv1alpha2.Recreate}
			}),
			func(t *testing.T, pcs *copsev1alpha1.PodCliqueSet) {
				if got := pcs.Spec.TrainingSpec.RestartStrategy; got != "" {
					t.Errorf("restartStrategy %q, want unset (Recreate)", got)
				}
			}},
		{"successPolicy targets become target cliques (Kubeflow's MPI runtimes: the launcher)",
			twoJobs(func(s *jobsetv1alpha2.JobSetSpec) {
				s.SuccessPolicy = &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAll, TargetReplicatedJobs: []string{"launcher"}}
			}),
			func(t *testing.T, pcs *copsev1alpha1.PodCliqueSet) {
				want := &copsev1alpha1.SuccessPolicy{Operator: copsev1alpha1.SuccessPolicyOperatorAll, TargetCliques: []string{"launcher"}}
				if diff := cmp.Diff(want, pcs.Spec.TrainingSpec.SuccessPolicy); diff != "" {
					t.Errorf("successPolicy (-want +got):\n%s", diff)
				}
			}},
		{"successPolicy Any",
			twoJobs(func(s *jobsetv1alpha2.JobSetSpec) {
				s.SuccessPolicy = &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAny}
			}),
			func(t *testing.T, pcs *copsev1alpha1.PodCliqueSet) {
				if sp := pcs.Spec.TrainingSpec.SuccessPolicy; sp == nil || sp.Operator != copsev1alpha1.SuccessPolicyOperatorAny || len(sp.TargetCliques) != 0 {
					t.Errorf("successPolicy %+v, want Any of every clique", sp)
				}
			}},
		{"startupPolicy InOrder is cliqueStartupType InOrder",
			twoJobs(func(s *jobsetv1alpha2.JobSetSpec) {
				s.StartupPolicy = &jobsetv1alpha2.StartupPolicy{StartupPolicyOrder: jobsetv1alpha2.InOrder}
			}),
			func(t *testing.T, pcs *copsev1alpha1.PodCliqueSet) {
				if got := ptr.Deref(pcs.Spec.Template.StartupType, ""); got != grovecorev1alpha1.CliqueStartupTypeInOrder {
					t.Errorf("cliqueStartupType %q, want InOrder", got)
				}
			}},
		{"dependsOn Ready is Explicit with startsAfter (Kubeflow's MPI runtimes: launcher after the nodes)",
			twoJobs(func(s *jobsetv1alpha2.JobSetSpec) {
				s.ReplicatedJobs[0] = dependsOn(s.ReplicatedJobs[0], jobsetv1alpha2.DependencyReady, "node")
				s.Network = &jobsetv1alpha2.Network{PublishNotReadyAddresses: ptr.To(false)}
			}),
			func(t *testing.T, pcs *copsev1alpha1.PodCliqueSet) {
				if got := ptr.Deref(pcs.Spec.Template.StartupType, ""); got != grovecorev1alpha1.CliqueStartupTypeExplicit {
					t.Errorf("cliqueStartupType %q, want Explicit", got)
				}
				if got := cliqueNamed(t, pcs, "launcher").Spec.StartsAfter; !cmp.Equal(got, []string{"node"}) {
					t.Errorf("launcher startsAfter %v, want [node]", got)
				}
				if len(pcs.Spec.TrainingSpec.StartsAfterSucceeded) != 0 {
					t.Errorf("dependsOn Ready became startsAfterSucceeded %v", pcs.Spec.TrainingSpec.StartsAfterSucceeded)
				}
				if h := pcs.Spec.Template.HeadlessServiceConfig; h == nil || h.PublishNotReadyAddresses {
					t.Errorf("headlessServiceConfig %+v, want publishNotReadyAddresses false", h)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objects, err := BuildPodCliqueSetObjects(pcsTrainJob(2), tc.runtime, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, objects.PodCliqueSet)
		})
	}
}

func TestBuildPodCliqueSetSuspended(t *testing.T) {
	tj := pcsTrainJob(1)
	tj.Spec.Suspend = ptr.To(true)
	objects, err := BuildPodCliqueSetObjects(tj, onPodCliqueSet(runtimeWith(torchPolicy(), replicatedJob("node", AncestorTrainer, NodeName))), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ptr.Deref(objects.PodCliqueSet.Spec.Suspend, false) {
		t.Error("a suspended TrainJob's PodCliqueSet is not suspended")
	}
}

// TestPodCliqueSetNetworkIdentities: every ML policy's coordinator address
// and rank are the PodCliqueSet pods' own, and the address is the DNS name
// the first trainer pod really gets from copse (hostname under its replica's
// headless Service), and the rank is the index copse labels it with.
func TestPodCliqueSetNetworkIdentities(t *testing.T) {
	const first = "tj-0-node-0.tj-0"
	cases := []struct {
		name     string
		policy   *trainerv1alpha1.MLPolicy
		addrEnv  string
		addr     string
		rankEnvs []string
	}{
		{"torch", torchPolicy(), TorchEnvMasterAddr, first, []string{TorchEnvNodeRank}},
		{"jax", &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), JAX: &trainerv1alpha1.JAXMLPolicySource{}}, jaxEnvCoordinatorAddr, first + ":29500", []string{jaxEnvProcessID}},
		{"xgboost", &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), XGBoost: &trainerv1alpha1.XGBoostMLPolicySource{}}, XGBoostEnvTrackerURI, first, []string{XGBoostEnvTaskID}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objects, err := BuildPodCliqueSetObjects(pcsTrainJob(3), onPodCliqueSet(runtimeWith(tc.policy, replicatedJob("node", AncestorTrainer, NodeName))), nil)
			if err != nil {
				t.Fatal(err)
			}
			pcs := objects.PodCliqueSet
			spec := cliqueNamed(t, pcs, "node").Spec.PodSpec
			if e := envNamed(spec, NodeName, tc.addrEnv); e == nil || e.Value != tc.addr {
				t.Errorf("%s = %+v, want %s", tc.addrEnv, e, tc.addr)
			}
			for _, name := range tc.rankEnvs {
				if e := envNamed(spec, NodeName, name); e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != PodCliqueSetPodIndexFieldPath {
					t.Errorf("%s = %+v, want the pod index label %s", name, e, PodCliqueSetPodIndexFieldPath)
				}
			}
			for index, endpoint := range objects.Plan.PodSetNamed("node").Endpoints {
				pod := copsePod(t, pcs, "node", index)
				if got := pod.Spec.Hostname + "." + pod.Spec.Subdomain; got != endpoint {
					t.Errorf("pod %d answers to %s, the plan names it %s", index, got, endpoint)
				}
				if pod.Labels[labels.PodIndexKey] != strconv.Itoa(index) {
					t.Errorf("pod %d has index label %q", index, pod.Labels[labels.PodIndexKey])
				}
				if index == 0 && !strings.HasPrefix(tc.addr, endpoint) {
					t.Errorf("the coordinator %s is not the first pod %s", tc.addr, endpoint)
				}
			}
		})
	}
}

// copsePod is the pod copse's PodClique controller makes for one index of a
// clique of the PodCliqueSet: the PodClique the PodCliqueSet controller
// builds, then the pod built from it.
func copsePod(t *testing.T, pcs *copsev1alpha1.PodCliqueSet, clique string, index int) *corev1.Pod {
	t.Helper()
	pclq := blueprint.StandalonePodClique(pcs, 0, pcs.CliqueTemplate(clique), 0, topology.Resolved{})
	id, err := blueprint.IdentityOf(pclq)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := blueprint.Pod(blueprint.PodContext{PodCliqueSet: pcs, PodClique: pclq, Identity: id, Index: index})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// TestPodCliqueSetMPI: the hostfile lists the PodCliqueSet pods' DNS names
// (the launcher's too when it trains), with the JobSet backend's Secret and
// ConfigMap names, mounts and OpenMPI settings.
func TestPodCliqueSetMPI(t *testing.T) {
	cases := []struct {
		name           string
		launcherTrains bool
		want           string
	}{
		{"nodes only", false, "tj-0-node-0.tj-0 slots=2\ntj-0-node-1.tj-0 slots=2\ntj-0-node-2.tj-0 slots=2\n"},
		{"the launcher trains too", true, "tj-0-launcher-0.tj-0 slots=2\ntj-0-node-0.tj-0 slots=2\ntj-0-node-1.tj-0 slots=2\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := onPodCliqueSet(runtimeWith(mpiPolicy(tc.launcherTrains),
				replicatedJob("launcher", AncestorTrainer, NodeName), replicatedJob("node", "", NodeName)))
			objects, err := BuildPodCliqueSetObjects(pcsTrainJob(3), rt, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !objects.NeedsMPISSHSecret || objects.MPIHostfile == nil || objects.MPIHostfile.Name != "tj"+MPIHostfileConfigMapSuffix {
				t.Fatalf("MPI objects: secret %v hostfile %v", objects.NeedsMPISSHSecret, objects.MPIHostfile)
			}
			if got := objects.MPIHostfile.Data[mpiHostfileKey]; got != tc.want {
				t.Errorf("hostfile:\n%s\nwant:\n%s", got, tc.want)
			}
			pcs := objects.PodCliqueSet
			for _, name := range []string{"launcher", "node"} {
				pod := copsePod(t, pcs, name, 0)
				if !strings.Contains(tc.want, pod.Spec.Hostname+"."+pod.Spec.Subdomain) && (name == "node" || tc.launcherTrains) {
					t.Errorf("pod %s.%s is not in the hostfile", pod.Spec.Hostname, pod.Spec.Subdomain)
				}
				if !hasVolume(pcs.CliqueTemplate(name).Spec.PodSpec, "tj"+MPISSHAuthSecretSuffix) {
					t.Errorf("clique %s does not mount the SSH Secret", name)
				}
			}
			launcher := cliqueNamed(t, pcs, "launcher").Spec.PodSpec
			if e := envNamed(launcher, NodeName, OpenMPIEnvHostfile); e == nil || !hasVolume(launcher, "tj"+MPIHostfileConfigMapSuffix) {
				t.Errorf("launcher hostfile env %+v / volume missing", e)
			}
		})
	}
}

func hasVolume(spec corev1.PodSpec, source string) bool {
	for _, v := range spec.Volumes {
		if (v.Secret != nil && v.Secret.SecretName == source) || (v.ConfigMap != nil && v.ConfigMap.Name == source) {
			return true
		}
	}
	return false
}

// TestPodCliqueSetRefusals: what a PodCliqueSet cannot express is refused by
// ValidateRuntime (naming the field) and at build time (Unsupported), on the
// PodCliqueSet backend only.
func TestPodCliqueSetRefusals(t *testing.T) {
	jobPath := "spec.template.spec.replicatedJobs[0].template.spec."
	cases := []struct {
		name  string
		edit  func(*trainerv1alpha1.TrainingRuntimeSpec)
		field string // "" when accepted
	}{
		{"a plain template", func(*trainerv1alpha1.TrainingRuntimeSpec) {}, ""},
		{"backoffLimit 0", func(s *trainerv1alpha1.TrainingRuntimeSpec) { job(s).BackoffLimit = ptr.To[int32](0) }, ""},
		{"restartPolicy Never", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			job(s).Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		}, ""},
		{"failurePolicy.maxRestarts and restartStrategy BlockingRecreate", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 2, RestartStrategy: jobsetv1alpha2.BlockingRecreate}
		}, ""},
		{"podGroupPolicy.workload", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{Workload: &trainerv1alpha1.WorkloadPodGroupPolicySource{}}
		}, ""},
		{"backoffLimit 6", func(s *trainerv1alpha1.TrainingRuntimeSpec) { job(s).BackoffLimit = ptr.To[int32](6) }, jobPath + "backoffLimit"},
		{"backoffLimitPerIndex", func(s *trainerv1alpha1.TrainingRuntimeSpec) { job(s).BackoffLimitPerIndex = ptr.To[int32](1) }, jobPath + "backoffLimitPerIndex"},
		{"maxFailedIndexes", func(s *trainerv1alpha1.TrainingRuntimeSpec) { job(s).MaxFailedIndexes = ptr.To[int32](1) }, jobPath + "maxFailedIndexes"},
		{"podFailurePolicy (translated)", func(s *trainerv1alpha1.TrainingRuntimeSpec) { job(s).PodFailurePolicy = &batchv1.PodFailurePolicy{} }, ""},
		{"a podFailurePolicy rule that Ignores", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			job(s).PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}}
		}, jobPath + "podFailurePolicy.rules[0].action"},
		{"Job successPolicy", func(s *trainerv1alpha1.TrainingRuntimeSpec) { job(s).SuccessPolicy = &batchv1.SuccessPolicy{} }, jobPath + "successPolicy"},
		{"podReplacementPolicy", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			job(s).PodReplacementPolicy = ptr.To(batchv1.Failed)
		}, jobPath + "podReplacementPolicy"},
		{"completionMode NonIndexed", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			job(s).CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
		}, jobPath + "completionMode"},
		{"manualSelector", func(s *trainerv1alpha1.TrainingRuntimeSpec) { job(s).ManualSelector = ptr.To(true) }, jobPath + "selector"},
		{"Job managedBy", func(s *trainerv1alpha1.TrainingRuntimeSpec) { job(s).ManagedBy = ptr.To("example.com/x") }, jobPath + "managedBy"},
		{"restartPolicy OnFailure", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			job(s).Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}, jobPath + "template.spec.restartPolicy"},
		{"replicas 2 (of a job that runs no TrainJob step: Kubeflow refuses it on a step)", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Template.Labels = nil
			s.Template.Spec.ReplicatedJobs[0].Replicas = 2
		}, "spec.template.spec.replicatedJobs[0].replicas"},
		{"groupName", func(s *trainerv1alpha1.TrainingRuntimeSpec) { s.Template.Spec.ReplicatedJobs[0].GroupName = "g" }, "spec.template.spec.replicatedJobs[0].groupName"},
		{"failurePolicy.rules (translated)", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{Rules: []jobsetv1alpha2.FailurePolicyRule{{Name: "r", Action: jobsetv1alpha2.FailJobSet}}}
		}, ""},
		{"a failurePolicy rule that restarts one job", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{Rules: []jobsetv1alpha2.FailurePolicyRule{{Name: "r", Action: jobsetv1alpha2.RestartJob}}}
		}, "spec.template.spec.failurePolicy.rules[0].action"},
		{"a failurePolicy rule whose message pattern depends on the pod's name", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			job(s).PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}}}}
			s.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{Rules: []jobsetv1alpha2.FailurePolicyRule{{Name: "r", Action: jobsetv1alpha2.FailJobSet,
				OnJobFailureReasons: []string{"PodFailurePolicy"}, OnJobFailureMessagePatterns: []string{"pod default/"}}}}
		}, "spec.template.spec.failurePolicy.rules"},
		{"restartStrategy InPlaceRestart (restartStrategy InPlace)", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{RestartStrategy: jobsetv1alpha2.InPlaceRestart}
		}, ""},
		{"coordinator", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.Coordinator = &jobsetv1alpha2.Coordinator{ReplicatedJob: "node"}
		}, "spec.template.spec.coordinator"},
		{"JobSet managedBy", func(s *trainerv1alpha1.TrainingRuntimeSpec) { s.Template.Spec.ManagedBy = ptr.To("example.com/x") }, "spec.template.spec.managedBy"},
		{"volumeClaimPolicies (Kubeflow's torchtune runtimes)", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.VolumeClaimPolicies = []jobsetv1alpha2.VolumeClaimPolicy{{}}
		}, "spec.template.spec.volumeClaimPolicies"},
		{"enableDNSHostnames false", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.Network = &jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(false)}
		}, "spec.template.spec.network.enableDNSHostnames"},
		{"subdomain", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.Network = &jobsetv1alpha2.Network{Subdomain: "x"}
		}, "spec.template.spec.network.subdomain"},
		{"coscheduling", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{Coscheduling: &trainerv1alpha1.CoschedulingPodGroupPolicySource{}}
		}, "spec.podGroupPolicy.coscheduling"},
		{"volcano", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{Volcano: &trainerv1alpha1.VolcanoPodGroupPolicySource{}}
		}, "spec.podGroupPolicy.volcano"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := runtimeWith(torchPolicy(), replicatedJob("node", AncestorTrainer, NodeName))
			rt.Spec.PodGroupPolicy = nil
			tc.edit(&rt.Spec)
			if errs := ValidateRuntime(&rt.Spec); len(errs) != 0 {
				t.Errorf("the JobSet backend refused it: %v", errs)
			}
			rt = onPodCliqueSet(rt)
			errs := ValidateRuntime(&rt.Spec)
			_, buildErr := BuildPodCliqueSetObjects(pcsTrainJob(1), rt, nil)
			if tc.field == "" {
				if len(errs) != 0 || buildErr != nil {
					t.Errorf("refused: %v / %v", errs, buildErr)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.field || !strings.Contains(errs[0].Error(), "not expressible on the PodCliqueSet backend") {
				t.Errorf("errors %v, want one on %s saying it is not expressible", errs, tc.field)
			}
			if !IsUnsupported(buildErr) || !strings.Contains(buildErr.Error(), tc.field) {
				t.Errorf("build error %v, want Unsupported naming %s", buildErr, tc.field)
			}
		})
	}
}

func job(s *trainerv1alpha1.TrainingRuntimeSpec) *batchv1.JobSpec {
	return &s.Template.Spec.ReplicatedJobs[0].Template.Spec
}

func TestBackendOf(t *testing.T) {
	for backend, want := range map[trainerv1alpha1.RuntimeBackend]trainerv1alpha1.RuntimeBackend{
		"":                                   trainerv1alpha1.RuntimeBackendJobSet,
		trainerv1alpha1.RuntimeBackendJobSet: trainerv1alpha1.RuntimeBackendJobSet,
		trainerv1alpha1.RuntimeBackendPodCliqueSet: trainerv1alpha1.RuntimeBackendPodCliqueSet,
	} {
		if got := BackendOf(&trainerv1alpha1.TrainingRuntimeSpec{Backend: backend}); got != want {
			t.Errorf("backend %q: %q, want %q", backend, got, want)
		}
	}
}

// TestJobSetBackendIdentitiesUnchanged: the JobSet backend keeps JobSet's
// names and completion index.
func TestJobSetBackendIdentitiesUnchanged(t *testing.T) {
	plan, err := PlanJobSet(pcsTrainJob(2), runtimeWith(torchPolicy(), replicatedJob("node", AncestorTrainer, NodeName)))
	if err != nil {
		t.Fatal(err)
	}
	spec := BuildJobSet(plan).Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
	if e := envNamed(spec, NodeName, TorchEnvMasterAddr); e == nil || e.Value != "tj-node-0-0.tj" {
		t.Errorf("PET_MASTER_ADDR %+v", e)
	}
	if e := envNamed(spec, NodeName, TorchEnvNodeRank); e == nil || e.ValueFrom.FieldRef.FieldPath != CompletionIndexFieldPath {
		t.Errorf("PET_NODE_RANK %+v", e)
	}
}

// TestBuiltPodCliqueSetsAreAdmitted: what every ML policy and every mapped
// JobSet policy builds passes copse's own PodCliqueSet defaulting and
// validation.
func TestBuiltPodCliqueSetsAreAdmitted(t *testing.T) {
	initializers := func(policy *trainerv1alpha1.MLPolicy) Runtime {
		return runtimeWith(policy,
			replicatedJob("dataset-initializer", AncestorDatasetInitializer, DatasetInitializerName),
			replicatedJob("model-initializer", AncestorModelInitializer, ModelInitializerName),
			dependsOn(replicatedJob("node", AncestorTrainer, NodeName), jobsetv1alpha2.DependencyComplete, "dataset-initializer", "model-initializer"))
	}
	mpi := runtimeWith(mpiPolicy(true), replicatedJob("node", "", NodeName),
		dependsOn(replicatedJob("launcher", AncestorTrainer, NodeName), jobsetv1alpha2.DependencyReady, "node"))
	mpi.Spec.Template.Spec.SuccessPolicy = &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAll, TargetReplicatedJobs: []string{"launcher"}}
	mpi.Spec.Template.Spec.Network = &jobsetv1alpha2.Network{PublishNotReadyAddresses: ptr.To(true)}
	inOrder := initializers(&trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1)})
	for i := range inOrder.Spec.Template.Spec.ReplicatedJobs {
		inOrder.Spec.Template.Spec.ReplicatedJobs[i].DependsOn = nil
	}
	inOrder.Spec.Template.Spec.StartupPolicy = &jobsetv1alpha2.StartupPolicy{StartupPolicyOrder: jobsetv1alpha2.InOrder}
	inOrder.Spec.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 5}

	for name, rt := range map[string]Runtime{
		"plain":                           runtimeWith(&trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1)}, replicatedJob("node", AncestorTrainer, NodeName)),
		"torch with initializers":         initializers(torchPolicy()),
		"MPI, launcher after ready nodes": mpi,
		"JAX":                             runtimeWith(&trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), JAX: &trainerv1alpha1.JAXMLPolicySource{}}, replicatedJob("node", AncestorTrainer, NodeName)),
		"XGBoost":                         runtimeWith(&trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), XGBoost: &trainerv1alpha1.XGBoostMLPolicySource{}}, replicatedJob("node", AncestorTrainer, NodeName)),
		"in order, restarts":              inOrder,
	} {
		t.Run(name, func(t *testing.T) {
			objects, err := BuildPodCliqueSetObjects(pcsTrainJob(2), onPodCliqueSet(rt), nil)
			if err != nil {
				t.Fatal(err)
			}
			pcs := objects.PodCliqueSet.DeepCopy()
			pcswebhook.Default(pcs)
			if errs := pcswebhook.ValidateCreate(pcs); len(errs) > 0 {
				t.Errorf("copse refuses the PodCliqueSet: %v", errs)
			}
		})
	}
}
