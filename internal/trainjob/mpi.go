package trainjob

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// The MPI objects and mounts, named after the TrainJob.
const (
	MPISSHAuthSecretSuffix     = "-mpi-ssh-auth"
	MPIHostfileConfigMapSuffix = "-mpi-hostfile"
	mpiSSHAuthVolume           = "mpi-ssh-auth"
	mpiHostfileVolume          = "mpi-hostfile"
	mpiHostfileDir             = "/etc/mpi"
	mpiHostfileKey             = "hostfile"
	// MPISSHPublicKeyKey is the Secret key of the public key; the private key
	// is under corev1.SSHAuthPrivateKey.
	MPISSHPublicKeyKey = "ssh-publickey"
)

// applyMPI sizes the node job (one less when the launcher also trains), sets
// the slots per node, mounts the SSH keys on launcher and nodes and the
// hostfile on the launcher, and gives the launcher's node container OpenMPI's
// settings.
func applyMPI(p *Plan) error {
	mpi := p.MLPolicy.MPI
	if trainer := p.TrainJob.Spec.Trainer; trainer != nil && trainer.NumNodes != nil {
		if node := p.PodSetNamed(NodeName); node != nil {
			if p.runLauncherAsNode() {
				node.Count = max(*trainer.NumNodes-1, 1)
			} else {
				node.Count = *trainer.NumNodes
			}
		}
	}
	switch trainer := p.TrainJob.Spec.Trainer; {
	case trainer != nil && trainer.NumProcPerNode != nil:
		mpi.NumProcPerNode = ptr.To(*trainer.NumProcPerNode)
	case ptr.Deref(mpi.NumProcPerNode, 1) == 1:
		if gpus := gpusPerNode(p.resourcesPerNode()); gpus > 1 {
			mpi.NumProcPerNode = ptr.To(int32(gpus))
		}
	}
	implementation := ptr.Deref(mpi.MPIImplementation, trainerv1alpha1.MPIImplementationOpenMPI)

	for i := range p.PodSets {
		podSet := &p.PodSets[i]
		if podSet.Name != NodeName && podSet.Name != LauncherName {
			continue
		}
		spec := p.podSpec(podSet)
		upsertVolumes(&spec.Volumes, sshAuthVolume(p.TrainJob.Name))
		if podSet.Name == LauncherName {
			upsertVolumes(&spec.Volumes, hostfileVolume(p.TrainJob.Name))
		}
		for j := range spec.Containers {
			c := &spec.Containers[j]
			if c.Name != NodeName {
				continue
			}
			upsertVolumeMounts(&c.VolumeMounts, corev1.VolumeMount{Name: mpiSSHAuthVolume, MountPath: ptr.Deref(mpi.SSHAuthMountPath, "/root/.ssh")})
			if podSet.Name != LauncherName {
				continue
			}
			upsertVolumeMounts(&c.VolumeMounts, corev1.VolumeMount{Name: mpiHostfileVolume, MountPath: mpiHostfileDir})
			if implementation != trainerv1alpha1.MPIImplementationOpenMPI {
				return &UnsupportedError{Reason: fmt.Sprintf("mlPolicy.mpi.mpiImplementation %q is not supported: only OpenMPI", implementation)}
			}
			upsertEnv(&c.Env,
				valueEnv(OpenMPIEnvHostfile, mpiHostfileDir+"/"+mpiHostfileKey),
				valueEnv(OpenMPIEnvKeepFQDN, "true"),
				valueEnv(OpenMPIEnvDefaultSlots, strconv.Itoa(int(ptr.Deref(mpi.NumProcPerNode, 1)))),
				valueEnv(OpenMPIEnvRSHArgs, openMPIRSHArgs),
			)
		}
	}
	return nil
}

// sshAuthVolume mounts the TrainJob's SSH Secret as the private key, the
// public key and authorized_keys.
func sshAuthVolume(trainJobName string) corev1.Volume {
	return corev1.Volume{
		Name: mpiSSHAuthVolume,
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  trainJobName + MPISSHAuthSecretSuffix,
			DefaultMode: ptr.To[int32](0o400),
			Items: []corev1.KeyToPath{
				{Key: corev1.SSHAuthPrivateKey, Path: "id_rsa", Mode: ptr.To[int32](0o640)},
				{Key: MPISSHPublicKeyKey, Path: "id_rsa.pub", Mode: ptr.To[int32](0o644)},
				{Key: MPISSHPublicKeyKey, Path: "authorized_keys", Mode: ptr.To[int32](0o644)},
			},
		}},
	}
}

func hostfileVolume(trainJobName string) corev1.Volume {
	return corev1.Volume{
		Name: mpiHostfileVolume,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: trainJobName + MPIHostfileConfigMapSuffix},
			Items:                []corev1.KeyToPath{{Key: mpiHostfileKey, Path: mpiHostfileKey, Mode: ptr.To[int32](0o444)}},
		}},
	}
}
