package certs

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// WatchObjects returns a WatchFunc that watches the Secret and the two
// webhook configurations of opts, each selected by name (so the operator
// lists and watches no other Secret), and notifies on every event,
// including the initial listing. A reset caBundle (a Helm upgrade that
// re-applies the configurations) or a Secret rotated by another replica is
// therefore handled within seconds rather than at the next periodic check.
func WatchObjects(clientset kubernetes.Interface, opts Options) WatchFunc {
	return func(ctx context.Context, notify func()) {
		handler := toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { notify() },
			UpdateFunc: func(any, any) { notify() },
			DeleteFunc: func(any) { notify() },
		}
		informers := []struct {
			object runtime.Object
			lw     *toolscache.ListWatch
		}{
			{&corev1.Secret{}, listWatchByName(opts.SecretName, clientset.CoreV1().Secrets(opts.SecretNamespace))},
			{&admissionregistrationv1.MutatingWebhookConfiguration{},
				listWatchByName(opts.WebhookConfigurationName, clientset.AdmissionregistrationV1().MutatingWebhookConfigurations())},
			{&admissionregistrationv1.ValidatingWebhookConfiguration{},
				listWatchByName(opts.WebhookConfigurationName, clientset.AdmissionregistrationV1().ValidatingWebhookConfigurations())},
		}
		for _, informer := range informers {
			_, controller := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
				ListerWatcher: toolscache.ToListWatcherWithWatchListSemantics(informer.lw, clientset),
				ObjectType:    informer.object,
				Handler:       handler,
				// Only events matter: the store keeps no key material.
				Transform: func(obj any) (any, error) {
					if secret, ok := obj.(*corev1.Secret); ok {
						secret.Data, secret.StringData = nil, nil
					}
					if o, ok := obj.(metav1.Object); ok {
						o.SetManagedFields(nil)
					}
					return obj, nil
				},
			})
			go controller.RunWithContext(ctx)
		}
		<-ctx.Done()
	}
}

// listerWatcher is the List and Watch of a typed client.
type listerWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// listWatchByName lists and watches the one object called name.
func listWatchByName[L runtime.Object](name string, c listerWatcher[L]) *toolscache.ListWatch {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return c.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return c.Watch(ctx, o)
		},
	}
}
