// Command crdgen runs controller-gen's CRD generator for copse's API.
//
// copse's types embed Grove's, so the generator has to load Grove's API
// package for their schemas. That package declares the same group and
// version (grove.io/v1alpha1) and the same kinds, and controller-gen would
// turn it into a second v1alpha1 version of each CRD, mixing Grove's schema
// with copse's printer columns. crdgen registers Grove's package as a
// types-only package: its types are available for embedding, but it
// contributes no API version.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/controller-tools/pkg/crd"
	"sigs.k8s.io/controller-tools/pkg/genall"
	"sigs.k8s.io/controller-tools/pkg/loader"
)

func main() {
	paths := flag.String("paths", "./api/core/...", "packages holding the CRD root types")
	outputDir := flag.String("output-dir", "charts/copse/crds", "where the CRD YAML files are written")
	typesOnly := flag.String("types-only", "github.com/ai-dynamo/grove/operator/api/core/v1alpha1",
		"comma-separated packages whose types may be embedded but which define no API version")
	embeddedObjectMeta := flag.Bool("embedded-object-meta", false,
		"give the metadata of embedded objects (pod and PVC templates) their fields, as controller-gen's generateEmbeddedObjectMeta does")
	descriptionDepth := flag.Int("max-description-depth", 0,
		"drop field descriptions nested deeper than this many levels of properties (0: keep all)")
	flag.Parse()

	for _, pkgPath := range strings.Split(*typesOnly, ",") {
		if pkgPath = strings.TrimSpace(pkgPath); pkgPath != "" {
			crd.KnownPackages[pkgPath] = indexTypesOnly
		}
	}

	var generator genall.Generator = &crd.Generator{GenerateEmbeddedObjectMeta: embeddedObjectMeta}
	runtime, err := genall.Generators{&generator}.ForRoots(*paths)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crdgen: load %s: %v\n", *paths, err)
		os.Exit(1)
	}
	runtime.OutputRules = genall.OutputRules{Default: genall.OutputToDirectory(*outputDir)}
	if hadErrors := runtime.Run(); hadErrors {
		os.Exit(1)
	}
	if *descriptionDepth > 0 {
		if err := trimDescriptions(*outputDir, *descriptionDepth); err != nil {
			fmt.Fprintf(os.Stderr, "crdgen: %v\n", err)
			os.Exit(1)
		}
	}
}

// indexTypesOnly makes a package's types known to the parser without
// registering the package as an API group version.
func indexTypesOnly(parser *crd.Parser, pkg *loader.Package) {
	parser.AddPackage(pkg)
	delete(parser.GroupVersions, pkg)
}
