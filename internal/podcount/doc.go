// Package podcount computes, from a PodCliqueSet's spec alone, how many pods
// it asks for: per replica and in total. The admission webhooks compare these
// counts with the operator's limits (limits in config.copse.dev/v1alpha1).
package podcount
