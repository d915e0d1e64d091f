package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pet"
)

func init() {
	commands["channel"] = command{summary: "notification channels: channel add KIND URL | list | rm ID | test ID | retry ID | template ID FILE", run: runChannel}
}

func runChannel(ctx context.Context, e *env) error {
	if len(e.args) == 0 {
		return usagef("want a sub-command: channel add KIND URL | channel list | channel rm ID | channel test ID | channel retry ID | channel template ID FILE")
	}
	sub, rest := e.args[0], &env{args: e.args[1:], global: e.global, stdin: e.stdin, stdout: e.stdout, stderr: e.stderr}
	if subcommandHelp(e, sub, `usage: changedigest channel SUB-COMMAND …
  add KIND URL   a notification channel (webhook, slack, mattermost, discord, matrix, ntfy, gotify, telegram, pushover, email)
  list           the channels
  rm ID          remove one
  test ID        send a test message
  retry ID       send again what failed
  template ID FILE|--clear
                 set the channel's message template (and show it written for a sample change) or go back to the default message
'changedigest channel SUB-COMMAND -h' lists a sub-command's flags.`) {
		return nil
	}
	switch sub {
	case "add":
		return runChannelAdd(ctx, rest)
	case "list", "ls":
		return runChannelList(ctx, rest)
	case "rm", "remove":
		return runChannelRm(ctx, rest)
	case "test":
		return runChannelTest(ctx, rest)
	case "retry":
		return runChannelRetry(ctx, rest)
	case "template":
		return runChannelTemplate(ctx, rest)
	}
	return usagef("unknown sub-command %q: want add, list, rm, test, retry or template", sub)
}

func runChannelAdd(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "channel add", "webhook|slack|mattermost|discord|matrix|ntfy|gotify|telegram|pushover|email URL [--secret-stdin] [--room R] [--select all|significant|interests] [--tag T]… [--watch ID]… [--template FILE]")
	sf.register(fs)
	user := fs.String("user", "", "the user the channel belongs to")
	name := fs.String("name", "", "a name for the channel (default: its kind)")
	secretStdin := fs.Bool("secret-stdin", false, "read the secret (webhook signing key, Matrix or ntfy access token) from the first line of standard input")
	room := fs.String("room", "", "Matrix room id (!id:server) or alias (#name:server); Telegram chat id or @channel; Pushover user key")
	priority := fs.Int("priority", 0, "ntfy priority, 1 (min) to 5 (max)")
	sel := fs.String("select", "all", "which changes: all, significant or interests")
	var tags, ntfyTags, watches multiFlag
	fs.Var(&tags, "tag", "send only versions of watches with this tag (repeat for more)")
	fs.Var(&watches, "watch", "send only versions of this watch id (repeat for more)")
	fs.Var(&ntfyTags, "ntfy-tag", "an ntfy tag (repeat for more)")
	tmplFile := fs.String("template", "", "a file with the message template (Go text/template; see the README's \"Message templates\")")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) != 2 {
		return usagef("channel add takes a kind and an address, got %d arguments", len(args))
	}
	c := &changedigest.Channel{Name: *name, Kind: changedigest.ChannelKind(args[0]), URL: args[1], Room: *room,
		Priority: *priority, Select: changedigest.Selection(*sel), Tags: tags, NtfyTags: ntfyTags}
	for _, v := range watches {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			return usagef("--watch %q is not a watch id", v)
		}
		c.Watches = append(c.Watches, id)
	}
	if *secretStdin {
		line, err := bufio.NewReader(e.stdin).ReadString('\n')
		if err != nil && err != io.EOF {
			return err
		}
		if c.Secret = strings.TrimSpace(line); c.Secret == "" {
			return usagef("--secret-stdin: no secret on standard input")
		}
	}
	if *tmplFile != "" {
		if c.Template, err = readTemplate(*tmplFile); err != nil {
			return err
		}
	}
	if err := c.Validate(); err != nil {
		return err
	}
	store, u, err := sf.openCLIAs(ctx, *user, e)
	if err != nil {
		return err
	}
	defer store.Close()
	for _, id := range c.Watches {
		if _, err := store.Watch(ctx, u.ID, id); err != nil {
			return err
		}
	}
	c.UserID = u.ID
	if err := store.CreateChannel(ctx, c); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "channel %d: %s %s (send it a test message with: changedigest channel test %d)\n", c.ID, c.Kind, c.DisplayURL(), c.ID)
	return nil
}

func runChannelList(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "channel list", "")
	sf.register(fs)
	user := fs.String("user", "", "whose channels")
	if _, err := e.parse(fs, e.args); err != nil {
		return err
	}
	sf.mayOpenView = true // reads only
	store, u, err := sf.openCLIAs(ctx, *user, e)
	if err != nil {
		return err
	}
	defer store.Close()
	cs, err := store.Channels(ctx, u.ID)
	if err != nil {
		return err
	}
	if len(cs) == 0 {
		fmt.Fprintln(e.stdout, "no channels yet: add one with 'changedigest channel add KIND URL'")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tKIND\tADDRESS\tSECRET\tSENDS\tFAILED\tLAST ERROR")
	for _, c := range cs {
		dead, err := store.Deliveries(ctx, pet.DeliveryFilter{UserID: u.ID, ChannelID: c.ID, State: changedigest.DeliveryDead, Limit: 1000})
		if err != nil {
			return err
		}
		lastErr := ""
		if len(dead) > 0 {
			lastErr = dead[0].LastError
		}
		sends := string(c.Select)
		if len(c.Tags) > 0 {
			sends += " tags " + strings.Join(c.Tags, ",")
		}
		for _, id := range c.Watches {
			sends += " #" + strconv.FormatInt(id, 10)
		}
		if c.Disabled {
			sends += " (paused)"
		}
		if c.Template != "" {
			sends += " (own message)"
		}
		addr := c.DisplayURL()
		if c.Room != "" {
			addr += " " + c.Room
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", c.ID, c.Name, c.Kind, addr, orDash(c.SecretHint()), sends,
			len(dead), orDash(oneLine(lastErr, 60)))
	}
	return tw.Flush()
}

// channelArg opens the store and finds the channel named by the one
// argument; the caller closes the store.
func channelArg(ctx context.Context, e *env, name, usage string) (cliStore, *changedigest.Channel, *storeFlags, error) {
	sf := &storeFlags{}
	fs := newFlagSet(e, name, usage)
	sf.register(fs)
	user := fs.String("user", "", "whose channel")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(args) != 1 {
		return nil, nil, nil, usagef("%s takes one channel id, got %d arguments", name, len(args))
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id <= 0 {
		return nil, nil, nil, usagef("%q is not a channel id", args[0])
	}
	store, u, err := sf.openCLIAs(ctx, *user, e)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := store.Channel(ctx, u.ID, id)
	if err != nil {
		store.Close()
		return nil, nil, nil, err
	}
	return store, c, sf, nil
}

func runChannelRm(ctx context.Context, e *env) error {
	store, c, _, err := channelArg(ctx, e, "channel rm", "ID")
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.DeleteChannel(ctx, c.UserID, c.ID); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "removed channel %d (%s)\n", c.ID, c.Name)
	return nil
}

// runChannelTest sends a test message now, through the same address
// guard as the service (--allow-private admits private receivers).
func runChannelTest(ctx context.Context, e *env) error {
	store, c, sf, err := channelArg(ctx, e, "channel test", "ID [--allow-private]")
	if err != nil {
		return err
	}
	defer store.Close()
	var status int
	var sendErr error
	switch st := store.(type) {
	case remoteStore: // the service sends it, as its web page does
		res, err := st.channelDo(ctx, c.UserID, c.ID, "test")
		if err != nil {
			return err
		}
		status = res.Status
		if res.Error != "" {
			sendErr = errors.New(res.Error)
		}
	case localStore:
		fetcher := crawl.NewFetcher()
		fetcher.AllowPrivate = sf.allowPrivate
		d := notify.NewDispatcher(st.Store, nil, fetcher.Client(30*time.Second))
		res := d.Test(ctx, c)
		status, sendErr = res.Status, res.Err
	}
	if sendErr != nil {
		return fmt.Errorf("test message to channel %d (%s) failed: %w", c.ID, c.Name, sendErr)
	}
	fmt.Fprintf(e.stdout, "test message sent to channel %d (%s): status %d\n", c.ID, c.Name, status)
	return nil
}

// runChannelRetry makes the channel's failed deliveries pending again;
// the service sends them at its next look at the store.
func runChannelRetry(ctx context.Context, e *env) error {
	store, c, _, err := channelArg(ctx, e, "channel retry", "ID")
	if err != nil {
		return err
	}
	defer store.Close()
	n := 0
	switch st := store.(type) {
	case remoteStore:
		res, err := st.channelDo(ctx, c.UserID, c.ID, "retry")
		if err != nil {
			return err
		}
		n = res.Retried
	case localStore:
		dead, err := st.Deliveries(ctx, pet.DeliveryFilter{UserID: c.UserID, ChannelID: c.ID, State: changedigest.DeliveryDead, Limit: 1000})
		if err != nil {
			return err
		}
		d := notify.NewDispatcher(st.Store, nil, nil)
		for _, x := range dead {
			if _, err := d.Redeliver(ctx, c.UserID, x.ID); err != nil {
				return err
			}
		}
		n = len(dead)
	}
	fmt.Fprintf(e.stdout, "%d failed notification(s) of channel %d (%s) will be sent again\n", n, c.ID, c.Name)
	return nil
}

// readTemplate reads a message template from file and checks it (parsed
// and run against a sample change).
func readTemplate(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", changedigest.Errorf(changedigest.EINVALID, "--template: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, notify.MaxTemplateLen+1))
	if err != nil {
		return "", changedigest.Errorf(changedigest.EINVALID, "--template: %v", err)
	}
	if err := notify.CheckTemplate(string(b)); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	return string(b), nil
}

// runChannelTemplate sets a channel's message template from a file, or
// clears it, and shows the message it writes for a sample change.
func runChannelTemplate(ctx context.Context, e *env) error {
	sf := &storeFlags{}
	fs := newFlagSet(e, "channel template", "ID FILE | ID --clear")
	sf.register(fs)
	user := fs.String("user", "", "whose channel")
	clear := fs.Bool("clear", false, "remove the template: the channel sends its default message")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if *clear && len(args) != 1 || !*clear && len(args) != 2 {
		return usagef("channel template takes a channel id and a file, or a channel id and --clear")
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id <= 0 {
		return usagef("%q is not a channel id", args[0])
	}
	src := ""
	if !*clear {
		if src, err = readTemplate(args[1]); err != nil {
			return err
		}
	}
	store, u, err := sf.openCLIAs(ctx, *user, e)
	if err != nil {
		return err
	}
	defer store.Close()
	c, err := store.SetTemplate(ctx, u.ID, id, src)
	if err != nil {
		return err
	}
	if src == "" {
		fmt.Fprintf(e.stdout, "channel %d (%s) sends the default message\n", c.ID, c.Name)
		return nil
	}
	title, msg, err := notify.RenderSample(src)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "channel %d (%s) sends its own message; for a sample change:\ntitle: %s\n%s\n", c.ID, c.Name, title, msg)
	return nil
}
