package podclique

import (
	"fmt"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// cliqueIdentity is where a PodClique sits in its PodCliqueSet, as the labels
// set by its creator say. Objects are found and placed by label, never by
// parsing names.
type cliqueIdentity struct {
	podCliqueSet string
	replica      int
	// gang is the PodGroup the clique's pods join; "" when not labelled.
	gang string
	// clique is the clique's name in the PodCliqueSet template.
	clique string
	// scalingGroup is the PodCliqueScalingGroup object's name; "" for a
	// standalone clique.
	scalingGroup        string
	scalingGroupReplica int
}

func (id cliqueIdentity) grouped() bool { return id.scalingGroup != "" }

// identityOf reads a PodClique's identity. It fails when a label the pods
// need is missing; retrying cannot help until someone fixes the labels, and a
// label change triggers a new reconcile.
func identityOf(pclq *copsev1alpha1.PodClique, gangScheduling bool) (cliqueIdentity, error) {
	l := pclq.Labels
	id := cliqueIdentity{
		podCliqueSet: l[labels.PartOfKey],
		gang:         l[labels.PodGangKey],
		clique:       l[labels.CliqueTemplateKey],
		scalingGroup: l[labels.ScalingGroupKey],
	}
	if id.podCliqueSet == "" {
		return id, missingLabel(labels.PartOfKey)
	}
	var ok bool
	if id.replica, ok = labels.Index(l, labels.ReplicaKey); !ok {
		return id, missingLabel(labels.ReplicaKey)
	}
	if gangScheduling && id.gang == "" {
		return id, fmt.Errorf("%w; gang scheduling is on and the pods cannot join a gang without it", missingLabel(labels.PodGangKey))
	}
	if id.grouped() {
		if id.scalingGroupReplica, ok = labels.Index(l, labels.ScalingGroupReplicaKey); !ok {
			return id, missingLabel(labels.ScalingGroupReplicaKey)
		}
		if id.clique == "" {
			return id, missingLabel(labels.CliqueTemplateKey)
		}
	}
	return id, nil
}

func missingLabel(key string) error {
	return fmt.Errorf("label %s is missing or not valid", key)
}
