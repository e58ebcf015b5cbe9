// Package generationhash defines the generation hash of a PodCliqueSet: one
// value that changes exactly when a change of the PodCliqueSet's spec would
// have to be rolled out to existing pods (in Grove, a rolling update).
//
// The inputs follow Grove's computeGenerationHash
// (operator/internal/controller/podcliqueset, and its successor
// podtemplatehash.PodTemplateSpec): for each clique of spec.template.cliques,
// the pod template a PodClique stamps its pods from, that is
//
//   - the clique's labels (cliques[i].labels),
//   - the clique's annotations (cliques[i].annotations),
//   - the clique's pod spec (cliques[i].spec.podSpec), in which an empty
//     priorityClassName is replaced by spec.template.priorityClassName, the
//     priority class the pods actually get.
//
// Nothing else is an input. In particular:
//
//   - Replica counts and minAvailable (the set's, the cliques', the scaling
//     groups'), autoScalingConfig/scaleConfig and startsAfter change how many
//     pods there are or when they start, not what a pod is: they are scaled,
//     not rolled out.
//   - A clique's name, roleName, topologyConstraint and resourceSharing, the
//     template's resourceClaimTemplates, resourceSharing, cliqueStartupType
//     and topologyConstraint, and the scaling groups' members are immutable
//     after creation for every workload type (see docs/webhooks.md), so they
//     can never be the cause of a rollout; Grove does not hash them either.
//     (The name keys each clique's inputs, see below.)
//   - terminationDelay, headlessServiceConfig, updateStrategy and the
//     Training fields act on the controllers, not on pods.
//
// One deliberate difference from Grove: cliques are hashed in the order of
// their names, not in list order. Reordering the cliques (allowed when they
// start in any order) changes no pod, so it does not change the hash.
//
// The value is the first 16 hex digits of the SHA-256 of the canonical JSON
// of the inputs (encoding/json: struct fields in declaration order, map keys
// sorted, quantities in canonical form), so it is stable across processes
// and releases of copse as long as the inputs and the API types are, and it
// fits in a label value.
package generationhash

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// CliqueTemplate is what the generation hash covers of one clique: the pod
// template its PodCliques stamp pods from.
type CliqueTemplate struct {
	// Name is the clique's name; it keys the clique, so that the hash does
	// not depend on the order of the cliques.
	Name string `json:"name"`
	// Labels and Annotations are the clique's; empty and absent are the same.
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// PodSpec is the clique's pod spec with the effective priorityClassName.
	PodSpec corev1.PodSpec `json:"podSpec"`
}

// Cliques returns the hash inputs of every clique of pcs, sorted by name.
// Null entries of spec.template.cliques are skipped (validation rejects them).
func Cliques(pcs *copsev1alpha1.PodCliqueSet) []CliqueTemplate {
	out := make([]CliqueTemplate, 0, len(pcs.Spec.Template.Cliques))
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique != nil {
			out = append(out, Clique(pcs, clique))
		}
	}
	slices.SortFunc(out, func(a, b CliqueTemplate) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Clique returns the hash inputs of one clique of pcs.
func Clique(pcs *copsev1alpha1.PodCliqueSet, clique *grovecorev1alpha1.PodCliqueTemplateSpec) CliqueTemplate {
	podSpec := *clique.Spec.PodSpec.DeepCopy()
	if podSpec.PriorityClassName == "" {
		podSpec.PriorityClassName = pcs.Spec.Template.PriorityClassName
	}
	return CliqueTemplate{
		Name:        clique.Name,
		Labels:      nonEmpty(clique.Labels),
		Annotations: nonEmpty(clique.Annotations),
		PodSpec:     podSpec,
	}
}

// GenerationHash returns the generation hash of pcs: see the package
// documentation for what it covers.
func GenerationHash(pcs *copsev1alpha1.PodCliqueSet) string {
	return Hash(Cliques(pcs)...)
}

// PodTemplateHash is the hash of one clique's pod template: the value of
// the grove.io/pod-template-hash label of its PodCliques and their pods. It
// changes exactly when the clique's pods have to be replaced.
func PodTemplateHash(pcs *copsev1alpha1.PodCliqueSet, clique *grovecorev1alpha1.PodCliqueTemplateSpec) string {
	return Hash(Clique(pcs, clique))
}

// PodTemplateHashes are the PodTemplateHash of every clique template, by
// clique name.
func PodTemplateHashes(pcs *copsev1alpha1.PodCliqueSet) map[string]string {
	out := map[string]string{}
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique != nil {
			out[clique.Name] = PodTemplateHash(pcs, clique)
		}
	}
	return out
}

// Hash returns the hash of the given clique templates, in the given order.
// GenerationHash is Hash(Cliques(pcs)...); the hash of a single clique,
// Hash(Clique(pcs, clique)), identifies that clique's pod template.
func Hash(cliques ...CliqueTemplate) string {
	sum := sha256.Sum256(Canonical(cliques))
	return hex.EncodeToString(sum[:8])
}

// Canonical is the canonical encoding the hashes are computed over. Two
// values have the same encoding exactly when they are the same input, so it
// also serves to compare single fields the same way the hash does.
func Canonical(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		// The inputs are API types made of strings, integers, booleans,
		// maps with string keys, slices and quantities, which always
		// encode; an error here is a programming error.
		panic(fmt.Sprintf("generationhash: encoding %T: %v", v, err))
	}
	return data
}

func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
