package framework

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/charts/copse/crds"
	trainercrds "github.com/copse-dev/copse/charts/copse/trainer-crds"
)

// InstallCRDs creates or updates every copse CRD (grove.io and
// trainer.kubeflow.org) and waits until the API server serves each of them.
func InstallCRDs(ctx context.Context, c client.Client) error {
	all, err := crds.All()
	if err != nil {
		return err
	}
	trainer, err := trainercrds.All()
	if err != nil {
		return err
	}
	return installCRDSet(ctx, c, append(all, trainer...))
}

func installCRDSet(ctx context.Context, c client.Client, all []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range all {
		if err := createOrReplaceCRD(ctx, c, crd); err != nil {
			return err
		}
	}
	for _, crd := range all {
		if err := waitEstablished(ctx, c, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

func createOrReplaceCRD(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	err := c.Create(ctx, crd.DeepCopy())
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CRD %s: %w", crd.Name, err)
	}
	existing := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, existing); err != nil {
		return fmt.Errorf("get CRD %s: %w", crd.Name, err)
	}
	existing.Spec = crd.Spec
	if err := c.Update(ctx, existing); err != nil {
		return fmt.Errorf("update CRD %s: %w", crd.Name, err)
	}
	return nil
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", name, err)
	}
	return nil
}
