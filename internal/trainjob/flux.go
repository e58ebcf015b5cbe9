package trainjob

// Kubeflow's Flux policy installs Flux from its own broker, init and
// entrypoint scripts; copse has none of its own yet, and a Flux runtime
// without them would not start Flux. The TrainJob fails with reason
// TrainingRuntimeNotSupported instead of running something else.
func applyFlux(*Plan) error {
	return &UnsupportedError{Reason: "mlPolicy.flux is not supported by copse yet"}
}
