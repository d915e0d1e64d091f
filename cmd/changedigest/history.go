package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

func init() {
	commands["history"] = command{summary: "list the stored versions of a watch: history ID|URL", run: runHistory}
	commands["show"] = command{summary: "show a stored version: show ID|URL [--at TIME | --seq N] [--changes | --raw]", run: runShow}
	commands["search"] = command{summary: "search all history: search QUERY [--since D] [--until D] [--type T]", run: runSearch}
}

func runHistory(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "history", "ID|URL [--limit N]")
	sf.register(fs)
	user := fs.String("user", "", "whose watch")
	limit := fs.Int("limit", 50, "newest versions to list (0: all)")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return usagef("history takes one watch id or URL")
	}
	sf.mayOpenView = true // reads only
	store, u, err := sf.openCLIAs(ctx, *user, e)
	if err != nil {
		return err
	}
	defer store.Close()
	w, err := findWatch(ctx, store, u, args[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "watch %d: %s (%s), %d checks\n", w.ID, w.URL, orDash(string(w.Kind)), w.Checks)
	if w.LastError != "" {
		fmt.Fprintf(e.stdout, "last error (%s): %s\n", when(w.LastErrorAt), w.LastError)
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	head := "SEQ\tFETCHED\tSTATUS\tBYTES\tSEGMENTS\tCHANGES\tTYPES"
	if w.ReadsValue() {
		head += "\tVALUE"
		if w.When != "" {
			head += "\tWHEN " + strings.ToUpper(w.When)
		}
	}
	fmt.Fprintln(tw, head)
	cond := w.Condition()
	before, n := 0, 0
	for {
		vs, err := store.Versions(ctx, w.ID, before, 1000)
		if err != nil {
			return err
		}
		for _, v := range vs {
			if *limit > 0 && n >= *limit {
				return tw.Flush()
			}
			var types []string
			for _, c := range v.Changes {
				if t := string(c.Type); !containsString(types, t) {
					types = append(types, t)
				}
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%s", v.Seq, v.FetchedAt.Local().Format(time.DateTime), v.Status, v.Size,
				len(v.Segments), len(v.Changes), orDash(strings.Join(types, ",")))
			if w.ReadsValue() {
				value := "-"
				if v.Value != nil {
					value = v.Value.String()
				}
				fmt.Fprintf(tw, "\t%s", value)
				if w.When != "" {
					met, _ := cond.Holds(v.Value)
					fmt.Fprintf(tw, "\t%s", map[bool]string{true: "met", false: "-"}[met && len(v.Changes) > 0])
				}
			}
			fmt.Fprintln(tw)
			n++
		}
		if len(vs) < 1000 {
			break
		}
		before = vs[len(vs)-1].Seq
	}
	if n == 0 {
		fmt.Fprintln(tw, "(no version stored yet: run 'changedigest check')")
	}
	return tw.Flush()
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func runShow(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "show", "ID|URL [--at TIME | --seq N] [--changes | --raw]")
	sf.register(fs)
	user := fs.String("user", "", "whose watch")
	at := fs.String("at", "", "the version current at this time (YYYY-MM-DD, YYYY-MM-DD HH:MM or RFC 3339)")
	seq := fs.Int("seq", 0, "the version with this number")
	changes := fs.Bool("changes", false, "print the version's changes instead of its text")
	raw := fs.Bool("raw", false, "print the stored body byte for byte")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return usagef("show takes one watch id or URL")
	}
	if *at != "" && *seq != 0 {
		return usagef("give --at or --seq, not both")
	}
	if *changes && *raw {
		return usagef("give --changes or --raw, not both")
	}
	var atTime time.Time
	if *at != "" {
		if atTime, err = parseWhen(*at, true); err != nil {
			return err
		}
	}
	sf.mayOpenView = true // reads only
	store, u, err := sf.openCLIAs(ctx, *user, e)
	if err != nil {
		return err
	}
	defer store.Close()
	w, err := findWatch(ctx, store, u, args[0])
	if err != nil {
		return err
	}
	n := *seq
	if n == 0 {
		if n, err = versionAt(ctx, store, w, atTime); err != nil {
			return err
		}
	}
	v, err := store.Version(ctx, w.ID, n)
	if err != nil {
		return err
	}
	if *raw {
		body, err := store.Body(ctx, w.ID, n)
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(body)
		return err
	}
	bw := bufio.NewWriter(e.stdout)
	fmt.Fprintf(bw, "%s, version %d of %s, fetched %s, status %d, %d bytes, %d segments\n",
		w.URL, v.Seq, v.Kind, v.FetchedAt.Local().Format(time.DateTime), v.Status, v.Size, len(v.Segments))
	if *changes {
		if len(v.Changes) == 0 {
			fmt.Fprintln(bw, "no changes in this version")
		}
		writeChanges(bw, v.Kind, v.Changes, useColour(e.stdout))
		return bw.Flush()
	}
	for _, s := range v.Segments {
		fmt.Fprintf(bw, "\n[%d] %s\n%s\n", s.Index, s.Path, strings.TrimSpace(s.Text))
	}
	return bw.Flush()
}

// versionAt is the newest version fetched at or before t (the newest of
// all for a zero t).
func versionAt(ctx context.Context, store interface {
	Versions(ctx context.Context, watchID int64, before, limit int) ([]changedigest.Snapshot, error)
}, w *changedigest.Watch, t time.Time) (int, error) {
	before := 0
	for {
		vs, err := store.Versions(ctx, w.ID, before, 1000)
		if err != nil {
			return 0, err
		}
		for _, v := range vs {
			if t.IsZero() || !v.FetchedAt.After(t) {
				return v.Seq, nil
			}
		}
		if len(vs) < 1000 {
			break
		}
		before = vs[len(vs)-1].Seq
	}
	if t.IsZero() {
		return 0, changedigest.Errorf(changedigest.ENOTFOUND, "%s has no stored version yet", w.URL)
	}
	return 0, changedigest.Errorf(changedigest.ENOTFOUND, "%s has no version from before %s", w.URL, t.Local().Format(time.DateTime))
}

// parseWhen reads a date or time; a bare date means its end when end is set.
func parseWhen(s string, end bool) (time.Time, error) {
	for _, layout := range []string{time.RFC3339, "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	t, err := time.ParseInLocation(time.DateOnly, s, time.Local)
	if err != nil {
		return time.Time{}, usagef("%q is not a time (want YYYY-MM-DD, YYYY-MM-DD HH:MM or RFC 3339)", s)
	}
	if end {
		t = t.AddDate(0, 0, 1).Add(-time.Nanosecond)
	}
	return t, nil
}

func runSearch(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "search", "QUERY [--since D] [--until D] [--type T] [--watch ID|URL]")
	sf.register(fs)
	user := fs.String("user", "", "whose watches")
	since := fs.String("since", "", "only text on the page at or after this date")
	until := fs.String("until", "", "only text on the page at or before this date")
	typ := fs.String("type", "", "only text brought by a change of this type (content, structural, cosmetic, behavioural)")
	watch := fs.String("watch", "", "only this watch")
	limit := fs.Int("limit", 20, "hits to print (at most 100)")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usagef("search takes a query")
	}
	q := pet.Query{Text: strings.Join(args, " "), Limit: *limit}
	if *since != "" {
		if q.Since, err = parseWhen(*since, false); err != nil {
			return err
		}
	}
	if *until != "" {
		if q.Until, err = parseWhen(*until, true); err != nil {
			return err
		}
	}
	if *typ != "" {
		t, err := changedigest.ParseChangeType(*typ)
		if err != nil {
			return err
		}
		q.Types = []changedigest.ChangeType{t}
	}
	sf.mayOpenView = true // reads only
	store, u, err := sf.openCLIAs(ctx, *user, e)
	if err != nil {
		return err
	}
	defer store.Close()
	q.UserID = u.ID
	names := map[int64]string{}
	ws, err := store.Watches(ctx, u.ID, "")
	if err != nil {
		return err
	}
	for _, w := range ws {
		names[w.ID] = w.URL
	}
	if *watch != "" {
		w, err := findWatch(ctx, store, u, *watch)
		if err != nil {
			return err
		}
		q.WatchID = w.ID
	}
	res, err := store.Search(ctx, q)
	if err != nil {
		return err
	}
	colour := useColour(e.stdout)
	bw := bufio.NewWriter(e.stdout)
	noun := "hits"
	if res.Total == 1 {
		noun = "hit"
	}
	fmt.Fprintf(bw, "%d %s for %q\n", res.Total, noun, q.Text)
	for _, h := range res.Hits {
		seen := "still there"
		if h.LastSeq > 0 {
			seen = "gone after version " + fmt.Sprint(h.LastSeq) + " (" + h.LastSeen.Local().Format(time.DateTime) + ")"
		}
		fmt.Fprintf(bw, "\n%s\n  version %d, %s, %s\n  %s\n", names[h.WatchID], h.Seq, h.Time.Local().Format(time.DateTime), seen, snippet(h.Snippet, colour))
	}
	if res.Total > len(res.Hits) {
		fmt.Fprintf(bw, "\n(%d more: narrow the query or raise --limit)\n", res.Total-len(res.Hits))
	}
	return bw.Flush()
}

// snippet prints a search snippet with the matches in bold (on a terminal)
// or between asterisks.
func snippet(s pet.Snippet, colour bool) string {
	var b strings.Builder
	last := 0
	for _, m := range s.Matches {
		if m.Start < last || m.End > len(s.Text) {
			continue
		}
		b.WriteString(s.Text[last:m.Start])
		if colour {
			b.WriteString(ansiBold + s.Text[m.Start:m.End] + ansiReset)
		} else {
			b.WriteString("*" + s.Text[m.Start:m.End] + "*")
		}
		last = m.End
	}
	b.WriteString(s.Text[last:])
	return oneLine(b.String(), 300)
}
