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
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	fmt.Fprintln(e.stdout, "changedigest", v)
	return nil
}
