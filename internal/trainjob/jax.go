package trainjob

import (
	"fmt"
	"strconv"
)

// applyJAX configures jax.distributed: the process count, each pod's process
// id and the coordinator on the trainer's first pod. Kubeflow leaves the
// TrainJob's env to the JobSet step here, so it comes after JAX's.
func applyJAX(p *Plan) {
	p.overrideTrainerNodeCount()
	if p.TrainJob.Spec.Trainer == nil {
		return
	}
	c := p.trainerContainer()
	if c == nil {
		return
	}
	upsertEnv(&c.Env,
		valueEnv(jaxEnvNumProcesses, strconv.Itoa(int(trainerCount(p)))),
		fieldEnv(jaxEnvProcessID, podIndexFieldPath(p)),
		valueEnv(jaxEnvCoordinatorAddr, fmt.Sprintf("%s:%d", rendezvousHost(p), TrainerPort)),
	)
	upsertPorts(&c.Ports, trainerPortSpec())
}
