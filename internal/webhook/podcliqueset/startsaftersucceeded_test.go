package podcliqueset

import (
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

// waitsForSuccess sets trainingSpec.startsAfterSucceeded to one entry per
// clique: clique waits for cliques.
func waitsForSuccess(clique string, cliques ...string) func(*copsev1alpha1.PodCliqueSet) {
	return func(pcs *copsev1alpha1.PodCliqueSet) {
		if pcs.Spec.TrainingSpec == nil {
			pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{}
		}
		pcs.Spec.TrainingSpec.StartsAfterSucceeded = append(pcs.Spec.TrainingSpec.StartsAfterSucceeded,
			copsev1alpha1.CliqueSuccessDependency{Clique: clique, Cliques: cliques})
	}
}

func TestValidateStartsAfterSucceeded(t *testing.T) {
	// valid(): leader (standalone), worker (in scaling group "decode"), router (standalone).
	tests := []struct {
		name  string
		edits []func(*copsev1alpha1.PodCliqueSet)
		want  []string
	}{
		{name: "a clique after standalone cliques", edits: []func(*copsev1alpha1.PodCliqueSet){waitsForSuccess("worker", "leader", "router")}},
		{name: "a chain", edits: []func(*copsev1alpha1.PodCliqueSet){waitsForSuccess("router", "leader"), waitsForSuccess("worker", "router")}},
		{name: "an unknown clique", edits: []func(*copsev1alpha1.PodCliqueSet){waitsForSuccess("ghost", "leader")},
			want: []string{`spec.trainingSpec.startsAfterSucceeded[0].clique: Invalid value: "ghost": must name a clique of spec.template.cliques`}},
		{name: "waiting for an unknown clique", edits: []func(*copsev1alpha1.PodCliqueSet){waitsForSuccess("router", "leader", "ghost")},
			want: []string{`spec.trainingSpec.startsAfterSucceeded[0].cliques[1]: Invalid value: "ghost": must name a clique of spec.template.cliques`}},
		{name: "waiting for itself", edits: []func(*copsev1alpha1.PodCliqueSet){waitsForSuccess("router", "router")},
			want: []string{`spec.trainingSpec.startsAfterSucceeded[0].cliques[0]: Invalid value: "router": a clique cannot start after its own success`}},
		{name: "waiting for a clique of a scaling group", edits: []func(*copsev1alpha1.PodCliqueSet){waitsForSuccess("router", "worker")},
			want: []string{`spec.trainingSpec.startsAfterSucceeded[0].cliques[0]: Invalid value: "worker": must name a clique outside any scaling group (it is in "decode")`}},
		{name: "a cycle of success", edits: []func(*copsev1alpha1.PodCliqueSet){waitsForSuccess("leader", "router"), waitsForSuccess("router", "leader")},
			want: []string{`spec.trainingSpec.startsAfterSucceeded: Invalid value: "leader -> router -> leader": startsAfterSucceeded, with the start order of cliqueStartupType, must not form a cycle`}},
		{name: "a cycle through startsAfter and startsAfterSucceeded", edits: []func(*copsev1alpha1.PodCliqueSet){
			explicitStartup, startsAfter(0, "router"), waitsForSuccess("router", "leader")},
			want: []string{`spec.trainingSpec.startsAfterSucceeded: Invalid value: "leader -> router -> leader": startsAfterSucceeded, with the start order of cliqueStartupType, must not form a cycle`}},
		{name: "a cycle through InOrder and startsAfterSucceeded", edits: []func(*copsev1alpha1.PodCliqueSet){
			func(p *copsev1alpha1.PodCliqueSet) {
				p.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder)
			}, waitsForSuccess("leader", "router")},
			// router starts after worker after leader (InOrder); leader waits for router's success.
			want: []string{`spec.trainingSpec.startsAfterSucceeded: Invalid value: "leader -> router -> worker -> leader"`}},
		{name: "a startsAfter cycle alone is reported once, by startsAfter's rule", edits: []func(*copsev1alpha1.PodCliqueSet){
			explicitStartup, startsAfter(0, "router"), startsAfter(2, "leader"), waitsForSuccess("worker", "leader")},
			want: []string{`spec.template.cliques[0].spec.startsAfter: Invalid value: "leader -> router -> leader": startsAfter must not form a cycle`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pcs := valid(append([]func(*copsev1alpha1.PodCliqueSet){asTraining}, tc.edits...)...)
			webhooktest.ExpectErrors(t, ValidateCreate(pcs), tc.want)
		})
	}
}

func TestStartsAfterSucceededIsImmutable(t *testing.T) {
	old := valid(asTraining, waitsForSuccess("worker", "leader"))
	for name, change := range map[string]func(*copsev1alpha1.PodCliqueSet){
		"added to": waitsForSuccess("router", "leader"),
		"removed":  func(p *copsev1alpha1.PodCliqueSet) { p.Spec.TrainingSpec.StartsAfterSucceeded = nil },
		"changed to": func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.TrainingSpec.StartsAfterSucceeded[0].Cliques = []string{"router"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			pcs := old.DeepCopy()
			change(pcs)
			webhooktest.ExpectErrors(t, ValidateUpdate(old, pcs), []string{
				"spec.trainingSpec.startsAfterSucceeded: Forbidden: is immutable when spec.workloadType is Training: it decides the replicas' gangs"})
		})
	}
}
