package v1alpha1

import "k8s.io/apimachinery/pkg/runtime/schema"

// GroupVersion is the apiVersion a configuration file must declare.
var GroupVersion = schema.GroupVersion{Group: "config.copse.dev", Version: "v1alpha1"}

// OperatorConfigurationKind is the kind a configuration file must declare.
const OperatorConfigurationKind = "OperatorConfiguration"
