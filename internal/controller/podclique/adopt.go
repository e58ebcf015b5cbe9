package podclique

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/podstate"
)

// adoptionOf sorts the strays of a PodClique whose replica restarted in
// place (inPlace): the pods the restart kept, which the PodCliqueSet
// controller moved to this run's attempt without a controller, are adopted,
// one per index below spec.replicas that no pod of its own holds; the kept
// pods it cannot take are discarded (deleted), so none is left without an
// owner. A kept pod that ended (or is being deleted) before it was adopted
// is discarded too: its containers ran the previous attempt's workload, so
// neither its exit 0 nor its failure is this run's, and a new pod takes its
// index once it is gone (planInput.vacating). adopt are summarised as they
// will be once adopted. rest are the strays left, whose outcome finalizers
// are released as before.
func adoptionOf(pclq *copsev1alpha1.PodClique, attempt int, inPlace bool, owned, strays []podstate.Summary) (adopt, discard, rest []podstate.Summary) {
	if !inPlace {
		return nil, nil, strays
	}
	taken := map[int]bool{}
	for _, p := range owned {
		if p.HasIndex && !p.Terminal() {
			taken[p.Index] = true
		}
	}
	for _, p := range strays {
		kept := p.ControllerUID == "" && p.Attempt == attempt
		switch {
		case !kept:
			rest = append(rest, p)
		case !p.Active() || !p.HasIndex || p.Index >= int(pclq.Spec.Replicas) || taken[p.Index]:
			discard = append(discard, p)
		default:
			taken[p.Index] = true
			p.ControllerUID = pclq.UID
			adopt = append(adopt, p)
		}
	}
	return adopt, discard, rest
}

// adoptPods makes the PodClique the controller of the pods a restart in
// place kept, in one write per pod with an optimistic lock, and puts the
// outcome finalizer back (the old PodClique's strays lose it).
func (r *Reconciler) adoptPods(ctx context.Context, pclq *copsev1alpha1.PodClique, pods []podstate.Summary) (int, error) {
	if len(pods) == 0 {
		return 0, nil
	}
	gvk, err := apiutil.GVKForObject(pclq, r.Scheme)
	if err != nil {
		return 0, fmt.Errorf("resolving the PodClique kind: %w", err)
	}
	owner := *metav1.NewControllerRef(pclq, gvk)
	stopBy := time.Now().Add(children.PassTime) // wall time: it bounds work, not a decision
	adopted, err := children.InSlowStart(ctx, len(pods), children.MaxInFlight, children.MaxInFlight, stopBy, func(ctx context.Context, i int) error {
		return r.adoptPod(ctx, pclq.Namespace, pods[i], owner)
	})
	if adopted > 0 {
		ctrl.LoggerFrom(ctx).Info("adopted the pods a restart in place kept", "adopted", adopted, "planned", len(pods), "attempt", pods[0].Attempt)
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeNormal, EventReasonPodsAdopted, "AdoptPods",
			"Adopted %d pod(s) the replica's restart in place kept, moved to attempt %d; their containers restart where they are", adopted, pods[0].Attempt)
	}
	if err != nil {
		return adopted, fmt.Errorf("adopting the kept pods of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err)
	}
	return adopted, nil
}

func (r *Reconciler) adoptPod(ctx context.Context, namespace string, p podstate.Summary, owner metav1.OwnerReference) error {
	return children.MutatePod(ctx, r.Client, namespace, p, func(pod *corev1.Pod) {
		pod.OwnerReferences = slices.DeleteFunc(pod.OwnerReferences, func(ref metav1.OwnerReference) bool {
			return ref.Controller != nil && *ref.Controller
		})
		pod.OwnerReferences = append(pod.OwnerReferences, owner)
		controllerutil.AddFinalizer(pod, copsev1alpha1.OutcomeFinalizer)
	})
}
