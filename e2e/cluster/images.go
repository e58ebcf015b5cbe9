package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The images real nodes run. No registry is reachable from the test
// machine, so both are made here, from copse-workload (e2e/cmd) and
// Debian's static busybox, and imported into each node's containerd; pods
// name them with imagePullPolicy IfNotPresent (their tags are digests, never
// "latest"), and the kubelet finds them in place.
const (
	workloadImageRepo = "copse.dev/e2e/workload"
	pauseImageRepo    = "copse.dev/e2e/pause"
	// workloadBinary is where copse-workload lives in both images.
	workloadBinary = "/usr/local/bin/copse-workload"
)

// busyboxApplets are the commands of the workload image besides
// copse-workload: what copse's startup gate runs (sh, grep, sleep) and what
// a spec's shell command commonly uses.
var busyboxApplets = []string{"sh", "grep", "sleep", "cat", "echo", "env", "ls", "test", "true", "false", "date", "hostname"}

// NodeImages are the references of the images every real node holds.
type NodeImages struct {
	// Workload runs copse-workload (its entrypoint) and has a busybox
	// shell, so that it also serves as copse's startup gate image.
	Workload string `json:"workload"`
	// Pause is the pod sandbox image (containerd's pinned sandbox).
	Pause string `json:"pause"`
	// Archives are the image archives imported into each node, by
	// reference.
	Archives map[string]string `json:"archives"`
}

// buildNodeImages builds copse-workload statically and writes both images
// as archives into dir.
func buildNodeImages(ctx context.Context, dir string, progress io.Writer) (NodeImages, error) {
	root, err := RepoRoot()
	if err != nil {
		return NodeImages{}, err
	}
	program := filepath.Join(dir, "copse-workload")
	if _, err := goCommandEnv(ctx, root, []string{"CGO_ENABLED=0"}, "build", "-trimpath", "-ldflags=-s -w", "-o", program, "./e2e/cmd/copse-workload"); err != nil {
		return NodeImages{}, fmt.Errorf("build copse-workload: %w", err)
	}
	busyboxDir, err := EnsureDebianPackage(ctx, debBusyboxStatic, progress)
	if err != nil {
		return NodeImages{}, err
	}
	workloadFiles := []imageFile{
		{path: workloadBinary, source: program, mode: 0o755},
		{path: "/bin/busybox", source: filepath.Join(busyboxDir, "bin", "busybox"), mode: 0o755},
		{path: "/tmp", dir: true, mode: 0o1777},
	}
	for _, applet := range busyboxApplets {
		workloadFiles = append(workloadFiles, imageFile{path: "/bin/" + applet, link: "busybox"})
	}
	images := NodeImages{Archives: map[string]string{}}
	if images.Workload, err = writeImage(dir, workloadImageRepo, workloadFiles, []string{workloadBinary}); err != nil {
		return NodeImages{}, err
	}
	pauseFiles := []imageFile{{path: workloadBinary, source: program, mode: 0o755}}
	if images.Pause, err = writeImage(dir, pauseImageRepo, pauseFiles, []string{workloadBinary, "pause"}); err != nil {
		return NodeImages{}, err
	}
	for _, ref := range []string{images.Workload, images.Pause} {
		images.Archives[ref] = imageArchive(dir, ref)
	}
	return images, nil
}

// imageFile is one entry of an image's single layer: a file copied from
// source, a directory, or a symbolic link.
type imageFile struct {
	path   string
	source string
	link   string
	dir    bool
	mode   int64
}

// writeImage writes a one-layer image of files, tagged repo:<digest
// prefix>, as a docker-archive that `ctr images import` reads. The layer is
// deterministic (no timestamps, fixed owners), so an unchanged program
// gives an unchanged tag.
func writeImage(dir, repo string, files []imageFile, entrypoint []string) (string, error) {
	layerTar, err := layerArchive(files)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", repo, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return "", fmt.Errorf("image %s: layer: %w", repo, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", repo, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", fmt.Errorf("image %s: %w", repo, err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config.Entrypoint = entrypoint
	cfg.Config.Env = []string{"PATH=/usr/local/bin:/bin"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return "", fmt.Errorf("image %s: %w", repo, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("image %s: %w", repo, err)
	}
	ref := repo + ":" + digest.Hex[:16]
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", repo, err)
	}
	if err := tarball.WriteToFile(imageArchive(dir, ref), tag, img); err != nil {
		return "", fmt.Errorf("image %s: write archive: %w", repo, err)
	}
	return ref, nil
}

func imageArchive(dir, ref string) string {
	return filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
}

// layerArchive is the uncompressed tar of files, parents first.
func layerArchive(files []imageFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	var addParents func(p string) error
	addParents = func(p string) error {
		parent := filepath.Dir(p)
		if parent == "/" || seen[parent] {
			return nil
		}
		if err := addParents(parent); err != nil {
			return err
		}
		seen[parent] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(parent, "/") + "/", Mode: 0o755, Format: tar.FormatPAX})
	}
	for _, f := range files {
		if err := addParents(f.path); err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(f.path, "/")
		switch {
		case f.dir:
			seen[f.path] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: f.mode, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		case f.link != "":
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: f.link, Mode: 0o777, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		default:
			data, err := os.ReadFile(f.source)
			if err != nil {
				return nil, err
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: f.mode, Size: int64(len(data)), Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
			if _, err := tw.Write(data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
