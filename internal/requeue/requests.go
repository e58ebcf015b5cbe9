package requeue

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// RequestsForList lists into list with opts and returns one request per
// object listed: the map function of a watch whose event concerns a set of
// objects found by label. A failed list is logged with cause (what the event
// was about) and yields no request; the cache's next event tries again.
func RequestsForList(ctx context.Context, c client.Reader, list client.ObjectList, cause client.Object, opts ...client.ListOption) []reconcile.Request {
	logger := ctrl.LoggerFrom(ctx).WithValues("cause", client.ObjectKeyFromObject(cause))
	if err := c.List(ctx, list, opts...); err != nil {
		logger.Error(err, "listing the objects an event concerns", "list", fmt.Sprintf("%T", list))
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		logger.Error(err, "reading the objects an event concerns")
		return nil
	}
	out := make([]reconcile.Request, 0, len(items))
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return out
}
