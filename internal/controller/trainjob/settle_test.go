package trainjob

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

func TestClassifyRefusal(t *testing.T) {
	pcsResource := schema.GroupResource{Group: "grove.io", Resource: "podcliquesets"}
	// What the API server answers, as it answers it.
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "grove.io", Kind: "PodCliqueSet"}, "tj",
		field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), "tj", "generated pod hostnames would be 69 characters")})
	deniedByJobSet := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403,
		Reason:  metav1.StatusReasonForbidden,
		Message: `admission webhook "vjobset.kb.io" denied the request: JobSet name is too long, job names generated for this JobSet will exceed 63 characters`}}
	quota := apierrors.NewForbidden(pcsResource, "tj", errors.New("exceeded quota: pcs, requested: count/podcliquesets.grove.io=1, used: count/podcliquesets.grove.io=0, limited: count/podcliquesets.grove.io=0"))
	quotaNotCounted := apierrors.NewForbidden(pcsResource, "tj", errors.New("status unknown for quota: pcs, resources: count/podcliquesets.grove.io"))
	terminating := apierrors.NewForbidden(pcsResource, "tj", errors.New("unable to create new content in namespace ml because it is being terminated"))
	webhookDown := apierrors.NewInternalError(errors.New(`failed calling webhook "vpodcliqueset.copse.dev": connection refused`))
	cases := []struct {
		name      string
		op        writeOp
		err       error
		suspended bool
		want      backendRefusal
	}{
		{"invalid (a PodCliqueSet webhook refusal): terminal", opCreate, invalid, false,
			backendRefusal{Terminal: true, Reason: trainerv1alpha1.TrainJobBackendRejectedReason}},
		{"invalid while suspended, on create: terminal (the name will not change)", opCreate, invalid, true,
			backendRefusal{Terminal: true, Reason: trainerv1alpha1.TrainJobBackendRejectedReason}},
		{"denied by JobSet's webhook (Forbidden): terminal", opCreate, deniedByJobSet, false,
			backendRefusal{Terminal: true, Reason: trainerv1alpha1.TrainJobBackendRejectedReason}},
		{"a rebuild refused while the TrainJob runs: terminal", opUpdate, invalid, false,
			backendRefusal{Terminal: true, Reason: trainerv1alpha1.TrainJobBackendRejectedReason}},
		{"a rebuild refused while the TrainJob is suspended: its patches may still change", opUpdate, invalid, true,
			backendRefusal{Reason: reasonRebuildRefused, Retry: refusalRetry}},
		{"a rebuild denied by a webhook while suspended: the same", opUpdate, deniedByJobSet, true,
			backendRefusal{Reason: reasonRebuildRefused, Retry: refusalRetry}},
		{"a ResourceQuota without room: retried", opCreate, quota, false,
			backendRefusal{Reason: reasonResourceQuota, Retry: refusalRetry}},
		{"a ResourceQuota whose usage is not counted yet: retried", opCreate, quotaNotCounted, false,
			backendRefusal{Reason: reasonResourceQuota, Retry: refusalRetry}},
		{"another Forbidden (a namespace being deleted): retried", opCreate, terminating, false,
			backendRefusal{Reason: reasonForbidden, Retry: refusalRetry}},
		{"a conflict: retried at once", opUpdate, apierrors.NewConflict(pcsResource, "tj", errors.New("the object has been modified")), false,
			backendRefusal{Reason: reasonConflict, Retry: conflictRetry}},
		{"already exists: retried at once", opCreate, apierrors.NewAlreadyExists(pcsResource, "tj"), false,
			backendRefusal{Reason: reasonConflict, Retry: conflictRetry}},
		{"a webhook that cannot be called: retried", opCreate, webhookDown, false,
			backendRefusal{Reason: reasonServerUnavailable, Retry: refusalRetry}},
		{"unavailable: retried", opCreate, apierrors.NewServiceUnavailable("etcd is down"), false,
			backendRefusal{Reason: reasonServerUnavailable, Retry: refusalRetry}},
		{"throttled: retried", opCreate, apierrors.NewTooManyRequests("slow down", 1), false,
			backendRefusal{Reason: reasonServerUnavailable, Retry: refusalRetry}},
		{"an error without a status (the connection): retried", opCreate, fmt.Errorf("dial tcp: connection refused"), false,
			backendRefusal{Reason: reasonServerUnavailable, Retry: refusalRetry}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := classifyRefusal(&refusedWrite{op: tc.op, kind: "PodCliqueSet", name: "tj", err: tc.err}, tc.suspended)
			if !strings.Contains(got.Message, fmt.Sprintf("the API server refused to %s PodCliqueSet tj: %s", tc.op, tc.err.Error())) {
				t.Errorf("message %q does not name the object and quote the API server", got.Message)
			}
			got.Message = ""
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("classifyRefusal (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRefusedWriteIsFoundThroughWrapping(t *testing.T) {
	err := fmt.Errorf("apply: %w", refused(opCreate, "PodCliqueSet", "tj", apierrors.NewServiceUnavailable("down")))
	write, ok := asRefusedWrite(err)
	if !ok || write.kind != "PodCliqueSet" || write.op != opCreate {
		t.Fatalf("asRefusedWrite(%v) = %+v, %v", err, write, ok)
	}
	if refused(opCreate, "PodCliqueSet", "tj", nil) != nil {
		t.Error("refused(nil) is not nil")
	}
}

func TestRecordRefusal(t *testing.T) {
	transient := backendRefusal{Reason: reasonResourceQuota, Message: "the API server refused to create PodCliqueSet tj: exceeded quota"}
	terminal := backendRefusal{Terminal: true, Reason: trainerv1alpha1.TrainJobBackendRejectedReason, Message: "the API server refused to create PodCliqueSet tj: invalid"}

	status := trainerv1alpha1.TrainJobStatus{}
	recordRefusal(&status, transient, at(1))
	got := meta.FindStatusCondition(status.Conditions, trainerv1alpha1.TrainJobBackendRefused)
	if got == nil || got.Status != metav1.ConditionTrue || got.Reason != reasonResourceQuota || got.Message != transient.Message {
		t.Fatalf("BackendRefused = %+v, want True/ResourceQuota quoting the API server", got)
	}
	if finished(status) {
		t.Fatal("a transient refusal finished the TrainJob")
	}

	again := transient
	again.Reason, again.Message = reasonConflict, "the API server refused to create PodCliqueSet tj: conflict"
	recordRefusal(&status, again, at(9))
	got = meta.FindStatusCondition(status.Conditions, trainerv1alpha1.TrainJobBackendRefused)
	if got.Reason != reasonConflict || !got.LastTransitionTime.Time.Equal(at(1)) {
		t.Errorf("a second refusal: %+v, want the new reason and the first transition time %v", got, at(1))
	}

	recordRefusal(&status, terminal, at(20))
	if c := meta.FindStatusCondition(status.Conditions, trainerv1alpha1.TrainJobFailed); c == nil ||
		c.Reason != trainerv1alpha1.TrainJobBackendRejectedReason || c.Message != terminal.Message || !c.LastTransitionTime.Time.Equal(at(20)) {
		t.Errorf("Failed = %+v, want True/BackendRejected at %v quoting the API server", c, at(20))
	}
	if meta.FindStatusCondition(status.Conditions, trainerv1alpha1.TrainJobBackendRefused) != nil {
		t.Error("BackendRefused stays after the terminal refusal")
	}
}
