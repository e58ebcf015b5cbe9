package kueue

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func TestAdmissionInfos(t *testing.T) {
	noSchedule := corev1.Toleration{Key: flavorTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	twoFlavors := func() *kueue.Workload {
		wl := reserved(workloadOf(queued()))
		wl.Status.Admission.PodSetAssignments[0].Flavors["nvidia.com/gpu"] = "gpu-b"
		return wl
	}
	tests := []struct {
		name    string
		wl      *kueue.Workload
		flavors Flavors
		// leader is what the leader's pod set gets.
		leader  PodSetInfo
		wantErr error
		errText string
	}{
		{
			name: "a flavor's node labels and tolerations, and the podset label", wl: reserved(workloadOf(queued())), flavors: flavors(),
			leader: PodSetInfo{Name: "leader", Labels: map[string]string{PodSetLabel: "leader"},
				NodeSelector: map[string]string{flavorLabel: flavorValue}, Tolerations: []corev1.Toleration{noSchedule}},
		},
		{
			name: "two flavors of one pod set: both, each toleration once", wl: twoFlavors(),
			flavors: Flavors{flavorName: flavors()[flavorName], "gpu-b": {NodeLabels: map[string]string{"example.com/gpu": "b"}, Tolerations: []corev1.Toleration{noSchedule}}},
			leader: PodSetInfo{Name: "leader", Labels: map[string]string{PodSetLabel: "leader"},
				NodeSelector: map[string]string{flavorLabel: flavorValue, "example.com/gpu": "b"}, Tolerations: []corev1.Toleration{noSchedule}},
		},
		{
			name: "an admission check's update", wl: withCheck(reserved(workloadOf(queued())), kueue.CheckStateReady), flavors: flavors(),
			leader: PodSetInfo{Name: "leader", Labels: map[string]string{PodSetLabel: "leader"},
				Annotations:  map[string]string{"provisioning/request": "req-1"},
				NodeSelector: map[string]string{flavorLabel: flavorValue, "provisioning/pool": "p1"}, Tolerations: []corev1.Toleration{noSchedule}},
		},
		{
			name: "two flavors that disagree on a node label: a conflict", wl: twoFlavors(),
			flavors: Flavors{flavorName: flavors()[flavorName], "gpu-b": {NodeLabels: map[string]string{flavorLabel: "b"}}},
			wantErr: ErrConflict, errText: `ResourceFlavor "gpu-b" sets nodeSelector[example.com/pool] to "b", but it is "a"`,
		},
		{
			name: "a check that contradicts the flavor: a conflict", flavors: flavors(),
			wl: func() *kueue.Workload {
				wl := withCheck(reserved(workloadOf(queued())), kueue.CheckStateReady)
				wl.Status.AdmissionChecks[0].PodSetUpdates[0].NodeSelector = map[string]string{flavorLabel: "z"}
				return wl
			}(),
			wantErr: ErrConflict, errText: `admission check "provisioning"`,
		},
		{
			name: "a flavor that cannot be read", wl: reserved(workloadOf(queued())), flavors: Flavors{},
			wantErr: ErrFlavorNotFound, errText: `pod set "leader"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			infos, err := AdmissionInfos(tc.wl, tc.flavors)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errText) {
					t.Errorf("error %v, want %v with %q", err, tc.wantErr, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(infos) != 3 {
				t.Fatalf("%d infos, want one per pod set", len(infos))
			}
			if !equality.Semantic.DeepEqual(infos[0], tc.leader) {
				t.Errorf("leader's info\n%+v\nwant\n%+v", infos[0], tc.leader)
			}
			if infos[2].Labels[PodSetLabel] != "worker" {
				t.Errorf("worker's labels %v, want the podset label", infos[2].Labels)
			}
		})
	}
	if infos, err := AdmissionInfos(workloadOf(queued()), flavors()); infos != nil || err != nil {
		t.Errorf("without an admission: %v, %v; want nothing", infos, err)
	}
}

func TestMergeAndRestore(t *testing.T) {
	pcs := queued()
	pcs.Spec.Template.Cliques[0].Spec.PodSpec.NodeSelector = map[string]string{flavorLabel: flavorValue}
	pcs.Spec.Template.Cliques[0].Spec.PodSpec.Tolerations = []corev1.Toleration{{Key: flavorTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	wl := reserved(workloadOf(pcs))
	infos, err := AdmissionInfos(wl, flavors())
	if err != nil {
		t.Fatal(err)
	}
	infos[1].SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/gate"}}

	merged, err := Merge(pcs, infos)
	if err != nil {
		t.Fatal(err)
	}
	leader, prefill := merged.Spec.Template.Cliques[0], merged.Spec.Template.Cliques[1]
	if len(leader.Spec.PodSpec.Tolerations) != 1 || len(leader.Spec.PodSpec.NodeSelector) != 1 {
		t.Errorf("leader: a toleration or node label the template already has was added again: %v %v",
			leader.Spec.PodSpec.Tolerations, leader.Spec.PodSpec.NodeSelector)
	}
	if prefill.Labels[PodSetLabel] != "prefill" || prefill.Labels["app"] != "prefill" || prefill.Spec.PodSpec.SchedulingGates[0].Name != "example.com/gate" {
		t.Errorf("prefill: labels %v, gates %v", prefill.Labels, prefill.Spec.PodSpec.SchedulingGates)
	}
	if _, set := pcs.Spec.Template.Cliques[1].Labels[PodSetLabel]; set {
		t.Error("Merge changed its input")
	}
	if !CarriesAdmission(merged, wl) || CarriesAdmission(pcs, wl) {
		t.Errorf("CarriesAdmission: merged %v, before %v; want true, false", CarriesAdmission(merged, wl), CarriesAdmission(pcs, wl))
	}

	restored, changed := Restore(merged, wl)
	if !changed {
		t.Error("Restore of merged templates changed nothing")
	}
	if !equality.Semantic.DeepEqual(restored.Spec, pcs.Spec) {
		t.Errorf("restored spec differs from the one before the admission:\n%+v\n%+v", restored.Spec.Template.Cliques[1], pcs.Spec.Template.Cliques[1])
	}
	if _, changed := Restore(restored, wl); changed {
		t.Error("Restore of restored templates changed something")
	}
	if CarriesAdmission(restored, wl) {
		t.Error("restored templates still carry the admission")
	}
}

func TestMergeConflicts(t *testing.T) {
	tests := []struct {
		name    string
		infos   []PodSetInfo
		errText string
	}{
		{name: "a key the template sets in another map is no conflict", infos: []PodSetInfo{{Name: "leader", NodeSelector: map[string]string{"app": "x"}}},
			errText: ""},
		{name: "a label the template sets otherwise", infos: []PodSetInfo{{Name: "worker", Labels: map[string]string{"app": "other"}}},
			errText: `spec.template.cliques[2] (clique "worker"): the admission conflicts with the pod template: the admission sets labels[app] to "other", but it is "worker"`},
		{name: "a pod set without a clique", infos: []PodSetInfo{{Name: "ghost"}}, errText: `pod set "ghost", which names no clique`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Merge(queued(), tc.infos)
			if tc.errText == "" {
				if err != nil {
					t.Errorf("a key in another map is no conflict: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("error %v, want a conflict with %q", err, tc.errText)
			}
		})
	}
}

func TestCarriesAdmission(t *testing.T) {
	merged := started(queued())
	rebuilt := workloadOf(merged) // a Workload built from merged templates (the last one was deleted)
	if !CarriesAdmission(merged, nil) {
		t.Error("merged templates without a Workload: want true")
	}
	if CarriesAdmission(merged, rebuilt) {
		t.Error("merged templates and a Workload built from them: nothing to restore, want false")
	}
	if CarriesAdmission(queued(), nil) {
		t.Error("templates never admitted: want false")
	}
}

func TestFlavorNames(t *testing.T) {
	wl := reserved(workloadOf(queued()))
	wl.Status.Admission.PodSetAssignments[1].Flavors["nvidia.com/gpu"] = "a-gpu"
	got := FlavorNames(wl)
	if len(got) != 2 || got[0] != "a-gpu" || got[1] != flavorName {
		t.Errorf("FlavorNames = %v, want [a-gpu %s]", got, flavorName)
	}
	if FlavorNames(workloadOf(queued())) != nil || FlavorNames(nil) != nil {
		t.Error("no admission: want no flavors")
	}
}

func TestPodsReadyCondition(t *testing.T) {
	tests := []struct {
		name       string
		wl         *kueue.Workload
		ready      bool
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{name: "not admitted", wl: pendingIn(workloadOf(queued())), ready: true, wantStatus: metav1.ConditionFalse, wantReason: kueue.WorkloadWaitForStart},
		{name: "admitted, starting", wl: admitted(workloadOf(queued())), wantStatus: metav1.ConditionFalse, wantReason: kueue.WorkloadWaitForStart},
		{name: "admitted, ready", wl: admitted(workloadOf(queued())), ready: true, wantStatus: metav1.ConditionTrue, wantReason: kueue.WorkloadStarted},
		{name: "ready before, not now", wl: podsReady(admitted(workloadOf(queued())), metav1.ConditionTrue, kueue.WorkloadStarted),
			wantStatus: metav1.ConditionFalse, wantReason: kueue.WorkloadWaitForRecovery},
		{name: "still recovering", wl: podsReady(admitted(workloadOf(queued())), metav1.ConditionFalse, kueue.WorkloadWaitForRecovery),
			wantStatus: metav1.ConditionFalse, wantReason: kueue.WorkloadWaitForRecovery},
		{name: "recovered", wl: podsReady(admitted(workloadOf(queued())), metav1.ConditionFalse, kueue.WorkloadWaitForRecovery), ready: true,
			wantStatus: metav1.ConditionTrue, wantReason: kueue.WorkloadRecovered},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PodsReadyCondition(tc.wl, tc.ready, now)
			if got.Type != kueue.WorkloadPodsReady || got.Status != tc.wantStatus || got.Reason != tc.wantReason || got.Message == "" {
				t.Errorf("PodsReady %s/%s %q, want %s/%s", got.Status, got.Reason, got.Message, tc.wantStatus, tc.wantReason)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("x", conditionMessageLimit+10)
	if got := truncate(long); len(got) != conditionMessageLimit || !strings.HasSuffix(got, "...") {
		t.Errorf("truncate gave %d characters", len(got))
	}
	if truncate("short") != "short" {
		t.Error("a short message was changed")
	}
}
