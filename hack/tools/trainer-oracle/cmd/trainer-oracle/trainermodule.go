package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"unicode"
)

// trainerModulePath is the module whose code and manifests the oracle uses.
const trainerModulePath = "github.com/kubeflow/trainer/v2"

// trainerModuleDir returns the directory of the Trainer module this binary
// was built from, in the Go module cache. The manifests (CRDs, runtimes) are
// read from there at run time so that they always match the compiled code.
// override, when not empty, is used instead (the --trainer-dir flag).
func trainerModuleDir(override string) (string, error) {
	dir := override
	if dir == "" {
		version, err := trainerModuleVersion()
		if err != nil {
			return "", err
		}
		cache, err := goModCache()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(cache, escapeModulePath(trainerModulePath)+"@"+version)
	}
	if _, err := os.Stat(filepath.Join(dir, "manifests", "base")); err != nil {
		return "", fmt.Errorf("Trainer's manifests are not in %s (run `go mod download %s` in hack/tools/trainer-oracle, or pass --trainer-dir): %w",
			dir, trainerModulePath, err)
	}
	return dir, nil
}

// trainerModuleVersion is the version of Trainer linked into this binary,
// from its build information.
func trainerModuleVersion() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("the binary carries no build information to find Trainer's version in; pass --trainer-dir")
	}
	for _, dep := range info.Deps {
		if dep.Path != trainerModulePath {
			continue
		}
		if dep.Replace != nil {
			return "", fmt.Errorf("%s is replaced by %s %s; pass --trainer-dir", trainerModulePath, dep.Replace.Path, dep.Replace.Version)
		}
		return dep.Version, nil
	}
	return "", fmt.Errorf("the build information names no %s module; pass --trainer-dir", trainerModulePath)
}

// goModCache is the Go module cache: $GOMODCACHE, else what `go env
// GOMODCACHE` says, else the go command's default (the first GOPATH entry's
// pkg/mod, GOPATH defaulting to ~/go).
func goModCache() (string, error) {
	if dir := os.Getenv("GOMODCACHE"); dir != "" {
		return dir, nil
	}
	if goTool, err := exec.LookPath("go"); err == nil {
		if out, err := exec.Command(goTool, "env", "GOMODCACHE").Output(); err == nil {
			if dir := strings.TrimSpace(string(out)); dir != "" {
				return dir, nil
			}
		}
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locate the Go module cache: neither GOMODCACHE nor GOPATH is set and %w", err)
		}
		gopath = filepath.Join(home, "go")
	}
	return filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod"), nil
}

// escapeModulePath is the module cache's spelling of a module path: each
// upper-case letter becomes '!' and its lower-case form, so that the cache
// works on case-insensitive file systems.
func escapeModulePath(path string) string {
	var b strings.Builder
	for _, r := range path {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
