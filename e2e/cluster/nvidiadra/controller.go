package nvidiadra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// fieldManager names the driver in managedFields.
const fieldManager = managerName

// resyncPeriod bounds how long a missed event can delay a sync.
const resyncPeriod = 30 * time.Second

// Run installs the ComputeDomain CRD and the channel DeviceClass, then keeps
// the node slices and every ComputeDomain in sync until ctx ends. Once the
// first full sync is done, healthAddr (if set) answers /healthz with 200.
func Run(ctx context.Context, cfg *rest.Config, healthAddr string, log *slog.Logger) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("apiextensions client: %w", err)
	}
	var ready atomic.Bool
	if healthAddr != "" {
		if err := serveHealth(ctx, healthAddr, &ready); err != nil {
			return err
		}
	}
	if err := install(ctx, kube, ext); err != nil {
		return err
	}
	log.Info("installed the ComputeDomain CRD and the channel DeviceClass", "crd", CRDName, "deviceClass", ChannelDeviceClass)

	c := newController(kube, dyn, log)
	c.start(ctx)
	if err := c.syncAll(ctx); err != nil {
		return fmt.Errorf("first sync: %w", err)
	}
	ready.Store(true)
	log.Info("ready")
	c.loop(ctx)
	return nil
}

func serveHealth(ctx context.Context, addr string, ready *atomic.Bool) error {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("health endpoint: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "first sync not done", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = server.Serve(listener) }()
	go func() {
		<-ctx.Done()
		_ = server.Close()
	}()
	return nil
}

// install applies the CRD, waits until it is served, and applies the
// DeviceClass.
func install(ctx context.Context, kube kubernetes.Interface, ext apiextensionsclient.Interface) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(CRDYAML, &crd); err != nil {
		return fmt.Errorf("decode the ComputeDomain CRD: %w", err)
	}
	crd.APIVersion, crd.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
	body, err := json.Marshal(&crd)
	if err != nil {
		return fmt.Errorf("encode the ComputeDomain CRD: %w", err)
	}
	apply := metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.Name, types.ApplyPatchType, body, apply); err != nil {
		return fmt.Errorf("apply the ComputeDomain CRD: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the ComputeDomain CRD to be established: %w", err)
	}
	body, err = json.Marshal(ChannelDeviceClassObject())
	if err != nil {
		return fmt.Errorf("encode DeviceClass %s: %w", ChannelDeviceClass, err)
	}
	if _, err := kube.ResourceV1().DeviceClasses().Patch(ctx, ChannelDeviceClass, types.ApplyPatchType, body, apply); err != nil {
		return fmt.Errorf("apply DeviceClass %s: %w", ChannelDeviceClass, err)
	}
	return nil
}

// controller watches nodes, slices, claims, claim templates and
// ComputeDomains. Every event asks for one sync of everything (cheap at the
// local cluster's scale), so there is no per-object queue to get wrong.
type controller struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
	log  *slog.Logger

	kubeInformers informers.SharedInformerFactory
	cdInformers   dynamicinformer.DynamicSharedInformerFactory
	nodes         corelisters.NodeLister
	slices        resourcelisters.ResourceSliceLister
	claims        resourcelisters.ResourceClaimLister
	templates     resourcelisters.ResourceClaimTemplateLister
	domains       cache.GenericLister

	wake chan struct{}
}

func newController(kube kubernetes.Interface, dyn dynamic.Interface, log *slog.Logger) *controller {
	c := &controller{kube: kube, dyn: dyn, log: log, wake: make(chan struct{}, 1)}
	c.kubeInformers = informers.NewSharedInformerFactory(kube, resyncPeriod)
	c.cdInformers = dynamicinformer.NewDynamicSharedInformerFactory(dyn, resyncPeriod)
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.trigger() },
		UpdateFunc: func(any, any) { c.trigger() },
		DeleteFunc: func(any) { c.trigger() },
	}
	nodes := c.kubeInformers.Core().V1().Nodes()
	slices := c.kubeInformers.Resource().V1().ResourceSlices()
	claims := c.kubeInformers.Resource().V1().ResourceClaims()
	templates := c.kubeInformers.Resource().V1().ResourceClaimTemplates()
	domains := c.cdInformers.ForResource(GroupVersionResource)
	for _, inf := range []cache.SharedIndexInformer{nodes.Informer(), slices.Informer(), claims.Informer(), templates.Informer(), domains.Informer()} {
		_, _ = inf.AddEventHandler(handler)
	}
	c.nodes, c.slices, c.claims, c.templates, c.domains = nodes.Lister(), slices.Lister(), claims.Lister(), templates.Lister(), domains.Lister()
	return c
}

func (c *controller) start(ctx context.Context) {
	c.kubeInformers.Start(ctx.Done())
	c.cdInformers.Start(ctx.Done())
	c.kubeInformers.WaitForCacheSync(ctx.Done())
	c.cdInformers.WaitForCacheSync(ctx.Done())
}

func (c *controller) trigger() {
	select {
	case c.wake <- struct{}{}:
	default: // a sync is already pending; it will see this change
	}
}

// loop syncs on every wake-up; a failed sync is retried after a second.
func (c *controller) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		if err := c.syncAll(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("sync failed; retrying", "err", err)
			time.AfterFunc(time.Second, c.trigger)
		}
	}
}

func (c *controller) syncAll(ctx context.Context) error {
	errs := []error{c.syncSlices(ctx)}
	domains, err := c.domains.List(labels.Everything())
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list ComputeDomains: %w", err))...)
	}
	for _, obj := range domains {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		errs = append(errs, c.syncDomain(ctx, u))
	}
	return errors.Join(errs...)
}

// syncSlices makes the driver's ResourceSlices match the nodes.
func (c *controller) syncSlices(ctx context.Context) error {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	all, err := c.slices.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list ResourceSlices: %w", err)
	}
	existing := map[string]*resourcev1.ResourceSlice{}
	for _, s := range all {
		if s.Spec.Driver == DriverName {
			existing[s.Name] = s
		}
	}
	var errs []error
	client := c.kube.ResourceV1().ResourceSlices()
	for _, node := range nodes {
		current := existing[SliceName(node.Name)]
		delete(existing, SliceName(node.Name))
		var generation int64 = 1
		if current != nil {
			generation = current.Spec.Pool.Generation
		}
		want, ok := SliceForNode(node, generation)
		switch {
		case !ok && current != nil:
			errs = append(errs, c.deleteSlice(ctx, current))
		case !ok:
		case current == nil:
			_, err := client.Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
			if apierrors.IsAlreadyExists(err) {
				continue // created by an earlier sync the cache has not seen yet
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("create ResourceSlice %s: %w", want.Name, err))
				continue
			}
			c.log.Info("published channels", "node", node.Name, "slice", want.Name, "channels", len(want.Spec.Devices))
		case !equality.Semantic.DeepEqual(current.Spec, want.Spec) || !equality.Semantic.DeepEqual(current.OwnerReferences, want.OwnerReferences):
			want.ResourceVersion = current.ResourceVersion
			want.Spec.Pool.Generation = generation + 1
			if _, err := client.Update(ctx, want, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
				errs = append(errs, fmt.Errorf("update ResourceSlice %s: %w", want.Name, err))
				continue
			}
			c.log.Info("republished channels", "node", node.Name, "slice", want.Name, "channels", len(want.Spec.Devices))
		}
	}
	for _, stale := range existing { // slices of nodes that are gone
		errs = append(errs, c.deleteSlice(ctx, stale))
	}
	return errors.Join(errs...)
}

func (c *controller) deleteSlice(ctx context.Context, s *resourcev1.ResourceSlice) error {
	err := c.kube.ResourceV1().ResourceSlices().Delete(ctx, s.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ResourceSlice %s: %w", s.Name, err)
	}
	c.log.Info("withdrew channels", "slice", s.Name)
	return nil
}

// syncDomain does for one ComputeDomain what NVIDIA's controller does:
// finalizer, channel template, status; on deletion, template and finalizer
// go.
func (c *controller) syncDomain(ctx context.Context, obj *unstructured.Unstructured) error {
	cd, err := FromUnstructured(obj)
	if err != nil {
		return err
	}
	client := c.dyn.Resource(GroupVersionResource).Namespace(cd.Namespace)
	key := cd.Namespace + "/" + cd.Name
	if cd.Deleting {
		if !slices.Contains(cd.Finalizers, Finalizer) {
			return nil
		}
		if err := c.deleteTemplate(ctx, cd); err != nil {
			return err
		}
		obj = obj.DeepCopy()
		obj.SetFinalizers(slices.DeleteFunc(slices.Clone(cd.Finalizers), func(f string) bool { return f == Finalizer }))
		if _, err := client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("ComputeDomain %s: remove finalizer: %w", key, err)
		}
		c.log.Info("released ComputeDomain", "computeDomain", key)
		return nil
	}
	if !slices.Contains(cd.Finalizers, Finalizer) {
		obj = obj.DeepCopy()
		obj.SetFinalizers(append(slices.Clone(cd.Finalizers), Finalizer))
		if _, err = client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("ComputeDomain %s: add finalizer: %w", key, err)
		}
	}

	templateErr := c.ensureTemplate(ctx, cd)
	claims, err := c.claims.ResourceClaims(cd.Namespace).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list ResourceClaims: %w", err)
	}
	claims = slices.DeleteFunc(claims, func(claim *resourcev1.ResourceClaim) bool { return DomainOfClaim(claim) != string(cd.UID) })
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	infos := make(map[string]NodeInfo, len(nodes))
	for _, n := range nodes {
		infos[n.Name] = NodeInfoOf(n)
	}
	status := StatusFromClaims(cd.Spec.NumNodes, cd.Status.Nodes, claims, infos)
	if templateErr != nil {
		status.Status = StatusNotReady
	}
	if !equality.Semantic.DeepEqual(status, cd.Status) {
		// A merge patch, not an update: the status is computed from the
		// claims alone, so it need not wait for the cache to catch up with
		// the finalizer just added. nodes is always sent, as a list, because
		// a merge patch replaces lists whole (and keeps an omitted one).
		patch, err := json.Marshal(map[string]any{"status": map[string]any{
			"status": status.Status, "nodes": status.Nodes,
		}})
		if err != nil {
			return fmt.Errorf("ComputeDomain %s: encode status: %w", key, err)
		}
		if _, err := client.Patch(ctx, cd.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}, "status"); err != nil {
			return fmt.Errorf("ComputeDomain %s: update status: %w", key, err)
		}
		c.log.Info("updated ComputeDomain status", "computeDomain", key, "status", status.Status, "nodes", len(status.Nodes))
	}
	return templateErr
}

// ensureTemplate creates the domain's channel template if it is missing. A
// template of that name that the domain does not control is left alone and
// reported: the domain cannot be Ready with someone else's template.
func (c *controller) ensureTemplate(ctx context.Context, cd ComputeDomain) error {
	want, err := ClaimTemplateFor(cd)
	if err != nil {
		return err
	}
	current, err := c.templates.ResourceClaimTemplates(cd.Namespace).Get(want.Name)
	switch {
	case apierrors.IsNotFound(err):
		if _, err := c.kube.ResourceV1().ResourceClaimTemplates(cd.Namespace).Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("ComputeDomain %s/%s: create ResourceClaimTemplate %s: %w", cd.Namespace, cd.Name, want.Name, err)
		}
		c.log.Info("created channel template", "computeDomain", cd.Namespace+"/"+cd.Name, "template", want.Name)
		return nil
	case err != nil:
		return fmt.Errorf("get ResourceClaimTemplate %s/%s: %w", cd.Namespace, want.Name, err)
	case !controlledBy(current.OwnerReferences, cd.UID):
		return fmt.Errorf("ComputeDomain %s/%s: spec.channel.resourceClaimTemplate.name: ResourceClaimTemplate %s exists and belongs to something else",
			cd.Namespace, cd.Name, want.Name)
	}
	return nil
}

func (c *controller) deleteTemplate(ctx context.Context, cd ComputeDomain) error {
	name := cd.Spec.Channel.ResourceClaimTemplate.Name
	current, err := c.kube.ResourceV1().ResourceClaimTemplates(cd.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get ResourceClaimTemplate %s/%s: %w", cd.Namespace, name, err)
	}
	if !controlledBy(current.OwnerReferences, cd.UID) {
		return nil
	}
	err = c.kube.ResourceV1().ResourceClaimTemplates(cd.Namespace).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &current.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ResourceClaimTemplate %s/%s: %w", cd.Namespace, name, err)
	}
	c.log.Info("deleted channel template", "computeDomain", cd.Namespace+"/"+cd.Name, "template", name)
	return nil
}

func controlledBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid && r.Controller != nil && *r.Controller {
			return true
		}
	}
	return false
}
