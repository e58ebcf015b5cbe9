package trainerparity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// oracleResult is trainer-oracle's answer for one case.
type oracleResult struct {
	Name     string            `json:"name"`
	Objects  []json.RawMessage `json:"objects"`
	Warnings []string          `json:"warnings"`
	Stage    string            `json:"stage"`
	Error    string            `json:"error"`
}

var _ = Describe("copse's TrainJob build", Label("trainer-parity"), Ordered, func() {
	var (
		runtimes []map[string]any
		cases    []parityCase
		results  map[string]oracleResult
	)

	BeforeAll(func(ctx context.Context) {
		runOracle(ctx, &runtimes, nil, "runtimes")
		for _, rt := range runtimes {
			for _, s := range shapes {
				c, err := newCase(rt, s)
				Expect(err).NotTo(HaveOccurred())
				cases = append(cases, c)
			}
			variants, err := variantCases(rt)
			Expect(err).NotTo(HaveOccurred())
			cases = append(cases, variants...)
		}
		var answers []oracleResult
		runOracle(ctx, &answers, cases, "build")
		Expect(answers).To(HaveLen(len(cases)))
		results = map[string]oracleResult{}
		for _, a := range answers {
			results[a.Name] = a
		}
	})

	It("covers every ClusterTrainingRuntime Kubeflow Trainer v2.3.0 ships", func() {
		var names []string
		for _, rt := range runtimes {
			name := unstructuredString(rt, "metadata", "name")
			names = append(names, name)
		}
		Expect(names).To(ConsistOf(shippedRuntimes))
	})

	It("builds what Kubeflow Trainer builds for every (runtime, TrainJob) pair", func() {
		schemas, err := copseSchemas()
		Expect(err).NotTo(HaveOccurred())
		var failures []string
		built, refused := 0, 0
		for _, c := range cases {
			outcome, err := compareCase(schemas, c, results[c.Name])
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s: %v", c.Name, err))
				continue
			}
			switch outcome {
			case "built":
				built++
			case "refused":
				refused++
			}
		}
		AddReportEntry("pairs", fmt.Sprintf("%d (runtime, TrainJob) pairs: %d built identically, %d refused by both, %d other", len(cases), built, refused, len(cases)-built-refused))
		fmt.Fprintf(GinkgoWriter, "%d pairs: %d built identically, %d refused by both\n", len(cases), built, refused)
		Expect(failures).To(BeEmpty(), strings.Join(failures, "\n\n"))
		Expect(built).To(BeNumerically(">=", len(runtimes)*8), "most pairs must build: a table that only produces refusals proves nothing")
	})
})

// compareCase builds one case on copse's side and compares it with the
// oracle's result: both refuse it (copse's error naming fields the oracle's
// names too), or both build the same objects.
func compareCase(schemas map[string]*structuralschema.Structural, c parityCase, want oracleResult) (string, error) {
	if want.Name == "" {
		return "", fmt.Errorf("the oracle has no result")
	}
	runtimeObj := &trainerv1alpha1.ClusterTrainingRuntime{}
	if err := admit(schemas, "ClusterTrainingRuntime", c.Runtime, runtimeObj); err != nil {
		return "", err
	}
	tj := &trainerv1alpha1.TrainJob{}
	if err := admit(schemas, "TrainJob", c.TrainJob, tj); err != nil {
		return "", err
	}
	if ptr.Deref(tj.Spec.ManagedBy, "") != trainerv1alpha1.ManagedByTrainJobController {
		if len(want.Objects) != 0 || want.Error != "" {
			return "", fmt.Errorf("a TrainJob managed by %s: Kubeflow built %d objects (error %q), copse builds none", *tj.Spec.ManagedBy, len(want.Objects), want.Error)
		}
		return "skipped", nil
	}
	runtime := trainjob.Runtime{Kind: trainerv1alpha1.ClusterTrainingRuntimeKind, Name: runtimeObj.Name, Spec: runtimeObj.Spec}

	plan, err := trainjob.NewPlan(tj, runtime)
	if err != nil {
		return "", fmt.Errorf("copse: %w", err)
	}
	// The oracle's cluster has no PriorityClass.
	noPriorityClass := func(string) (bool, error) { return false, nil }
	if errs := append(trainjob.Validate(plan), trainjob.VolcanoPriorityClassErrors(plan, noPriorityClass)...); len(errs) > 0 {
		if want.Error == "" {
			return "", fmt.Errorf("copse refuses it (%w), Kubeflow builds it", errs.ToAggregate())
		}
		for _, e := range errs {
			if !strings.Contains(want.Error, e.Field) {
				return "", fmt.Errorf("copse refuses %s (%w); Kubeflow refuses it without naming that field: %s", e.Field, e, want.Error)
			}
		}
		return "refused", nil
	}
	if want.Error != "" {
		return "", fmt.Errorf("Kubeflow refuses it at stage %s (%s), copse builds it", want.Stage, want.Error)
	}

	got, err := copseObjects(tj, runtime)
	if err != nil {
		return "", err
	}
	sortEnv := plainStepRuns(runtimeObj.Spec.MLPolicy)
	gotByKey, err := normalizeAll(got, sortEnv)
	if err != nil {
		return "", fmt.Errorf("copse's objects: %w", err)
	}
	wantByKey, err := normalizeAll(want.Objects, sortEnv)
	if err != nil {
		return "", fmt.Errorf("Kubeflow's objects: %w", err)
	}
	if diff := cmp.Diff(keys(wantByKey), keys(gotByKey)); diff != "" {
		return "", fmt.Errorf("different objects (-kubeflow +copse):\n%s", diff)
	}
	for key, w := range wantByKey {
		if diff := cmp.Diff(w, gotByKey[key]); diff != "" {
			return "", fmt.Errorf("%s differs (-kubeflow +copse):\n%s", key, diff)
		}
	}
	if err := readsKubeflowSnapshot(tj, runtime, want.Objects); err != nil {
		return "", err
	}
	return "built", nil
}

// readsKubeflowSnapshot: copse resumes a TrainJob Kubeflow Trainer started
// from Trainer's own runtime snapshot, so the snapshot Trainer writes must
// read back, through copse's reader, as the runtime it was made from.
func readsKubeflowSnapshot(tj *trainerv1alpha1.TrainJob, runtime trainjob.Runtime, objects []json.RawMessage) error {
	for _, raw := range objects {
		cm := &corev1.ConfigMap{}
		if err := json.Unmarshal(raw, cm); err != nil || cm.Kind != "ConfigMap" || cm.Name != tj.Name+trainjob.RuntimeSnapshotSuffix {
			continue
		}
		got, err := trainjob.RuntimeFromSnapshot(tj, cm)
		if err != nil {
			return fmt.Errorf("copse cannot read Kubeflow's runtime snapshot: %w", err)
		}
		if diff := cmp.Diff(runtime, got); diff != "" {
			return fmt.Errorf("Kubeflow's runtime snapshot reads back as another runtime (-runtime +snapshot):\n%s", diff)
		}
		return adoptsKubeflowSnapshot(tj, cm, got)
	}
	return fmt.Errorf("Kubeflow built no runtime snapshot")
}

// adoptsKubeflowSnapshot: after a move from Kubeflow Trainer copse adopts
// Trainer's snapshot, which lacks copse's labels (so copse's cache would not
// see it) and a TTL (Trainer's API has none): the adopted one is labelled,
// is the same ConfigMap with the same controller, and reads back as the same
// runtime with the TTL given at adoption.
func adoptsKubeflowSnapshot(tj *trainerv1alpha1.TrainJob, cm *corev1.ConfigMap, runtime trainjob.Runtime) error {
	if trainjob.IsCopseSnapshot(cm) {
		return fmt.Errorf("Kubeflow's runtime snapshot carries copse's labels: %v", cm.Labels)
	}
	const ttl = 600
	adopted, err := trainjob.AdoptRuntimeSnapshot(tj, cm, runtime, ptr.To[int32](ttl))
	if err != nil {
		return fmt.Errorf("adopt Kubeflow's runtime snapshot: %w", err)
	}
	if !trainjob.IsCopseSnapshot(adopted) || adopted.Name != cm.Name || !metav1.IsControlledBy(adopted, tj) {
		return fmt.Errorf("the adopted snapshot is not copse's, or another object: %s labels %v owners %v", adopted.Name, adopted.Labels, adopted.OwnerReferences)
	}
	back, err := trainjob.RuntimeFromSnapshot(tj, adopted)
	if err != nil {
		return fmt.Errorf("the adopted snapshot does not read back: %w", err)
	}
	want := runtime
	want.Spec = *runtime.Spec.DeepCopy()
	if want.Spec.TTLSecondsAfterFinished == nil {
		want.Spec.TTLSecondsAfterFinished = ptr.To[int32](ttl)
	}
	if diff := cmp.Diff(want, back); diff != "" {
		return fmt.Errorf("the adopted snapshot holds another runtime (-want +got):\n%s", diff)
	}
	return nil
}

// copseObjects are the objects copse's JobSet backend makes for a TrainJob,
// as raw JSON: the runtime snapshot, the JobSet, for MPI the SSH Secret and
// the hostfile, and for podGroupPolicy coscheduling or volcano the
// scheduler's PodGroup.
func copseObjects(tj *trainerv1alpha1.TrainJob, runtime trainjob.Runtime) ([]json.RawMessage, error) {
	snapshot, err := trainjob.BuildRuntimeSnapshot(tj, runtime)
	if err != nil {
		return nil, err
	}
	objects, err := trainjob.BuildJobSetObjects(tj, runtime)
	if err != nil {
		return nil, fmt.Errorf("copse: %w", err)
	}
	list := []any{snapshot, objects.JobSet}
	if objects.SchedulerPodGroup != nil {
		list = append(list, objects.SchedulerPodGroup)
	}
	if objects.MPIHostfile != nil {
		list = append(list, objects.MPIHostfile)
	}
	if objects.NeedsMPISSHSecret {
		secret, err := trainjob.BuildMPISSHSecret(tj)
		if err != nil {
			return nil, err
		}
		list = append(list, secret)
	}
	var raws []json.RawMessage
	for _, obj := range list {
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		raws = append(raws, raw)
	}
	return raws, nil
}

// plainStepRuns: Kubeflow's plain-ML step runs (in random order with the
// framework's) for runtimes without torch, MPI or JAX.
func plainStepRuns(policy *trainerv1alpha1.MLPolicy) bool {
	return policy == nil || (policy.Torch == nil && policy.MPI == nil && policy.JAX == nil)
}

func normalizeAll(raws []json.RawMessage, sortEnv bool) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for _, raw := range raws {
		n, err := normalize(raw, sortEnv)
		if err != nil {
			return nil, err
		}
		out[n.Key] = n.JSON
	}
	return out, nil
}

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
