package naming

import (
	"fmt"
	"strconv"
)

// MaxLabelLength is the limit of a DNS-1123 label, and so of a pod's
// hostname, a Service's name and every label value.
const MaxLabelLength = 63

// hostnameSuffixLength is the room the pod index takes in a hostname
// ("-<index>"), for up to 99999 pods per clique.
const hostnameSuffixLength = 1 + 5

// NameBudget describes the longest names a PodCliqueSet will generate. The
// longest pod hostname is <pcs>-<r>-<group>-<j>-<clique>-<index>: it must fit
// in a DNS label, and so must the PodClique name, which is also a label value.
type NameBudget struct {
	PodCliqueSet string
	// MaxReplicas is the largest replica count the PodCliqueSet may reach.
	MaxReplicas int
	// Cliques maps each clique name to the scaling group it belongs to ("" for none).
	Cliques map[string]string
	// MaxGroupReplicas maps each scaling group to the largest replica count it may reach.
	MaxGroupReplicas map[string]int
}

// LongestHostname returns the longest pod hostname the budget allows, and
// the clique it belongs to.
func (b NameBudget) LongestHostname() (hostname, clique string) {
	replica := b.MaxReplicas - 1
	if replica < 0 {
		replica = 0
	}
	for c, group := range b.Cliques {
		var podClique string
		if group == "" {
			podClique = StandalonePodClique(b.PodCliqueSet, replica, c)
		} else {
			groupReplica := max(b.MaxGroupReplicas[group]-1, 0)
			podClique = GroupedPodClique(ScalingGroup(b.PodCliqueSet, replica, group), groupReplica, c)
		}
		h := podClique + "-" + strconv.Itoa(99999)
		if len(h) > len(hostname) || (len(h) == len(hostname) && c < clique) {
			hostname, clique = h, c
		}
	}
	return hostname, clique
}

// Check returns an error naming the clique whose pod hostnames would exceed
// 63 characters, and by how much.
func (b NameBudget) Check() error {
	hostname, clique := b.LongestHostname()
	if len(hostname) <= MaxLabelLength {
		return nil
	}
	return fmt.Errorf("generated pod hostnames such as %q would be %d characters, over the limit of %d "+
		"(the limit covers <podcliqueset>-<replica>[-<scalinggroup>-<groupreplica>]-<clique>-<podindex> "+
		"with up to %d digits of pod index); shorten the PodCliqueSet name or clique %q by %d character(s)",
		hostname, len(hostname), MaxLabelLength, hostnameSuffixLength-1, clique, len(hostname)-MaxLabelLength)
}
