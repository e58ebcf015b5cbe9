package blueprint

import (
	"fmt"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// CliqueIdentity is where a PodClique sits in its PodCliqueSet, as the labels
// its creator set say. Objects are found and placed by label, never by
// parsing names.
type CliqueIdentity struct {
	PodCliqueSet string
	Replica      int
	// Attempt is the run of the replica the PodClique belongs to.
	Attempt int
	// Gang is the gang the clique's pods join; "" when not labelled.
	Gang string
	// Clique is the clique's name in the PodCliqueSet template.
	Clique string
	// ScalingGroup is the PodCliqueScalingGroup object's name; "" for a
	// standalone clique.
	ScalingGroup        string
	ScalingGroupReplica int
}

// Grouped reports whether the clique belongs to a scaling group.
func (id CliqueIdentity) Grouped() bool { return id.ScalingGroup != "" }

// IdentityOf reads a PodClique's identity. It fails when a label its pods
// need is missing; retrying cannot help until someone fixes the labels, and
// a label change triggers a new reconcile.
func IdentityOf(pclq *copsev1alpha1.PodClique) (CliqueIdentity, error) {
	l := pclq.Labels
	id := CliqueIdentity{
		PodCliqueSet: l[labels.PartOfKey],
		Gang:         l[labels.PodGangKey],
		Clique:       l[labels.CliqueTemplateKey],
		ScalingGroup: l[labels.ScalingGroupKey],
	}
	id.Attempt, _ = labels.Index(l, labels.AttemptKey)
	if id.PodCliqueSet == "" {
		return id, missingLabel(labels.PartOfKey)
	}
	var ok bool
	if id.Replica, ok = labels.Index(l, labels.ReplicaKey); !ok {
		return id, missingLabel(labels.ReplicaKey)
	}
	if id.Grouped() {
		if id.ScalingGroupReplica, ok = labels.Index(l, labels.ScalingGroupReplicaKey); !ok {
			return id, missingLabel(labels.ScalingGroupReplicaKey)
		}
		if id.Clique == "" {
			return id, missingLabel(labels.CliqueTemplateKey)
		}
	}
	return id, nil
}

func missingLabel(key string) error {
	return fmt.Errorf("label %s is missing or not valid", key)
}
