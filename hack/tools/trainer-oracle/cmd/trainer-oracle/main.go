// Command trainer-oracle runs Kubeflow Trainer's own code (the version
// pinned by this tools module's go.mod) to say what Trainer builds for a
// TrainJob, so that copse's TrainJob front-end can be compared with it. It
// is a separate module because Trainer's dependencies (Kubernetes 0.36,
// controller-runtime 0.24) clash with copse's.
//
//	trainer-oracle build    [--trainer-dir DIR] [--feature-gates GATES] < cases.json > results.json
//	trainer-oracle runtimes [--trainer-dir DIR] [--base]                             > runtimes.json
//	trainer-oracle fill     [--seed N] [--iterations K]                              > objects.json
//	trainer-oracle crds     [--trainer-dir DIR]                                      > crds.json
//
// Trainer's manifests (CRDs, controller configuration, runtimes) are read
// at run time from the Trainer module in the Go module cache, found from
// the binary's build information and $GOMODCACHE (else `go env
// GOMODCACHE`, else $GOPATH/pkg/mod, else ~/go/pkg/mod); --trainer-dir
// names another copy of the module.
//
// # build
//
// Standard input is a JSON array of cases:
//
//	[{"name":     "any label, echoed back",
//	  "runtime":  {full TrainingRuntime or ClusterTrainingRuntime, apiVersion trainer.kubeflow.org/v1alpha1},
//	  "trainJob": {full TrainJob, apiVersion trainer.kubeflow.org/v1alpha1},
//	  "existing": [optional: objects already in the cluster, any kind of Trainer's scheme
//	               (core, JobSet, scheduler-plugins and Volcano PodGroup, Trainer's kinds),
//	               e.g. the MPI Secret of an earlier reconcile, a JobSet, a PriorityClass]}]
//
// Standard output is a JSON array with one result per case, in order:
//
//	[{"name":     "the case's name",
//	  "objects":  [every object Trainer's controller applies for the TrainJob, as the
//	               full JSON of its apply configuration (apiVersion, kind, metadata, ...)],
//	  "warnings": ["what the API server would warn of: unknown fields it dropped,
//	               webhook warnings (deprecated runtime), a TrainJob Trainer skips"],
//	  "stage":    "input" | "runtime" | "trainJob" | "build", when the case failed,
//	  "error":    "why it failed (absent when it did not)"}]
//
// Each case runs in a fresh cluster emulation:
//
//  1. The runtime is created as the API server would create it with
//     Trainer's CRDs (manifests/base/crds) installed: unknown fields
//     pruned, the CRD schema's defaults applied, the schema and its CEL
//     rules validated (apiextensions-apiserver's own code), then Trainer's
//     runtime validating webhook, unless the runtime is labelled
//     trainer.kubeflow.org/webhook-validation=disabled (the webhook's
//     objectSelector in Trainer's manifests). A refusal ends the case with
//     stage "runtime".
//  2. The runtime and the existing objects are put into a controller-runtime
//     fake client (existing objects as given, without defaulting), which
//     stands for the controller manager's cache-backed client. Trainer's
//     runtimes are created on it with runtime/core.New, with the
//     configuration Trainer ships (manifests/base/manager) and its feature
//     gates, then --feature-gates. (With TrainJobStatus=true Trainer also
//     reads its webhook certificate Secret, kubeflow-trainer-webhook-cert in
//     namespace kubeflow-system: give it in existing, or the build fails.)
//  3. The TrainJob is created the same way: pruned and defaulted, mutated
//     as Trainer's mutating webhook does (spec.runtimePatches[].time set to
//     now), defaulted again, validated against the CRD, then by Trainer's
//     validating webhook logic (the runtime's ValidateObjects, which runs
//     the framework's custom validation plugins). A refusal ends the case
//     with stage "trainJob". A missing metadata.namespace is "default".
//  4. As TrainJobReconciler does: a TrainJob whose spec.managedBy is not
//     Trainer's controller gets no objects (and a warning); otherwise the
//     runtime its runtimeRef names builds them with NewObjects, which reads
//     the runtime (and writes its snapshot) and runs Trainer's framework
//     with all its plugins. An error ends the case with stage "build".
//
// objects lists, in this order, what the runtime applied itself during
// NewObjects, which in Trainer v2.3.0 is the runtime snapshot ConfigMap
// "<trainJob>-runtime-snapshot" (data.runtime: the runtime's YAML, written
// on the first reconcile of a TrainJob; an "existing" snapshot ConfigMap
// owned by the TrainJob's UID is used instead of the case's runtime and not
// rewritten), then the objects NewObjects returned, which the controller
// applies: the JobSet (absent when an existing JobSet is not suspended and
// the TrainJob is not suspended), for MPI runtimes the Secret
// "<trainJob>-mpi-ssh-auth" (absent when it exists) and the ConfigMap
// "<trainJob>-mpi-hostfile", for Flux the ConfigMap and curve Secret, for a
// coscheduling or Volcano podGroupPolicy the PodGroup (absent when it exists
// and the TrainJob is not suspended).
//
// Nothing is normalised. What differs between runs:
//   - metadata.uid of the TrainJob, when the input has none, is random as an
//     API server's is; it is in the ownerReferences of every object, and the
//     Flux curve Secret's keys derive from it. A uid (and
//     creationTimestamp) given in the input is kept, unlike a real server,
//     so that a caller can reproduce the objects of a TrainJob it created
//     elsewhere. The same holds for the runtime.
//   - The MPI Secret's ssh-privatekey and ssh-publickey are a fresh ECDSA
//     P-521 key pair.
//   - The snapshot ConfigMap's data.runtime is the stored runtime's YAML
//     with apiVersion and kind, and its metadata as this emulation stores
//     it: uid (random unless given), creationTimestamp (now unless given),
//     generation 1, and the fake client's resourceVersion ("999"); no
//     managedFields, which a real cluster's would have.
//   - spec.runtimePatches[].time, which the mutating webhook sets, is the
//     current time; no built object carries it.
//   - The order of objects after the snapshot: Trainer keeps its plugins in
//     a Go map, so the order of the objects they build varies from run to
//     run. Match objects by apiVersion, kind and name.
//
// The exit status is 0 when every case ran (whatever its result), 1 when
// the oracle itself failed (unreadable input, Trainer's module not found),
// 2 for bad usage.
//
// # runtimes
//
// Standard output is a JSON array of every ClusterTrainingRuntime in
// Trainer's manifests/base/runtimes (including torchtune/ and data-cache/),
// sorted by name, as full objects, as installed by the kustomizations under
// manifests/overlays: v2.3.0's overlays add the label
// trainer.kubeflow.org/webhook-validation=disabled (overlays/runtimes) and
// pin the tags of Trainer's images to v2.3.0. --base prints the base files
// as they are instead. The command fails if a kustomization would change
// the runtimes in a way it does not interpret (patches, other
// transformers), or if a runtime file is installed by no kustomization.
//
// # fill
//
// Standard output is a JSON array, one object a line, of Trainer's
// TrainJob, TrainingRuntime, ClusterTrainingRuntime, TrainJobList,
// TrainingRuntimeList and ClusterTrainingRuntimeList, in that order,
// --iterations of each kind, as Trainer's Go types encode them. Object i of
// a kind is filled from seed --seed+i with sigs.k8s.io/randfill, so the
// output is the same on every run. Every field is set: no nil pointer, no
// empty slice or map (one or two elements), no zero string, bool or number,
// down to the Kubernetes and JobSet types Trainer embeds; object and list
// metadata are filled by apimachinery's meta fuzzer, which leaves some of
// their fields unset. Values are random but valid JSON of their type:
// canonical quantities, times in whole seconds. The command fails if a
// field is left zero, or if an object's JSON is not what it decodes back to
// through Trainer's type (decoded strictly, encoded again). Each object has
// apiVersion trainer.kubeflow.org/v1alpha1 and its kind; list items have
// none.
//
// # crds
//
// Standard output is a JSON array of the CustomResourceDefinitions in
// Trainer's manifests/base/crds, sorted by name, each converted from its
// YAML as it is.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

const usage = `usage:
  trainer-oracle build    [--trainer-dir DIR] [--feature-gates GATES] < cases.json
  trainer-oracle runtimes [--trainer-dir DIR] [--base]
  trainer-oracle fill     [--seed N] [--iterations K]
  trainer-oracle crds     [--trainer-dir DIR]

Run "trainer-oracle <command> -h" for the flags; see the package
documentation (go doc) for the JSON protocol.
`

// errUsage marks errors of the command line.
var errUsage = errors.New("usage")

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "trainer-oracle: %v\n\n%s", err, usage)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "trainer-oracle:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	// Trainer's code logs through controller-runtime and klog; the protocol
	// owns standard output and errors go to the results.
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	switch cmd, args := args[0], args[1:]; cmd {
	case "build":
		return runBuild(ctx, args, stdin, stdout)
	case "runtimes":
		return runRuntimes(args, stdout)
	case "fill":
		return runFill(args, stdout)
	case "crds":
		return runCRDs(args, stdout)
	case "-h", "--help", "help":
		_, err := fmt.Fprint(stdout, usage)
		return err
	default:
		return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
}

func runBuild(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	featureGates := fs.String("feature-gates", "", "Trainer feature gates, as Trainer's --feature-gates flag (e.g. TrainJobStatus=true)")
	moduleDir, err := parseCommand(fs, args)
	if err != nil {
		return err
	}
	var cases []buildCase
	decoder := json.NewDecoder(stdin)
	if err := decoder.Decode(&cases); err != nil {
		return fmt.Errorf("read the cases (a JSON array) from standard input: %w", err)
	}
	o, err := newOracle(ctx, moduleDir, *featureGates, func() string {
		return time.Now().UTC().Format(time.RFC3339)
	})
	if err != nil {
		return err
	}
	results := make([]buildResult, 0, len(cases))
	for _, c := range cases {
		results = append(results, o.build(ctx, c))
	}
	return writeJSON(stdout, results)
}

func runRuntimes(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("runtimes", flag.ContinueOnError)
	base := fs.Bool("base", false, "print the runtimes of manifests/base/runtimes as they are, without the overlays' changes")
	moduleDir, err := parseCommand(fs, args)
	if err != nil {
		return err
	}
	runtimes, err := shippedRuntimes(moduleDir, *base)
	if err != nil {
		return fmt.Errorf("Trainer's runtimes: %w", err)
	}
	return writeJSON(stdout, runtimes)
}

// parseCommand adds --trainer-dir to the flags of a command, parses its
// arguments (flags only: input comes on standard input) and returns Trainer's
// module directory.
func parseCommand(fs *flag.FlagSet, args []string) (string, error) {
	trainerDir := fs.String("trainer-dir", "", "Trainer module directory (default: the module this binary was built from, in the Go module cache)")
	if err := fs.Parse(args); err != nil {
		return "", fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return "", fmt.Errorf("%w: %s takes no arguments (%q); its input, if any, comes on standard input", errUsage, fs.Name(), fs.Args())
	}
	return trainerModuleDir(*trainerDir)
}

func writeJSON(w io.Writer, v any) error {
	encoder := json.NewEncoder(w)
	encoder.SetIndent("", "  ")
	return encoder.Encode(v)
}
