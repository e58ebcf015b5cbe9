package blueprint

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
)

// +kubebuilder:rbac:groups=resource.nvidia.com,resources=computedomains,verbs=get;list;watch;create;delete

// ComputeDomains is the resource table's row for MNNVL (added when the
// operator configuration's mnnvl.enabled is on): one NVIDIA ComputeDomain per
// replica and MNNVL group of the PodCliqueSet's GPU cliques
// (mnnvl.ReplicaGroups). A new run of the replica gets a new ComputeDomain:
// the old one is deleted with the run, and the new one is created once the
// old one is gone (NVIDIA's controller holds it with a finalizer until its
// IMEX channel is torn down), so the new run never joins the old domain.
func ComputeDomains() ReplicaResource {
	return ReplicaResource{
		Kind:      mnnvl.ComputeDomainGVK.Kind,
		NewObject: func() client.Object { return mnnvl.NewComputeDomain() },
		NewList:   func() client.ObjectList { return mnnvl.NewComputeDomainList() },
		Desired: func(in ReplicaInputs) []client.Object {
			var out []client.Object
			for _, group := range mnnvl.ReplicaGroups(in.PodCliqueSet) {
				out = append(out, ReplicaComputeDomain(in, group))
			}
			return out
		},
		RecreatedWithReplica: true,
	}
}

// ReplicaComputeDomain is the ComputeDomain of one MNNVL group of a replica,
// labelled as the replica's other objects, with its run and its group.
func ReplicaComputeDomain(in ReplicaInputs, group string) client.Object {
	pcs := in.PodCliqueSet
	return mnnvl.ComputeDomain(pcs.Namespace, mnnvl.ComputeDomainName(pcs.Name, in.Replica, group),
		labels.Merge(labels.ForReplica(pcs.Name, in.Replica), attemptLabel(in.Attempt), map[string]string{
			labels.ComponentKey:   mnnvl.ComponentComputeDomain,
			mnnvl.GroupAnnotation: group,
		}))
}
