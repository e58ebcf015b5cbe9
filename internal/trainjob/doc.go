// Package trainjob turns a TrainJob and its runtime into the objects that run
// it, as Kubeflow Trainer v2.3.0 does, in pure functions of plain values.
//
// The build is a pipeline shared by every backend up to its last step:
//
//  1. NewPlan: the runtime's JobSet template with the TrainJob's runtime
//     patches merged in, resourcesPerNode applied, and one PodSet per
//     replicated job (its ancestor step and pod count).
//  2. The ML policy (plainml, torch with torchtune, mpi, jax, xgboost, flux)
//     adds its environment, ports, volumes and objects to the plan.
//  3. The pod group policy (workload) adds the scheduling groups.
//  4. The backend's network step names every pod (Endpoints), which the MPI
//     hostfile lists.
//  5. The backend emits its objects: BuildJobSet for the JobSet backend.
//
// Where Kubeflow's order of steps is random (its plugins run in Go map order),
// copse picks one order and says so at the step.
package trainjob
