package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func runCRDs(args []string, stdout io.Writer) error {
	moduleDir, err := parseCommand(flag.NewFlagSet("crds", flag.ContinueOnError), args)
	if err != nil {
		return err
	}
	docs, err := crdDocuments(trainerCRDDir(moduleDir))
	if err != nil {
		return fmt.Errorf("Trainer's CRDs: %w", err)
	}
	return writeJSON(stdout, docs)
}

// trainerCRDDir is where Trainer's module keeps its CRDs.
func trainerCRDDir(moduleDir string) string {
	return filepath.Join(moduleDir, "manifests", "base", "crds")
}

// crdDocuments returns every CustomResourceDefinition in the YAML files of
// dir as JSON, converted from the YAML as it is (no field dropped or
// defaulted, numbers as written), sorted by name.
func crdDocuments(dir string) ([]json.RawMessage, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	type namedDoc struct {
		name string
		doc  json.RawMessage
	}
	var crds []namedDoc
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read CRDs: %w", err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			raw, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			// An empty document is null, which leaves head empty.
			if err := json.Unmarshal(raw, &head); err != nil {
				return nil, fmt.Errorf("%s: a document that is not an object: %w", file, err)
			}
			if head.Kind == "CustomResourceDefinition" {
				crds = append(crds, namedDoc{head.Metadata.Name, raw})
			}
		}
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition in %s", dir)
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].name < crds[j].name })
	docs := make([]json.RawMessage, len(crds))
	for i, c := range crds {
		docs[i] = c.doc
	}
	return docs, nil
}
