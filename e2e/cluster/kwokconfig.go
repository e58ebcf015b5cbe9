package cluster

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
)

//go:embed kwok-configuration.yaml
var kwokConfiguration []byte

// writeKwokConfiguration writes kwok's KwokConfiguration into dir and
// returns its path, for kwok's --config flag.
func writeKwokConfiguration(dir string) (string, error) {
	path := filepath.Join(dir, "kwok-configuration.yaml")
	if err := os.WriteFile(path, kwokConfiguration, 0o644); err != nil {
		return "", fmt.Errorf("write kwok configuration: %w", err)
	}
	return path, nil
}
