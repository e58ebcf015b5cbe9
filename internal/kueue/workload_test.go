package kueue

import (
	"math"
	"slices"
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

func TestPodSets(t *testing.T) {
	groupReplicas := func(n int32) func(*copsev1alpha1.PodCliqueSet) {
		return func(pcs *copsev1alpha1.PodCliqueSet) {
			pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To(n)
		}
	}
	tests := []struct {
		name   string
		change func(*copsev1alpha1.PodCliqueSet)
		// want are the counts of leader, prefill and worker.
		want []int32
	}{
		{name: "standalone and grouped cliques over 2 replicas", want: []int32{2, 4, 6}},
		{name: "a scaling group of 2 replicas doubles its cliques", change: groupReplicas(2), want: []int32{2, 8, 12}},
		{name: "an autoscaled clique counts at maxReplicas", want: []int32{10, 4, 6}, change: func(pcs *copsev1alpha1.PodCliqueSet) {
			pcs.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 5}
		}},
		{name: "an autoscaled scaling group counts at maxReplicas", want: []int32{2, 12, 18}, change: func(pcs *copsev1alpha1.PodCliqueSet) {
			pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 3}
		}},
		{name: "no replicas, no pods", want: []int32{0, 0, 0}, change: func(pcs *copsev1alpha1.PodCliqueSet) { pcs.Spec.Replicas = 0 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pcs := queued()
			if tc.change != nil {
				tc.change(pcs)
			}
			podSets, err := PodSets(pcs, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []int32
			for i, ps := range podSets {
				got = append(got, ps.Count)
				if string(ps.Name) != pcs.Spec.Template.Cliques[i].Name {
					t.Errorf("pod set %d is %q, want the clique's name %q", i, ps.Name, pcs.Spec.Template.Cliques[i].Name)
				}
			}
			if !equalCounts(got, tc.want) {
				t.Errorf("counts %v, want %v", got, tc.want)
			}
		})
	}
}

func equalCounts(a, b []int32) bool {
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

func TestPodSetTemplate(t *testing.T) {
	pcs := queued()
	pcs.Spec.Template.PriorityClassName = "batch"
	pcs.Spec.Template.Cliques[1].Annotations = map[string]string{"note": "x"}
	pcs.Spec.Template.Cliques[2].Spec.PodSpec.PriorityClassName = "urgent"
	required := "example.com/rack"
	podSets, err := PodSets(pcs, map[string]*kueue.PodSetTopologyRequest{"worker": {Required: &required}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	leader, prefill, worker := podSets[0], podSets[1], podSets[2]
	if leader.Template.Labels["app"] != "leader" || prefill.Template.Annotations["note"] != "x" {
		t.Errorf("templates carry labels %v and annotations %v, want the cliques'", leader.Template.Labels, prefill.Template.Annotations)
	}
	if leader.Template.Spec.PriorityClassName != "batch" || worker.Template.Spec.PriorityClassName != "urgent" {
		t.Errorf("priority classes %q and %q, want the template's for leader, the clique's own for worker",
			leader.Template.Spec.PriorityClassName, worker.Template.Spec.PriorityClassName)
	}
	if got := leader.Template.Spec.Containers[0].Resources.Requests.Cpu().String(); got != "1" {
		t.Errorf("leader requests cpu %s, want 1", got)
	}
	if worker.TopologyRequest == nil || *worker.TopologyRequest.Required != required || leader.TopologyRequest != nil {
		t.Errorf("topology requests %+v and %+v, want worker's required %s and none for leader", worker.TopologyRequest, leader.TopologyRequest, required)
	}
	// The PodCliqueSet's template is not shared with the pod set.
	podSets[0].Template.Labels["app"] = "changed"
	if pcs.Spec.Template.Cliques[0].Labels["app"] != "leader" {
		t.Error("the pod set's template aliases the clique's labels")
	}
}

func TestPodSetsRefusals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cliques  int
		limit    int
		refusing string
	}{
		{name: "Kueue v0.19's limit by default", cliques: 18, limit: 0},
		{name: "over the default", cliques: 19, limit: 0, refusing: "spec.template.cliques: 19 cliques, but a Kueue Workload has at most 18 pod sets"},
		{name: "the limit read from an older Kueue", cliques: 8, limit: 8},
		{name: "over an older Kueue's limit", cliques: 9, limit: 8, refusing: "spec.template.cliques: 9 cliques, but a Kueue Workload has at most 8 pod sets"},
	} {
		_, err := PodSets(withCliques(queued(), tc.cliques), nil, tc.limit)
		switch {
		case tc.refusing == "" && err != nil:
			t.Errorf("%s: %v, want none", tc.name, err)
		case tc.refusing != "" && (err == nil || !strings.Contains(err.Error(), tc.refusing)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.refusing)
		}
	}
	huge := queued()
	huge.Spec.Replicas = math.MaxInt32
	if _, err := PodSets(huge, nil, 0); err == nil || !strings.Contains(err.Error(), `spec.template.cliques[1]: clique "prefill"`) {
		t.Errorf("a count over int32: %v, want an error naming the first clique over it", err)
	}
}

func TestBuildWorkload(t *testing.T) {
	pcs := queued()
	podSets, err := PodSets(pcs, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	wl := BuildWorkload(pcs, podSets, Priority{ClassRef: kueue.NewPodPriorityClassRef("batch"), Value: 10})
	if wl.Name != WorkloadName("llm") || wl.Namespace != "ml" || wl.Spec.QueueName != queueName {
		t.Errorf("Workload %s/%s in queue %q", wl.Namespace, wl.Name, wl.Spec.QueueName)
	}
	if wl.Labels[labels.ManagedByKey] != labels.ManagedByValue || wl.Labels[labels.PartOfKey] != "llm" || wl.Labels[labels.ComponentKey] != WorkloadComponent {
		t.Errorf("labels %v, want copse's, part of llm, component %s", wl.Labels, WorkloadComponent)
	}
	owner := metav1.GetControllerOf(wl)
	if owner == nil || owner.APIVersion != "grove.io/v1alpha1" || owner.Kind != "PodCliqueSet" || owner.Name != "llm" || owner.UID != pcs.UID {
		t.Errorf("controller %+v, want PodCliqueSet llm", owner)
	}
	if wl.Spec.PriorityClassRef.Kind != kueue.PodPriorityClassKind || *wl.Spec.Priority != 10 {
		t.Errorf("priority %+v %d", wl.Spec.PriorityClassRef, *wl.Spec.Priority)
	}
	if wl.Spec.Active != nil {
		t.Errorf("active %v: left to Kueue's default (true)", *wl.Spec.Active)
	}
	if !slices.Equal(wl.Finalizers, []string{kueue.ResourceInUseFinalizerName}) {
		t.Errorf("finalizers %v, want %s: the Workload and its quota stay until copse releases them", wl.Finalizers, kueue.ResourceInUseFinalizerName)
	}
}

func TestOrphaned(t *testing.T) {
	wl := workloadOf(queued())
	recreated := queued()
	recreated.UID = "new-uid"
	notPCS := wl.DeepCopy()
	notPCS.OwnerReferences[0].Kind = "Job"
	notPCS.OwnerReferences[0].APIVersion = "batch/v1"
	otherGroup := wl.DeepCopy()
	otherGroup.OwnerReferences[0].APIVersion = "example.com/v1"
	uncontrolled := wl.DeepCopy()
	uncontrolled.OwnerReferences[0].Controller = nil
	tests := []struct {
		name    string
		wl      *kueue.Workload
		pcsName string
		pcs     *copsev1alpha1.PodCliqueSet
		want    bool
	}{
		{name: "its PodCliqueSet exists", wl: wl, pcsName: "llm", pcs: queued(), want: false},
		{name: "its PodCliqueSet is gone", wl: wl, pcsName: "llm", pcs: nil, want: true},
		{name: "a new PodCliqueSet of the same name (another UID)", wl: wl, pcsName: "llm", pcs: recreated, want: true},
		{name: "controlled by a PodCliqueSet of another name", wl: wl, pcsName: "other", pcs: nil, want: false},
		{name: "controlled by another kind", wl: notPCS, pcsName: "llm", pcs: nil, want: false},
		{name: "controlled by a PodCliqueSet of another group", wl: otherGroup, pcsName: "llm", pcs: nil, want: false},
		{name: "owned but not controlled", wl: uncontrolled, pcsName: "llm", pcs: nil, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Orphaned(tc.wl, tc.pcsName, tc.pcs); got != tc.want {
				t.Errorf("Orphaned = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestResolvePriority(t *testing.T) {
	withLabel := func(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
		pcs.Labels[PriorityClassLabel] = "high"
		return pcs
	}
	withPodClass := func(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
		pcs.Spec.Template.Cliques[1].Spec.PodSpec.PriorityClassName = "batch"
		return pcs
	}
	wpc := &kueue.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	classes := []schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Value: 50},
		{ObjectMeta: metav1.ObjectMeta{Name: "default-high"}, Value: 20, GlobalDefault: true},
		{ObjectMeta: metav1.ObjectMeta{Name: "default-low"}, Value: 5, GlobalDefault: true},
	}
	tests := []struct {
		name      string
		pcs       *copsev1alpha1.PodCliqueSet
		wpc       *kueue.WorkloadPriorityClass
		classes   []schedulingv1.PriorityClass
		wantKind  kueue.PriorityClassKind
		wantName  string
		wantValue int32
		wantErr   string
	}{
		{name: "the WorkloadPriorityClass label wins", pcs: withLabel(withPodClass(queued())), wpc: wpc, classes: classes,
			wantKind: kueue.WorkloadPriorityClassKind, wantName: "high", wantValue: 1000},
		{name: "a missing WorkloadPriorityClass is an error naming the label", pcs: withLabel(queued()), classes: classes,
			wantErr: "metadata.labels[kueue.x-k8s.io/priority-class]"},
		{name: "else the first clique's PriorityClass", pcs: withPodClass(queued()), classes: classes,
			wantKind: kueue.PodPriorityClassKind, wantName: "batch", wantValue: 50},
		{name: "a missing PriorityClass is an error naming the clique", pcs: withPodClass(queued()),
			wantErr: `clique "prefill"`},
		{name: "else the lowest global default", pcs: queued(), classes: classes,
			wantKind: kueue.PodPriorityClassKind, wantName: "default-low", wantValue: 5},
		{name: "else none, 0", pcs: queued(), classes: classes[:1]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolvePriority(tc.pcs, tc.wpc, tc.classes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kind kueue.PriorityClassKind
			var name string
			if got.ClassRef != nil {
				kind, name = got.ClassRef.Kind, got.ClassRef.Name
			}
			if kind != tc.wantKind || name != tc.wantName || got.Value != tc.wantValue {
				t.Errorf("priority %s/%s %d, want %s/%s %d", kind, name, got.Value, tc.wantKind, tc.wantName, tc.wantValue)
			}
		})
	}
}

func TestMismatch(t *testing.T) {
	base := workloadOf(queued())
	changed := func(change func(*copsev1alpha1.PodCliqueSet)) *kueue.Workload {
		pcs := queued()
		change(pcs)
		return workloadOf(pcs)
	}
	tests := []struct {
		name               string
		want               *kueue.Workload
		compareTolerations bool
		reserved           bool
		wantMismatch       string
	}{
		{name: "the same", want: workloadOf(queued()), compareTolerations: true},
		{name: "a count", want: changed(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Replicas = 1 }), wantMismatch: `pod set "leader" counts 1 pods instead of 2`},
		{name: "a clique more", want: workloadOf(withCliques(queued(), 4)), wantMismatch: "4 pod sets instead of 3"},
		{name: "a request", wantMismatch: `the containers of pod set "worker" changed`, want: changed(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.PodSpec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		})},
		{name: "an equal quantity written differently", want: changed(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.PodSpec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000m")
		})},
		{name: "an image is not a change", want: changed(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.PodSpec.Containers[0].Image = "train:2"
		})},
		{name: "an init container", wantMismatch: `the containers of pod set "leader" changed`, want: changed(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.InitContainers = []corev1.Container{{Name: "setup"}}
		})},
		{name: "tolerations, compared", want: workloadOf(withToleration(queued())), compareTolerations: true, wantMismatch: "tolerations"},
		{name: "tolerations, not compared once merged", want: workloadOf(withToleration(queued()))},
		{name: "the queue, not reserved", want: workloadOf(withQueue(queued(), "team-b")), wantMismatch: `LocalQueue "team-b" instead of "team-a"`},
		{name: "the queue, reserved: kept", want: workloadOf(withQueue(queued(), "team-b")), reserved: true},
		{name: "a topology request, not reserved", wantMismatch: `the topology request of pod set "worker" changed`, want: withTopology(base, "worker", "example.com/rack")},
		{name: "a topology request, reserved: kept", want: withTopology(base, "worker", "example.com/rack"), reserved: true},
		{name: "the priority class, not reserved", wantMismatch: "priority class", want: func() *kueue.Workload {
			wl := workloadOf(queued())
			wl.Spec.PriorityClassRef = kueue.NewWorkloadPriorityClassRef("high")
			return wl
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Mismatch(tc.want, base, tc.compareTolerations, tc.reserved)
			if tc.wantMismatch == "" && got != "" || !strings.Contains(got, tc.wantMismatch) {
				t.Errorf("Mismatch = %q, want %q", got, tc.wantMismatch)
			}
		})
	}
}

// withTopology is wl with the pod set's topology request required at key.
func withTopology(wl *kueue.Workload, podSet, key string) *kueue.Workload {
	wl = wl.DeepCopy()
	for i := range wl.Spec.PodSets {
		if string(wl.Spec.PodSets[i].Name) == podSet {
			wl.Spec.PodSets[i].TopologyRequest = &kueue.PodSetTopologyRequest{Required: &key}
		}
	}
	return wl
}
