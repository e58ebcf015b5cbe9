package trainjob

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

func TestDecideRebuild(t *testing.T) {
	cases := []struct {
		name string
		in   rebuildInputs
		want rebuildStep
	}{
		{"running and the TrainJob too: never changed under its pods",
			rebuildInputs{BeyondSuspend: true}, rebuildNone},
		{"suspended with no run in progress and as built: applied, which changes nothing",
			rebuildInputs{TrainJobSuspended: true, ExistingSuspended: true, TemplatesMutable: true}, rebuildAll},
		{"suspend alone on a running PodCliqueSet: at once",
			rebuildInputs{TrainJobSuspended: true}, rebuildAll},
		{"resume alone while the suspended PodCliqueSet's pods still go away: at once",
			rebuildInputs{ExistingSuspended: true}, rebuildAll},
		{"Kueue stopped the TrainJob and cleared its patch before copse saw either: suspend first",
			rebuildInputs{TrainJobSuspended: true, BeyondSuspend: true}, rebuildSuspendFirst},
		{"suspended PodCliqueSet whose pods still go away, patch changed: wait for them",
			rebuildInputs{TrainJobSuspended: true, ExistingSuspended: true, BeyondSuspend: true}, rebuildWaitForPods},
		{"suspended PodCliqueSet with no run in progress, patch changed: rebuilt",
			rebuildInputs{TrainJobSuspended: true, ExistingSuspended: true, TemplatesMutable: true, BeyondSuspend: true}, rebuildAll},
		{"admitted (patch set and resumed at once) while the pods of the last run still go away: wait",
			rebuildInputs{ExistingSuspended: true, BeyondSuspend: true}, rebuildWaitForPods},
		{"admitted with no run in progress: patch and resume in one write",
			rebuildInputs{ExistingSuspended: true, TemplatesMutable: true, BeyondSuspend: true}, rebuildAll},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideRebuild(tc.in); got != tc.want {
				t.Errorf("decideRebuild(%+v) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

// TestRebuildNeedsDryRun: the observe step asks the API server exactly where
// decideRebuild reads its answer.
func TestRebuildNeedsDryRun(t *testing.T) {
	for _, tjSuspended := range []bool{false, true} {
		for _, pcs := range []*copsev1alpha1.PodCliqueSet{nil, existingPCS(false, true), existingPCS(true, true), existingPCS(true, false)} {
			in := rebuildInputs{TrainJobSuspended: tjSuspended}
			if pcs != nil {
				in.ExistingSuspended, in.TemplatesMutable = pcs.IsSuspended(), pcs.SchedulingDirectivesMutable()
			}
			with, without := in, in
			with.BeyondSuspend = true
			readsIt := pcs != nil && decideRebuild(with) != decideRebuild(without)
			if got := rebuildNeedsDryRun(tjSuspended, pcs); got != readsIt {
				t.Errorf("TrainJob suspended %t, PodCliqueSet %+v: rebuildNeedsDryRun = %t, decideRebuild reads it: %t", tjSuspended, in, got, readsIt)
			}
		}
	}
}

// existingPCS is a TrainJob's PodCliqueSet as stored: suspended or not, a
// run in progress (status.startTime) or not.
func existingPCS(suspended, running bool) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns", UID: "pcs-uid"}}
	pcs.Spec.Suspend = ptr.To(suspended)
	if running {
		pcs.Status.StartTime = &metav1.Time{}
	}
	return pcs
}

func writeTrainJob(suspended bool) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns", UID: "tj-uid"},
		Spec: trainerv1alpha1.TrainJobSpec{Suspend: ptr.To(suspended)}}
}

// applied marks a JobSet as applied by copse's field owner.
func applied(js *jobsetv1alpha2.JobSet) *jobsetv1alpha2.JobSet {
	js = js.DeepCopy()
	js.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply}}
	return js
}

// writeSummary is a write as the tests compare it.
type writeSummary struct {
	how    writeHow
	kind   string
	name   string
	exists bool
}

func summarizeWrites(plan writePlan) []writeSummary {
	var out []writeSummary
	for _, w := range plan.writes {
		s := writeSummary{how: w.how, exists: w.exists}
		if w.object != nil {
			s.kind, s.name = kindOf(w.object), w.object.GetName()
		}
		out = append(out, s)
	}
	return out
}

func TestDecideWritesJobSet(t *testing.T) {
	hostfile := &corev1.ConfigMap{ObjectMeta: trainjob.OwnedMeta(writeTrainJob(false), "tj-mpi-hostfile"), Data: map[string]string{"hostfile": "a slots=1\n"}}
	staleHostfile := hostfile.DeepCopy()
	staleHostfile.Data = map[string]string{"hostfile": "b slots=1\n"}
	trainersHostfile := hostfile.DeepCopy()
	trainersHostfile.Labels = nil
	podGroupKind := trainjob.CoschedulingPodGroupKind
	schedulerPodGroup := func(owned bool, minMember int64) *unstructured.Unstructured {
		u := trainjob.NewSchedulerPodGroup(podGroupKind)
		u.SetName("tj")
		u.SetNamespace("ns")
		if owned {
			u.SetOwnerReferences([]metav1.OwnerReference{trainjob.ControllerReference(writeTrainJob(false))})
		}
		_ = unstructured.SetNestedField(u.Object, minMember, "spec", "minMember")
		return u
	}
	computeDomain := func(owned bool) *unstructured.Unstructured {
		u := trainjob.TrainJobComputeDomain(writeTrainJob(false), "tj-mnnvl")
		if !owned {
			u.SetOwnerReferences(nil)
		}
		return u
	}
	build := func(mod func(o *trainjob.JobSetObjects)) builtObjects {
		o := &trainjob.JobSetObjects{JobSet: copseBuild(false, nil)}
		if mod != nil {
			mod(o)
		}
		return builtObjects{jobSet: o}
	}
	apply := func(kind, name string, exists bool) writeSummary {
		return writeSummary{how: writeApply, kind: kind, name: name, exists: exists}
	}
	rebuild := func(kind, name string) writeSummary {
		return writeSummary{how: writeRebuild, kind: kind, name: name, exists: true}
	}
	// asBuilt is copse's JobSet as the build makes it, suspended or not.
	asBuilt := func(suspended bool) *jobsetv1alpha2.JobSet {
		js := copseBuild(false, nil)
		js.Spec.Suspend = ptr.To(suspended)
		return js
	}
	cases := []struct {
		name      string
		suspended bool
		built     builtObjects
		jobSet    *jobsetv1alpha2.JobSet
		existing  existingBuild
		want      []writeSummary
	}{
		{name: "no JobSet: applied, which creates it", built: build(nil), want: []writeSummary{apply("JobSet", "tj", false)}},
		{name: "copse's JobSet runs, and the TrainJob: nothing", built: build(nil), jobSet: applied(trainerJobSet(false))},
		{name: "the TrainJob is suspended: the JobSet is rebuilt (JobSet takes pod template changes then)", suspended: true,
			built: build(nil), jobSet: applied(trainerJobSet(false)), want: []writeSummary{rebuild("JobSet", "tj")}},
		{name: "copse's JobSet is suspended, the TrainJob resumes: rebuilt", built: build(nil), jobSet: applied(trainerJobSet(true)),
			want: []writeSummary{rebuild("JobSet", "tj")}},
		{name: "copse's suspended JobSet is as built: nothing", suspended: true, built: build(nil), jobSet: applied(asBuilt(true)), want: nil},
		{name: "a JobSet Kubeflow Trainer built, the TrainJob suspended: adopted, never applied", suspended: true,
			built: build(nil), jobSet: trainerJobSet(false), want: []writeSummary{{how: writeAdopted, kind: "JobSet", name: "tj", exists: true}}},
		{name: "MPI before the JobSet runs: the Secret, then the hostfile", built: build(func(o *trainjob.JobSetObjects) {
			o.NeedsMPISSHSecret, o.MPIHostfile = true, hostfile
		}), want: []writeSummary{{how: writeSSHSecret}, apply("ConfigMap", "tj-mpi-hostfile", false), apply("JobSet", "tj", false)}},
		{name: "MPI while the JobSet runs: no Secret, the hostfile as it is", built: build(func(o *trainjob.JobSetObjects) {
			o.NeedsMPISSHSecret, o.MPIHostfile = true, hostfile
		}), jobSet: applied(trainerJobSet(false)), existing: existingBuild{Hostfile: hostfile}},
		{name: "a hostfile whose data changed is applied", built: build(func(o *trainjob.JobSetObjects) { o.MPIHostfile = hostfile }),
			jobSet: applied(trainerJobSet(false)), existing: existingBuild{Hostfile: staleHostfile},
			want: []writeSummary{apply("ConfigMap", "tj-mpi-hostfile", true)}},
		{name: "Kubeflow Trainer's hostfile gets copse's labels", built: build(func(o *trainjob.JobSetObjects) { o.MPIHostfile = hostfile }),
			jobSet: applied(trainerJobSet(false)), existing: existingBuild{Hostfile: trainersHostfile},
			want: []writeSummary{apply("ConfigMap", "tj-mpi-hostfile", true)}},
		{name: "a foreign scheduler PodGroup blocks the rest", built: build(func(o *trainjob.JobSetObjects) {
			o.SchedulerPodGroup = schedulerPodGroup(true, 2)
		}), existing: existingBuild{SchedulerPodGroup: schedulerPodGroup(false, 2)},
			want: []writeSummary{{how: writeBlocked}, apply("JobSet", "tj", false)}},
		{name: "a scheduler PodGroup that differs under a running JobSet is kept", built: build(func(o *trainjob.JobSetObjects) {
			o.SchedulerPodGroup = schedulerPodGroup(true, 3)
		}), jobSet: applied(trainerJobSet(false)), existing: existingBuild{SchedulerPodGroup: schedulerPodGroup(true, 2)}},
		{name: "a scheduler PodGroup that differs while suspended is applied", suspended: true, built: build(func(o *trainjob.JobSetObjects) {
			o.SchedulerPodGroup = schedulerPodGroup(true, 3)
		}), jobSet: applied(trainerJobSet(true)), existing: existingBuild{SchedulerPodGroup: schedulerPodGroup(true, 2)},
			want: []writeSummary{apply("PodGroup", "tj", true), rebuild("JobSet", "tj")}},
		{name: "no ComputeDomain: created before the JobSet", built: build(func(o *trainjob.JobSetObjects) { o.ComputeDomain = computeDomain(true) }),
			want: []writeSummary{{how: writeCreate, kind: "ComputeDomain", name: "tj-mnnvl"}, apply("JobSet", "tj", false)}},
		{name: "the TrainJob's ComputeDomain is never written again", built: build(func(o *trainjob.JobSetObjects) { o.ComputeDomain = computeDomain(true) }),
			existing: existingBuild{ComputeDomain: computeDomain(true)}, want: []writeSummary{apply("JobSet", "tj", false)}},
		{name: "a foreign ComputeDomain blocks the JobSet", built: build(func(o *trainjob.JobSetObjects) { o.ComputeDomain = computeDomain(true) }),
			existing: existingBuild{ComputeDomain: computeDomain(false)}, want: []writeSummary{{how: writeBlocked}, apply("JobSet", "tj", false)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The build is suspended as its TrainJob.
			tc.built.jobSet.JobSet.Spec.Suspend = ptr.To(tc.suspended)
			got := summarizeWrites(decideWrites(writeInputs{TrainJob: writeTrainJob(tc.suspended), Built: tc.built, JobSet: tc.jobSet, Existing: tc.existing}))
			if !equalSummaries(got, tc.want) {
				t.Errorf("writes %+v, want %+v", got, tc.want)
			}
		})
	}
}

func equalSummaries(a, b []writeSummary) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDecideWritesKeepsJobSetCreateDefaults: a rebuilt JobSet keeps what
// JobSet's webhook set at creation inside what the apply owns whole (a
// failure policy rule's name): JobSet refuses any change of it.
func TestDecideWritesKeepsJobSetCreateDefaults(t *testing.T) {
	desired := copseBuild(true, nil)
	desired.Spec = built(true)
	existing := applied(desired)
	existing.Spec = created(built(false))
	plan := decideWrites(writeInputs{TrainJob: writeTrainJob(true), Built: builtObjects{jobSet: &trainjob.JobSetObjects{JobSet: desired}}, JobSet: existing})
	if len(plan.writes) != 1 {
		t.Fatalf("writes %+v, want the JobSet", summarizeWrites(plan))
	}
	rebuilt := plan.writes[0].object.(*jobsetv1alpha2.JobSet)
	if name := rebuilt.Spec.FailurePolicy.Rules[0].Name; name != "failurePolicyRule0" {
		t.Errorf("failure policy rule %q, want JobSet's default name kept", name)
	}
	if desired.Spec.FailurePolicy.Rules[0].Name != "" {
		t.Error("the build itself was changed")
	}
}

func TestDecideWritesWorkloadGangs(t *testing.T) {
	tj := writeTrainJob(false)
	plan := &trainjob.Plan{TrainJob: tj, PodGroups: []trainjob.PodGroupPlan{
		{Template: trainjob.InitializerGroup, Name: "tj-initializer"},
		{Template: trainjob.TrainerGroup, Name: "tj-trainer", MinCount: 2},
	}}
	objects := &trainjob.JobSetObjects{JobSet: copseBuild(false, nil), Plan: plan, Workload: trainjob.BuildWorkload(plan)}
	workload := objects.Workload.DeepCopy()
	workload.UID = "wl-uid"
	create := func(kind, name string) writeSummary { return writeSummary{how: writeCreate, kind: kind, name: name} }
	cases := []struct {
		name     string
		existing existingBuild
		want     []writeSummary
		// uid is the Workload UID the PodGroups written carry.
		uid types.UID
	}{
		{name: "none yet: the Workload, then its PodGroups, before the JobSet",
			want: []writeSummary{create("Workload", "tj.trainjob"), create("PodGroup", "tj-initializer"), create("PodGroup", "tj-trainer"),
				{how: writeApply, kind: "JobSet", name: "tj"}}},
		{name: "one PodGroup missing: only it, owned by the Workload that exists", uid: "wl-uid",
			existing: existingBuild{Workload: workload, PodGroups: map[string]bool{"tj-initializer": true}},
			want:     []writeSummary{create("PodGroup", "tj-trainer"), {how: writeApply, kind: "JobSet", name: "tj"}}},
		{name: "every PodGroup exists: no Workload is made (they keep the one they name)",
			existing: existingBuild{PodGroups: map[string]bool{"tj-initializer": true, "tj-trainer": true}},
			want:     []writeSummary{{how: writeApply, kind: "JobSet", name: "tj"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decideWrites(writeInputs{TrainJob: tj, Built: builtObjects{jobSet: objects}, Existing: tc.existing})
			if !equalSummaries(summarizeWrites(got), tc.want) {
				t.Errorf("writes %+v, want %+v", summarizeWrites(got), tc.want)
			}
			for _, w := range got.writes {
				if pg, ok := w.object.(*schedulingv1beta1.PodGroup); ok && workloadOwnerUID(pg) != tc.uid {
					t.Errorf("PodGroup %s owned by Workload UID %q, want %q", pg.Name, workloadOwnerUID(pg), tc.uid)
				}
			}
		})
	}
}

func workloadOwnerUID(pg *schedulingv1beta1.PodGroup) types.UID {
	for _, ref := range pg.OwnerReferences {
		if ref.Kind == "Workload" {
			return ref.UID
		}
	}
	return "none"
}

func TestDecideWritesPodCliqueSet(t *testing.T) {
	desired := &copsev1alpha1.PodCliqueSet{TypeMeta: metav1.TypeMeta{APIVersion: copsev1alpha1.SchemeGroupVersion.String(), Kind: "PodCliqueSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns"}}
	cases := []struct {
		name          string
		suspended     bool
		existing      *copsev1alpha1.PodCliqueSet
		beyondSuspend bool
		want          []writeSummary
		waiting       bool
	}{
		{name: "none yet: applied, which creates it", want: []writeSummary{{how: writeApply, kind: "PodCliqueSet", name: "tj"}}},
		{name: "running, and the TrainJob: nothing", existing: existingPCS(false, true), beyondSuspend: true},
		{name: "suspended by the TrainJob, only suspend changes: applied at once", suspended: true, existing: existingPCS(false, true),
			want: []writeSummary{{how: writeApply, kind: "PodCliqueSet", name: "tj", exists: true}}},
		{name: "suspended by the TrainJob with a changed patch: suspended first", suspended: true, existing: existingPCS(false, true), beyondSuspend: true,
			want: []writeSummary{{how: writeSuspend, kind: "PodCliqueSet", name: "tj", exists: true}}},
		{name: "suspended, its pods still going, patch changed: wait", suspended: true, existing: existingPCS(true, true), beyondSuspend: true, waiting: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decideWrites(writeInputs{TrainJob: writeTrainJob(tc.suspended), Built: builtObjects{podCliqueSet: &trainjob.PodCliqueSetObjects{PodCliqueSet: desired}},
				PodCliqueSet: tc.existing, Existing: existingBuild{BeyondSuspend: tc.beyondSuspend}})
			if !equalSummaries(summarizeWrites(got), tc.want) || (got.waiting != "") != tc.waiting {
				t.Errorf("writes %+v waiting %q, want %+v (waiting %t)", summarizeWrites(got), got.waiting, tc.want, tc.waiting)
			}
			for _, w := range got.writes {
				if w.how == writeSuspend && !w.object.(*copsev1alpha1.PodCliqueSet).IsSuspended() {
					t.Error("the suspend-first write does not suspend")
				}
			}
		})
	}
}

// TestApplyConfiguration: a build becomes an apply configuration without
// what the API server owns, and a build without its kind is an error.
func TestApplyConfiguration(t *testing.T) {
	js := copseBuild(true, nil)
	js.TypeMeta = metav1.TypeMeta{APIVersion: jobsetv1alpha2.GroupVersion.String(), Kind: "JobSet"}
	js.Status.Restarts = 2
	js.CreationTimestamp = metav1.Now()
	config, err := applyConfiguration(js)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := config.Object["status"]; ok {
		t.Error("the apply configuration carries status")
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(config.Object, "metadata", "creationTimestamp"); found {
		t.Error("the apply configuration carries creationTimestamp")
	}
	if suspend, _, _ := unstructured.NestedBool(config.Object, "spec", "suspend"); !suspend || config.GetKind() != "JobSet" {
		t.Errorf("apply configuration %v lost the build", config.Object)
	}
	// A typed build converted to unstructured carries a null for every nil
	// slice; the API server refuses a null where its schema wants an object
	// or a list, and a field left out of an apply is one copse does not own.
	withNull := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": map[string]any{"name": "x"},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{"name": "node", "template": map[string]any{
			"spec": map[string]any{"template": map[string]any{"metadata": nil, "spec": map[string]any{"containers": nil}}}}}}},
	}}
	config, err = applyConfiguration(withNull)
	if err != nil {
		t.Fatal(err)
	}
	template, _, _ := unstructured.NestedSlice(config.Object, "spec", "replicatedJobs")
	if pod := template[0].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any); len(pod) != 1 {
		t.Errorf("the apply configuration keeps nulls: pod template %v, want only its spec", pod)
	}
	var noKind client.Object = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{labels.ManagedByKey: labels.ManagedByValue}}}
	if _, err := applyConfiguration(noKind); err == nil {
		t.Error("a build without apiVersion and kind makes an apply configuration")
	}
}
