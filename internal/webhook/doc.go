// Package webhook serves copse's admission webhooks for the grove.io
// kinds: defaulting of PodCliqueSets, and validation of PodCliqueSets,
// PodCliqueScalingGroups and PodCliques. The rules live in one package per
// kind; this package only describes the endpoints and registers them.
package webhook
