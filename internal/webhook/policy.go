package webhook

import admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

// FailurePolicy is how the API server treats a request when it cannot get
// an answer from a copse webhook (the operator is stopped, unreachable, or
// too slow): Fail refuses the request.
//
// Why not Ignore: an object admitted without the mutating webhook lacks the
// defaults the controllers rely on, and one admitted without validation may
// break the Training rules (immutable replica counts and pod templates) or
// the gang structure, or be far larger than the operator's limits allow.
// Those fields are immutable afterwards, so such an object could not be
// repaired. Refusing the write until the operator is back is the safe
// outcome; MatchConditions and the rules (grove.io kinds only) keep the
// refusal to creations and spec changes of copse's own objects.
const FailurePolicy = admissionregistrationv1.Fail

// TimeoutSeconds is how long the API server waits for a copse webhook before
// it applies FailurePolicy. A stopped operator is normally refused at once
// (connection refused, or a Service without endpoints); the timeout is the
// bound for the rest (a hung operator, a network that drops packets), and
// is what a `kubectl apply` waits at most before it gets an error. The
// webhooks need a few milliseconds, plus at most one read from the API
// server for an owner, so five seconds leave a wide margin while keeping
// that wait short. The Helm chart's default webhook.timeoutSeconds and the
// e2e framework's registrations use this value (charts/copse/chart_test.go
// checks the chart).
const TimeoutSeconds int32 = 5
