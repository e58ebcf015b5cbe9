// Package crds embeds copse's generated CustomResourceDefinitions.
//
// The YAML files beside this one are written by `make generate` and are the
// single copy: Helm installs them from this folder, and tests and the local
// cluster tooling install them through this package.
package crds

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// All returns copse's grove.io CRDs, ordered by file name.
func All() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return Decode(files)
}

// Decode returns the CRDs of the YAML files at the root of fsys, ordered by
// file name.
func Decode(fsys fs.FS) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list embedded CRDs: %w", err)
	}
	sort.Strings(names)
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, name := range names {
		raw, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read embedded CRD %s: %w", name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return nil, fmt.Errorf("decode embedded CRD %s: %w", name, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
