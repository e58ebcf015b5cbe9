package podcliqueset

import (
	"context"
	"fmt"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
)

var kueueValidator = Validator{Limits: configv1alpha1.NewDefaultOperatorConfiguration().Limits, KueueEnabled: true}

func inQueue(queue string) func(*copsev1alpha1.PodCliqueSet) {
	return func(pcs *copsev1alpha1.PodCliqueSet) {
		if pcs.Labels == nil {
			pcs.Labels = map[string]string{}
		}
		if queue == "" {
			delete(pcs.Labels, kueue.QueueNameLabel)
			return
		}
		pcs.Labels[kueue.QueueNameLabel] = queue
	}
}

func suspendedAs(suspend bool) func(*copsev1alpha1.PodCliqueSet) {
	return func(pcs *copsev1alpha1.PodCliqueSet) { pcs.Spec.Suspend = ptr.To(suspend) }
}

// nineCliques gives valid() six more standalone cliques.
func nineCliques(pcs *copsev1alpha1.PodCliqueSet) { moreCliques(pcs, 6) }

// nineteenCliques gives valid() sixteen more standalone cliques: one more
// than Kueue v0.19 takes.
func nineteenCliques(pcs *copsev1alpha1.PodCliqueSet) { moreCliques(pcs, 16) }

func moreCliques(pcs *copsev1alpha1.PodCliqueSet, n int) {
	for i := range n {
		name := fmt.Sprintf("c%d", i+3)
		pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, &grovecorev1alpha1.PodCliqueTemplateSpec{
			Name: name, Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: name, Replicas: 1, PodSpec: podSpec()}})
	}
}

func TestValidateKueueOnCreate(t *testing.T) {
	tests := []struct {
		name       string
		pcs        *copsev1alpha1.PodCliqueSet
		disabled   bool
		maxPodSets int // the Kueue installed's; 0 when not read
		want       []string
	}{
		{name: "queued, 3 cliques", pcs: valid(inQueue("team-a"))},
		{name: "queued, 9 cliques, Kueue v0.19's limit", pcs: valid(inQueue("team-a"), nineCliques), maxPodSets: 18},
		{name: "queued, 19 cliques, Kueue v0.19's limit", pcs: valid(inQueue("team-a"), nineteenCliques), maxPodSets: 18,
			want: []string{"spec.template.cliques: Forbidden: has 19 cliques, but a PodCliqueSet with metadata.labels[kueue.x-k8s.io/queue-name] has at most 18: " +
				"its Kueue Workload has one pod set per clique, and the Kueue installed allows 18 pod sets (spec.podSets of its Workload CRD)"}},
		{name: "queued, 19 cliques, the limit not read: v0.19's", pcs: valid(inQueue("team-a"), nineteenCliques),
			want: []string{"spec.template.cliques: Forbidden: has 19 cliques, but a PodCliqueSet with metadata.labels[kueue.x-k8s.io/queue-name] has at most 18"}},
		{name: "queued, 9 cliques, an older Kueue's limit of 8", pcs: valid(inQueue("team-a"), nineCliques), maxPodSets: 8,
			want: []string{"spec.template.cliques: Forbidden: has 9 cliques, but a PodCliqueSet with metadata.labels[kueue.x-k8s.io/queue-name] has at most 8"}},
		{name: "not queued, 19 cliques", pcs: valid(nineteenCliques)},
		{name: "queued, 19 cliques, Kueue off: the label means nothing", pcs: valid(inQueue("team-a"), nineteenCliques), disabled: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := kueueValidator
			v.KueueEnabled = !tc.disabled
			v.KueueMaxPodSets = tc.maxPodSets
			_, err := v.ValidateCreate(context.Background(), tc.pcs)
			checkErrors(t, err, tc.want)
		})
	}
}

func TestValidateKueueOnUpdate(t *testing.T) {
	const forbidden = "metadata.labels[kueue.x-k8s.io/queue-name]: Forbidden: may be added, changed or removed only while spec.suspend is true"
	tests := []struct {
		name     string
		old, new *copsev1alpha1.PodCliqueSet
		disabled bool
		want     []string
	}{
		{name: "added to a running PodCliqueSet", old: valid(), new: valid(inQueue("team-a")),
			want: []string{forbidden + ` (from "" to "team-a")`}},
		{name: "added to a suspended PodCliqueSet", old: valid(suspendedAs(true)), new: valid(suspendedAs(true), inQueue("team-a"))},
		{name: "added with spec.suspend true in the same update", old: valid(), new: valid(suspendedAs(true), inQueue("team-a"))},
		{name: "added while resuming", old: valid(suspendedAs(true)), new: valid(suspendedAs(false), inQueue("team-a")),
			want: []string{forbidden}},
		{name: "changed while running", old: valid(inQueue("team-a"), suspendedAs(false)), new: valid(inQueue("team-b"), suspendedAs(false)),
			want: []string{forbidden + ` (from "team-a" to "team-b")`}},
		{name: "changed while suspended", old: valid(inQueue("team-a"), suspendedAs(true)), new: valid(inQueue("team-b"), suspendedAs(true))},
		{name: "removed while running", old: valid(inQueue("team-a"), suspendedAs(false)), new: valid(suspendedAs(false)),
			want: []string{forbidden}},
		{name: "removed while suspended", old: valid(inQueue("team-a"), suspendedAs(true)), new: valid(suspendedAs(true))},
		{name: "kept while the spec changes", old: valid(inQueue("team-a"), suspendedAs(false)), new: valid(inQueue("team-a"), suspendedAs(true))},
		{name: "added to a suspended PodCliqueSet of 19 cliques", old: valid(suspendedAs(true), nineteenCliques),
			new: valid(suspendedAs(true), nineteenCliques, inQueue("team-a")), want: []string{"spec.template.cliques: Forbidden: has 19 cliques"}},
		{name: "a PodCliqueSet of 19 cliques queued before Kueue was on is not blocked", old: valid(inQueue("team-a"), nineteenCliques),
			new: valid(inQueue("team-a"), nineteenCliques, func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Replicas = 3 })},
		{name: "added to a running PodCliqueSet, Kueue off", old: valid(), new: valid(inQueue("team-a")), disabled: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := kueueValidator
			v.KueueEnabled = !tc.disabled
			_, err := v.ValidateUpdate(context.Background(), tc.old, tc.new)
			checkErrors(t, err, tc.want)
		})
	}
}

func TestDefaultForKueue(t *testing.T) {
	tests := []struct {
		name      string
		pcs       *copsev1alpha1.PodCliqueSet
		operation admissionv1.Operation
		disabled  bool
		want      bool
	}{
		{name: "created with the queue label: suspended", pcs: valid(inQueue("team-a")), operation: admissionv1.Create, want: true},
		{name: "created with the queue label and suspend false: suspended", pcs: valid(inQueue("team-a"), suspendedAs(false)),
			operation: admissionv1.Create, want: true},
		{name: "created without the label: as it was", pcs: valid(), operation: admissionv1.Create},
		{name: "created with the label, Kueue off: as it was", pcs: valid(inQueue("team-a")), operation: admissionv1.Create, disabled: true},
		{name: "updated: as it was (the validator holds the label's rule)", pcs: valid(inQueue("team-a")), operation: admissionv1.Update},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{
				AdmissionRequest: admissionv1.AdmissionRequest{Operation: tc.operation}})
			if err := (Defaulter{KueueEnabled: !tc.disabled}).Default(ctx, tc.pcs); err != nil {
				t.Fatal(err)
			}
			if tc.pcs.IsSuspended() != tc.want {
				t.Errorf("spec.suspend = %v, want suspended: %v", tc.pcs.Spec.Suspend, tc.want)
			}
		})
	}
}

// TestTrainingWindowAdmitsKueuesWrites: what copse writes to a suspended
// Training PodCliqueSet when Kueue admits it (the admission merged into the
// templates and spec.suspend false, in one update) and after an eviction
// (the templates restored) is exactly what the Training rules let change
// while it is suspended and not running; the same merge on a running one
// is refused.
func TestTrainingWindowAdmitsKueuesWrites(t *testing.T) {
	queued := valid(asTraining, inQueue("team-a"), suspendedAs(true))
	podSets, err := kueue.PodSets(queued, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	wl := kueue.BuildWorkload(queued, podSets, kueue.Priority{})
	wl.Status.Admission = &kueuev1beta2.Admission{ClusterQueue: "cq"}
	for _, ps := range podSets {
		wl.Status.Admission.PodSetAssignments = append(wl.Status.Admission.PodSetAssignments, kueuev1beta2.PodSetAssignment{
			Name: ps.Name, Flavors: map[corev1.ResourceName]kueuev1beta2.ResourceFlavorReference{corev1.ResourceCPU: "pool-a"}})
	}
	wl.Status.AdmissionChecks = []kueuev1beta2.AdmissionCheckState{{Name: "prov", State: kueuev1beta2.CheckStateReady,
		PodSetUpdates: []kueuev1beta2.PodSetUpdate{{Name: "leader", Annotations: map[string]string{"prov/request": "r1"},
			Labels: map[string]string{"prov": "yes"}}}}}
	flavors := kueue.Flavors{"pool-a": {NodeLabels: map[string]string{"pool": "a"},
		Tolerations: []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "a", Effect: corev1.TaintEffectNoSchedule}}}}
	infos, err := kueue.AdmissionInfos(wl, flavors)
	if err != nil {
		t.Fatal(err)
	}
	infos[0].SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/gate"}}

	started, err := kueue.Merge(queued, infos)
	if err != nil {
		t.Fatal(err)
	}
	started.Spec.Suspend = ptr.To(false)
	if _, err := kueueValidator.ValidateUpdate(context.Background(), queued, started); err != nil {
		t.Errorf("start refused: %v", err)
	}

	// Evicted: suspended, its pods gone (startTime cleared), restored.
	stopped := started.DeepCopy()
	stopped.Spec.Suspend = ptr.To(true)
	restored, changed := kueue.Restore(stopped, wl)
	if !changed {
		t.Fatal("nothing to restore")
	}
	if _, err := kueueValidator.ValidateUpdate(context.Background(), stopped, restored); err != nil {
		t.Errorf("restore refused: %v", err)
	}

	// The same restore while pods still run (startTime set) is refused.
	running := stopped.DeepCopy()
	running.Status.StartTime = &metav1.Time{}
	_, err = kueueValidator.ValidateUpdate(context.Background(), running, restored)
	checkErrors(t, err, []string{"spec.template.cliques[0].labels: Forbidden: pod template changes are not allowed"})
}
