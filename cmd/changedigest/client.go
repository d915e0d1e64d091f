package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/changedigest/changedigest/agent"
)

func init() {
	commands["client"] = command{summary: "share the polling of your watches with a server (a polling client)", run: runClient}
}

func runClient(ctx context.Context, e *env) error {
	fs := newFlagSet(e, "client", "--server URL --token TOKEN [--name NAME]")
	server := fs.String("server", "", "base URL of the changedigest service")
	token := fs.String("token", os.Getenv("CHANGEDIGEST_TOKEN"), "an API token of your user (Settings; default env CHANGEDIGEST_TOKEN)")
	name := fs.String("name", "", "a name for this client in your watch pages (default: the host name)")
	allowPrivate := fs.Bool("allow-private", false, "allow fetching private, loopback and link-local addresses")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) > 0 {
		return usagef("client takes no arguments, got %q", args)
	}
	if *server == "" || *token == "" {
		return usagef("client needs --server and --token")
	}
	if *name == "" {
		*name, _ = os.Hostname()
	}
	c := agent.NewClient(*server, *token)
	c.Name = *name
	c.Fetcher.AllowPrivate = *allowPrivate
	c.Logger = slog.New(slog.NewTextHandler(e.stderr, nil))
	fmt.Fprintf(e.stdout, "polling for %s as %q; stop with Ctrl-C\n", *server, *name)
	if err := c.Run(ctx); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "stopped: %d fetches, %d changes reported, %d polls missed while others ran, %d schedules given anew\n",
		c.Fetches.Load(), c.Reports.Load(), c.Missed.Load(), c.Replaced.Load())
	return nil
}
