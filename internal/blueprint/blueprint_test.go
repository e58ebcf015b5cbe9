package blueprint

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/topology"
)

func testPCS() *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "llm"}}
	pcs.Spec.Replicas = 2
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		{Name: "leader", Labels: map[string]string{"team": "nlp", labels.PartOfKey: "hijack"}, Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 3}},
		{Name: "decode", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 2, MinAvailable: ptr.To[int32](1)}},
	}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "serve", CliqueNames: []string{"decode"}, Replicas: ptr.To[int32](3), MinAvailable: ptr.To[int32](2)},
	}
	return pcs
}

func TestStandalonePodClique(t *testing.T) {
	pcs := testPCS()
	pclq := StandalonePodClique(pcs, 1, pcs.Spec.Template.Cliques[0], 2, topology.Resolved{})
	if pclq.Name != "llm-1-leader" {
		t.Errorf("name %q", pclq.Name)
	}
	want := map[string]string{
		labels.PartOfKey: "llm", labels.ReplicaKey: "1", labels.PodCliqueKey: "llm-1-leader",
		labels.CliqueTemplateKey: "leader", labels.PodGangKey: "llm-1", labels.AttemptKey: "2",
		labels.ComponentKey: labels.ComponentPodCliqueOfSet, "team": "nlp",
	}
	for k, v := range want {
		if pclq.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (a template label must never override copse's)", k, pclq.Labels[k], v)
		}
	}
	if pclq.Spec.MinAvailable == nil || *pclq.Spec.MinAvailable != 3 {
		t.Errorf("minAvailable defaults to replicas, got %v", pclq.Spec.MinAvailable)
	}
	if pcs.Spec.Template.Cliques[0].Spec.MinAvailable != nil {
		t.Errorf("the template was mutated")
	}
}

// TestPodCliqueOfAnUndefaultedTemplate: a PodCliqueSet the defaulting
// webhook never saw gives the PodCliques one it defaulted would: a clique
// template without replicas gets one pod (not none), and a Training clique's
// pods are not restarted in place.
func TestPodCliqueOfAnUndefaultedTemplate(t *testing.T) {
	for _, workload := range []copsev1alpha1.WorkloadType{copsev1alpha1.WorkloadTypeInference, copsev1alpha1.WorkloadTypeTraining} {
		raw := testPCS()
		raw.Spec.WorkloadType = workload
		raw.Spec.Template.Cliques[0].Spec.Replicas = 0
		defaulted := raw.DeepCopy()
		defaulted.ApplyDefaults()

		got := StandalonePodClique(raw, 1, raw.Spec.Template.Cliques[0], 0, topology.Resolved{})
		want := StandalonePodClique(defaulted, 1, defaulted.Spec.Template.Cliques[0], 0, topology.Resolved{})
		if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
			t.Errorf("%s: PodClique spec of the undefaulted template (-defaulted +undefaulted):\n%s", workload, diff)
		}
		if got.Spec.Replicas != 1 || got.Spec.PodSpec.RestartPolicy != workload.DefaultRestartPolicy() {
			t.Errorf("%s: replicas %d, restartPolicy %q; want 1 and %q", workload, got.Spec.Replicas, got.Spec.PodSpec.RestartPolicy, workload.DefaultRestartPolicy())
		}
		if got.Annotations[labels.TemplateReplicasAnnotation] != "1" {
			t.Errorf("%s: template replicas recorded as %q, want 1", workload, got.Annotations[labels.TemplateReplicasAnnotation])
		}
	}
}

func TestGroupedPodCliqueGangs(t *testing.T) {
	pcs := testPCS()
	pcsg := ScalingGroup(pcs, 0, pcs.Spec.Template.PodCliqueScalingGroupConfigs[0], 1)
	if pcsg.Name != "llm-0-serve" || pcsg.Spec.Replicas != 3 || *pcsg.Spec.MinAvailable != 2 {
		t.Fatalf("scaling group %+v", pcsg)
	}
	for j, wantGang := range map[int32]string{0: "llm-0", 1: "llm-0", 2: "llm-0-serve-2"} {
		pclq := GroupedPodClique(pcs, pcsg, j, pcs.Spec.Template.Cliques[1], topology.Resolved{})
		if pclq.Labels[labels.PodGangKey] != wantGang {
			t.Errorf("group replica %d joins gang %q, want %q", j, pclq.Labels[labels.PodGangKey], wantGang)
		}
		if pclq.Labels[labels.AttemptKey] != "1" {
			t.Errorf("grouped clique inherits the group's attempt, got %q", pclq.Labels[labels.AttemptKey])
		}
		if pclq.Labels[labels.ScalingGroupKey] != "llm-0-serve" {
			t.Errorf("scaling group label %q", pclq.Labels[labels.ScalingGroupKey])
		}
	}
}

func TestReplicaService(t *testing.T) {
	pcs := testPCS()
	svc := ReplicaService(pcs, 1)
	if svc.Name != "llm-1" || svc.Spec.ClusterIP != "None" || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("service %+v", svc.Spec)
	}
	pcs.Spec.Template.HeadlessServiceConfig = &grovecorev1alpha1.HeadlessServiceConfig{PublishNotReadyAddresses: false}
	if ReplicaService(pcs, 1).Spec.PublishNotReadyAddresses {
		t.Errorf("headlessServiceConfig is ignored")
	}
}
