package trainjob

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// applyTorch configures torchrun: PET_NNODES, PET_NPROC_PER_NODE and
// PET_NODE_RANK on the trainer's node container and on the runtime's
// envInjection targets, the master address and port (except for torchtune,
// which gets its rendezvous on the command line instead), and the trainer
// port for the headless service.
func applyTorch(p *Plan) error {
	p.overrideTrainerNodeCount()
	resources := p.resourcesPerNode()
	gpus := gpusPerNode(resources)
	procs := procsPerNode{auto: true}
	if trainer := p.TrainJob.Spec.Trainer; trainer != nil && trainer.NumProcPerNode != nil {
		procs = procsPerNode{count: *trainer.NumProcPerNode}
	}
	if procs.auto && gpus == 0 {
		procs = procsPerNode{count: int32(max(1, cpusPerNode(resources)))}
	}

	nodes := trainerCount(p)
	petEnv := []corev1.EnvVar{
		valueEnv(TorchEnvNumNodes, strconv.Itoa(int(nodes))),
		valueEnv(TorchEnvNumProcPerNode, procs.String()),
		fieldEnv(TorchEnvNodeRank, podIndexFieldPath(p)),
	}
	masterEnv := []corev1.EnvVar{
		valueEnv(TorchEnvMasterAddr, rendezvousHost(p)),
		valueEnv(TorchEnvMasterPort, strconv.Itoa(int(TrainerPort))),
	}

	// Kubeflow configures the trainer container only when the TrainJob has a
	// trainer section.
	if trainer := p.TrainJob.Spec.Trainer; trainer != nil {
		if c := p.trainerContainer(); c != nil {
			upsertEnv(&c.Env, userEnv(trainer.Env)...)
			upsertEnv(&c.Env, petEnv...)
			if isTorchTune(trainer.Command) {
				trainer.Command = append(trainer.Command, torchTuneArgs(p, nodes, procs, gpus)...)
			} else {
				upsertEnv(&c.Env, masterEnv...)
			}
			upsertPorts(&c.Ports, trainerPortSpec())
		}
	}

	if injection := p.MLPolicy.Torch.EnvInjection; injection != nil {
		for _, target := range injection.Targets {
			for _, name := range target.ContainerNames {
				c := p.container(p.PodSetNamed(target.JobName), name)
				if c == nil {
					return fmt.Errorf("mlPolicy.torch.envInjection: container %q of replicated job %q is not in the runtime template", name, target.JobName)
				}
				upsertEnv(&c.Env, petEnv...)
				upsertEnv(&c.Env, masterEnv...)
			}
		}
	}
	return nil
}

// procsPerNode is torchrun's --nproc-per-node: a count, or "auto" (one per
// GPU, decided by torchrun).
type procsPerNode struct {
	auto  bool
	count int32
}

func (n procsPerNode) String() string {
	if n.auto {
		return "auto"
	}
	return strconv.Itoa(int(n.count))
}

// torchTuneEntrypoint is the trainer command that makes a TrainJob a
// torchtune run.
var torchTuneEntrypoint = []string{"tune", "run"}

func isTorchTune(command []string) bool {
	return slices.Equal(command, torchTuneEntrypoint)
}
