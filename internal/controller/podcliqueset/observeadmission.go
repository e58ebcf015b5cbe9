package podcliqueset

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/kueueinputs"
)

// admission is a queued PodCliqueSet's Admitted condition as this pass
// computes it. The kueueworkload controller takes the steps of Kueue's
// protocol (docs/kueue.md); the condition those steps lead to is written
// here, with the rest of the status, so PodCliqueSet status has one writer.
type admission struct {
	// tracked: the PodCliqueSet takes part in the protocol (kueue.Tracked,
	// with kueue.enabled); otherwise the condition is left as it is.
	tracked bool
	// condition is the Admitted condition; nil removes it.
	condition *metav1.Condition
}

// observeAdmission reads what Kueue's protocol decides on for a queued
// PodCliqueSet (kueueinputs.Gather: its Workload, the flavors, the
// priority, the refusal recorded on it), with the packing and the pods
// observe already has, and computes its Admitted condition
// (kueue.AdmittedCondition, pure).
func (r *Reconciler) observeAdmission(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed, now time.Time) (admission, error) {
	if !r.Kueue || !kueue.Tracked(pcs) {
		return admission{}, nil
	}
	in, err := kueueinputs.Gather(ctx, r.Client, client.ObjectKeyFromObject(pcs), pcs, kueueinputs.Facts{
		Packing:    obs.packing,
		PodsRemain: kueue.PodsRemain(pcs, len(obs.activePods())),
		MaxPodSets: r.KueueMaxPodSets,
		Now:        now,
	})
	if err != nil {
		return admission{}, fmt.Errorf("gather the Kueue inputs of the Admitted condition: %w", err)
	}
	return admission{tracked: true, condition: kueue.AdmittedCondition(in)}, nil
}
