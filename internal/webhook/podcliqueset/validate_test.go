package podcliqueset

import (
	"strings"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook/webhooktest"
)

// valid returns a defaulted PodCliqueSet that breaks no rule, with three
// cliques: leader (1 pod), worker (4 pods, in scaling group "decode") and
// router (2 pods), changed by each of edits.
func valid(edits ...func(*copsev1alpha1.PodCliqueSet)) *copsev1alpha1.PodCliqueSet {
	pcs := undefaulted(copsev1alpha1.WorkloadTypeInference)
	pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, &grovecorev1alpha1.PodCliqueTemplateSpec{
		Name: "router", Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: "router", Replicas: 2, PodSpec: podSpec()},
	})
	Default(pcs)
	for _, edit := range edits {
		edit(pcs)
	}
	return pcs
}

func explicitStartup(pcs *copsev1alpha1.PodCliqueSet) {
	pcs.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeExplicit)
}

func startsAfter(clique int, names ...string) func(*copsev1alpha1.PodCliqueSet) {
	return func(pcs *copsev1alpha1.PodCliqueSet) { pcs.Spec.Template.Cliques[clique].Spec.StartsAfter = names }
}

func TestValidateCreate(t *testing.T) {
	tests := []struct {
		name string
		pcs  *copsev1alpha1.PodCliqueSet
		want []string
	}{
		{name: "a valid PodCliqueSet", pcs: valid()},
		{name: "a valid Training PodCliqueSet", pcs: func() *copsev1alpha1.PodCliqueSet {
			pcs := undefaulted(copsev1alpha1.WorkloadTypeTraining)
			Default(pcs)
			return pcs
		}()},
		{name: "zero replicas of the PodCliqueSet are allowed", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Replicas = 0 })},

		// The object itself.
		{name: "the name must be a DNS-1035 label", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) { p.Name = "1llm" }),
			want: []string{`metadata.name: Invalid value: "1llm": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character`}},
		{name: "a name with dots cannot prefix a Service name", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) { p.Name = "llm.v2" }),
			want: []string{`metadata.name: Invalid value: "llm.v2"`}},
		{name: "negative replicas", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Replicas = -1 }),
			want: []string{"spec.replicas: Invalid value: -1: must not be negative"}},
		{name: "an Inference terminationDelay of 0",
			pcs:  valid(func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Template.TerminationDelay = &metav1.Duration{} }),
			want: []string{`spec.template.terminationDelay: Invalid value: "0s": must be greater than 0 unless spec.workloadType is Training`}},
		{name: "a Training terminationDelay of 0 is the Training default", pcs: valid(asTraining, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.TerminationDelay = &metav1.Duration{}
		})},
		{name: "a negative terminationDelay", pcs: valid(asTraining, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.TerminationDelay = &metav1.Duration{Duration: -time.Minute}
		}), want: []string{`spec.template.terminationDelay: Invalid value: "-1m0s": must not be negative`}},
		{name: "Training pods restart only through the operator", pcs: valid(asTraining, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyAlways
		}), want: []string{`spec.template.cliques[1].spec.podSpec.restartPolicy: Invalid value: "Always": must be Never when the workload is Training`}},
		{name: "Inference pods may restart in place", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyAlways
		})},

		// Clique composition.
		{name: "no cliques", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques = nil
			p.Spec.Template.PodCliqueScalingGroupConfigs = nil
		}), want: []string{"spec.template.cliques: Required value: at least one clique is required"}},
		{name: "a null clique", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques = append(p.Spec.Template.Cliques, nil)
		}), want: []string{"spec.template.cliques[3]: Required value: must be a clique, not null"}},
		{name: "duplicate clique names", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Name = "leader"
		}), want: []string{`spec.template.cliques[2].name: Duplicate value: "leader"`}},
		{name: "a clique name that is not a DNS label", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Name = "Router_1"
		}), want: []string{`spec.template.cliques[2].name: Invalid value: "Router_1": a lowercase RFC 1123 label must consist of`}},
		{name: "an empty clique name", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Name = ""
		}), want: []string{"spec.template.cliques[2].name: Required value"}},
		{name: "duplicate role names", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.RoleName = "leader"
		}), want: []string{`spec.template.cliques[2].spec.roleName: Duplicate value: "leader"`}},
		{name: "invalid template labels", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Labels = map[string]string{"tier": "not valid!"}
		}), want: []string{`spec.template.cliques[0].labels: Invalid value: "not valid!"`}},

		// Clique bounds.
		{name: "clique replicas below 1", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.Replicas = -1
		}), want: []string{"spec.template.cliques[2].spec.replicas: Invalid value: -1: must be at least 1"}},
		{name: "clique minAvailable below 1", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.MinAvailable = ptr.To[int32](0)
		}), want: []string{"spec.template.cliques[2].spec.minAvailable: Invalid value: 0: must be at least 1"}},
		{name: "clique minAvailable above replicas", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.MinAvailable = ptr.To[int32](5)
		}), want: []string{"spec.template.cliques[1].spec.minAvailable: Invalid value: 5: must not be greater than spec.template.cliques[1].spec.replicas (4)"}},
		{name: "clique minAvailable below 1 with autoscaling", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 4}
		}), want: []string{"spec.template.cliques[2].spec.autoScalingConfig.minReplicas: Invalid value: 1: must not be less than spec.template.cliques[2].spec.minAvailable (2)"}},
		{name: "autoscaling maxReplicas below replicas", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 1}
		}), want: []string{"spec.template.cliques[2].spec.autoScalingConfig.maxReplicas: Invalid value: 1: must not be less than spec.template.cliques[2].spec.replicas (2)"}},
		{name: "autoscaling within bounds", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](2), MaxReplicas: 8}
		})},
		{name: "autoscaling on a clique of a scaling group", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](4), MaxReplicas: 8}
		}), want: []string{`spec.template.cliques[1].spec.autoScalingConfig: Forbidden: not allowed on a clique of scaling group "decode"`}},

		// Pod templates.
		{name: "restartPolicy OnFailure", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyOnFailure
		}), want: []string{`spec.template.cliques[0].spec.podSpec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always", "Never"`}},
		{name: "nodeName", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.NodeName = "node-1"
		}), want: []string{"spec.template.cliques[0].spec.podSpec.nodeName: Forbidden: must not be set: it bypasses the scheduler"}},
		{name: "topologySpreadConstraints", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1}}
		}), want: []string{"spec.template.cliques[0].spec.podSpec.topologySpreadConstraints: Forbidden: must not be set"}},
		{name: "different schedulers", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.PodSpec.SchedulerName = "other"
		}), want: []string{`spec.template.cliques[2].spec.podSpec.schedulerName: Invalid value: "other": must be the same for every clique (spec.template.cliques[0].spec.podSpec.schedulerName is "default-scheduler")`}},
		{name: "the default scheduler named explicitly", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.PodSpec.SchedulerName = corev1.DefaultSchedulerName
		})},

		// Start order.
		{name: "an explicit start order", pcs: valid(explicitStartup, startsAfter(1, "leader"), startsAfter(2, "worker", "leader"))},
		{name: "startsAfter an unknown clique", pcs: valid(explicitStartup, startsAfter(1, "leader", "ghost")),
			want: []string{`spec.template.cliques[1].spec.startsAfter[1]: Invalid value: "ghost": must name a clique of spec.template.cliques`}},
		{name: "startsAfter itself", pcs: valid(explicitStartup, startsAfter(1, "worker")),
			want: []string{`spec.template.cliques[1].spec.startsAfter[0]: Invalid value: "worker": a clique cannot start after itself`}},
		{name: "an empty startsAfter entry", pcs: valid(explicitStartup, startsAfter(1, "")),
			want: []string{"spec.template.cliques[1].spec.startsAfter[0]: Required value: must name a clique"}},
		{name: "a repeated startsAfter entry", pcs: valid(explicitStartup, startsAfter(1, "leader", "leader")),
			want: []string{`spec.template.cliques[1].spec.startsAfter[1]: Duplicate value: "leader"`}},
		{name: "a two-clique cycle", pcs: valid(explicitStartup, startsAfter(0, "worker"), startsAfter(1, "leader")),
			want: []string{`spec.template.cliques[0].spec.startsAfter: Invalid value: "leader -> worker -> leader": startsAfter must not form a cycle`}},
		{name: "a three-clique cycle is reported once, from the first clique", pcs: valid(explicitStartup,
			startsAfter(0, "router"), startsAfter(1, "leader"), startsAfter(2, "worker")),
			want: []string{`spec.template.cliques[0].spec.startsAfter: Invalid value: "leader -> router -> worker -> leader"`}},
		{name: "startsAfter is not checked unless the startup type is Explicit", pcs: valid(startsAfter(1, "ghost", "worker"))},

		// Scaling groups.
		{name: "two scaling groups", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs,
				grovecorev1alpha1.PodCliqueScalingGroupConfig{Name: "prefill", CliqueNames: []string{"router", "leader"}})
		})},
		{name: "duplicate scaling group names", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs,
				grovecorev1alpha1.PodCliqueScalingGroupConfig{Name: "decode", CliqueNames: []string{"router"}})
		}), want: []string{`spec.template.podCliqueScalingGroups[1].name: Duplicate value: "decode"`}},
		{name: "a scaling group name that is not a DNS label", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Name = "de.code"
		}), want: []string{`spec.template.podCliqueScalingGroups[0].name: Invalid value: "de.code"`}},
		{name: "a scaling group without cliques", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = nil
		}), want: []string{"spec.template.podCliqueScalingGroups[0].cliqueNames: Required value: a scaling group needs at least one clique"}},
		{name: "a scaling group naming an unknown clique", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"worker", "ghost"}
		}), want: []string{`spec.template.podCliqueScalingGroups[0].cliqueNames[1]: Invalid value: "ghost": must name a clique of spec.template.cliques`}},
		{name: "a clique named twice by one group", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"worker", "worker"}
		}), want: []string{`spec.template.podCliqueScalingGroups[0].cliqueNames[1]: Duplicate value: "worker"`}},
		{name: "a clique in two groups", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs,
				grovecorev1alpha1.PodCliqueScalingGroupConfig{Name: "prefill", CliqueNames: []string{"router", "worker"}})
		}), want: []string{`spec.template.podCliqueScalingGroups[1].cliqueNames[1]: Invalid value: "worker": clique already belongs to spec.template.podCliqueScalingGroups[0] ("decode"); a clique can be in at most one scaling group`}},
		{name: "scaling group replicas below 1", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](0)
		}), want: []string{"spec.template.podCliqueScalingGroups[0].replicas: Invalid value: 0: must be at least 1"}},
		{name: "scaling group minAvailable below 1", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](0)
		}), want: []string{"spec.template.podCliqueScalingGroups[0].minAvailable: Invalid value: 0: must be at least 1"}},
		{name: "scaling group minAvailable above replicas", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](2)
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](3)
		}), want: []string{"spec.template.podCliqueScalingGroups[0].minAvailable: Invalid value: 3: must not be greater than spec.template.podCliqueScalingGroups[0].replicas (2)"}},
		{name: "scaling group autoscaling below minAvailable", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			g := &p.Spec.Template.PodCliqueScalingGroupConfigs[0]
			g.Replicas, g.MinAvailable = ptr.To[int32](3), ptr.To[int32](2)
			g.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 5}
		}), want: []string{"spec.template.podCliqueScalingGroups[0].scaleConfig.minReplicas: Invalid value: 1: must not be less than spec.template.podCliqueScalingGroups[0].minAvailable (2)"}},

		// Resource claims.
		{name: "shared resource claims", pcs: valid(withClaimTemplate("gpu"), func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing = []grovecorev1alpha1.PCSResourceSharingSpec{{
				ResourceSharingSpec: sharing("gpu"),
				Filter:              &grovecorev1alpha1.PCSResourceSharingFilter{ChildCliqueNames: []string{"leader"}, ChildScalingGroupNames: []string{"decode"}},
			}}
			p.Spec.Template.Cliques[0].ResourceSharing = []grovecorev1alpha1.ResourceSharingSpec{sharing("gpu")}
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing = []grovecorev1alpha1.PCSGResourceSharingSpec{{
				ResourceSharingSpec: grovecorev1alpha1.ResourceSharingSpec{Name: "external", Namespace: "shared", Scope: grovecorev1alpha1.ResourceSharingScopeAllReplicas},
				Filter:              &grovecorev1alpha1.PCSGResourceSharingFilter{ChildCliqueNames: []string{"worker"}},
			}}
		})},
		{name: "a claim template without a name or device request", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceClaimTemplates = []grovecorev1alpha1.ResourceClaimTemplateConfig{{}}
		}), want: []string{
			"spec.template.resourceClaimTemplates[0].name: Required value",
			"spec.template.resourceClaimTemplates[0].templateSpec.spec.devices.requests: Required value: a ResourceClaim template must request at least one device",
		}},
		{name: "duplicate claim templates", pcs: valid(withClaimTemplate("gpu"), withClaimTemplate("gpu")),
			want: []string{`spec.template.resourceClaimTemplates[1].name: Duplicate value: "gpu"`}},
		{name: "a namespace on a reference to a claim template of the set", pcs: valid(withClaimTemplate("gpu"), func(p *copsev1alpha1.PodCliqueSet) {
			ref := sharing("gpu")
			ref.Namespace = "other"
			p.Spec.Template.Cliques[0].ResourceSharing = []grovecorev1alpha1.ResourceSharingSpec{ref}
		}), want: []string{`spec.template.cliques[0].resourceSharing[0].namespace: Invalid value: "other": must be empty: "gpu" is one of spec.template.resourceClaimTemplates`}},
		{name: "references without a name, or repeated", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].ResourceSharing = []grovecorev1alpha1.ResourceSharingSpec{sharing(""), sharing("x"), sharing("x")}
		}), want: []string{
			"spec.template.cliques[0].resourceSharing[0].name: Required value",
			`spec.template.cliques[0].resourceSharing[2].name: Duplicate value: "x"`,
		}},
		{name: "a PodCliqueSet filter selecting nothing, or unknown children", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing = []grovecorev1alpha1.PCSResourceSharingSpec{
				{ResourceSharingSpec: sharing("a"), Filter: &grovecorev1alpha1.PCSResourceSharingFilter{}},
				{ResourceSharingSpec: sharing("b"), Filter: &grovecorev1alpha1.PCSResourceSharingFilter{
					ChildCliqueNames: []string{"ghost"}, ChildScalingGroupNames: []string{"phantom"}}},
			}
		}), want: []string{
			"spec.template.resourceSharing[0].filter: Required value: must list at least one of childCliqueNames and childScalingGroupNames",
			`spec.template.resourceSharing[1].filter.childCliqueNames[0]: Invalid value: "ghost": must name a clique`,
			`spec.template.resourceSharing[1].filter.childScalingGroupNames[0]: Invalid value: "phantom": must name a scaling group`,
		}},
		{name: "a scaling group filter selecting a clique outside the group", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing = []grovecorev1alpha1.PCSGResourceSharingSpec{
				{ResourceSharingSpec: sharing("a"), Filter: &grovecorev1alpha1.PCSGResourceSharingFilter{}},
				{ResourceSharingSpec: sharing("b"), Filter: &grovecorev1alpha1.PCSGResourceSharingFilter{ChildCliqueNames: []string{"leader"}}},
			}
		}), want: []string{
			"spec.template.podCliqueScalingGroups[0].resourceSharing[0].filter.childCliqueNames: Required value",
			`spec.template.podCliqueScalingGroups[0].resourceSharing[1].filter.childCliqueNames[0]: Invalid value: "leader": must be one of the scaling group's cliqueNames ["worker"]`,
		}},

		// Generated names.
		{name: "a clique whose pod hostnames would be too long", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			// "llm-0-" + 52 + "-99999" is 64 characters.
			p.Spec.Template.Cliques[2].Name = strings.Repeat("r", 52)
		}), want: []string{`spec.template.cliques[2].name: Invalid value: "` + strings.Repeat("r", 52) + `": generated pod hostnames such as "llm-0-` + strings.Repeat("r", 52) + `-99999" would be 64 characters, over the limit of 63`}},
		{name: "pod hostnames of exactly 63 characters fit", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Name = strings.Repeat("r", 51)
		})},
		{name: "a grouped clique pays for the scaling group's name and replica index", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			// "llm-0-" + 43 + "-9-worker-99999" is 64 characters.
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Name = strings.Repeat("d", 43)
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](10)
		}), want: []string{`spec.template.cliques[1].name: Invalid value: "worker": generated pod hostnames such as "llm-0-` + strings.Repeat("d", 43) + `-9-worker-99999"`}},
		{name: "a PodCliqueSet name that leaves no room for any clique", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Name = strings.Repeat("l", 56)
		}), want: []string{`metadata.name: Invalid value: "` + strings.Repeat("l", 56) + `": generated pod hostnames such as`}},
		{name: "the replica index counts", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			// "x-9-" + 53 + "-99999" is 63 characters, "x-10-" + 53 + "-99999" 64.
			p.Name = "x"
			p.Spec.Replicas = 11
			p.Spec.Template.Cliques[2].Name = strings.Repeat("r", 53)
		}), want: []string{`spec.template.cliques[2].name: Invalid value: "` + strings.Repeat("r", 53) + `": generated pod hostnames such as "x-10-`}},
		{name: "ten replicas keep a one-digit index", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			p.Name = "x"
			p.Spec.Replicas = 10
			p.Spec.Template.Cliques[2].Name = strings.Repeat("r", 53)
		})},
		{name: "an autoscaled scaling group is checked at its maxReplicas", pcs: valid(func(p *copsev1alpha1.PodCliqueSet) {
			// "llm-0-decode-10-" + 42 + "-99999" is 64 characters.
			p.Spec.Template.Cliques[1].Name = strings.Repeat("w", 42)
			g := &p.Spec.Template.PodCliqueScalingGroupConfigs[0]
			g.CliqueNames = []string{strings.Repeat("w", 42)}
			g.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 11}
		}), want: []string{`spec.template.cliques[1].name: Invalid value: "` + strings.Repeat("w", 42) + `": generated pod hostnames such as "llm-0-decode-10-`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			webhooktest.ExpectErrors(t, ValidateCreate(tc.pcs), tc.want)
		})
	}
}

func withClaimTemplate(name string) func(*copsev1alpha1.PodCliqueSet) {
	return func(pcs *copsev1alpha1.PodCliqueSet) {
		claimTemplate := grovecorev1alpha1.ResourceClaimTemplateConfig{Name: name}
		claimTemplate.TemplateSpec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu"}}
		pcs.Spec.Template.ResourceClaimTemplates = append(pcs.Spec.Template.ResourceClaimTemplates, claimTemplate)
	}
}

func sharing(name string) grovecorev1alpha1.ResourceSharingSpec {
	return grovecorev1alpha1.ResourceSharingSpec{Name: name, Scope: grovecorev1alpha1.ResourceSharingScopePerReplica}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name string
		pcs  *copsev1alpha1.PodCliqueSet
		want []string
	}{
		{name: "no startsAfter", pcs: valid()},
		{name: "startsAfter with the Explicit startup type", pcs: valid(explicitStartup, startsAfter(1, "leader"))},
		{name: "startsAfter with another startup type is ignored, and said so", pcs: valid(startsAfter(1, "leader")),
			want: []string{"spec.template.cliques[1].spec.startsAfter is ignored unless spec.template.cliqueStartupType is CliqueStartupTypeExplicit"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Warnings(tc.pcs)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Warnings = %q, want %q", got, tc.want)
			}
		})
	}
}

// asTraining makes a valid Inference PodCliqueSet a valid Training one.
func asTraining(p *copsev1alpha1.PodCliqueSet) {
	p.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	for _, c := range p.Spec.Template.Cliques {
		c.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever
	}
}
