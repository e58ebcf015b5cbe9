package trainerparity_test

import (
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

// What is legitimately different between the two builds, and how it is
// normalised away before comparing:
//
//   - Secret data: the MPI SSH key is fresh on every build; values are
//     replaced by their key's name (type, keys, immutability and owner stay
//     compared).
//   - Labels copse adds to the ConfigMaps, Secrets and scheduler PodGroups
//     it makes (app.kubernetes.io/managed-by, copse.dev/trainjob), which
//     scope the operator's cache and name the TrainJob.
//   - A PodGroup's minResources quantities are compared by value (each in
//     its canonical form).
//   - The runtime snapshot: Kubeflow stores the whole runtime object (UID,
//     resourceVersion, labels), copse its kind, name and spec; the decoded
//     kind, name and spec are compared.
//   - Environment order where Kubeflow's is random: its plain-ML and XGBoost
//     steps run in Go map order, so for runtimes without torch, MPI or JAX
//     each container's env is compared sorted by name.
//
// Everything else is compared as the typed object's JSON.

// normalizedObject is one built object ready to compare.
type normalizedObject struct {
	Key  string
	JSON map[string]any
}

func keyOf(apiVersion, kind, name string) string {
	return fmt.Sprintf("%s %s %s", apiVersion, kind, name)
}

// normalize turns a built object, given as raw JSON, into its comparable
// form.
func normalize(raw []byte, sortEnv bool) (normalizedObject, error) {
	head := struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}{}
	if err := json.Unmarshal(raw, &head); err != nil {
		return normalizedObject{}, err
	}
	key := keyOf(head.APIVersion, head.Kind, head.Metadata.Name)
	var typed any
	switch head.Kind {
	case "JobSet":
		js := &jobsetv1alpha2.JobSet{}
		if err := json.Unmarshal(raw, js); err != nil {
			return normalizedObject{}, err
		}
		if sortEnv {
			for i := range js.Spec.ReplicatedJobs {
				sortContainerEnv(&js.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec)
			}
		}
		typed = js
	case "Secret":
		s := &corev1.Secret{}
		if err := json.Unmarshal(raw, s); err != nil {
			return normalizedObject{}, err
		}
		for k := range s.Data {
			s.Data[k] = []byte(k)
		}
		dropCopseLabels(&s.Labels)
		typed = s
	case "ConfigMap":
		cm := &corev1.ConfigMap{}
		if err := json.Unmarshal(raw, cm); err != nil {
			return normalizedObject{}, err
		}
		dropCopseLabels(&cm.Labels)
		if snapshot, ok := cm.Data[trainjob.RuntimeSnapshotKey]; ok {
			decoded, err := decodeSnapshot(snapshot)
			if err != nil {
				return normalizedObject{}, err
			}
			cm.Data[trainjob.RuntimeSnapshotKey] = decoded
		}
		typed = cm
	case "PodGroup":
		pg := map[string]any{}
		if err := json.Unmarshal(raw, &pg); err != nil {
			return normalizedObject{}, err
		}
		if metadata, ok := pg["metadata"].(map[string]any); ok {
			if l, ok := metadata["labels"].(map[string]any); ok {
				delete(l, labels.ManagedByKey)
				delete(l, trainjob.TrainJobNameLabel)
				if len(l) == 0 {
					delete(metadata, "labels")
				}
			}
		}
		if spec, ok := pg["spec"].(map[string]any); ok {
			if minResources, ok := spec["minResources"].(map[string]any); ok {
				for name, value := range minResources {
					q, err := resource.ParseQuantity(fmt.Sprint(value))
					if err != nil {
						return normalizedObject{}, fmt.Errorf("%s: minResources[%s]: %w", key, name, err)
					}
					minResources[name] = q.String()
				}
			}
		}
		typed = pg
	default:
		return normalizedObject{}, fmt.Errorf("no normalisation for %s", key)
	}
	encoded, err := json.Marshal(typed)
	if err != nil {
		return normalizedObject{}, err
	}
	out := map[string]any{}
	return normalizedObject{Key: key, JSON: out}, json.Unmarshal(encoded, &out)
}

func sortContainerEnv(spec *corev1.PodSpec) {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			sort.SliceStable(list[i].Env, func(a, b int) bool { return list[i].Env[a].Name < list[i].Env[b].Name })
		}
	}
}

func dropCopseLabels(l *map[string]string) {
	delete(*l, labels.ManagedByKey)
	delete(*l, trainjob.TrainJobNameLabel)
	if len(*l) == 0 {
		*l = nil
	}
}

// decodeSnapshot reduces a runtime snapshot to its kind, name and spec, as
// canonical JSON.
func decodeSnapshot(raw string) (string, error) {
	obj := struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec trainerv1alpha1.TrainingRuntimeSpec `json:"spec"`
	}{}
	if err := yaml.Unmarshal([]byte(raw), &obj); err != nil {
		return "", fmt.Errorf("decode runtime snapshot: %w", err)
	}
	out, err := json.Marshal(obj)
	return string(out), err
}
