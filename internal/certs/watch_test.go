package certs

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

func TestWatchObjectsNotifiesOnEveryWatchedKind(t *testing.T) {
	clientset := kubefake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	notified := make(chan struct{}, 100)
	watchFn := WatchObjects(clientset, Options{SecretNamespace: testNamespace, SecretName: testSecret, WebhookConfigurationName: testConfig})
	go watchFn(ctx, func() { notified <- struct{}{} })

	expectNotification := func(what string, create func() error) {
		t.Helper()
		// An informer that does not watch yet lists the object when it starts.
		deadline := time.After(10 * time.Second)
		if err := create(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-notified:
		case <-deadline:
			t.Fatalf("no notification after %s", what)
		}
	}
	expectNotification("the Secret was created", func() error {
		_, err := clientset.CoreV1().Secrets(testNamespace).Create(ctx,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testSecret}}, metav1.CreateOptions{})
		return err
	})
	expectNotification("the MutatingWebhookConfiguration was created", func() error {
		_, err := clientset.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx,
			&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: testConfig}}, metav1.CreateOptions{})
		return err
	})
	expectNotification("the ValidatingWebhookConfiguration was created", func() error {
		_, err := clientset.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx,
			&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: testConfig}}, metav1.CreateOptions{})
		return err
	})
}
