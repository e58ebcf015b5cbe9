package podcliqueset

import (
	"errors"
	"fmt"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Error codes reported in status.lastErrors, one per reconcile step.
const (
	errCodeRecreateReplica grovecorev1alpha1.ErrorCode = "ERR_RECREATE_REPLICA"
	errCodeSyncChildren    grovecorev1alpha1.ErrorCode = "ERR_SYNC_CHILDREN"
	errCodeTerminatePods   grovecorev1alpha1.ErrorCode = "ERR_TERMINATE_PODS"
	errCodeRollingUpdate   grovecorev1alpha1.ErrorCode = "ERR_ROLLING_UPDATE"
)

// stepFailures collects the errors of one reconcile pass by step, so that
// status.lastErrors says which step failed and the pass still returns an
// error to be retried.
type stepFailures struct {
	codes []grovecorev1alpha1.ErrorCode
	errs  []error
}

func (f *stepFailures) add(code grovecorev1alpha1.ErrorCode, err error) {
	if err == nil {
		return
	}
	f.codes = append(f.codes, code)
	f.errs = append(f.errs, err)
}

func (f stepFailures) err() error {
	if len(f.errs) == 0 {
		return nil
	}
	wrapped := make([]error, len(f.errs))
	for i, err := range f.errs {
		wrapped[i] = fmt.Errorf("%s: %w", f.codes[i], err)
	}
	return errors.Join(wrapped...)
}

// lastErrors is status.lastErrors for this pass; empty when it succeeded.
// An error already reported keeps its first observation time, so a failing
// step retried with backoff does not rewrite status on every attempt.
func (f stepFailures) lastErrors(previous []grovecorev1alpha1.LastError, now time.Time) []grovecorev1alpha1.LastError {
	var out []grovecorev1alpha1.LastError
	for i, err := range f.errs {
		observedAt := metav1.NewTime(now)
		for _, p := range previous {
			if p.Code == f.codes[i] && p.Description == err.Error() {
				observedAt = p.ObservedAt
			}
		}
		out = append(out, grovecorev1alpha1.LastError{Code: f.codes[i], Description: err.Error(), ObservedAt: observedAt})
	}
	return out
}
