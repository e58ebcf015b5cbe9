package v1alpha1_test

import (
	"strings"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// testPCS has a standalone clique "leader" (1 pod) and a scaling group
// "decode" of "prefill" (2 pods) and "worker" (3 pods).
func testPCS(workload copsev1alpha1.WorkloadType) *copsev1alpha1.PodCliqueSet {
	clique := func(name string, replicas int32) *grovecorev1alpha1.PodCliqueTemplateSpec {
		return &grovecorev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: replicas}}
	}
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Spec.WorkloadType = workload
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("leader", 1), clique("prefill", 2), clique("worker", 3)}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "decode", CliqueNames: []string{"prefill", "worker"}},
	}
	return pcs
}

func TestWorkloadTypeDefaults(t *testing.T) {
	cases := []struct {
		workload copsev1alpha1.WorkloadType
		training bool
		delay    time.Duration
		policy   corev1.RestartPolicy
	}{
		{"", false, 4 * time.Hour, corev1.RestartPolicyAlways},
		{copsev1alpha1.WorkloadTypeInference, false, 4 * time.Hour, corev1.RestartPolicyAlways},
		{copsev1alpha1.WorkloadTypeTraining, true, 0, corev1.RestartPolicyNever},
	}
	for _, c := range cases {
		pcs := testPCS(c.workload)
		if pcs.IsTraining() != c.training || pcs.TerminationDelay() != c.delay || c.workload.DefaultRestartPolicy() != c.policy {
			t.Errorf("%q: training %v delay %s policy %s", c.workload, pcs.IsTraining(), pcs.TerminationDelay(), c.workload.DefaultRestartPolicy())
		}
		pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: time.Minute}
		if pcs.TerminationDelay() != time.Minute {
			t.Errorf("%q: a set terminationDelay must win", c.workload)
		}
	}
	var none *copsev1alpha1.PodCliqueSet
	if none.IsTraining() {
		t.Error("nil is not Training")
	}
}

func TestTrainingBounds(t *testing.T) {
	pcs := testPCS(copsev1alpha1.WorkloadTypeTraining)
	if pcs.MaxRestarts() != 0 || pcs.MaxRuntime() != nil {
		t.Errorf("unset: maxRestarts %d maxRuntime %v", pcs.MaxRestarts(), pcs.MaxRuntime())
	}
	pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](3), MaxRuntime: &metav1.Duration{Duration: time.Hour}}
	if pcs.MaxRestarts() != 3 || *pcs.MaxRuntime() != time.Hour {
		t.Errorf("set: maxRestarts %d maxRuntime %v", pcs.MaxRestarts(), *pcs.MaxRuntime())
	}
}

func TestCliqueSets(t *testing.T) {
	pcs := testPCS(copsev1alpha1.WorkloadTypeTraining)
	if got := pcs.StandaloneCliques(); len(got) != 1 || got[0].Name != "leader" {
		t.Errorf("standalone cliques %v", got)
	}
	if g := pcs.GroupedCliqueNames(); len(g) != 2 || !g["prefill"] || !g["worker"] {
		t.Errorf("grouped cliques %v", g)
	}
	if pcs.CliqueTemplate("worker").Spec.Replicas != 3 || pcs.CliqueTemplate("ghost") != nil {
		t.Error("CliqueTemplate finds by name")
	}
	if got := pcs.MembersPerReplica(nil); got != 3 {
		t.Errorf("members per replica %d, want leader + prefill + worker", got)
	}
	if got := pcs.MembersPerReplica(map[string]int32{"decode": 3}); got != 7 {
		t.Errorf("members per replica with 3 group replicas %d, want 1 + 3x2", got)
	}
}

func TestScalingGroupPods(t *testing.T) {
	pcs := testPCS("")
	broken := testPCS("")
	broken.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = append(broken.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames, "ghost")
	cases := []struct {
		name    string
		pcs     *copsev1alpha1.PodCliqueSet
		clique  string
		want    int32
		wantErr string
	}{
		{"sum of the group's cliques", pcs, "worker", 5, ""},
		{"the same for every member", pcs, "prefill", 5, ""},
		{"a standalone clique is in no group", pcs, "leader", 0, `clique "leader"`},
		{"a member the template lacks", broken, "worker", 0, `"ghost"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.pcs.ScalingGroupPods(c.clique)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %s", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("got %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

func TestMinAvailableDefaults(t *testing.T) {
	spec := grovecorev1alpha1.PodCliqueSpec{Replicas: 4}
	if copsev1alpha1.CliqueMinAvailable(spec) != 4 {
		t.Error("clique minAvailable defaults to replicas")
	}
	spec.MinAvailable = ptr.To[int32](2)
	if copsev1alpha1.CliqueMinAvailable(spec) != 2 {
		t.Error("a set minAvailable wins")
	}
	group := grovecorev1alpha1.PodCliqueScalingGroupConfig{}
	if copsev1alpha1.ScalingGroupReplicas(group) != 1 || copsev1alpha1.ScalingGroupMinAvailable(group) != 1 {
		t.Error("scaling group replicas and minAvailable default to 1")
	}
	pcsg := &copsev1alpha1.PodCliqueScalingGroup{}
	if pcsg.MinAvailable() != 1 {
		t.Error("PodCliqueScalingGroup minAvailable defaults to 1")
	}
}
