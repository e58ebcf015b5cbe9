package trainjob

import "strconv"

// applyXGBoost configures XGBoost's collective (Rabit): the tracker on the
// trainer's first pod, each pod's task id, and the worker count, one worker
// per GPU or one per node without GPUs.
func applyXGBoost(p *Plan) {
	trainerPodSet := p.TrainerPodSet()
	if trainerPodSet == nil {
		return
	}
	p.overrideTrainerNodeCount()
	if p.TrainJob.Spec.Trainer == nil {
		return
	}
	c := p.trainerContainer()
	if c == nil {
		return
	}
	workersPerNode := int32(1)
	if gpus := gpusPerNode(p.resourcesPerNode()); gpus > 0 {
		workersPerNode = int32(gpus)
	}
	upsertEnv(&c.Env,
		valueEnv(XGBoostEnvTrackerURI, rendezvousHost(p)),
		valueEnv(XGBoostEnvTrackerPort, strconv.Itoa(int(TrainerPort))),
		fieldEnv(XGBoostEnvTaskID, podIndexFieldPath(p)),
		valueEnv(XGBoostEnvNumWorker, strconv.Itoa(int(trainerPodSet.Count*workersPerNode))),
	)
	upsertPorts(&c.Ports, trainerPortSpec())
}
