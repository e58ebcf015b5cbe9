package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// mnnvlReservedSuffix ends the names of JobSet-backend TrainJobs'
// ComputeDomains (<trainjob>-mnnvl), so no MNNVL group may be it or end in
// "-" and it: a replica's ComputeDomain <podcliqueset>-<replica>-<group>
// could otherwise take a TrainJob's name.
const mnnvlReservedSuffix = "mnnvl"

// MNNVLGroupNameErrors checks an MNNVL group's name (an AnnotationMNNVLGroup
// value other than MNNVLGroupNone, or the operator's mnnvl.defaultGroup): a
// DNS-1123 label, as it ends its ComputeDomains' names, that is not "mnnvl"
// and does not end in "-mnnvl". It returns the rules the name breaks, none
// for a good name.
func MNNVLGroupNameErrors(group string) []string {
	if msgs := validation.IsDNS1123Label(group); len(msgs) > 0 {
		return []string{"must be a DNS-1123 label: " + strings.Join(msgs, "; ")}
	}
	if group == mnnvlReservedSuffix || strings.HasSuffix(group, "-"+mnnvlReservedSuffix) {
		return []string{`must not be "` + mnnvlReservedSuffix + `" or end in "-` + mnnvlReservedSuffix + `": ComputeDomains named so are TrainJobs' (<trainjob>-` +
			mnnvlReservedSuffix + `), and a replica's ComputeDomain <podcliqueset>-<replica>-<group> could take a TrainJob's name`}
	}
	return nil
}
