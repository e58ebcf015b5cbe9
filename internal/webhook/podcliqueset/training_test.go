package podcliqueset

import (
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/generationhash"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

const podTemplateForbidden = "Forbidden: pod template changes are not allowed when spec.workloadType is Training " +
	"(they would need a rolling update, which Training workloads do not do)"

// validOf is valid() with the given workload type.
func validOf(workloadType copsev1alpha1.WorkloadType, edits ...func(*copsev1alpha1.PodCliqueSet)) *copsev1alpha1.PodCliqueSet {
	return valid(append([]func(*copsev1alpha1.PodCliqueSet){func(p *copsev1alpha1.PodCliqueSet) {
		p.Spec.WorkloadType = workloadType
		if workloadType == copsev1alpha1.WorkloadTypeTraining {
			for _, c := range p.Spec.Template.Cliques {
				c.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever
			}
		}
	}}, edits...)...)
}

func TestValidateUpdateOfTrainingWorkloads(t *testing.T) {
	tests := []struct {
		name   string
		base   func(*copsev1alpha1.PodCliqueSet) // optional, applied to old and new
		change func(*copsev1alpha1.PodCliqueSet)
		// want are the errors for Training; Inference must accept every change.
		want []string
	}{
		// Changes that would be rolled out.
		{name: "a container image", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "example.com/llm:2"
		}, want: []string{"spec.template.cliques[0].spec.podSpec: " + podTemplateForbidden}},
		{name: "resources of two cliques", change: func(p *copsev1alpha1.PodCliqueSet) {
			for _, i := range []int{1, 2} {
				p.Spec.Template.Cliques[i].Spec.PodSpec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
			}
		}, want: []string{"spec.template.cliques[1].spec.podSpec: " + podTemplateForbidden, "spec.template.cliques[2].spec.podSpec: " + podTemplateForbidden}},
		{name: "a clique's labels and annotations", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Labels = map[string]string{"team": "research"}
			p.Spec.Template.Cliques[2].Annotations = map[string]string{"note": "x"}
		}, want: []string{"spec.template.cliques[2].labels: " + podTemplateForbidden, "spec.template.cliques[2].annotations: " + podTemplateForbidden}},
		{name: "the priority class the pods inherit", base: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.PodSpec.PriorityClassName = "own"
		}, change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PriorityClassName = "high"
		}, want: []string{`spec.template.priorityClassName: ` + podTemplateForbidden + `; it is the priority class of the pods of clique(s) ["leader" "router"]`}},
		{name: "a pod's own priority class", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.PriorityClassName = "high"
		}, want: []string{"spec.template.cliques[0].spec.podSpec: " + podTemplateForbidden}},

		// Scaling.
		{name: "the replicas of a clique and of a scaling group", change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.Replicas = 3
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](2)
		}, want: []string{
			"spec.template.cliques[2].spec.replicas: Forbidden: is immutable when spec.workloadType is Training",
			"spec.template.podCliqueScalingGroups[0].replicas: Forbidden: is immutable when spec.workloadType is Training",
		}},

		// Changes that are not rolled out.
		{name: "a priority class no pod inherits", base: func(p *copsev1alpha1.PodCliqueSet) {
			for _, c := range p.Spec.Template.Cliques {
				c.Spec.PodSpec.PriorityClassName = "own"
			}
		}, change: func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.PriorityClassName = "high" }},
		{name: "the pods' priority class moved to the template", base: func(p *copsev1alpha1.PodCliqueSet) {
			for _, c := range p.Spec.Template.Cliques {
				c.Spec.PodSpec.PriorityClassName = "high"
			}
		}, change: func(p *copsev1alpha1.PodCliqueSet) {
			for _, c := range p.Spec.Template.Cliques {
				c.Spec.PodSpec.PriorityClassName = ""
			}
			p.Spec.Template.PriorityClassName = "high"
		}},
		{name: "reordering cliques that start in any order", change: swapCliques(0, 2)},
		{name: "an equal quantity written differently", base: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}, change: func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1024Mi")}
		}},
		{name: "the runtime limit", change: func(p *copsev1alpha1.PodCliqueSet) {
			if p.Spec.WorkloadType == copsev1alpha1.WorkloadTypeTraining {
				p.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](2)}
			}
		}},
		{name: "metadata only", change: func(p *copsev1alpha1.PodCliqueSet) { p.Labels = map[string]string{"a": "b"} }},

		// A change the immutability rules report is not reported twice.
		{name: "an added clique", change: func(p *copsev1alpha1.PodCliqueSet) {
			extra := p.Spec.Template.Cliques[0].DeepCopy()
			extra.Name, extra.Spec.RoleName = "extra", "extra"
			p.Spec.Template.Cliques = append(p.Spec.Template.Cliques, extra)
		}, want: []string{"spec.template.cliques[3].name: Forbidden: cliques cannot be added or renamed after creation"}},
	}
	for _, workloadType := range []copsev1alpha1.WorkloadType{copsev1alpha1.WorkloadTypeTraining, copsev1alpha1.WorkloadTypeInference} {
		for _, tc := range tests {
			t.Run(string(workloadType)+": "+tc.name, func(t *testing.T) {
				base := func(*copsev1alpha1.PodCliqueSet) {}
				if tc.base != nil {
					base = tc.base
				}
				old, pcs := validOf(workloadType, base), validOf(workloadType, base, tc.change)
				want := tc.want
				if workloadType == copsev1alpha1.WorkloadTypeInference {
					// Only the errors of the rules of every workload type.
					want = nil
					for _, w := range tc.want {
						if !strings.Contains(w, "Training") {
							want = append(want, w)
						}
					}
				}
				webhooktest.ExpectErrors(t, ValidateUpdate(old, pcs), want)
			})
		}
	}
}

// TestTrainingRejectsExactlyTheChangesOfTheGenerationHash ties the rule to
// the hash: an update of a Training PodCliqueSet with the same cliques is
// refused by the pod-template rule exactly when GenerationHash changes.
func TestTrainingRejectsExactlyTheChangesOfTheGenerationHash(t *testing.T) {
	changes := map[string]func(*copsev1alpha1.PodCliqueSet){
		"image": func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.PodSpec.Containers[0].Image = "x:2"
		},
		"env": func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Env = []corev1.EnvVar{{Name: "A"}}
		},
		"node selector": func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.PodSpec.NodeSelector = map[string]string{"a": "b"}
		},
		"grace period": func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.PodSpec.TerminationGracePeriodSeconds = ptr.To[int64](5)
		},
		"label":          func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Labels = map[string]string{"a": "b"} },
		"priority class": func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.PriorityClassName = "high" },
		"order":          swapCliques(0, 1),
		"delay": func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.TerminationDelay.Duration++
		},
		"startup type": func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder)
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			old, pcs := validOf(copsev1alpha1.WorkloadTypeTraining), validOf(copsev1alpha1.WorkloadTypeTraining, change)
			hashChanged := generationhash.GenerationHash(old) != generationhash.GenerationHash(pcs)
			rejected := len(validateGenerationHashUnchanged(old, pcs)) > 0
			if hashChanged != rejected {
				t.Errorf("hash changed = %v, but the pod-template rule rejected = %v", hashChanged, rejected)
			}
		})
	}
}

func TestSuccessPolicyAndSuspend(t *testing.T) {
	policy := func(op copsev1alpha1.SuccessPolicyOperator, targets ...string) func(*copsev1alpha1.PodCliqueSet) {
		return func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{SuccessPolicy: &copsev1alpha1.SuccessPolicy{Operator: op, TargetCliques: targets}}
		}
	}
	rules := func(targets ...string) func(*copsev1alpha1.PodCliqueSet) {
		return func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{FailurePolicy: &copsev1alpha1.TrainingFailurePolicy{Rules: []copsev1alpha1.FailureRule{
				{Name: "bug", Action: copsev1alpha1.FailureActionFailWorkload, TargetCliques: targets}}}}
		}
	}
	ignoreRule := func(targets ...string) func(*copsev1alpha1.PodCliqueSet) {
		return func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{FailurePolicy: &copsev1alpha1.TrainingFailurePolicy{Rules: []copsev1alpha1.FailureRule{
				{Name: "flaky", Action: copsev1alpha1.FailureActionIgnore, TargetCliques: targets}}}}
		}
	}
	suspend := func(v bool) func(*copsev1alpha1.PodCliqueSet) {
		return func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Suspend = ptr.To(v) }
	}
	training := copsev1alpha1.WorkloadTypeTraining

	t.Run("create", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			pcs  *copsev1alpha1.PodCliqueSet
			want []string
		}{
			{name: "targets naming clique templates", pcs: validOf(training, policy(copsev1alpha1.SuccessPolicyOperatorAny, "leader", "router"))},
			{name: "no targets: every clique", pcs: validOf(training, policy(copsev1alpha1.SuccessPolicyOperatorAll))},
			{name: "a target that is no clique", pcs: validOf(training, policy(copsev1alpha1.SuccessPolicyOperatorAll, "leader", "launcher")),
				want: []string{`spec.trainingSpec.successPolicy.targetCliques[1]: Invalid value: "launcher": must name a clique of spec.template.cliques: one of ["leader" "worker" "router"]`}},
			{name: "created suspended", pcs: validOf(training, suspend(true))},
			{name: "failure rules targeting clique templates", pcs: validOf(training, rules("leader", "router"))},
			{name: "an Ignore rule on a gang clique (minAvailable = replicas)", pcs: validOf(training, ignoreRule("leader")),
				want: []string{`spec.trainingSpec.failurePolicy.rules[0].action: Invalid value: "Ignore": Ignore applies only to cliques that tolerate failures, minAvailable below replicas; clique "leader" has minAvailable 1 of 1 replicas`}},
			{name: "a failure rule target that is no clique", pcs: validOf(training, rules("leader", "trainer")),
				want: []string{`spec.trainingSpec.failurePolicy.rules[0].targetCliques[1]: Invalid value: "trainer": must name a clique of spec.template.cliques: one of ["leader" "worker" "router"]`}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				webhooktest.ExpectErrors(t, ValidateCreate(tc.pcs), tc.want)
			})
		}
	})
	t.Run("update", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			old, pcs *copsev1alpha1.PodCliqueSet
			want     []string
		}{
			{name: "suspend", old: validOf(training), pcs: validOf(training, suspend(true))},
			{name: "resume", old: validOf(training, suspend(true)), pcs: validOf(training, suspend(false))},
			{name: "suspend an Inference workload", old: validOf(copsev1alpha1.WorkloadTypeInference), pcs: validOf(copsev1alpha1.WorkloadTypeInference, suspend(true))},
			{name: "a success policy added", old: validOf(training), pcs: validOf(training, policy(copsev1alpha1.SuccessPolicyOperatorAny, "leader")),
				want: []string{"spec.trainingSpec.successPolicy: Invalid value: "}},
			{name: "its targets changed", old: validOf(training, policy(copsev1alpha1.SuccessPolicyOperatorAny, "leader")),
				pcs:  validOf(training, policy(copsev1alpha1.SuccessPolicyOperatorAny, "router")),
				want: []string{"spec.trainingSpec.successPolicy: Invalid value: "}},
			{name: "suspended with the same policy", old: validOf(training, policy(copsev1alpha1.SuccessPolicyOperatorAny, "leader")),
				pcs: validOf(training, policy(copsev1alpha1.SuccessPolicyOperatorAny, "leader"), suspend(true))},
		} {
			t.Run(tc.name, func(t *testing.T) {
				errs := ValidateUpdate(tc.old, tc.pcs)
				webhooktest.ExpectErrors(t, errs, tc.want)
				for _, e := range errs {
					if !strings.Contains(e.Error(), "field is immutable") {
						t.Errorf("error %q does not state the rule", e.Error())
					}
				}
			})
		}
	})
}

// TestSchedulingDirectivesWhileSuspended: a suspended Training workload
// with no run in progress accepts changes of its pods' scheduling
// directives, and nothing else of its pod templates; a running or
// still-stopping one accepts none.
func TestSchedulingDirectivesWhileSuspended(t *testing.T) {
	const whileSuspended = "Forbidden: while a Training workload is suspended and not running, only the scheduling directives " +
		"of its pod templates may change (labels, annotations, nodeSelector, tolerations, affinity, schedulingGates)"
	directives := func(p *copsev1alpha1.PodCliqueSet) {
		c := p.Spec.Template.Cliques[0]
		c.Labels = map[string]string{"kueue.x-k8s.io/podset": "leader"}
		c.Annotations = map[string]string{"placed-by": "queue"}
		c.Spec.PodSpec.NodeSelector = map[string]string{"gpu": "gb200"}
		c.Spec.PodSpec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
		c.Spec.PodSpec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
		c.Spec.PodSpec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
	}
	image := func(p *copsev1alpha1.PodCliqueSet) {
		p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "example.com/llm:2"
	}
	suspended := func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Suspend = ptr.To(true) }
	started := func(p *copsev1alpha1.PodCliqueSet) { p.Status.StartTime = ptr.To(metav1.Now()) }
	tests := []struct {
		name   string
		old    []func(*copsev1alpha1.PodCliqueSet)
		change func(*copsev1alpha1.PodCliqueSet)
		want   []string
	}{
		{"suspended, not running: scheduling directives", []func(*copsev1alpha1.PodCliqueSet){suspended}, directives, nil},
		{"suspended, not running: directives and resumed in the same update", []func(*copsev1alpha1.PodCliqueSet){suspended},
			func(p *copsev1alpha1.PodCliqueSet) { directives(p); p.Spec.Suspend = ptr.To(false) }, nil},
		{"suspended, not running: an image", []func(*copsev1alpha1.PodCliqueSet){suspended}, image,
			[]string{"spec.template.cliques[0].spec.podSpec: " + whileSuspended}},
		{"suspended, pods still stopping: scheduling directives", []func(*copsev1alpha1.PodCliqueSet){suspended, started}, directives,
			[]string{"spec.template.cliques[0].labels: " + podTemplateForbidden, "spec.template.cliques[0].annotations: " + podTemplateForbidden,
				"spec.template.cliques[0].spec.podSpec: " + podTemplateForbidden}},
		{"running: scheduling directives", nil, directives,
			[]string{"spec.template.cliques[0].labels: " + podTemplateForbidden, "spec.template.cliques[0].annotations: " + podTemplateForbidden,
				"spec.template.cliques[0].spec.podSpec: " + podTemplateForbidden}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validOf(copsev1alpha1.WorkloadTypeTraining, tc.old...)
			pcs := old.DeepCopy()
			tc.change(pcs)
			webhooktest.ExpectErrors(t, ValidateUpdate(old, pcs), tc.want)
		})
	}
}
