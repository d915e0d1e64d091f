package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/server"
	"github.com/changedigest/changedigest/userdata"
)

func init() {
	commands["user"] = command{summary: "manage local users: user add NAME | user passwd NAME | user list | user export NAME | user import NAME FILE", run: runUser}
}

func runUser(ctx context.Context, e *env) error {
	if len(e.args) == 0 {
		return usagef("want a sub-command: user add NAME [--admin] | user passwd NAME | user list | user export NAME | user import NAME FILE")
	}
	sub := e.args[0]
	if subcommandHelp(e, sub, `usage: changedigest user SUB-COMMAND …
  add NAME [--admin] [--email ADDR]   a new user (the password is read from standard input)
  passwd NAME                         a new password (read from standard input)
  list                                the users
  export NAME [--secrets]             the user's watches, profile, channels and settings as JSON
                                      (channel secrets only with --secrets)
  import NAME FILE|-                  add them from such a file to the user (created if missing);
                                      what the user has is kept`) {
		return nil
	}
	if sub == "export" || sub == "import" {
		return runUserTransfer(ctx, e, sub)
	}
	var sf storeFlags
	fs := newFlagSet(e, "user "+sub, "NAME [--admin] [--email ADDR]  (the password is read from standard input)")
	sf.register(fs)
	admin := fs.Bool("admin", false, "make the user an administrator")
	email := fs.String("email", "", "e-mail address for the daily digest")
	args, err := e.parse(fs, e.args[1:])
	if err != nil {
		return err
	}
	switch sub {
	case "add", "passwd":
		if len(args) != 1 {
			return usagef("user %s takes one user name", sub)
		}
	case "list":
		if len(args) != 0 {
			return usagef("user list takes no arguments")
		}
	default:
		return usagef("unknown sub-command %q: want add, passwd, list, export or import", sub)
	}
	if sub != "list" {
		if err := changedigest.ValidateUserName(args[0]); err != nil {
			return err
		}
	}
	var hash []byte
	if sub != "list" {
		pw, err := readPassword(e)
		if err != nil {
			return err
		}
		if hash, err = server.HashPassword(pw); err != nil {
			return err
		}
	}
	sf.mayOpenView = sub == "list"
	store, err := sf.openCLI(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	switch sub {
	case "add":
		u := &changedigest.User{Name: args[0], Admin: *admin, Email: *email, PasswordHash: hash, DigestHour: -1}
		if err := store.CreateUser(ctx, u); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "created user %s (id %d)\n", u.Name, u.ID)
	case "passwd":
		u, err := store.UserByName(ctx, args[0])
		if err != nil {
			return err
		}
		if err := store.SetPassword(ctx, u.ID, hash); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "password of %s changed; its sessions ended\n", u.Name)
	case "list":
		users, err := store.Users(ctx)
		if err != nil {
			return err
		}
		return printUsers(e.stdout, users)
	}
	return nil
}

// printUsers lists users as a table.
func printUsers(w io.Writer, users []changedigest.User) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tADMIN\tE-MAIL\tCREATED\tSTATE")
	for _, u := range users {
		state := "enabled"
		if u.Disabled {
			state = "disabled"
		}
		fmt.Fprintf(tw, "%d\t%s\t%v\t%s\t%s\t%s\n", u.ID, u.Name, u.Admin, orDash(u.Email), u.CreatedAt.Local().Format("2006-01-02"), state)
	}
	return tw.Flush()
}

// readPassword reads a password from the first line of standard input,
// asking for it when standard input is a terminal.
func readPassword(e *env) (string, error) {
	if isTerminal(e.stderr) {
		fmt.Fprint(e.stderr, "password (at least 8 characters, shown as you type): ")
	}
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", usagef("no password on standard input (e.g. echo 'a good password' | changedigest user add NAME)")
	}
	return pw, nil
}

// runUserTransfer exports a user's settings to standard output, or
// imports them from a file, through the running service when one runs
// on the data directory, else in the store.
func runUserTransfer(ctx context.Context, e *env, sub string) error {
	var sf storeFlags
	usage := "NAME [--secrets] > FILE.json"
	if sub == "import" {
		usage = "NAME FILE.json|-"
	}
	fs := newFlagSet(e, "user "+sub, usage)
	sf.register(fs)
	secrets := false
	if sub == "export" {
		fs.BoolVar(&secrets, "secrets", false, "include the channels' secrets (tokens, signing keys, incoming-webhook URLs): keep the file as safe as a password")
	}
	args, err := e.parse(fs, e.args[1:])
	if err != nil {
		return err
	}
	if want := map[string]int{"export": 1, "import": 2}[sub]; len(args) != want {
		return usagef("usage: changedigest user %s %s", sub, usage)
	}
	if err := changedigest.ValidateUserName(args[0]); err != nil {
		return err
	}
	if sub == "export" {
		return exportUser(ctx, e, &sf, args[0], secrets)
	}
	return importUser(ctx, e, &sf, args[0], args[1])
}

func exportUser(ctx context.Context, e *env, sf *storeFlags, name string, secrets bool) error {
	if c := adminClient(ctx, sf.data); c != nil {
		q := ""
		if secrets {
			q = "?secrets=1"
		}
		res, err := adminDo(ctx, c, "GET", "/users/"+url.PathEscape(name)+"/export"+q, nil)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		_, err = io.Copy(e.stdout, res.Body)
		return err
	}
	sf.mayOpenView = true
	store, err := sf.openStore(ctx, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	d, err := userdata.Export(ctx, store, name, userdata.Options{Secrets: secrets})
	if err != nil {
		return err
	}
	return d.Encode(e.stdout)
}

func importUser(ctx context.Context, e *env, sf *storeFlags, name, file string) error {
	var in io.Reader = e.stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return usagef("%v", err)
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(io.LimitReader(in, userdata.MaxDocument+1))
	if err != nil {
		return err
	}
	// Checked here first: the errors are the same through the service.
	d, err := userdata.Parse(bytes.NewReader(data))
	if err != nil {
		return err
	}
	var rep *userdata.Report
	if c := adminClient(ctx, sf.data); c != nil {
		res, err := adminDo(ctx, c, "POST", "/users/"+url.PathEscape(name)+"/import", bytes.NewReader(data))
		if err != nil {
			return err
		}
		defer res.Body.Close()
		rep = new(userdata.Report)
		if err := json.NewDecoder(res.Body).Decode(rep); err != nil {
			return fmt.Errorf("the running service's answer: %w", err)
		}
	} else {
		store, err := sf.openStore(ctx, nil)
		if err != nil {
			return err
		}
		defer store.Close()
		if rep, err = userdata.Import(ctx, store, name, d); err != nil {
			return err
		}
	}
	printReport(e.stdout, rep)
	return nil
}

// printReport says what an import did.
func printReport(w io.Writer, rep *userdata.Report) {
	if rep.CreatedUser {
		fmt.Fprintf(w, "created user %s (no password yet: changedigest user passwd %s)\n", rep.User, rep.User)
	}
	profile := "no profile"
	if rep.Profile {
		profile = "the profile"
	}
	fmt.Fprintf(w, "imported into user %s: %d watches, %d channels, %s\n", rep.User, rep.Watches, rep.Channels, profile)
	for _, k := range rep.Kept {
		fmt.Fprintf(w, "  kept %s\n", k)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "  not imported: %s\n", s)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}
