// Package version holds the build's version, stamped by the linker:
//
//	go build -ldflags "-X github.com/copse-dev/copse/internal/version.Version=v0.1.0" ./operator
package version

import (
	"fmt"
	"runtime"
)

// Version is the release this binary was built from; "dev" for builds that
// were not stamped.
var Version = "dev"

// String describes the build for --version output and start-up logs.
func String() string {
	return fmt.Sprintf("%s (%s, %s/%s)", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
