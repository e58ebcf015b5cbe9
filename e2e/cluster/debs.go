package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/copse-dev/copse/e2e/process"
)

// Debian packages the real nodes need besides what the Go module proxy
// serves: libseccomp's static library and headers, which runc links to
// apply the seccomp profiles containerd gives containers (copse's startup
// gate asks for RuntimeDefault), and a static busybox, the shell, grep and
// sleep of the workload image (the startup gate's script runs in it).
const (
	debLibseccompDev = "libseccomp-dev"
	debBusyboxStatic = "busybox-static"
)

// EnsureDebianPackage returns a directory holding the files of the Debian
// package name, as `dpkg-deb -x` extracts them, downloading it first with
// `apt-get download` if this version is not in the cache. Nothing is
// installed on the machine: the package is cached like every pinned tool,
// under <cache>/bin/deb-<name>_<version>. The version is the one apt would
// install now (Debian replaces superseded security updates on its mirrors,
// so an exact pin would stop resolving); it names the cache entry, so a new
// version is fetched once.
func EnsureDebianPackage(ctx context.Context, name string, progress io.Writer) (string, error) {
	for _, tool := range []string{"apt-cache", "apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("debian package %s: %s is needed (a Debian or Ubuntu host): %w", name, tool, err)
		}
	}
	version, err := debianCandidate(ctx, name)
	if err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	key := "deb-" + name + "_" + strings.NewReplacer(":", "%3a", "/", "_").Replace(version)
	dir := filepath.Join(cache, "bin", key)
	complete := func(d string) bool {
		_, err := os.Stat(filepath.Join(d, ".complete"))
		return err == nil
	}
	err = buildIntoCache(ctx, cache, key, complete, func(tmp string) error {
		fmt.Fprintf(progress, "fetching Debian package %s %s (first run only)...\n", name, version)
		download, err := os.MkdirTemp("", "copse-deb-")
		if err != nil {
			return fmt.Errorf("debian package %s: %w", name, err)
		}
		defer func() { _ = os.RemoveAll(download) }()
		if _, err := runIn(ctx, download, "apt-get", "download", name+"="+version); err != nil {
			return fmt.Errorf("debian package %s: %w", name, err)
		}
		debs, _ := filepath.Glob(filepath.Join(download, "*.deb"))
		if len(debs) != 1 {
			return fmt.Errorf("debian package %s: apt-get download left %d .deb files in %s", name, len(debs), download)
		}
		if _, err := runIn(ctx, download, "dpkg-deb", "-x", debs[0], tmp); err != nil {
			return fmt.Errorf("debian package %s: %w", name, err)
		}
		return os.WriteFile(filepath.Join(tmp, ".complete"), []byte(version+"\n"), 0o644)
	})
	if err != nil {
		return "", err
	}
	return dir, nil
}

// debianCandidate is the version apt would install. A machine whose package
// lists were never fetched knows none; one `apt-get update` fixes that.
func debianCandidate(ctx context.Context, name string) (string, error) {
	version := func() string {
		out, err := runIn(ctx, "", "apt-cache", "show", "--no-all-versions", name)
		if err != nil {
			return ""
		}
		for line := range strings.SplitSeq(string(out), "\n") {
			if v, ok := strings.CutPrefix(line, "Version: "); ok {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	if v := version(); v != "" {
		return v, nil
	}
	if _, err := runIn(ctx, "", "apt-get", "update"); err != nil {
		return "", fmt.Errorf("debian package %s: apt knows no version of it and apt-get update failed: %w", name, err)
	}
	if v := version(); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("debian package %s: apt knows no version of it, even after apt-get update", name)
}

// runIn runs a command in dir (the working directory when empty) and
// returns its standard output; an error carries the end of its output.
func runIn(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, process.LastLines(stdout.String()+stderr.String(), 20))
	}
	return stdout.Bytes(), nil
}
