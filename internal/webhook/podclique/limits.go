package podclique

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podcount"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

var specPath = field.NewPath("spec")

// ValidateSize refuses a PodClique with more pods than one PodCliqueSet
// replica may have (limits.maxPodsPerReplica): its replicas, or its
// autoscaler's maxReplicas when that is larger. The PodCliqueSet webhook
// bounds the cliques it is created from; this catches PodCliques scaled or
// written directly (Inference ones may be). old is nil on create; on update
// only a change that adds pods is refused.
func ValidateSize(old, pclq *copsev1alpha1.PodClique, limits configv1alpha1.LimitsConfiguration) field.ErrorList {
	pods, from := podcount.Clique(&pclq.Spec, specPath)
	var before int64
	if old != nil {
		before, _ = podcount.Clique(&old.Spec, specPath)
	}
	return rules.PodCliqueWithinLimit(before, pods, from, limits)
}
