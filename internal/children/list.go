package children

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// List lists, for every row, the objects of its kind in namespace that
// selector matches, by kind. Whom they belong to is the caller's to check
// (ControlledBy).
func List[In any](ctx context.Context, reader client.Reader, rows []Row[In], namespace string, selector labels.Selector) (map[string][]client.Object, error) {
	out := map[string][]client.Object{}
	for _, row := range rows {
		list := row.NewList()
		if err := reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return nil, fmt.Errorf("list %ss: %w", row.Kind, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, fmt.Errorf("read the list of %ss: %w", row.Kind, err)
		}
		for _, item := range items {
			if obj, ok := item.(client.Object); ok {
				out[row.Kind] = append(out[row.Kind], obj)
			}
		}
	}
	return out, nil
}
