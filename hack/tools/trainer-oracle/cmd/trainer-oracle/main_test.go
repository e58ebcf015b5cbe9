package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// runOracle runs the command line with input and decodes its output.
func runOracle(t *testing.T, input any, out any, args ...string) {
	t.Helper()
	var stdin bytes.Buffer
	if input != nil {
		if err := json.NewEncoder(&stdin).Encode(input); err != nil {
			t.Fatal(err)
		}
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), args, &stdin, &stdout); err != nil {
		t.Fatalf("trainer-oracle %s: %v", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("trainer-oracle %s printed no JSON: %v\n%s", strings.Join(args, " "), err, stdout.String())
	}
}

// object is a decoded output object.
type object = map[string]any

func name(o object) string { return o["metadata"].(object)["name"].(string) }

// shipped returns the runtimes the oracle prints, by name.
func shipped(t *testing.T, args ...string) map[string]object {
	t.Helper()
	var runtimes []object
	runOracle(t, nil, &runtimes, append([]string{"runtimes"}, args...)...)
	byName := map[string]object{}
	for _, rt := range runtimes {
		byName[name(rt)] = rt
	}
	return byName
}

func trainJob(jobName, runtimeName string, trainer object) object {
	return object{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "TrainJob",
		"metadata":   object{"name": jobName, "namespace": "team-a"},
		"spec":       object{"runtimeRef": object{"name": runtimeName}, "trainer": trainer},
	}
}

// result is a decoded build result.
type result struct {
	Name     string
	Objects  []object
	Warnings []string
	Stage    string
	Error    string
}

func (r result) find(t *testing.T, kind, objName string) object {
	t.Helper()
	for _, o := range r.Objects {
		if o["kind"] == kind && name(o) == objName {
			return o
		}
	}
	var have []string
	for _, o := range r.Objects {
		have = append(have, o["kind"].(string)+"/"+name(o))
	}
	t.Fatalf("case %s: no %s %q among the objects %v", r.Name, kind, objName, have)
	return nil
}

// at walks obj along path (map keys and slice indexes).
func at(t *testing.T, obj any, path ...any) any {
	t.Helper()
	for _, step := range path {
		switch s := step.(type) {
		case string:
			m, ok := obj.(object)
			if !ok {
				t.Fatalf("%v: %q of a %T", path, s, obj)
			}
			obj = m[s]
		case int:
			l, ok := obj.([]any)
			if !ok || s >= len(l) {
				t.Fatalf("%v: [%d] of %v", path, s, obj)
			}
			obj = l[s]
		}
	}
	return obj
}

func TestBuild(t *testing.T) {
	runtimes := shipped(t)
	torch, deepspeed := runtimes["torch-distributed"], runtimes["deepspeed-distributed"]
	if torch == nil || deepspeed == nil {
		t.Fatalf("the shipped runtimes lack torch-distributed or deepspeed-distributed: %v", slices.Sorted(func(yield func(string) bool) {
			for n := range runtimes {
				yield(n)
			}
		}))
	}
	cases := []object{
		{"name": "torch", "runtime": torch, "trainJob": trainJob("llm", "torch-distributed", object{"numNodes": 2})},
		{"name": "mpi", "runtime": deepspeed, "trainJob": trainJob("ds", "deepspeed-distributed", object{"numNodes": 2})},
		{"name": "mpi-secret-exists", "runtime": deepspeed, "trainJob": trainJob("ds", "deepspeed-distributed", object{"numNodes": 2}),
			"existing": []object{{"apiVersion": "v1", "kind": "Secret", "metadata": object{"name": "ds-mpi-ssh-auth", "namespace": "team-a"}}}},
		{"name": "reserved-env", "runtime": torch, "trainJob": trainJob("bad", "torch-distributed", object{
			"numNodes": 2, "env": []object{{"name": "PET_NNODES", "value": "3"}}})},
	}
	var results []result
	runOracle(t, cases, &results, "build")
	if len(results) != len(cases) {
		t.Fatalf("%d results for %d cases", len(results), len(cases))
	}
	for i, r := range results {
		if r.Name != cases[i]["name"] {
			t.Errorf("result %d is named %q, want %q", i, r.Name, cases[i]["name"])
		}
	}

	torchResult := results[0]
	if torchResult.Error != "" {
		t.Fatalf("torch: %s: %s", torchResult.Stage, torchResult.Error)
	}
	jobSet := torchResult.find(t, "JobSet", "llm")
	node := at(t, jobSet, "spec", "replicatedJobs", 0).(object)
	if node["name"] != "node" {
		t.Fatalf("first replicated job is %v, want node", node["name"])
	}
	if p := at(t, node, "template", "spec", "parallelism"); p != 2.0 {
		t.Errorf("node parallelism %v, want 2", p)
	}
	var container object
	for _, c := range at(t, node, "template", "spec", "template", "spec", "containers").([]any) {
		if c.(object)["name"] == "node" {
			container = c.(object)
		}
	}
	if container == nil {
		t.Fatal("no container node in the node job")
	}
	env := map[string]any{}
	for _, e := range container["env"].([]any) {
		env[e.(object)["name"].(string)] = e.(object)["value"]
	}
	if env["PET_NNODES"] != "2" {
		t.Errorf("PET_NNODES = %v, want 2 (env %v)", env["PET_NNODES"], env)
	}
	if env["PET_MASTER_ADDR"] != "llm-node-0-0.llm" {
		t.Errorf("PET_MASTER_ADDR = %v, want llm-node-0-0.llm", env["PET_MASTER_ADDR"])
	}
	snapshot := torchResult.find(t, "ConfigMap", "llm-runtime-snapshot")
	if data := at(t, snapshot, "data", "runtime").(string); !strings.Contains(data, "kind: ClusterTrainingRuntime") || !strings.Contains(data, "name: torch-distributed") {
		t.Errorf("the runtime snapshot does not hold the runtime with its kind:\n%s", data)
	}
	uid := at(t, jobSet, "metadata", "ownerReferences", 0, "uid")
	if uid == nil || uid == "" {
		t.Error("the JobSet's owner reference has no TrainJob uid")
	}

	mpi := results[1]
	if mpi.Error != "" {
		t.Fatalf("mpi: %s: %s", mpi.Stage, mpi.Error)
	}
	secret := mpi.find(t, "Secret", "ds-mpi-ssh-auth")
	if at(t, secret, "data", "ssh-privatekey") == nil {
		t.Error("the MPI Secret has no private key")
	}
	hostfile := mpi.find(t, "ConfigMap", "ds-mpi-hostfile")
	if hosts := at(t, hostfile, "data", "hostfile").(string); !strings.Contains(hosts, "ds-node-0-0.ds slots=") {
		t.Errorf("hostfile %q lacks the node", hosts)
	}
	mpi.find(t, "JobSet", "ds")

	for _, o := range results[2].Objects {
		if o["kind"] == "Secret" {
			t.Errorf("an existing MPI Secret is immutable and not rebuilt, got %v", name(o))
		}
	}
	results[2].find(t, "ConfigMap", "ds-mpi-hostfile")

	bad := results[3]
	if bad.Stage != stageTrainJob || !strings.Contains(bad.Error, "PET_NNODES") || len(bad.Objects) != 0 {
		t.Errorf("reserved env: stage %q, error %q, %d objects; want the TrainJob refused over PET_NNODES, no objects",
			bad.Stage, bad.Error, len(bad.Objects))
	}
}

func TestBuildAppliesTheCRDsAsTheAPIServerDoes(t *testing.T) {
	torch := shipped(t)["torch-distributed"]
	longName := strings.Repeat("a", 64)
	withUnknownField := trainJob("extra", "torch-distributed", object{"numNodes": 1, "gpus": 8})
	cases := []object{
		{"name": "long-name", "runtime": torch, "trainJob": trainJob(longName, "torch-distributed", object{})},
		{"name": "unknown-field", "runtime": torch, "trainJob": withUnknownField},
		{"name": "no-runtime", "trainJob": withUnknownField},
	}
	var results []result
	runOracle(t, cases, &results, "build")
	if r := results[0]; r.Stage != stageTrainJob || !strings.Contains(r.Error, "no more than 63 characters") {
		t.Errorf("a 64-character name: stage %q, error %q; want the CRD's CEL rule to refuse it", r.Stage, r.Error)
	}
	if r := results[1]; r.Error != "" || !slices.Contains(r.Warnings, `unknown field "spec.trainer.gpus"`) {
		t.Errorf("an unknown field: error %q, warnings %q; want it dropped with a warning", r.Error, r.Warnings)
	}
	if r := results[2]; r.Stage != stageRuntime || !strings.Contains(r.Error, "missing") {
		t.Errorf("no runtime: stage %q, error %q", r.Stage, r.Error)
	}
}

func TestRuntimes(t *testing.T) {
	installed, base := shipped(t), shipped(t, "--base")
	want := []string{
		"deepspeed-distributed", "jax-distributed", "mlx-distributed", "torch-distributed",
		"torch-distributed-with-cache", "torchtune-llama3.2-1b", "torchtune-llama3.2-3b",
		"torchtune-qwen2.5-1.5b", "xgboost-distributed",
	}
	for _, runtimes := range []map[string]object{installed, base} {
		var names []string
		for n, rt := range runtimes {
			names = append(names, n)
			if rt["kind"] != "ClusterTrainingRuntime" {
				t.Errorf("%s is a %v", n, rt["kind"])
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Errorf("runtimes %v, want %v", names, want)
		}
	}
	labels := func(rt object) object { return at(t, rt, "metadata", "labels").(object) }
	if l := labels(installed["torch-distributed"])[webhookValidationLabel]; l != "disabled" {
		t.Errorf("installed torch-distributed has %s=%v, want disabled (overlays/runtimes)", webhookValidationLabel, l)
	}
	if _, ok := labels(base["torch-distributed"])[webhookValidationLabel]; ok {
		t.Errorf("base torch-distributed has %s", webhookValidationLabel)
	}
	image := func(rt object) any {
		return at(t, rt, "spec", "template", "spec", "replicatedJobs", 0, "template", "spec", "template", "spec", "containers", 0, "image")
	}
	if img := image(installed["xgboost-distributed"]); img != "ghcr.io/kubeflow/trainer/xgboost-runtime:v2.3.0" {
		t.Errorf("installed xgboost image %v, want the overlay's v2.3.0 tag", img)
	}
	if img := image(base["xgboost-distributed"]); img != "ghcr.io/kubeflow/trainer/xgboost-runtime" {
		t.Errorf("base xgboost image %v, want it untagged", img)
	}
}

func TestKustomizeImage(t *testing.T) {
	for _, tc := range []struct {
		img   kustomizeImage
		image string
		want  string
	}{
		{kustomizeImage{Name: "ghcr.io/a/b", NewTag: "v2"}, "ghcr.io/a/b", "ghcr.io/a/b:v2"},
		{kustomizeImage{Name: "ghcr.io/a/b", NewTag: "v2"}, "ghcr.io/a/b:v1", "ghcr.io/a/b:v2"},
		{kustomizeImage{Name: "ghcr.io/a/b", NewTag: "v2"}, "ghcr.io/a/bc:v1", "ghcr.io/a/bc:v1"},
		{kustomizeImage{Name: "localhost:5000/b", NewName: "r.io/b"}, "localhost:5000/b:v1", "r.io/b:v1"},
		{kustomizeImage{Name: "b", Digest: "sha256:00"}, "b:v1", "b@sha256:00"},
		{kustomizeImage{Name: "b", NewName: "c"}, "b@sha256:11", "c@sha256:11"},
	} {
		if got := tc.img.apply(tc.image); got != tc.want {
			t.Errorf("%+v on %s = %s, want %s", tc.img, tc.image, got, tc.want)
		}
	}
}

func TestEscapeModulePath(t *testing.T) {
	if got := escapeModulePath("github.com/BurntSushi/toml"); got != "github.com/!burnt!sushi/toml" {
		t.Errorf("escapeModulePath = %s", got)
	}
}

func TestFill(t *testing.T) {
	var objects []json.RawMessage
	runOracle(t, nil, &objects, "fill", "--seed", "3", "--iterations", "2")
	if len(objects) != 2*len(filledKinds) {
		t.Fatalf("%d objects, want 2 of each of %d kinds", len(objects), len(filledKinds))
	}
	for i, raw := range objects {
		k := filledKinds[i/2]
		var generic object
		if err := json.Unmarshal(raw, &generic); err != nil {
			t.Fatal(err)
		}
		if generic["apiVersion"] != "trainer.kubeflow.org/v1alpha1" || generic["kind"] != k.kind {
			t.Errorf("object %d is %v %v, want trainer.kubeflow.org/v1alpha1 %s", i, generic["apiVersion"], generic["kind"], k.kind)
		}
		typed := k.new()
		decoder := json.NewDecoder(bytes.NewReader(raw))
		decoder.DisallowUnknownFields()
		if err := decoder.Decode(typed); err != nil {
			t.Fatalf("object %d (%s) does not decode strictly into Trainer's type: %v", i, k.kind, err)
		}
		if err := everyFieldSet(reflect.ValueOf(typed).Elem(), k.kind); err != nil {
			t.Errorf("object %d decoded: %v", i, err)
		}
	}

	// Fields deep in the objects, of the types that need fill functions.
	var trainJob, runtime object
	if err := json.Unmarshal(objects[0], &trainJob); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(objects[4], &runtime); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, at(t, trainJob, "status", "trainerStatus", "lastUpdatedTime").(string)); err != nil {
		t.Errorf("trainerStatus.lastUpdatedTime: %v", err)
	}
	if tier, ok := at(t, runtime, "spec", "podGroupPolicy", "volcano", "networkTopology", "highestTierAllowed").(float64); !ok || tier < 1 {
		t.Errorf("highestTierAllowed = %v, want a positive number", tier)
	}
	container := at(t, runtime, "spec", "template", "spec", "replicatedJobs", 0, "template", "spec", "template", "spec", "containers", 0).(object)
	for name, quantity := range at(t, container, "resources", "limits").(object) {
		if q, err := resource.ParseQuantity(quantity.(string)); err != nil || q.String() != quantity {
			t.Errorf("limits[%s] = %v, want a canonical quantity (%v)", name, quantity, err)
		}
	}

	// Object i of a kind is filled from seed+i, the same on every run.
	var again, fromSeed4 []json.RawMessage
	runOracle(t, nil, &again, "fill", "--seed", "3", "--iterations", "2")
	runOracle(t, nil, &fromSeed4, "fill", "--seed", "4", "--iterations", "1")
	for i := range objects {
		if !bytes.Equal(objects[i], again[i]) {
			t.Errorf("object %d differs between two runs with the same seed", i)
		}
	}
	if !bytes.Equal(objects[1], fromSeed4[0]) {
		t.Error("the second TrainJob from seed 3 is not the first from seed 4")
	}
	if bytes.Equal(objects[0], objects[1]) {
		t.Error("seeds 3 and 4 fill the same TrainJob")
	}

	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"fill", "--iterations", "0"}, nil, &stdout); !errors.Is(err, errUsage) {
		t.Errorf("fill --iterations 0: %v, want a usage error", err)
	}
}

func TestEveryFieldSet(t *testing.T) {
	filled := func() *trainer.TrainJob {
		tj := &trainer.TrainJob{}
		fullFiller(1, serializer.NewCodecFactory(apiruntime.NewScheme())).Fill(tj)
		setZeroScalars(reflect.ValueOf(tj).Elem(), rand.New(rand.NewSource(1)))
		if err := everyFieldSet(reflect.ValueOf(tj).Elem(), "TrainJob"); err != nil {
			t.Fatalf("a filled TrainJob: %v", err)
		}
		return tj
	}
	for _, tc := range []struct {
		name  string
		clear func(*trainer.TrainJob)
		want  string // the path everyFieldSet names; empty: no error
	}{
		{"nil slice", func(tj *trainer.TrainJob) { tj.Status.TrainerStatus.Metrics = nil }, "TrainJob.Status.TrainerStatus.Metrics"},
		{"empty string", func(tj *trainer.TrainJob) { tj.Spec.RuntimeRef.Name = "" }, "TrainJob.Spec.RuntimeRef.Name"},
		{"false bool", func(tj *trainer.TrainJob) { *tj.Spec.Suspend = false }, "TrainJob.Spec.Suspend"},
		{"nil pointer", func(tj *trainer.TrainJob) { tj.Spec.Trainer.NumNodes = nil }, "TrainJob.Spec.Trainer.NumNodes"},
		{"zero time", func(tj *trainer.TrainJob) { tj.Status.TrainerStatus.LastUpdatedTime = metav1.Time{} }, "TrainJob.Status.TrainerStatus.LastUpdatedTime"},
		{"empty map value", func(tj *trainer.TrainJob) {
			for name := range tj.Spec.Trainer.ResourcesPerNode.Limits {
				tj.Spec.Trainer.ResourcesPerNode.Limits[name] = resource.Quantity{}
			}
		}, "TrainJob.Spec.Trainer.ResourcesPerNode.Limits["},
		{"object metadata is Kubernetes'", func(tj *trainer.TrainJob) { tj.Labels, tj.Kind = nil, "" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tj := filled()
			tc.clear(tj)
			err := everyFieldSet(reflect.ValueOf(tj).Elem(), "TrainJob")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

func TestCRDs(t *testing.T) {
	var crds []object
	runOracle(t, nil, &crds, "crds")
	var names []string
	for _, crd := range crds {
		names = append(names, name(crd))
	}
	want := []string{"clustertrainingruntimes.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org", "trainjobs.trainer.kubeflow.org"}
	if !slices.Equal(names, want) {
		t.Fatalf("CRDs %v, want %v", names, want)
	}
	if scope := at(t, crds[0], "spec", "scope"); scope != "Cluster" {
		t.Errorf("ClusterTrainingRuntime scope %v", scope)
	}
	if kind := at(t, crds[2], "spec", "names", "kind"); kind != "TrainJob" {
		t.Errorf("trainjobs kind %v", kind)
	}

	// Each is its YAML file as it is.
	dir, err := trainerModuleDir("")
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		file := filepath.Join(trainerCRDDir(dir), "trainer.kubeflow.org_"+strings.TrimSuffix(name(crd), ".trainer.kubeflow.org")+".yaml")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var fromFile object
		if err := yaml.Unmarshal(data, &fromFile); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(crd, fromFile) {
			t.Errorf("crds prints %s other than %s holds", name(crd), file)
		}
		var typed apiextensionsv1.CustomResourceDefinition
		raw, _ := json.Marshal(crd)
		decoder := json.NewDecoder(bytes.NewReader(raw))
		decoder.DisallowUnknownFields()
		if err := decoder.Decode(&typed); err != nil {
			t.Errorf("%s is not a CustomResourceDefinition: %v", name(crd), err)
		}
	}
}
