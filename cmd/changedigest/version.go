package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

func init() {
	commands["version"] = command{summary: "print the version", run: runVersion}
}

func runVersion(ctx context.Context, e *env) error {
	fmt.Fprintln(e.stdout, "changedigest", buildVersion())
	return nil
}

// buildVersion is the module version, "(devel)" in a work tree.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
