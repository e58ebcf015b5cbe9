package trainjob

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// BuildJobSet is the JobSet backend's last step: the JobSet of the plan,
// named as its TrainJob, controlled by it, suspended as it is. Every
// replicated job runs PodSet.Count pods per Job (parallelism and
// completions); the initializer and trainer steps run one Job with the
// TrainJob's overrides (storage URI, env, secret; image, command, args, env).
func BuildJobSet(p *Plan) *jobsetv1alpha2.JobSet {
	spec := *p.Spec.DeepCopy()
	for i := range spec.ReplicatedJobs {
		rjob := &spec.ReplicatedJobs[i]
		rjob.Template.Spec.Parallelism = ptr.To(p.PodSets[i].Count)
		rjob.Template.Spec.Completions = ptr.To(p.PodSets[i].Count)
		switch p.PodSets[i].Ancestor {
		case AncestorDatasetInitializer:
			rjob.Replicas = 1
			if init := p.TrainJob.Spec.Initializer; init != nil && init.Dataset != nil {
				d := init.Dataset
				overrideInitializer(rjob, DatasetInitializerName, d.StorageUri, d.Env, d.SecretRef)
			}
		case AncestorModelInitializer:
			rjob.Replicas = 1
			if init := p.TrainJob.Spec.Initializer; init != nil && init.Model != nil {
				m := init.Model
				overrideInitializer(rjob, ModelInitializerName, m.StorageUri, m.Env, m.SecretRef)
			}
		case AncestorTrainer:
			rjob.Replicas = 1
			overrideTrainer(rjob, p.TrainJob.Spec.Trainer)
		}
		if p.PodSets[i].Ancestor == AncestorTrainer || (p.runLauncherAsNode() && rjob.Name == NodeName) {
			if trainer := p.TrainJob.Spec.Trainer; trainer != nil {
				for j := range rjob.Template.Spec.Template.Spec.Containers {
					if c := &rjob.Template.Spec.Template.Spec.Containers[j]; c.Name == NodeName {
						upsertEnv(&c.Env, userEnv(trainer.Env)...)
					}
				}
			}
		}
		podTemplate := &rjob.Template.Spec.Template
		podTemplate.Labels = mergedInto(podTemplate.Labels, p.PodLabels)
		podTemplate.Annotations = mergedInto(podTemplate.Annotations, p.PodAnnotations)
	}
	spec.Suspend = p.TrainJob.Spec.Suspend
	return &jobsetv1alpha2.JobSet{
		TypeMeta: metav1.TypeMeta{APIVersion: jobsetv1alpha2.GroupVersion.String(), Kind: "JobSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            p.TrainJob.Name,
			Namespace:       p.TrainJob.Namespace,
			Labels:          maps.Clone(p.Labels),
			Annotations:     maps.Clone(p.Annotations),
			OwnerReferences: []metav1.OwnerReference{ControllerReference(p.TrainJob)},
		},
		Spec: spec,
	}
}

// overrideInitializer gives an initializer container the TrainJob's storage
// URI, env and Secret.
func overrideInitializer(rjob *jobsetv1alpha2.ReplicatedJob, container string, storageURI *string, env []corev1.EnvVar, secret *corev1.LocalObjectReference) {
	for j := range rjob.Template.Spec.Template.Spec.Containers {
		c := &rjob.Template.Spec.Template.Spec.Containers[j]
		if c.Name != container {
			continue
		}
		if storageURI != nil {
			upsertEnv(&c.Env, valueEnv(StorageURIEnv, *storageURI))
		}
		upsertEnv(&c.Env, userEnv(env)...)
		if secret != nil {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: *secret}})
		}
	}
}

// overrideTrainer gives the trainer's node container the TrainJob's image,
// command and args.
func overrideTrainer(rjob *jobsetv1alpha2.ReplicatedJob, trainer *trainerv1alpha1.Trainer) {
	if trainer == nil {
		return
	}
	for j := range rjob.Template.Spec.Template.Spec.Containers {
		c := &rjob.Template.Spec.Template.Spec.Containers[j]
		if c.Name != NodeName {
			continue
		}
		if trainer.Image != nil {
			c.Image = *trainer.Image
		}
		if trainer.Command != nil {
			c.Command = trainer.Command
		}
		if trainer.Args != nil {
			c.Args = trainer.Args
		}
	}
}

// mergedInto adds extra to labels (or annotations), allocating only when
// there is something to add.
func mergedInto(base, extra map[string]string) map[string]string {
	if len(extra) == 0 {
		return base
	}
	if base == nil {
		base = map[string]string{}
	}
	maps.Copy(base, extra)
	return base
}

// ControllerReference makes an object owned and controlled by its TrainJob,
// so it is deleted with it and its changes wake the TrainJob's reconciler.
func ControllerReference(trainJob *trainerv1alpha1.TrainJob) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         trainerv1alpha1.SchemeGroupVersion.String(),
		Kind:               "TrainJob",
		Name:               trainJob.Name,
		UID:                trainJob.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}
