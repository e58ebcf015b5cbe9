package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	schedulerpluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configapi "github.com/kubeflow/trainer/v2/pkg/apis/config/v1alpha1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconfig "github.com/kubeflow/trainer/v2/pkg/config"
	jobruntimes "github.com/kubeflow/trainer/v2/pkg/runtime"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	"github.com/kubeflow/trainer/v2/pkg/util/trainjob"
	"github.com/kubeflow/trainer/v2/pkg/webhooks"
)

// buildCase is one element of build's input.
type buildCase struct {
	Name     string            `json:"name"`
	Runtime  json.RawMessage   `json:"runtime"`
	TrainJob json.RawMessage   `json:"trainJob"`
	Existing []json.RawMessage `json:"existing,omitempty"`
}

// Stages at which a case can fail (buildResult.Stage).
const (
	stageInput    = "input"    // the case itself is malformed
	stageRuntime  = "runtime"  // the API server would refuse the runtime
	stageTrainJob = "trainJob" // the API server would refuse the TrainJob
	stageBuild    = "build"    // Trainer's controller fails to build the objects
)

// buildResult is one element of build's output.
type buildResult struct {
	Name     string            `json:"name"`
	Objects  []json.RawMessage `json:"objects"`
	Warnings []string          `json:"warnings,omitempty"`
	Stage    string            `json:"stage,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// webhookValidationLabel is the label whose value "disabled" exempts a
// runtime from Trainer's runtime validating webhooks: the objectSelector
// Trainer's manifests (base/webhook/patch_validating.yaml) put on them.
const webhookValidationLabel = "trainer.kubeflow.org/webhook-validation"

// oracle holds what every case shares.
type oracle struct {
	scheme  *apiruntime.Scheme
	decoder apiruntime.Decoder
	crds    *crdAPI
	config  *configapi.Configuration
	indexes []fieldIndex
	now     func() string
}

// fieldIndex is one IndexField call of Trainer's runtimes.
type fieldIndex struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

// indexRecorder is a client.FieldIndexer that records the indexes asked of
// it, to give them to the fake clients.
type indexRecorder struct{ indexes []fieldIndex }

func (r *indexRecorder) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	r.indexes = append(r.indexes, fieldIndex{obj: obj, field: field, extract: extract})
	return nil
}

// indexesRegistered is a client.FieldIndexer for a fake client that already
// has every index.
type indexesRegistered struct{}

func (indexesRegistered) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	return nil
}

// newOracle loads Trainer's CRDs and controller configuration from its
// module directory, applies its feature gates (the configuration's, then
// featureGates, like Trainer's --feature-gates flag), and learns the field
// indexes Trainer's runtimes register.
func newOracle(ctx context.Context, moduleDir, featureGates string, now func() string) (*oracle, error) {
	scheme := apiruntime.NewScheme()
	// The scheme of Trainer's controller manager (cmd/trainer-controller-manager).
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(configapi.AddToScheme(scheme))
	utilruntime.Must(trainer.AddToScheme(scheme))
	utilruntime.Must(jobsetv1alpha2.AddToScheme(scheme))
	utilruntime.Must(schedulerpluginsv1alpha1.AddToScheme(scheme))
	utilruntime.Must(volcanov1beta1.AddToScheme(scheme))

	crds, err := loadCRDs(trainerCRDDir(moduleDir))
	if err != nil {
		return nil, fmt.Errorf("load Trainer's CRDs: %w", err)
	}
	configFile := filepath.Join(moduleDir, "manifests", "base", "manager", "controller_manager_config.yaml")
	_, cfg, err := trainerconfig.Load(scheme, configFile)
	if err != nil {
		return nil, fmt.Errorf("load Trainer's controller configuration %s: %w", configFile, err)
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(cfg.FeatureGates); err != nil {
		return nil, fmt.Errorf("feature gates of %s: %w", configFile, err)
	}
	if featureGates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(featureGates); err != nil {
			return nil, fmt.Errorf("--feature-gates: %w", err)
		}
	}

	o := &oracle{
		scheme:  scheme,
		decoder: serializer.NewCodecFactory(scheme).UniversalDeserializer(),
		crds:    crds,
		config:  &cfg,
		now:     now,
	}
	// The fake client takes its indexes when it is built, Trainer's runtimes
	// register theirs when they are created with the client: a first
	// creation learns them.
	recorder := &indexRecorder{}
	if _, err := runtimecore.New(ctx, fake.NewClientBuilder().WithScheme(scheme).Build(), recorder, o.config); err != nil {
		return nil, fmt.Errorf("initialize Trainer's runtimes: %w", err)
	}
	o.indexes = recorder.indexes
	return o, nil
}

// build runs one case; failures are reported in the result.
func (o *oracle) build(ctx context.Context, c buildCase) buildResult {
	result := buildResult{Name: c.Name, Objects: []json.RawMessage{}}
	fail := func(stage string, err error) buildResult {
		result.Stage, result.Error = stage, err.Error()
		return result
	}

	// The runtime and the other objects, as they are in the cluster.
	runtimeObj, warnings, err := o.createRuntime(ctx, c.Runtime)
	result.Warnings = append(result.Warnings, warnings...)
	if err != nil {
		return fail(stageRuntime, err)
	}
	stored := []client.Object{runtimeObj}
	for i, raw := range c.Existing {
		obj, err := o.decodeExisting(raw)
		if err != nil {
			return fail(stageInput, fmt.Errorf("existing[%d]: %w", i, err))
		}
		stored = append(stored, obj)
	}

	var applied []json.RawMessage
	var applyErr error
	cl := o.newClient(stored, func(obj apiruntime.ApplyConfiguration) {
		data, err := json.Marshal(obj)
		if err != nil && applyErr == nil {
			applyErr = fmt.Errorf("encode applied %T: %w", obj, err)
		}
		applied = append(applied, data)
	})
	runtimes, err := runtimecore.New(ctx, cl, indexesRegistered{}, o.config)
	if err != nil {
		return fail(stageBuild, fmt.Errorf("initialize Trainer's runtimes: %w", err))
	}

	trainJob, warnings, err := o.createTrainJob(ctx, c.TrainJob, runtimes)
	result.Warnings = append(result.Warnings, warnings...)
	if err != nil {
		return fail(stageTrainJob, err)
	}
	if err := cl.Create(ctx, trainJob.DeepCopy()); err != nil {
		return fail(stageInput, fmt.Errorf("store the TrainJob: %w", err))
	}

	// What TrainJobReconciler.Reconcile does before it builds.
	if trainjob.IsManagedByExternalController(trainJob) {
		result.Warnings = append(result.Warnings, fmt.Sprintf("spec.managedBy is %q: Trainer's controller builds nothing", *trainJob.Spec.ManagedBy))
		return result
	}
	registryKey := jobruntimes.RuntimeRefToRuntimeRegistryKey(trainJob.Spec.RuntimeRef)
	jobRuntime, ok := runtimes[registryKey]
	if !ok {
		return fail(stageBuild, fmt.Errorf("unsupported runtime: %s", registryKey))
	}
	if trainjob.IsTrainJobFinished(trainJob) {
		result.Warnings = append(result.Warnings, "the TrainJob is finished: Trainer's controller builds nothing")
		return result
	}
	objects, err := jobRuntime.NewObjects(ctx, trainJob)
	if err == nil {
		err = applyErr
	}
	if err != nil {
		return fail(stageBuild, err)
	}
	// Objects the runtime applied itself (the runtime snapshot ConfigMap)
	// come first: they are applied before the returned ones.
	result.Objects = append(result.Objects, applied...)
	for _, obj := range objects {
		data, err := json.Marshal(obj)
		if err != nil {
			return fail(stageBuild, fmt.Errorf("encode %T: %w", obj, err))
		}
		result.Objects = append(result.Objects, data)
	}
	for i, data := range result.Objects {
		var typeMeta struct{ APIVersion, Kind string }
		if err := json.Unmarshal(data, &typeMeta); err != nil || typeMeta.APIVersion == "" || typeMeta.Kind == "" {
			return fail(stageBuild, fmt.Errorf("object %d that Trainer applies has no apiVersion and kind: %s", i, data))
		}
	}
	return result
}

// newClient is the client Trainer's runtimes read the cluster with: a fake
// client holding objs. It behaves as the manager's cache-backed client
// does, which Trainer uses: typed objects it returns carry their apiVersion
// and kind (the fake client clears them, the cache sets them; the runtime
// snapshot serializes them). Every server-side apply goes to applied too.
func (o *oracle) newClient(objs []client.Object, applied func(apiruntime.ApplyConfiguration)) client.Client {
	builder := fake.NewClientBuilder().WithScheme(o.scheme).WithObjects(objs...)
	for _, idx := range o.indexes {
		builder = builder.WithIndex(idx.obj, idx.field, idx.extract)
	}
	return builder.WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if _, isUnstructured := obj.(*unstructured.Unstructured); !isUnstructured {
				gvk, err := apiutil.GVKForObject(obj, o.scheme)
				if err != nil {
					return err
				}
				obj.GetObjectKind().SetGroupVersionKind(gvk)
			}
			return nil
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj apiruntime.ApplyConfiguration, opts ...client.ApplyOption) error {
			applied(obj)
			return c.Apply(ctx, obj, opts...)
		},
	}).Build()
}

// createRuntime creates the case's runtime as the API server and Trainer's
// runtime validating webhooks would.
func (o *oracle) createRuntime(ctx context.Context, raw json.RawMessage) (client.Object, []string, error) {
	u, kind, err := o.customResource(raw, trainer.TrainingRuntimeKind, trainer.ClusterTrainingRuntimeKind)
	if err != nil {
		return nil, nil, fmt.Errorf("runtime: %w", err)
	}
	stored, warnings, err := kind.create(ctx, u, admission{validate: func(ctx context.Context, u *unstructured.Unstructured) ([]string, error) {
		if u.GetLabels()[webhookValidationLabel] == "disabled" {
			return nil, nil
		}
		switch u.GetKind() {
		case trainer.TrainingRuntimeKind:
			var rt trainer.TrainingRuntime
			if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &rt); err != nil {
				return nil, err
			}
			return (&webhooks.TrainingRuntimeValidator{}).ValidateCreate(ctx, &rt)
		default:
			var rt trainer.ClusterTrainingRuntime
			if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &rt); err != nil {
				return nil, err
			}
			return (&webhooks.ClusterTrainingRuntimeValidator{}).ValidateCreate(ctx, &rt)
		}
	}})
	if err != nil {
		return nil, warnings, fmt.Errorf("runtime: %w", err)
	}
	obj, err := o.scheme.New(stored.GroupVersionKind())
	if err != nil {
		return nil, warnings, err
	}
	if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(stored.Object, obj); err != nil {
		return nil, warnings, fmt.Errorf("runtime: %w", err)
	}
	return obj.(client.Object), warnings, nil
}

// createTrainJob creates the case's TrainJob as the API server and
// Trainer's TrainJob webhooks would, and returns it as Trainer's controller
// reads it.
func (o *oracle) createTrainJob(ctx context.Context, raw json.RawMessage, runtimes map[string]jobruntimes.Runtime) (*trainer.TrainJob, []string, error) {
	u, kind, err := o.customResource(raw, trainer.TrainJobKind)
	if err != nil {
		return nil, nil, fmt.Errorf("trainJob: %w", err)
	}
	stored, warnings, err := kind.create(ctx, u, admission{
		mutate: o.defaultRuntimePatchTimes,
		validate: func(ctx context.Context, u *unstructured.Unstructured) ([]string, error) {
			var tj trainer.TrainJob
			if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &tj); err != nil {
				return nil, err
			}
			// What webhooks.TrainJobValidator.ValidateCreate does; the
			// validator cannot be built outside its package.
			registryKey := jobruntimes.RuntimeRefToRuntimeRegistryKey(tj.Spec.RuntimeRef)
			jobRuntime, ok := runtimes[registryKey]
			if !ok {
				return nil, fmt.Errorf("unsupported runtime: %s", registryKey)
			}
			warnings, errs := jobRuntime.ValidateObjects(ctx, nil, &tj)
			return warnings, errs.ToAggregate()
		},
	})
	if err != nil {
		return nil, warnings, fmt.Errorf("trainJob: %w", err)
	}
	var tj trainer.TrainJob
	if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(stored.Object, &tj); err != nil {
		return nil, warnings, fmt.Errorf("trainJob: %w", err)
	}
	return &tj, warnings, nil
}

// defaultRuntimePatchTimes is the effect of Trainer's TrainJob mutating
// webhook (webhooks.TrainJobDefaulter) on a create: every runtime patch
// without a time gets the current time. The defaulter itself cannot be
// built outside its package (its clock is unexported).
func (o *oracle) defaultRuntimePatchTimes(u *unstructured.Unstructured) error {
	patches, found, err := unstructured.NestedSlice(u.Object, "spec", "runtimePatches")
	if err != nil || !found {
		return err
	}
	for i, p := range patches {
		patch, ok := p.(map[string]any)
		if !ok {
			return fmt.Errorf("spec.runtimePatches[%d] is not an object", i)
		}
		if t, ok := patch["time"]; !ok || t == nil {
			patch["time"] = o.now()
		}
	}
	return unstructured.SetNestedSlice(u.Object, patches, "spec", "runtimePatches")
}

// customResource decodes raw as one of Trainer's kinds.
func (o *oracle) customResource(raw json.RawMessage, kinds ...string) (*unstructured.Unstructured, *crdKind, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, fmt.Errorf("missing (want one of kinds %v)", kinds)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, nil, err
	}
	kind, err := o.crds.kind(u)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range kinds {
		if u.GetKind() == k {
			return u, kind, nil
		}
	}
	return nil, nil, fmt.Errorf("kind %q is not one of %v", u.GetKind(), kinds)
}

// decodeExisting decodes an object of the cluster (any kind of Trainer's
// scheme), stored as it is given.
func (o *oracle) decodeExisting(raw json.RawMessage) (client.Object, error) {
	obj, _, err := o.decoder.Decode(raw, nil, nil)
	if err != nil {
		return nil, err
	}
	co, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not an object", obj)
	}
	return co, nil
}
