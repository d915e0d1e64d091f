package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/server"
)

func init() {
	commands["user"] = command{summary: "manage local users: user add NAME | user passwd NAME | user list", run: runUser}
}

func runUser(ctx context.Context, e *env) error {
	if len(e.args) == 0 {
		return usagef("want a sub-command: user add NAME [--admin] | user passwd NAME | user list")
	}
	sub := e.args[0]
	if subcommandHelp(e, sub, `usage: changedigest user SUB-COMMAND …
  add NAME [--admin] [--email ADDR]   a new user (the password is read from standard input)
  passwd NAME                         a new password (read from standard input)
  list                                the users`) {
		return nil
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
		return usagef("unknown sub-command %q: want add, passwd or list", sub)
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
	store, err := sf.openStore(ctx, nil)
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
		if _, err := store.UpdateUser(ctx, u.ID, func(x *changedigest.User) error {
			x.PasswordHash = hash
			return nil
		}); err != nil {
			return err
		}
		if err := store.DeleteUserSessions(ctx, u.ID); err != nil {
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
