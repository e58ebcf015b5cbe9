package podcliqueset

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/copse-dev/copse/internal/fuzzinput"
	"github.com/copse-dev/copse/internal/podstate"
)

// Bits of the fuzz input's flags for decideRollout.
const (
	rolloutTraining = 1 << iota
	rolloutOnDelete
	rolloutSuspended
	rolloutRecorded    // a hash was recorded
	rolloutNewHash     // the computed hash differs from the recorded one
	rolloutProgress    // an update was recorded
	rolloutEnded       // it ended
	rolloutUpdatingOne // it names the replica being updated
)

// Bits of a replica's and a clique's flags.
const (
	replicaComplete = 1 << iota
	replicaBreached
	replicaAvailable
	replicaRecreating
)

const (
	cliqueBase = 1 << iota
	cliqueSpecCurrent
	cliqueOtherGroup
)

// rolloutReplicasOf reads up to four replicas, numbered from 0 as
// rolloutReplicasOf numbers those below spec.replicas. A replica is three
// bytes (flags, scheduled pods modulo 9, cliques modulo 5) and its cliques,
// six bytes each: flags (in the base gang, the template taken, in scaling
// group "prefill" rather than "decode"), the scaling-group replica (modulo
// 4), minAvailable (modulo 3), the ready pods with the template's hash
// (modulo 4), the old pods (modulo 3) and how many of them are ready. A
// clique outside the base gang is in the gang of its group and group
// replica; pod names are unique.
func fuzzRolloutReplicas(src *fuzzinput.Source) []rolloutReplica {
	var out []rolloutReplica
	for r := range src.Intn(5) {
		flags := src.Byte()
		rep := rolloutReplica{index: r, complete: flags&replicaComplete != 0, breached: flags&replicaBreached != 0,
			available: flags&replicaAvailable != 0, recreating: flags&replicaRecreating != 0, scheduledPods: src.Intn(9)}
		for c := range src.Intn(5) {
			cflags := src.Byte()
			clique := rolloutClique{name: fmt.Sprintf("r%d-c%d", r, c), base: cflags&cliqueBase != 0, specCurrent: cflags&cliqueSpecCurrent != 0,
				group: "decode", groupReplica: src.Intn(4), minAvailable: src.Intn(3), readyUpdated: src.Intn(4)}
			if cflags&cliqueOtherGroup != 0 {
				clique.group = "prefill"
			}
			clique.gang = fmt.Sprintf("r%d-%s-%d", r, clique.group, clique.groupReplica)
			if clique.base {
				clique.gang = fmt.Sprintf("r%d-base", r)
			}
			old := src.Intn(3)
			clique.ready = clique.readyUpdated + src.Intn(old+1)
			for p := range old {
				clique.oldPods = append(clique.oldPods, podstate.Summary{Name: fmt.Sprintf("%s-old-%d", clique.name, p)})
			}
			rep.cliques = append(rep.cliques, clique)
		}
		out = append(out, rep)
	}
	return out
}

// encodeRolloutReplicas is the input fuzzRolloutReplicas reads back as
// replicas (numbered from 0, their cliques' counts within its ranges),
// apart from names.
func encodeRolloutReplicas(replicas []rolloutReplica) []byte {
	out := []byte{byte(len(replicas))}
	bit := func(set bool, b byte) byte {
		if set {
			return b
		}
		return 0
	}
	for _, r := range replicas {
		out = append(out, bit(r.complete, replicaComplete)|bit(r.breached, replicaBreached)|bit(r.available, replicaAvailable)|
			bit(r.recreating, replicaRecreating), byte(r.scheduledPods), byte(len(r.cliques)))
		for _, c := range r.cliques {
			out = append(out, bit(c.base, cliqueBase)|bit(c.specCurrent, cliqueSpecCurrent)|bit(c.group == "prefill", cliqueOtherGroup),
				byte(c.groupReplica), byte(c.minAvailable), byte(c.readyUpdated), byte(len(c.oldPods)), byte(c.ready-c.readyUpdated))
		}
	}
	return out
}

// rolloutInputsOfFuzz builds the inputs: hashes h1 (recorded) and h1 or h2
// (computed); an update started a minute ago, ended or not, naming replica
// updating (which may lie beyond the replicas: scaled in) or none.
func rolloutInputsOfFuzz(flags, updating byte, replicas []byte) rolloutInputs {
	in := rolloutInputs{
		training: flags&rolloutTraining != 0, onDelete: flags&rolloutOnDelete != 0, suspended: flags&rolloutSuspended != 0,
		computedHash: "h1", replicas: fuzzRolloutReplicas(fuzzinput.New(replicas)), now: rolloutNow,
	}
	if flags&rolloutRecorded != 0 {
		in.recordedHash = ptr.To("h1")
	}
	if flags&rolloutNewHash != 0 {
		in.computedHash = "h2"
	}
	if flags&rolloutProgress != 0 {
		started := metav1.NewTime(rolloutNow.Add(-time.Minute))
		in.progress = &grovecorev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: started}
		switch {
		case flags&rolloutEnded != 0:
			ended := metav1.NewTime(rolloutNow.Add(-time.Second))
			in.progress.UpdateEndedAt = &ended
		case flags&rolloutUpdatingOne != 0:
			in.progress.CurrentlyUpdating = []grovecorev1alpha1.PodCliqueSetReplicaUpdateProgress{
				{ReplicaIndex: int32(updating % 6), UpdateStartedAt: started}}
		}
	}
	return in
}

// rolloutSeed is the fuzz input rolloutInputsOfFuzz reads back as in, whose
// hashes are h1 and h1 or h2, and whose progress started before now.
func rolloutSeed(in rolloutInputs) (flags, updating byte, replicas []byte) {
	for _, f := range []struct {
		set  bool
		flag byte
	}{{in.training, rolloutTraining}, {in.onDelete, rolloutOnDelete}, {in.suspended, rolloutSuspended},
		{in.recordedHash != nil, rolloutRecorded}, {in.recordedHash != nil && *in.recordedHash != in.computedHash, rolloutNewHash},
		{in.progress != nil, rolloutProgress}, {in.progress != nil && in.progress.UpdateEndedAt != nil, rolloutEnded},
		{in.progress != nil && len(in.progress.CurrentlyUpdating) > 0, rolloutUpdatingOne}} {
		if f.set {
			flags |= f.flag
		}
	}
	if in.progress != nil && len(in.progress.CurrentlyUpdating) > 0 {
		updating = byte(in.progress.CurrentlyUpdating[0].ReplicaIndex)
	}
	return flags, updating, encodeRolloutReplicas(in.replicas)
}

// FuzzDecideRollout checks decideRollout's promises (see its comment) on
// any replicas, hashes and recorded progress:
//
//   - its inputs are not changed; a Training workload, or a first pass,
//     records the computed hash and changes nothing else;
//   - the hash recorded is the computed one, except while an OnDelete
//     update waits for the PodCliques to take the template; an update
//     starts exactly when that hash differs from the recorded one, now;
//   - OnDelete and a suspended workload delete nothing;
//   - RollingRecreate disturbs one replica at a time: pods are deleted only
//     from the replica recorded as the one being updated, in this pass's
//     progress; a replica that was being updated is left only once it is
//     updated (every PodClique there, with the template, no old pod, every
//     gang available with new pods, the replica available) or once it is
//     gone; the next one is picked as Grove picks (no scheduled pods, then
//     breached, then the lowest index) among those with old pods that are
//     not being recreated;
//   - within the replica: nothing is deleted until every PodClique took the
//     template, and only its old pods, each once; a scaling-group gang only
//     once the base gang has no old pod and is available with new pods; a
//     gang that is available is disturbed alone, while every other gang is
//     available;
//   - an update that completes leaves no replica with old pods (but those
//     being recreated) and names none as being updated.
func FuzzDecideRollout(f *testing.F) {
	earlier := rolloutNow.Add(-time.Minute)
	withAvailable := func(r rolloutReplica, available bool) rolloutReplica { r.available = available; return r }
	withScheduled := func(r rolloutReplica, n int) rolloutReplica { r.scheduledPods = n; return r }
	// Shapes of TestDecideRollout.
	for _, in := range []rolloutInputs{
		{computedHash: "h1", replicas: []rolloutReplica{allNew(0)}},
		{recordedHash: ptr.To("h1"), computedHash: "h2", replicas: []rolloutReplica{allOld(0), allOld(1)}},
		{recordedHash: ptr.To("h1"), computedHash: "h2", replicas: []rolloutReplica{rr(0, "stale", "old", "old", "old"), allOld(1)}},
		{recordedHash: ptr.To("h1"), computedHash: "h1", progress: inProgress(1, earlier),
			replicas: []rolloutReplica{allOld(0), rr(1, "new", "new", "old", "old")}},
		{recordedHash: ptr.To("h1"), computedHash: "h1", progress: inProgress(0, earlier),
			replicas: []rolloutReplica{rr(0, "new", "new", "new", "old"), allOld(1)}},
		{recordedHash: ptr.To("h1"), computedHash: "h1", progress: inProgress(0, earlier),
			replicas: []rolloutReplica{rr(0, "new", "new", "old", "broken"), allOld(1)}},
		{recordedHash: ptr.To("h1"), computedHash: "h1", progress: inProgress(0, earlier), replicas: []rolloutReplica{allNew(0), allOld(1)}},
		{recordedHash: ptr.To("h1"), computedHash: "h1", progress: inProgress(0, earlier),
			replicas: []rolloutReplica{withAvailable(allNew(0), false), allOld(1)}},
		{recordedHash: ptr.To("h1"), computedHash: "h2", replicas: []rolloutReplica{allOld(0), allOld(1), withScheduled(allOld(2), 0)}},
		{recordedHash: ptr.To("h1"), computedHash: "h2", onDelete: true, replicas: []rolloutReplica{allOld(0), rr(1, "old", "old", "old", "stale")}},
		{recordedHash: ptr.To("h1"), computedHash: "h1", progress: inProgress(2, earlier), replicas: []rolloutReplica{allOld(0), allNew(1)}},
		{recordedHash: ptr.To("h1"), computedHash: "h2", training: true, replicas: []rolloutReplica{allOld(0)}},
	} {
		flags, updating, replicas := rolloutSeed(in)
		f.Add(flags, updating, replicas)
	}
	f.Fuzz(func(t *testing.T, flags, updating byte, replicaBytes []byte) {
		in := rolloutInputsOfFuzz(flags, updating, replicaBytes)
		before := in
		before.progress = in.progress.DeepCopy()
		before.replicas = deepCopyReplicas(in.replicas)

		d := decideRollout(in)

		if !reflect.DeepEqual(in.progress, before.progress) || !reflect.DeepEqual(in.replicas, before.replicas) {
			t.Fatal("decideRollout changed its inputs")
		}
		nothing := d.deleteReplica == -1 && len(d.deletePods) == 0 && d.replicaStarted == -1 && d.replicaUpdated == -1 && !d.completed
		if in.training || in.recordedHash == nil {
			if !nothing || d.started || d.hash != in.computedHash || !reflect.DeepEqual(d.progress, in.progress) {
				t.Fatalf("a Training workload or a first pass got %+v", d)
			}
			return
		}
		changed := *in.recordedHash != in.computedHash
		waiting := in.onDelete && changed && !templateTaken(in.replicas)
		if want := map[bool]string{true: *in.recordedHash, false: in.computedHash}[waiting]; d.hash != want {
			t.Fatalf("hash %q recorded, want %q", d.hash, want)
		}
		if d.started != (changed && !waiting) || d.started && (d.progress == nil || !d.progress.UpdateStartedAt.Time.Equal(rolloutNow)) {
			t.Fatalf("started %v with hash %q to %q (waiting %v): progress %+v", d.started, *in.recordedHash, in.computedHash, waiting, d.progress)
		}
		if (in.onDelete || in.suspended) && !nothing {
			t.Fatalf("OnDelete %v, suspended %v, yet %+v", in.onDelete, in.suspended, d)
		}
		if d.progress != nil {
			if len(d.progress.CurrentlyUpdating) > 1 || d.progress.UpdateEndedAt != nil && len(d.progress.CurrentlyUpdating) > 0 {
				t.Fatalf("progress %+v: more than one replica being updated, or one in an ended update", d.progress)
			}
			if d.progress.UpdateEndedAt != nil && d.progress.UpdateEndedAt.Before(&d.progress.UpdateStartedAt) {
				t.Fatalf("progress %+v ends before it starts", d.progress)
			}
		}
		var current int32 = -1
		if d.progress != nil && len(d.progress.CurrentlyUpdating) == 1 {
			current = d.progress.CurrentlyUpdating[0].ReplicaIndex
		}
		wasUpdating := int32(-1)
		if in.progress != nil && in.progress.UpdateEndedAt == nil && len(in.progress.CurrentlyUpdating) == 1 {
			wasUpdating = in.progress.CurrentlyUpdating[0].ReplicaIndex
		}
		previous := replicaByIndex(in.replicas, int(wasUpdating))

		// One replica at a time.
		if len(d.deletePods) > 0 && (d.deleteReplica < 0 || int32(d.deleteReplica) != current) {
			t.Fatalf("pods of replica %d deleted while progress names %d", d.deleteReplica, current)
		}
		if !in.onDelete && previous != nil && current != wasUpdating && d.replicaUpdated != int(wasUpdating) {
			t.Fatalf("replica %d was being updated, is not updated, yet progress names %d", wasUpdating, current)
		}
		if d.replicaUpdated >= 0 {
			if d.replicaUpdated != int(wasUpdating) || previous == nil || !fullyUpdated(*previous) {
				t.Fatalf("replica %d reported updated; it was being updated: %d, its state %+v", d.replicaUpdated, wasUpdating, previous)
			}
		}
		if d.replicaStarted >= 0 {
			next := replicaByIndex(in.replicas, d.replicaStarted)
			if current != int32(d.replicaStarted) || next == nil || next.recreating || !hasOldPods(*next) ||
				d.progress.CurrentlyUpdating[0].UpdateStartedAt.Time != rolloutNow {
				t.Fatalf("replica %d started: progress %+v, its state %+v", d.replicaStarted, d.progress, next)
			}
			for _, other := range in.replicas {
				if !other.recreating && hasOldPods(other) && groveOrder(other) < groveOrder(*next) {
					t.Fatalf("replica %d started before replica %d, which Grove updates first", next.index, other.index)
				}
			}
		}
		if d.completed && (d.progress == nil || d.progress.UpdateEndedAt == nil || slices.ContainsFunc(in.replicas,
			func(r rolloutReplica) bool { return !r.recreating && hasOldPods(r) })) {
			t.Fatalf("completed with progress %+v while a replica has old pods", d.progress)
		}
		if len(d.deletePods) == 0 {
			return
		}

		// Within the replica.
		r := replicaByIndex(in.replicas, d.deleteReplica)
		if r == nil || r.recreating || slices.ContainsFunc(r.cliques, func(c rolloutClique) bool { return !c.specCurrent }) {
			t.Fatalf("pods of replica %d deleted: it is gone, being recreated, or a PodClique has not taken the template: %+v", d.deleteReplica, r)
		}
		gangOf := map[string]string{}
		for _, c := range r.cliques {
			for _, p := range c.oldPods {
				gangOf[p.Name] = c.gang
			}
		}
		deletedGangs := map[string]bool{}
		for i, p := range d.deletePods {
			gang, old := gangOf[p.Name]
			if !old || slices.ContainsFunc(d.deletePods[:i], func(q podstate.Summary) bool { return q.Name == p.Name }) {
				t.Fatalf("deletes %s: not an old pod of replica %d, or deleted twice", p.Name, r.index)
			}
			deletedGangs[gang] = true
		}
		base := fmt.Sprintf("r%d-base", r.index)
		gangs := map[string]rolloutGang{}
		for _, c := range r.cliques {
			gangs[c.gang] = append(gangs[c.gang], c)
		}
		if !deletedGangs[base] {
			if len(gangs[base].oldPods()) > 0 || !gangs[base].available(true) {
				t.Fatalf("deletes scaling-group gangs %v of replica %d before its base gang is available with new pods", deletedGangs, r.index)
			}
		}
		for gang := range deletedGangs {
			if gang == base || !gangs[gang].available(false) {
				continue
			}
			for other, g := range gangs {
				if other != gang && (deletedGangs[other] || !g.available(other == base)) {
					t.Fatalf("disturbs available gang %s of replica %d while gang %s is not available or disturbed too", gang, r.index, other)
				}
			}
		}
	})
}

// fullyUpdated: every PodClique there with the template, no old pod, every
// clique ready with new pods, the replica available.
func fullyUpdated(r rolloutReplica) bool {
	if !r.complete || !r.available || hasOldPods(r) {
		return false
	}
	for _, c := range r.cliques {
		if !c.specCurrent || c.readyUpdated < c.minAvailable {
			return false
		}
	}
	return true
}

// groveOrder ranks a replica as Grove picks the next one to update.
func groveOrder(r rolloutReplica) int {
	rank := r.index
	if r.scheduledPods != 0 {
		rank += 2 << 16
	}
	if !r.breached {
		rank += 1 << 16
	}
	return rank
}

func deepCopyReplicas(replicas []rolloutReplica) []rolloutReplica {
	if replicas == nil {
		return nil
	}
	out := make([]rolloutReplica, len(replicas))
	for i, r := range replicas {
		r.cliques = slices.Clone(r.cliques)
		for j := range r.cliques {
			r.cliques[j].oldPods = slices.Clone(r.cliques[j].oldPods)
		}
		out[i] = r
	}
	return out
}
