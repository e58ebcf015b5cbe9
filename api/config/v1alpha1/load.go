package v1alpha1

import (
	"errors"
	"fmt"
	"os"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Load reads the configuration file at path, then defaults and validates it.
// Decoding is strict: unknown or duplicated fields, fields spelled with the
// wrong case, and an apiVersion or kind other than this package's are errors,
// because a silently ignored typo would leave the operator running with a
// default the operator's administrator meant to change.
func Load(path string) (*OperatorConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading operator configuration: %w", err)
	}
	cfg, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("operator configuration %s: %w", path, err)
	}
	return cfg, nil
}

// Decode is Load for a configuration already in memory.
func Decode(data []byte) (*OperatorConfiguration, error) {
	cfg, err := decodeStrict(data)
	if err != nil {
		return nil, err
	}
	SetDefaults(cfg)
	if errs := Validate(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("invalid configuration: %w", errs.ToAggregate())
	}
	return cfg, nil
}

func decodeStrict(data []byte) (*OperatorConfiguration, error) {
	// YAMLToJSONStrict rejects duplicate keys; the JSON decoder below then
	// rejects unknown fields and case-insensitive matches.
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	cfg := &OperatorConfiguration{}
	strictErrs, err := kjson.UnmarshalStrict(jsonData, cfg)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("strict decoding: %w", errors.Join(strictErrs...))
	}
	if cfg.APIVersion != GroupVersion.String() || cfg.Kind != OperatorConfigurationKind {
		return nil, fmt.Errorf("apiVersion %q, kind %q: expected apiVersion %q, kind %q",
			cfg.APIVersion, cfg.Kind, GroupVersion.String(), OperatorConfigurationKind)
	}
	return cfg, nil
}
