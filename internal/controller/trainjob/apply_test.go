package trainjob

import "testing"

func TestDecideRebuild(t *testing.T) {
	cases := []struct {
		name string
		in   rebuildInputs
		want rebuildStep
	}{
		{"as built: nothing",
			rebuildInputs{TrainJobSuspended: true, ExistingSuspended: true, TemplatesMutable: true}, rebuildNone},
		{"running and the TrainJob too: never changed under its pods",
			rebuildInputs{BuildChanged: true, TemplatesMutable: true}, rebuildNone},
		{"JobSet being suspended with a changed template: one write (JobSet takes it)",
			rebuildInputs{BuildChanged: true, TrainJobSuspended: true, TemplatesMutable: true}, rebuildAll},
		{"suspend alone on a running PodCliqueSet: at once",
			rebuildInputs{BuildChanged: true, OnlySuspendChanged: true, TrainJobSuspended: true}, rebuildAll},
		{"resume alone while the suspended PodCliqueSet's pods still go away: at once",
			rebuildInputs{BuildChanged: true, OnlySuspendChanged: true, ExistingSuspended: true}, rebuildAll},
		{"Kueue stopped the TrainJob and cleared its patch before copse saw either: suspend first",
			rebuildInputs{BuildChanged: true, TrainJobSuspended: true}, rebuildSuspendFirst},
		{"suspended PodCliqueSet whose pods still go away, patch changed: wait for them",
			rebuildInputs{BuildChanged: true, TrainJobSuspended: true, ExistingSuspended: true}, rebuildWaitForPods},
		{"suspended PodCliqueSet with no run in progress, patch changed: rebuilt",
			rebuildInputs{BuildChanged: true, TrainJobSuspended: true, ExistingSuspended: true, TemplatesMutable: true}, rebuildAll},
		{"admitted (patch set and resumed at once) while the pods of the last run still go away: wait",
			rebuildInputs{BuildChanged: true, ExistingSuspended: true}, rebuildWaitForPods},
		{"admitted with no run in progress: patch and resume in one write",
			rebuildInputs{BuildChanged: true, ExistingSuspended: true, TemplatesMutable: true}, rebuildAll},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideRebuild(tc.in); got != tc.want {
				t.Errorf("decideRebuild(%+v) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}
