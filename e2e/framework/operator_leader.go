package framework

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

// WaitForLeadership waits until the running operator holds its leader
// Lease, i.e. until its controllers act. Webhooks are served without
// leadership, so StartOperator and Restart do not wait for this; after Kill
// and Restart it takes up to leaseDuration, the time the old holder's Lease
// needs to expire. The wait ends with ctx.
//
// The Lease names no process, so leadership is recognised by a holder that
// acquired the Lease after the current process started; this assumes no
// other operator runs against the cluster.
func (o *Operator) WaitForLeadership(ctx context.Context) error {
	o.mu.Lock()
	proc := o.proc
	o.mu.Unlock()
	if proc == nil {
		return fmt.Errorf("wait for leadership: the operator was never started")
	}
	le := o.config.LeaderElection
	key := client.ObjectKey{Namespace: le.ResourceNamespace, Name: le.ResourceName}
	var last string
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := proc.ExitReason(); err != nil {
			return false, fmt.Errorf("copse-operator exited (%w)", err)
		}
		lease := &coordinationv1.Lease{}
		if err := o.client.Get(ctx, key, lease); err != nil {
			if apierrors.IsNotFound(err) {
				last = "no Lease yet"
				return false, nil
			}
			return false, err
		}
		holder, acquired := lease.Spec.HolderIdentity, lease.Spec.AcquireTime
		switch {
		case holder == nil || *holder == "":
			last = "the Lease has no holder"
		case acquired == nil || acquired.Time.Before(proc.Started().Truncate(time.Microsecond)):
			last = fmt.Sprintf("the Lease is held by %q since before the current operator started", *holder)
		default:
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return o.errorWithLog(fmt.Errorf("wait for leadership of Lease %s: %w (%s)", key, err, last))
	}
	return nil
}

// ShortLeases is an OperatorOptions.Configure for suites that kill the
// operator: a 4s Lease lets the restarted operator lead within seconds
// instead of Kubernetes' default 15.
func ShortLeases(cfg *configv1alpha1.OperatorConfiguration) {
	cfg.LeaderElection.LeaseDuration = metav1.Duration{Duration: 4 * time.Second}
	cfg.LeaderElection.RenewDeadline = metav1.Duration{Duration: 3 * time.Second}
	cfg.LeaderElection.RetryPeriod = metav1.Duration{Duration: 500 * time.Millisecond}
}
