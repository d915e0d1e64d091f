package userdata_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/demo"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/profile"
	"github.com/changedigest/changedigest/userdata"
)

func mustStore(t *testing.T) *pet.Store {
	t.Helper()
	st := pet.New(t.TempDir())
	st.NoSync = true
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var exportTime = func() time.Time { return time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC) }

// fill gives user ann of st a profile, three watches, and channels of
// every sort of secret.
func fill(t *testing.T, st *pet.Store) *changedigest.User {
	t.Helper()
	ctx := context.Background()
	u := &changedigest.User{Name: "ann", Email: "ann@example.org", DigestHour: 7}
	must(t, st.CreateUser(ctx, u))
	p, err := profile.Parse(profile.Document{Body: bytes.NewReader(demo.Profile), Name: "demo.ttl"})
	must(t, err)
	p.UserID = u.ID
	p.Excluded = []string{"cycling"}
	p.Senses = []changedigest.SenseChoice{{Term: "football", Synset: "n00468480"}}
	must(t, st.PutProfile(ctx, p, demo.Profile))
	ws := []*changedigest.Watch{
		{URL: "https://example.org/news", Title: "News", Tags: []string{"news", "local"}, Interval: 30 * time.Minute,
			IgnoreText: []string{"/\\d+ readers/"}, MinSignificance: 0.2, NotifyTypes: []changedigest.ChangeType{changedigest.ChangeContent}},
		{URL: "https://example.org/shop", Zone: "#offers", Category: changedigest.CategoryAcademic, Paused: true, KeepVersions: 10,
			ValueSelector: ".price", When: "below 20"},
		{URL: "https://example.org/app", Render: changedigest.RenderBrowser, WaitFor: ".ready",
			Steps: []changedigest.Step{{Action: "click", Selector: "#accept"}}, OnlyInterests: true},
	}
	for _, w := range ws {
		w.UserID = u.ID
		must(t, st.CreateWatch(ctx, w))
	}
	cs := []*changedigest.Channel{
		{Kind: changedigest.ChannelWebhook, Name: "hook", URL: "https://hooks.example.org/in", Secret: "signing-key-0123456789", Watches: []int64{ws[0].ID}},
		{Kind: changedigest.ChannelNtfy, URL: "https://ntfy.example.org/topic", Priority: 4, NtfyTags: []string{"bell"}, Tags: []string{"news"}, Select: changedigest.SelectInterests},
		{Kind: changedigest.ChannelMatrix, URL: "https://matrix.example.org", Room: "!room:example.org", Secret: "matrix-token-0123456789"},
		{Kind: changedigest.ChannelSlack, URL: "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX"},
	}
	for _, c := range cs {
		c.UserID = u.ID
		must(t, st.CreateChannel(ctx, c))
	}
	return u
}

func export(t *testing.T, st *pet.Store, name string, secrets bool) *userdata.Document {
	t.Helper()
	d, err := userdata.Export(context.Background(), st, name, userdata.Options{Secrets: secrets, Now: exportTime})
	must(t, err)
	return d
}

func encode(t *testing.T, d *userdata.Document) []byte {
	t.Helper()
	var b bytes.Buffer
	must(t, d.Encode(&b))
	return b.Bytes()
}

// comparable is an export with the parts that differ between two stores
// by design (the name, the watch IDs) made equal.
func comparable(t *testing.T, d *userdata.Document) string {
	t.Helper()
	c := *d
	c.User.Name = ""
	c.Watches = append([]userdata.Watch(nil), d.Watches...)
	c.Channels = append([]userdata.Channel(nil), d.Channels...)
	idx := map[int64]int64{}
	for i := range c.Watches {
		idx[c.Watches[i].ID] = int64(i + 1)
		c.Watches[i].ID = int64(i + 1)
	}
	for i := range c.Channels {
		ch := c.Channels[i]
		ch.Watches = nil
		for _, id := range d.Channels[i].Watches {
			ch.Watches = append(ch.Watches, idx[id])
		}
		c.Channels[i] = ch
	}
	if c.Profile != nil {
		p := *c.Profile
		p.Profile.UpdatedAt = time.Time{}
		c.Profile = &p
	}
	return string(encode(t, &c))
}

// TestExportImportRoundTrip: a user's settings exported with their
// secrets and imported as another user in another store export the same;
// imported again, nothing is added.
func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	src, dst := mustStore(t), mustStore(t)
	fill(t, src)
	doc := export(t, src, "ann", true)
	if js := string(encode(t, doc)); !strings.Contains(js, `"value_selector": ".price"`) || !strings.Contains(js, `"when": "below 20"`) {
		t.Errorf("the export lacks the shop watch's value selector and condition:\n%s", js)
	}
	parsed, err := userdata.Parse(bytes.NewReader(encode(t, doc)))
	must(t, err)
	rep, err := userdata.Import(ctx, dst, "bob", parsed)
	must(t, err)
	if !rep.CreatedUser || rep.Watches != 3 || rep.Channels != 4 || !rep.Profile || len(rep.Skipped) > 0 {
		t.Fatalf("report: %+v", rep)
	}
	if got, want := comparable(t, export(t, dst, "bob", true)), comparable(t, doc); got != want {
		t.Errorf("the import exports differently:\n%s\nwant\n%s", got, want)
	}
	bob, err := dst.UserByName(ctx, "bob")
	must(t, err)
	_, fdoc, err := dst.Profile(ctx, bob.ID)
	must(t, err)
	if !bytes.Equal(fdoc, demo.Profile) {
		t.Errorf("FOAF document not kept byte for byte")
	}
	rep, err = userdata.Import(ctx, dst, "bob", parsed)
	must(t, err)
	if rep.CreatedUser || rep.Watches != 0 || rep.Channels != 0 || rep.Profile || len(rep.Kept) != 3+4+1 {
		t.Errorf("a second import: %+v", rep)
	}
	ws, _ := dst.Watches(ctx, pet.AnyUser, "")
	cs, _ := dst.Channels(ctx, 1)
	if len(ws) != 3 || len(cs) != 4 {
		t.Errorf("after a second import: %d watches, %d channels", len(ws), len(cs))
	}
}

// TestExportLeavesSecretsOut: without Secrets, no secret is in the
// document; the import leaves out the channels that cannot work without
// theirs and disables the others, and says so.
func TestExportLeavesSecretsOut(t *testing.T) {
	ctx := context.Background()
	src, dst := mustStore(t), mustStore(t)
	fill(t, src)
	b := encode(t, export(t, src, "ann", false))
	for _, secret := range []string{"signing-key", "matrix-token", "XXXXXXXXXXXXXXXX"} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the export holds %q", secret)
		}
	}
	d, err := userdata.Parse(bytes.NewReader(b))
	must(t, err)
	rep, err := userdata.Import(ctx, dst, "ann", d)
	must(t, err)
	if rep.Channels != 2 || len(rep.Skipped) != 2 || len(rep.Notes) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	cs, err := dst.Channels(ctx, 1)
	must(t, err)
	for _, c := range cs {
		if want := c.Kind == changedigest.ChannelWebhook; c.Disabled != want {
			t.Errorf("%s channel disabled %v, want %v", c.Kind, c.Disabled, want)
		}
	}
	if !strings.Contains(strings.Join(rep.Skipped, "\n"), "matrix") {
		t.Errorf("skipped: %q", rep.Skipped)
	}
}

// TestImportKeepsWhatIsStored: importing into a user who has a watch of
// the same address, a profile, an e-mail address and a digest hour keeps
// them as they are.
func TestImportKeepsWhatIsStored(t *testing.T) {
	ctx := context.Background()
	src, dst := mustStore(t), mustStore(t)
	fill(t, src)
	u := &changedigest.User{Name: "ann", Email: "other@example.org", DigestHour: 9}
	must(t, dst.CreateUser(ctx, u))
	w := &changedigest.Watch{UserID: u.ID, URL: "https://example.org/news", Title: "Mine"}
	must(t, dst.CreateWatch(ctx, w))
	p := &changedigest.Profile{UserID: u.ID, Interests: []changedigest.Interest{{Term: "chess", Source: "manual", Weight: 1}}}
	must(t, dst.PutProfile(ctx, p, nil))

	rep, err := userdata.Import(ctx, dst, "ann", export(t, src, "ann", true))
	must(t, err)
	if rep.Watches != 2 || rep.Profile {
		t.Errorf("report: %+v", rep)
	}
	got, err := dst.Watch(ctx, u.ID, w.ID)
	must(t, err)
	if got.Title != "Mine" {
		t.Errorf("the stored watch became %+v", got)
	}
	gp, _, err := dst.Profile(ctx, u.ID)
	must(t, err)
	if len(gp.Interests) != 1 || gp.Interests[0].Term != "chess" {
		t.Errorf("the stored profile became %+v", gp)
	}
	gu, err := dst.UserByName(ctx, "ann")
	must(t, err)
	if gu.Email != "other@example.org" || gu.DigestHour != 9 {
		t.Errorf("the stored settings became %+v", gu)
	}
	// The channel routed to the kept watch routes to it.
	cs, err := dst.Channels(ctx, u.ID)
	must(t, err)
	for _, c := range cs {
		if c.Kind == changedigest.ChannelWebhook && (len(c.Watches) != 1 || c.Watches[0] != w.ID) {
			t.Errorf("webhook routes %v, want [%d]", c.Watches, w.ID)
		}
	}
}

// TestParseBadInput: each fault is an error naming it, and nothing is
// imported.
func TestParseBadInput(t *testing.T) {
	src := mustStore(t)
	fill(t, src)
	good := encode(t, export(t, src, "ann", true))
	edit := func(fn func(m map[string]any)) string {
		var m map[string]any
		must(t, json.Unmarshal(good, &m))
		fn(m)
		b, err := json.Marshal(m)
		must(t, err)
		return string(b)
	}
	watch := func(m map[string]any, i int) map[string]any { return m["watches"].([]any)[i].(map[string]any) }
	for _, tc := range []struct {
		name, input string
		want        []string
	}{
		{"empty", "", []string{"empty"}},
		{"not JSON", "hello", []string{"not valid JSON at line 1, column 1"}},
		{"truncated", string(good[:len(good)/2]), []string{"ends before"}},
		{"a backup", "PaxHeaders.0/pet.db\x00\x00", []string{"not valid JSON"}},
		{"wrong format", `{"format":"opml","version":1}`, []string{`format is "opml"`}},
		{"wrong version", `{"format":"changedigest-user","version":7}`, []string{"version 7"}},
		{"unknown field", edit(func(m map[string]any) { m["passwords"] = true }), []string{`unknown field "passwords"`}},
		{"wrong type", edit(func(m map[string]any) { m["watches"] = "all" }), []string{"watches is a JSON string, want an array"}},
		{"two faults", edit(func(m map[string]any) {
			watch(m, 0)["every"] = "10s"
			watch(m, 1)["url"] = "ftp://example.org/"
		}), []string{"2 problems", "watches[0] (https://example.org/news): interval 10s is shorter than one minute", `watches[1] (ftp://example.org/): watch URL "ftp://example.org/"`}},
		{"bad duration", edit(func(m map[string]any) { watch(m, 0)["every"] = "often" }), []string{`every "often" is not a duration`}},
		{"duplicate watch", edit(func(m map[string]any) {
			w := watch(m, 1)
			w["url"], w["zone"] = "https://example.org/news", ""
		}), []string{"the same URL and zone as watches[0]"}},
		{"channel routes a missing watch", edit(func(m map[string]any) {
			m["channels"].([]any)[0].(map[string]any)["watches"] = []int{99}
		}), []string{`channels[0] (webhook "hook"): routes watch 99`}},
		{"bad channel", edit(func(m map[string]any) {
			m["channels"].([]any)[2].(map[string]any)["room"] = "lobby"
		}), []string{`channels[2] (matrix "matrix"): Matrix room "lobby"`}},
		{"bad profile document", edit(func(m map[string]any) {
			m["profile"].(map[string]any)["document"] = "@prefix foaf: <http://xmlns.com/foaf/0.1/> .\n<#me> foaf:interest ."
		}), []string{"profile.document:"}},
		{"bad digest hour", edit(func(m map[string]any) { m["user"].(map[string]any)["digest_hour"] = 24 }), []string{"user: digest hour 24"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := userdata.Parse(strings.NewReader(tc.input))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, userdata.ErrInvalid) || changedigest.ErrorCode(err) != changedigest.EINVALID {
				t.Errorf("error %v is not ErrInvalid and EINVALID", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
