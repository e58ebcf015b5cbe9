package trainjob

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// upsert replaces the item that matches each new one, or appends it: the
// list keeps its order and every name appears once.
func upsert[T any](list *[]T, same func(a, b T) bool, items ...T) {
	for _, item := range items {
		if i := slices.IndexFunc(*list, func(existing T) bool { return same(existing, item) }); i >= 0 {
			(*list)[i] = item
			continue
		}
		*list = append(*list, item)
	}
}

func upsertEnv(list *[]corev1.EnvVar, vars ...corev1.EnvVar) {
	upsert(list, func(a, b corev1.EnvVar) bool { return a.Name == b.Name }, vars...)
}

func upsertPorts(list *[]corev1.ContainerPort, ports ...corev1.ContainerPort) {
	upsert(list, func(a, b corev1.ContainerPort) bool {
		return a.ContainerPort == b.ContainerPort || (a.Name != "" && a.Name == b.Name)
	}, ports...)
}

func upsertVolumes(list *[]corev1.Volume, volumes ...corev1.Volume) {
	upsert(list, func(a, b corev1.Volume) bool { return a.Name == b.Name }, volumes...)
}

func upsertVolumeMounts(list *[]corev1.VolumeMount, mounts ...corev1.VolumeMount) {
	upsert(list, func(a, b corev1.VolumeMount) bool { return a.MountPath == b.MountPath }, mounts...)
}

// userEnv is a TrainJob's env as Kubeflow Trainer carries it into the JobSet:
// a value, or a source from a field path, a resource field, a ConfigMap key
// or a Secret key. Other sources (file keys) and a field ref's API version
// are not carried.
func userEnv(vars []corev1.EnvVar) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(vars))
	for _, v := range vars {
		kept := corev1.EnvVar{Name: v.Name}
		if from := v.ValueFrom; from != nil {
			source := &corev1.EnvVarSource{
				ResourceFieldRef: from.ResourceFieldRef.DeepCopy(),
				ConfigMapKeyRef:  from.ConfigMapKeyRef.DeepCopy(),
				SecretKeyRef:     from.SecretKeyRef.DeepCopy(),
			}
			if from.FieldRef != nil {
				source.FieldRef = &corev1.ObjectFieldSelector{FieldPath: from.FieldRef.FieldPath}
			}
			kept.ValueFrom = source
		} else {
			kept.Value = v.Value
		}
		out = append(out, kept)
	}
	return out
}

func valueEnv(name, value string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, Value: value}
}

func fieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}}
}
