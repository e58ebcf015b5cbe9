package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/copse-dev/copse/e2e/cluster/nvidiadra"
)

// NVIDIADRASim is the component name of the simulated NVIDIA DRA driver
// (package nvidiadra), started when Options.NVIDIADRA is set.
const NVIDIADRASim = "nvidia-dra-sim"

// nvidiaDRASimPackages are the copse packages the driver's binary is built
// from, relative to the repository root: the cache key hashes their source,
// with go.mod and go.sum. TestNVIDIADRASimSourcesAreHashed keeps the list
// complete.
var nvidiaDRASimPackages = []string{"./e2e/cluster/cmd/nvidia-dra-sim", "./e2e/cluster/nvidiadra"}

// EnsureNVIDIADRASimBinary returns the simulated driver's binary, building
// it from the working tree into the shared cache first if this source has
// not been built yet.
func EnsureNVIDIADRASimBinary(ctx context.Context, progress io.Writer) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	key, err := nvidiaDRASimKey(root)
	if err != nil {
		return "", err
	}
	complete := func(dir string) bool { return isExecutable(filepath.Join(dir, NVIDIADRASim)) }
	err = buildIntoCache(ctx, cache, key, complete, func(tmp string) error {
		fmt.Fprintf(progress, "building %s from %s...\n", NVIDIADRASim, nvidiaDRASimPackages[0])
		start := time.Now()
		if _, err := goCommand(ctx, root, "build", "-o", filepath.Join(tmp, NVIDIADRASim), nvidiaDRASimPackages[0]); err != nil {
			return fmt.Errorf("build %s: %w", NVIDIADRASim, err)
		}
		fmt.Fprintf(progress, "built %s in %s\n", NVIDIADRASim, time.Since(start).Round(time.Second))
		return nil
	})
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "bin", key, NVIDIADRASim), nil
}

// nvidiaDRASimKey names the cache entry of one version of the driver's
// source and dependencies.
func nvidiaDRASimKey(root string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", fmt.Errorf("hash %s source: %w", NVIDIADRASim, err)
		}
		fmt.Fprintf(h, "\x00%s\x00", f)
		h.Write(data)
	}
	for _, pkg := range nvidiaDRASimPackages {
		if err := hashPackageSource(h, root, pkg); err != nil {
			return "", fmt.Errorf("hash %s source: %w", NVIDIADRASim, err)
		}
	}
	return NVIDIADRASim + "-" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

func nvidiaDRASimArgs(l layout, p Ports) []string {
	return []string{
		"--kubeconfig=" + l.kubeconfig(NVIDIADRASim),
		fmt.Sprintf("--health-address=127.0.0.1:%d", p.NVIDIADRASim),
	}
}

// waitChannelSlices waits until the simulated driver has published the
// ResourceSlice of every named node, so that the scheduler can allocate
// channels there when AddNodes or Start returns. Only GPU nodes with an
// NVLink clique get one; copse-made nodes always have both.
func (c *Cluster) waitChannelSlices(ctx context.Context, nodeNames []string) error {
	if !c.state.NVIDIADRA || len(nodeNames) == 0 {
		return nil
	}
	pending := map[string]bool{}
	for _, n := range nodeNames {
		pending[nvidiadra.SliceName(n)] = true
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := c.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.driver", nvidiadra.DriverName).String(),
		})
		if err != nil {
			return false, nil // the apiserver may be briefly busy; retry
		}
		for _, s := range list.Items {
			delete(pending, s.Name)
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		if herr := c.CheckHealthy(); herr != nil {
			return fmt.Errorf("wait for channel ResourceSlices: %w", herr)
		}
		return fmt.Errorf("wait for the channel ResourceSlices of %d node(s) (%s log %s): %w", len(pending), NVIDIADRASim, c.logPath(NVIDIADRASim), err)
	}
	return nil
}
