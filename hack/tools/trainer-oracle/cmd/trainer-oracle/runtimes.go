package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Trainer's ClusterTrainingRuntimes are YAML files under
// manifests/base/runtimes, gathered by kustomizations. They are installed
// through the overlays under manifests/overlays, which change them: v2.3.0's
// overlays/runtimes adds the label trainer.kubeflow.org/webhook-validation:
// disabled and pins the tags of Trainer's own images to v2.3.0, and
// overlays/data-cache pins the dataset-initializer's. shippedRuntimes
// interprets the part of kustomize those kustomizations use and fails on
// anything else that would change a runtime, so that a Trainer upgrade that
// changes how runtimes are shipped is noticed instead of misread.

const clusterTrainingRuntimeKind = "ClusterTrainingRuntime"

// shippedRuntimes returns every ClusterTrainingRuntime under
// manifests/base/runtimes of the Trainer module in moduleDir, sorted by
// name: as the overlays under manifests/overlays install them, or as the
// base files are when base is set.
func shippedRuntimes(moduleDir string, base bool) ([]map[string]any, error) {
	manifests := filepath.Join(moduleDir, "manifests")
	baseRuntimes := filepath.Join(manifests, "base", "runtimes")
	var entries []string
	var err error
	if base {
		entries, err = kustomizationDirs(baseRuntimes)
	} else {
		entries, err = kustomizationDirs(filepath.Join(manifests, "overlays"))
	}
	if err != nil {
		return nil, err
	}
	byName := map[string]map[string]any{}
	reached := map[string]bool{}
	for _, dir := range entries {
		runtimes, err := kustomizeRuntimes(dir)
		if err != nil {
			return nil, err
		}
		for _, rt := range runtimes {
			reached[rt.file] = true
			name := metadataName(rt.object)
			if prev, dup := byName[name]; dup && !reflect.DeepEqual(prev, rt.object) {
				return nil, fmt.Errorf("ClusterTrainingRuntime %q is installed differently by two kustomizations (one is %s)", name, dir)
			}
			byName[name] = rt.object
		}
	}
	// Every runtime file under base/runtimes must be installed by some
	// overlay; one that is not means the layout changed.
	files, err := runtimeFiles(baseRuntimes)
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		if !reached[file] {
			return nil, fmt.Errorf("%s holds a ClusterTrainingRuntime that none of the kustomizations %v installs", file, entries)
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range byName {
			if !yield(name) {
				return
			}
		}
	})
	out := make([]map[string]any, 0, len(names))
	for _, name := range names {
		out = append(out, byName[name])
	}
	return out, nil
}

// kustomizationDirs returns every directory under root (root included)
// holding a kustomization.yaml, sorted.
func kustomizationDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find kustomizations: %w", err)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no kustomization.yaml under %s", root)
	}
	sort.Strings(dirs)
	return dirs, nil
}

// runtimeFiles returns every YAML file under root that holds a
// ClusterTrainingRuntime.
func runtimeFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "kustomization.yaml" || !strings.HasSuffix(d.Name(), ".yaml") {
			return err
		}
		docs, err := readYAMLDocuments(path)
		if err != nil {
			return err
		}
		for _, doc := range docs {
			if doc["kind"] == clusterTrainingRuntimeKind {
				files = append(files, path)
				break
			}
		}
		return nil
	})
	return files, err
}

// runtimeDoc is a ClusterTrainingRuntime and the file it comes from.
type runtimeDoc struct {
	file   string
	object map[string]any
}

// kustomizeKeysWithoutEffectOnRuntimes are kustomization fields that cannot
// change a ClusterTrainingRuntime once it is in the cluster: namespace only
// reaches metadata.namespace, which the API server clears on cluster-scoped
// objects; generators make ConfigMaps and Secrets; configurations teach
// kustomize about other kinds.
var kustomizeKeysWithoutEffectOnRuntimes = []string{
	"apiVersion", "kind", "resources", "namespace", "configMapGenerator", "secretGenerator", "configurations",
}

// kustomizeRuntimes returns the ClusterTrainingRuntimes the kustomization in
// dir produces, with its transformations (images, labels) applied.
func kustomizeRuntimes(dir string) ([]runtimeDoc, error) {
	file := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var kust struct {
		Resources []string         `json:"resources"`
		Images    []kustomizeImage `json:"images"`
		Labels    []struct {
			Pairs            map[string]string `json:"pairs"`
			IncludeSelectors bool              `json:"includeSelectors"`
			IncludeTemplates bool              `json:"includeTemplates"`
		} `json:"labels"`
		Patches []struct {
			Path   string `json:"path"`
			Patch  string `json:"patch"`
			Target *struct {
				Kind string `json:"kind"`
			} `json:"target"`
		} `json:"patches"`
	}
	if err := yaml.Unmarshal(data, &kust); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var fields map[string]any
	if err := yaml.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}

	var runtimes []runtimeDoc
	for _, res := range kust.Resources {
		if strings.Contains(res, "://") {
			// A remote base (third-party releases): not part of Trainer's
			// module, so no runtime of it.
			continue
		}
		path := filepath.Join(dir, res)
		info, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("%s: resource %s: %w", file, res, err)
		}
		if info.IsDir() {
			sub, err := kustomizeRuntimes(path)
			if err != nil {
				return nil, err
			}
			runtimes = append(runtimes, sub...)
			continue
		}
		docs, err := readYAMLDocuments(path)
		if err != nil {
			return nil, err
		}
		for _, doc := range docs {
			if doc["kind"] == clusterTrainingRuntimeKind {
				runtimes = append(runtimes, runtimeDoc{file: path, object: doc})
			}
		}
	}
	if len(runtimes) == 0 {
		return nil, nil
	}

	for key := range fields {
		if !slices.Contains(kustomizeKeysWithoutEffectOnRuntimes, key) && key != "images" && key != "labels" && key != "patches" {
			return nil, fmt.Errorf("%s: field %q would change the ClusterTrainingRuntimes it installs; the oracle does not interpret it", file, key)
		}
	}
	for i, p := range kust.Patches {
		kind := ""
		if p.Target != nil {
			kind = p.Target.Kind
		} else {
			patch := []byte(p.Patch)
			if p.Path != "" {
				if patch, err = os.ReadFile(filepath.Join(dir, p.Path)); err != nil {
					return nil, fmt.Errorf("%s: patches[%d]: %w", file, i, err)
				}
			}
			var head struct{ Kind string }
			if err := yaml.Unmarshal(patch, &head); err != nil {
				return nil, fmt.Errorf("%s: patches[%d]: %w", file, i, err)
			}
			kind = head.Kind
		}
		if kind == "" || kind == clusterTrainingRuntimeKind {
			return nil, fmt.Errorf("%s: patches[%d] may patch the ClusterTrainingRuntimes it installs; the oracle does not interpret patches", file, i)
		}
	}
	for _, rt := range runtimes {
		for _, l := range kust.Labels {
			if l.IncludeSelectors || l.IncludeTemplates {
				return nil, fmt.Errorf("%s: labels with includeSelectors or includeTemplates are not interpreted by the oracle", file)
			}
			if err := addLabels(rt.object, l.Pairs); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
		}
		for _, img := range kust.Images {
			retagImages(rt.object, img)
		}
	}
	return runtimes, nil
}

// addLabels adds pairs to an object's metadata.labels.
func addLabels(obj map[string]any, pairs map[string]string) error {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s %q has no metadata", obj["kind"], metadataName(obj))
	}
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	for k, v := range pairs {
		labels[k] = v
	}
	meta["labels"] = labels
	return nil
}

// kustomizeImage is an entry of a kustomization's images.
type kustomizeImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
	Digest  string `json:"digest"`
}

// retagImages applies img to every container and init container anywhere in
// obj, as kustomize's image transformer does for kinds it does not know.
func retagImages(node any, img kustomizeImage) {
	switch n := node.(type) {
	case map[string]any:
		for key, value := range n {
			if list, ok := value.([]any); ok && (key == "containers" || key == "initContainers") {
				for _, c := range list {
					if container, ok := c.(map[string]any); ok {
						if image, ok := container["image"].(string); ok {
							container["image"] = img.apply(image)
						}
					}
				}
			}
			retagImages(value, img)
		}
	case []any:
		for _, v := range n {
			retagImages(v, img)
		}
	}
}

// apply returns image changed by img when its name matches.
func (img kustomizeImage) apply(image string) string {
	name, tag, digest := splitImage(image)
	if name != img.Name {
		return image
	}
	if img.NewName != "" {
		name = img.NewName
	}
	switch {
	case img.Digest != "":
		return name + "@" + img.Digest
	case img.NewTag != "":
		return name + ":" + img.NewTag
	case digest != "":
		return name + "@" + digest
	case tag != "":
		return name + ":" + tag
	}
	return name
}

// splitImage splits name[:tag][@digest].
func splitImage(image string) (name, tag, digest string) {
	name = image
	if i := strings.Index(name, "@"); i >= 0 {
		name, digest = name[:i], name[i+1:]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}

// readYAMLDocuments decodes every non-empty document of a YAML file.
func readYAMLDocuments(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []map[string]any
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj) > 0 {
			docs = append(docs, obj)
		}
	}
}

func metadataName(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return name
}
