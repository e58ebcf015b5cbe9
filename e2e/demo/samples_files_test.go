package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/mnnvl"
	"github.com/copse-dev/copse/internal/trainjob"
)

// samplesDir is the repository's samples/, which `make demo` applies.
const samplesDir = "../../samples"

// strictly decodes obj into out, refusing fields out's type lacks, so a
// misspelt field in a sample fails here rather than being pruned silently.
func strictly(t *testing.T, obj *unstructured.Unstructured, out any) {
	t.Helper()
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// TestTrainJobSamples builds each TrainJob sample against the runtime
// sample, as copse's admission and controller do: the samples pass Kubeflow's
// admission rules, ask for two gang-scheduled nodes, and carry the simulated
// outcome their file names promise.
func TestTrainJobSamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(samplesDir, "trainjob-*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no TrainJob samples in %s: %v", samplesDir, err)
	}
	runtimes := map[string]trainerv1alpha1.ClusterTrainingRuntime{}
	type fileTrainJob struct {
		file string
		tj   *trainerv1alpha1.TrainJob
	}
	var trainJobs []fileTrainJob
	for _, file := range files {
		objects, err := readObjects(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objects {
			switch obj.GetKind() {
			case kindClusterTrainingRuntime:
				var rt trainerv1alpha1.ClusterTrainingRuntime
				strictly(t, obj, &rt)
				// The CRD's default, which the API server applies.
				for i := range rt.Spec.Template.Spec.ReplicatedJobs {
					if rt.Spec.Template.Spec.ReplicatedJobs[i].Replicas == 0 {
						rt.Spec.Template.Spec.ReplicatedJobs[i].Replicas = 1
					}
				}
				runtimes[rt.Name] = rt
			case kindTrainJob:
				tj := &trainerv1alpha1.TrainJob{}
				strictly(t, obj, tj)
				tj.Namespace = demoNamespace
				trainJobs = append(trainJobs, fileTrainJob{file: filepath.Base(file), tj: tj})
			default:
				t.Errorf("%s: unexpected %s", file, obj.GetKind())
			}
		}
	}

	for _, name := range []string{"copse-torch", "copse-torch-podcliqueset", "copse-torch-nvlink"} {
		rt, ok := runtimes[name]
		if !ok {
			t.Fatalf("no ClusterTrainingRuntime %s among %v", name, files)
		}
		if errs := trainjob.ValidateRuntime(&rt.Spec); len(errs) > 0 {
			t.Errorf("runtime %s: %v", name, errs.ToAggregate())
		}
		if rt.Spec.PodGroupPolicy == nil || rt.Spec.PodGroupPolicy.Workload == nil || rt.Spec.TTLSecondsAfterFinished == nil {
			t.Errorf("runtime %s: want podGroupPolicy.workload and ttlSecondsAfterFinished, got podGroupPolicy %+v, ttlSecondsAfterFinished %v",
				name, rt.Spec.PodGroupPolicy, rt.Spec.TTLSecondsAfterFinished)
		}
	}

	samples := map[string]sampleWant{
		"trainjob-succeeds.yaml":              {exitCode: "0", nodes: 2, gpus: 2},
		"trainjob-fails.yaml":                 {exitCode: "1", nodes: 2, gpus: 2},
		"trainjob-podcliqueset-succeeds.yaml": {exitCode: "0", nodes: 2, gpus: 2},
		"trainjob-nvlink-pretrain.yaml":       {exitCode: "0", nodes: 12, gpus: 4, packedAt: "rack", mnnvlGroup: "nvl72"},
		"trainjob-queued.yaml":                {exitCode: "0", nodes: 2, gpus: 4, queue: demoQueue, count: 2},
	}
	perFile := map[string]int{}
	for _, s := range trainJobs {
		perFile[s.file]++
	}
	for file, want := range samples {
		if got := perFile[file]; got != max(want.count, 1) {
			t.Errorf("%s holds %d TrainJobs, want %d", file, got, max(want.count, 1))
		}
	}
	if len(perFile) != len(samples) {
		t.Errorf("TrainJob sample files %v, want %v", perFile, samples)
	}
	bindings := []copsev1alpha1.ClusterTopologyBinding{bindingSample(t)}
	for _, s := range trainJobs {
		file, tj := s.file, s.tj
		t.Run(file+"/"+tj.Name, func(t *testing.T) {
			rt, ok := runtimes[tj.Spec.RuntimeRef.Name]
			if !ok || trainjob.RuntimeKind(tj) != trainerv1alpha1.ClusterTrainingRuntimeKind {
				t.Fatalf("runtimeRef %+v: want one of the sample ClusterTrainingRuntimes", tj.Spec.RuntimeRef)
			}
			runtime := trainjob.Runtime{Kind: trainerv1alpha1.ClusterTrainingRuntimeKind, Name: rt.Name, Spec: rt.Spec}
			plan, err := trainjob.NewPlan(tj, runtime)
			if err != nil {
				t.Fatal(err)
			}
			if errs := trainjob.Validate(plan); len(errs) > 0 {
				t.Fatalf("admission: %v", errs.ToAggregate())
			}
			want := samples[file]
			checkQueue(t, tj, want)
			if got := tj.Annotations[mnnvl.GroupAnnotation]; got != want.mnnvlGroup {
				t.Errorf("annotation %s = %q, want %q", mnnvl.GroupAnnotation, got, want.mnnvlGroup)
			}
			if trainjob.BackendOf(&rt.Spec) == trainerv1alpha1.RuntimeBackendPodCliqueSet {
				checkPodCliqueSetSample(t, tj, runtime, bindings, want)
				return
			}
			objects, err := trainjob.BuildJobSetObjects(tj, runtime)
			if err != nil {
				t.Fatal(err)
			}
			jobs := objects.JobSet.Spec.ReplicatedJobs
			if len(jobs) != 1 || jobs[0].Name != trainjob.NodeName || *jobs[0].Template.Spec.Parallelism != want.nodes {
				t.Fatalf("want one replicated job node of %d pods, got %+v", want.nodes, jobs)
			}
			pod := jobs[0].Template.Spec.Template
			checkSimulatedNode(t, pod, want)
			groups := objects.Plan.PodGroups
			if objects.Workload == nil || len(groups) != 1 || groups[0].MinCount != want.nodes ||
				pod.Spec.SchedulingGroup == nil || *pod.Spec.SchedulingGroup.PodGroupName != tj.Name+"-trainer" {
				t.Errorf("want a gang of 2 in PodGroup %s-trainer: groups %+v, pod group %+v", tj.Name, groups, pod.Spec.SchedulingGroup)
			}
		})
	}
}

// sampleWant is what a TrainJob sample promises: the simulated exit code,
// its nodes and GPUs per node, the binding level it is packed at ("" for
// none), the Kueue LocalQueue it is submitted to ("" for none), and how many
// TrainJobs its file holds (0 for one).
type sampleWant struct {
	exitCode string
	nodes    int32
	gpus     int64
	packedAt string
	queue    string
	count    int
	// mnnvlGroup is the MNNVL group the sample opts in to, "" for none.
	mnnvlGroup string
}

// checkQueue: a queued sample names the demo's LocalQueue, and each one asks
// for exactly the queue's GPU quota, so that one runs while another waits;
// the others name no queue.
func checkQueue(t *testing.T, tj *trainerv1alpha1.TrainJob, want sampleWant) {
	t.Helper()
	if got := tj.Labels[copsekueue.QueueNameLabel]; got != want.queue {
		t.Errorf("label %s = %q, want %q", copsekueue.QueueNameLabel, got, want.queue)
	}
	if want.queue == "" {
		return
	}
	quota := demoQueues().Quota[cluster.ResourceGPU]
	if asked := int64(want.nodes) * want.gpus; quota.Value() != asked || want.count < 2 {
		t.Errorf("the queue's quota of %d GPUs, %d TrainJobs of %d GPUs each: want the quota of one and at least two of them",
			quota.Value(), want.count, asked)
	}
}

// checkPodCliqueSetSample: a TrainJob on the PodCliqueSet backend becomes
// one Training PodCliqueSet with a clique node of the sample's simulated GPU
// pods, the runtime's restart budget, the packing its runtime asks for
// (resolved against the binding sample), and no Workload of the TrainJob's
// own (the PodCliqueSet controller makes the gang).
func checkPodCliqueSetSample(t *testing.T, tj *trainerv1alpha1.TrainJob, runtime trainjob.Runtime, bindings []copsev1alpha1.ClusterTopologyBinding, want sampleWant) {
	t.Helper()
	objects, err := trainjob.BuildPodCliqueSetObjects(tj, runtime, bindings)
	if err != nil {
		t.Fatal(err)
	}
	pcs := objects.PodCliqueSet
	if !pcs.IsTraining() || pcs.MaxRestarts() != 1 || len(pcs.Spec.Template.Cliques) != 1 {
		t.Fatalf("want a Training PodCliqueSet with maxRestarts 1 and one clique, got %+v", pcs.Spec)
	}
	clique := pcs.Spec.Template.Cliques[0]
	if clique.Name != trainjob.NodeName || clique.Spec.Replicas != want.nodes {
		t.Fatalf("want clique node of %d pods, got %s of %d", want.nodes, clique.Name, clique.Spec.Replicas)
	}
	checkSimulatedNode(t, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: clique.Annotations}, Spec: clique.Spec.PodSpec}, want)
	var packedAt string
	if c := pcs.Spec.Template.TopologyConstraint; c != nil && c.Pack != nil && c.TopologyName == bindings[0].Name {
		packedAt = string(c.Pack.RequiredDomain)
	}
	if packedAt != want.packedAt {
		t.Errorf("topologyConstraint %+v: want packing at %q of binding %s", pcs.Spec.Template.TopologyConstraint, want.packedAt, bindings[0].Name)
	}
	// MNNVL is opt-in: the sample's group reaches its PodCliqueSet, whose
	// GPU clique gets a ComputeDomain of that group; the others get none.
	var wantGroups []string
	if want.mnnvlGroup != "" {
		wantGroups = []string{want.mnnvlGroup}
	}
	if got := mnnvl.ReplicaGroups(pcs); !slices.Equal(got, wantGroups) {
		t.Errorf("MNNVL groups with a ComputeDomain %v, want %v", got, wantGroups)
	}
}

// checkSimulatedNode: the node pods carry the simulated outcome the sample's
// file name promises and ask for the sample's GPUs.
func checkSimulatedNode(t *testing.T, pod corev1.PodTemplateSpec, want sampleWant) {
	t.Helper()
	if pod.Annotations[cluster.AnnotationRunDuration] == "" || pod.Annotations[cluster.AnnotationExitCode] != want.exitCode {
		t.Errorf("pod annotations %v: want a run duration and exit code %q", pod.Annotations, want.exitCode)
	}
	if gpus := pod.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; gpus.Value() != want.gpus {
		t.Errorf("node container resources %+v: want %d GPUs", pod.Spec.Containers[0].Resources, want.gpus)
	}
}

// bindingSample is samples/clustertopologybinding.yaml.
func bindingSample(t *testing.T) copsev1alpha1.ClusterTopologyBinding {
	t.Helper()
	objects, err := readObjects(filepath.Join(samplesDir, "clustertopologybinding.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objects) != 1 {
		t.Fatalf("want one ClusterTopologyBinding, got %d objects", len(objects))
	}
	var binding copsev1alpha1.ClusterTopologyBinding
	strictly(t, objects[0], &binding)
	return binding
}

// TestClusterTopologyBindingSample: the binding sample decodes as a
// ClusterTopologyBinding, and on the demo's fleet every level's key is on
// every node, each level splits the one above it (every domain lies inside
// one domain of its parent, and there are more of them), and the rack level
// is the NVLink clique.
func TestClusterTopologyBindingSample(t *testing.T) {
	levels := bindingSample(t).Spec.Levels
	var domains []string
	for _, l := range levels {
		domains = append(domains, string(l.Domain))
	}
	if want := []string{"zone", "block", "rack", "host"}; !slices.Equal(domains, want) {
		t.Fatalf("levels %v, want %v", domains, want)
	}
	if levels[2].Key != cluster.LabelGPUClique {
		t.Errorf("rack level key %s, want the NVLink clique %s", levels[2].Key, cluster.LabelGPUClique)
	}

	fleet := demoFleet()
	placements := fleet.Placements()
	parentOf := make([]map[string]string, len(levels)) // per level: domain -> parent domain
	for i := range levels {
		parentOf[i] = map[string]string{}
	}
	for _, p := range placements {
		nodeLabels := p.Labels(fleet.Shape)
		for i, l := range levels {
			value, ok := nodeLabels[l.Key]
			if !ok {
				t.Fatalf("node %s has no label %s (level %s)", p.NodeName(), l.Key, l.Domain)
			}
			parent := ""
			if i > 0 {
				parent = nodeLabels[levels[i-1].Key]
			}
			if seen, ok := parentOf[i][value]; ok && seen != parent {
				t.Errorf("%s %s lies in %s %s and %s", l.Domain, value, levels[i-1].Domain, seen, parent)
			}
			parentOf[i][value] = parent
		}
	}
	for i := 1; i < len(levels); i++ {
		if len(parentOf[i]) <= len(parentOf[i-1]) && len(parentOf[i-1]) > 1 {
			t.Errorf("%d %s domains do not split %d %s domains", len(parentOf[i]), levels[i].Domain, len(parentOf[i-1]), levels[i-1].Domain)
		}
	}
	if racks, nodes := len(parentOf[2]), len(placements); racks != 4 || nodes != 72 || fleet.Shape.GPUs != 4 {
		t.Errorf("fleet of %d nodes in %d NVLink racks with %d GPUs each; want 72 nodes, 4 racks of 18 x 4 GPUs", nodes, racks, fleet.Shape.GPUs)
	}
}
