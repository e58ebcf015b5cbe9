package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
)

// errNoClient comes from a loaded cluster whose kubeconfig is unreadable.
var errNoClient = errors.New("cluster has no usable kubeconfig")

// NodeGroup asks for Count more nodes in one rack. The rack need not exist
// yet: indices beyond the initial topology create new racks, blocks or
// zones.
type NodeGroup struct {
	Zone, Block, Rack int
	Count             int
	// Shape of the new nodes; zero fields take the cluster's shape.
	Shape NodeShape
	// Labels are added to the topology and hardware labels of each new
	// node (a label of the same key is overwritten), e.g. a role that only
	// some workloads select.
	Labels map[string]string
	// Taints of each new node, e.g. to keep workloads that do not tolerate
	// them off a pool of nodes set aside for others.
	Taints []corev1.Taint
}

// AddNodes creates simulated nodes in a running cluster and waits until kwok
// reports them Ready, so that the scheduler can use them when it returns.
// It returns the new node names. Nodes in a rack are numbered after the
// highest index already there.
func (c *Cluster) AddNodes(ctx context.Context, groups ...NodeGroup) ([]string, error) {
	if c.client == nil {
		return nil, errNoClient
	}
	c.nodesMu.Lock()
	defer c.nodesMu.Unlock()

	existing, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{LabelType: TypeKwok}).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("add nodes: list nodes: %w", err)
	}
	usedIPs := map[string]bool{}
	nextIndex := map[string]int{} // rack label -> next node index
	for _, n := range existing.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				usedIPs[a.Address] = true
			}
		}
		if i, ok := nodeIndex(n.Name); ok && i+1 > nextIndex[n.Labels[LabelRack]] {
			nextIndex[n.Labels[LabelRack]] = i + 1
		}
	}

	var nodes []*corev1.Node
	for _, g := range groups {
		if g.Count < 0 || g.Zone < 0 || g.Block < 0 || g.Rack < 0 {
			return nil, fmt.Errorf("add nodes: invalid group %+v", g)
		}
		shape := mergeShape(g.Shape, c.topology.Shape)
		for range g.Count {
			p := Placement{Zone: g.Zone, Block: g.Block, Rack: g.Rack}
			p.Index = nextIndex[p.RackName()]
			nextIndex[p.RackName()]++
			ip := freeNodeIPs(usedIPs, 1)[0]
			usedIPs[ip] = true
			node, err := NodeObject(p, shape, ip)
			if err != nil {
				return nil, fmt.Errorf("add nodes: %w", err)
			}
			maps.Copy(node.Labels, g.Labels)
			node.Spec.Taints = slices.Clone(g.Taints)
			nodes = append(nodes, node)
		}
	}
	names, err := c.createNodes(ctx, nodes)
	if err != nil {
		return names, err
	}
	return names, c.waitChannelSlices(ctx, names)
}

// mergeShape overlays the non-zero fields of s on base.
func mergeShape(s, base NodeShape) NodeShape {
	if s.GPUs != 0 {
		base.GPUs = s.GPUs
	}
	if s.CPU != "" {
		base.CPU = s.CPU
	}
	if s.Memory != "" {
		base.Memory = s.Memory
	}
	if s.Pods != 0 {
		base.Pods = s.Pods
	}
	if s.InstanceType != "" {
		base.InstanceType = s.InstanceType
	}
	if s.GPUProduct != "" {
		base.GPUProduct = s.GPUProduct
	}
	return base
}

// nodeIndex parses the trailing -n<index> of a name made by
// Placement.NodeName.
func nodeIndex(name string) (int, bool) {
	i := strings.LastIndex(name, "-n")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(name[i+2:])
	return n, err == nil && n >= 0
}

func (c *Cluster) createNodes(ctx context.Context, nodes []*corev1.Node) ([]string, error) {
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if _, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return names, fmt.Errorf("create node %s: %w", n.Name, err)
		}
		names = append(names, n.Name)
	}
	if err := c.waitNodesReady(ctx, names, 2*time.Minute); err != nil {
		return names, err
	}
	return names, nil
}

func (c *Cluster) waitNodesReady(ctx context.Context, names []string, timeout time.Duration) error {
	pending := map[string]bool{}
	for _, n := range names {
		pending[n] = true
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(labels.Set{LabelType: TypeKwok}).String(),
		})
		if err != nil {
			return false, nil // the apiserver may be briefly busy; retry
		}
		for _, n := range list.Items {
			if pending[n.Name] && nodeReady(&n) {
				delete(pending, n.Name)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		if herr := c.CheckHealthy(); herr != nil {
			return fmt.Errorf("wait for nodes to become Ready: %w", herr)
		}
		return fmt.Errorf("wait for %d node(s) to become Ready (kwok log %s): %w", len(pending), c.logPath(Kwok), err)
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// RemoveNodes deletes nodes and waits until they are gone. Pods bound to
// them are not touched: as in a real cluster, the pod garbage collector in
// kube-controller-manager deletes such orphans (after about 40s).
func (c *Cluster) RemoveNodes(ctx context.Context, names ...string) error {
	if c.client == nil {
		return errNoClient
	}
	for _, name := range names {
		err := c.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove node %s: %w", name, err)
		}
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("remove node %s: wait for deletion: %w", name, err)
		}
	}
	return nil
}
