package trainjob

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ApplyMLPolicy runs the runtime's ML policy over the plan: the trainer node
// count from the TrainJob, the framework's environment and ports, and for MPI
// its SSH and hostfile volumes. A runtime without a framework (or with
// XGBoost or Flux) also gets the plain step: node count and trainer env.
//
// Kubeflow runs its plain step and the XGBoost and Flux steps in Go map
// order; copse runs the plain step first, so the TrainJob's env comes before
// the framework's.
func ApplyMLPolicy(p *Plan) error {
	policy := p.MLPolicy
	if policy == nil || (policy.Torch == nil && policy.MPI == nil && policy.JAX == nil) {
		applyPlain(p)
	}
	if policy == nil {
		return nil
	}
	switch {
	case policy.Torch != nil:
		return applyTorch(p)
	case policy.MPI != nil:
		return applyMPI(p)
	case policy.JAX != nil:
		applyJAX(p)
	case policy.XGBoost != nil:
		applyXGBoost(p)
	case policy.Flux != nil:
		return applyFlux(p)
	}
	return nil
}

// applyPlain sizes the trainer and gives its node container the TrainJob's env.
func applyPlain(p *Plan) {
	p.overrideTrainerNodeCount()
	if trainer := p.TrainJob.Spec.Trainer; trainer != nil {
		if c := p.trainerContainer(); c != nil {
			upsertEnv(&c.Env, userEnv(trainer.Env)...)
		}
	}
}

// gpusPerNode is the GPU count of one node's resources: the first resource
// whose name contains "gpu", requests before limits.
func gpusPerNode(resources corev1.ResourceRequirements) int {
	if n := gpuCount(resources.Requests); n > 0 {
		return n
	}
	return gpuCount(resources.Limits)
}

func gpuCount(list corev1.ResourceList) int {
	for name, quantity := range list {
		if strings.Contains(strings.ToLower(string(name)), "gpu") {
			return int(quantity.Value())
		}
	}
	return 0
}

// cpusPerNode is the whole CPUs one node requests, else its limit, else 0.
func cpusPerNode(resources corev1.ResourceRequirements) int {
	if request := resources.Requests.Cpu(); request != nil && !request.IsZero() {
		return int(request.Value())
	}
	if limit := resources.Limits.Cpu(); limit != nil {
		return int(limit.Value())
	}
	return 0
}

func trainerPortSpec() corev1.ContainerPort {
	return corev1.ContainerPort{ContainerPort: TrainerPort}
}

// trainerCount is the trainer PodSet's pod count, 1 without a trainer step.
func trainerCount(p *Plan) int32 {
	if ps := p.TrainerPodSet(); ps != nil {
		return ps.Count
	}
	return 1
}
