// Package userdata exports one user's settings as a JSON document and
// imports such a document into a store: the user's watches (their
// definitions, not their versions), profile (the FOAF document and the
// interests built from it, with the terms removed and the senses chosen
// by hand), notification channels and digest settings.
//
// Secrets are handled deliberately. An export leaves out the password,
// the feed token, API tokens and sessions always (they belong to the
// account, not to its settings), and the channels' secrets (tokens,
// signing keys, and the incoming-webhook URLs of Slack, Mattermost and
// Discord, which are credentials themselves) unless asked for them
// (Options.Secrets). A channel exported without its secret is marked so;
// on import it is created disabled when it can be created without one,
// and left out when not (Matrix, Gotify, Telegram, Pushover, and the
// webhook-URL kinds), each said in the report.
//
// Import reads the whole document and checks every part of it before it
// writes anything; the errors name each part that is wrong. It adds and
// never replaces: a watch of the same URL and zone, a channel of the same
// kind, address and room, a profile, an e-mail address or a digest hour
// the user already has are kept as they are, and the report says so. Run
// again, it adds nothing twice.
package userdata

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/profile"
)

// Format and Version name the document's layout.
const (
	Format  = "changedigest-user"
	Version = 1
)

// MaxDocument is the largest document Import reads.
const MaxDocument = 16 << 20

// ErrInvalid: the document is not one Import takes; the error lists what
// is wrong. It also carries changedigest's EINVALID code.
var ErrInvalid = errors.New("invalid user document")

// Store is what export and import by user name need of a store: a
// *pet.Store, or the store of a running service, which writes through its
// cluster.
type Store interface {
	UserByName(ctx context.Context, name string) (*changedigest.User, error)
	CreateUser(ctx context.Context, u *changedigest.User) error
	Target
}

// Target is what ExportUser and ImportInto need of a store, for a user
// at hand (the web pages' signed-in user).
type Target interface {
	UpdateUser(ctx context.Context, id int64, fn func(*changedigest.User) error) (*changedigest.User, error)
	Profile(ctx context.Context, userID int64) (*changedigest.Profile, []byte, error)
	PutProfile(ctx context.Context, p *changedigest.Profile, document []byte) error
	Watches(ctx context.Context, userID int64, tag string) ([]changedigest.Watch, error)
	CreateWatch(ctx context.Context, w *changedigest.Watch) error
	Channels(ctx context.Context, userID int64) ([]changedigest.Channel, error)
	CreateChannel(ctx context.Context, c *changedigest.Channel) error
}

// Document is one user's settings as exported.
type Document struct {
	Format   string    `json:"format"`
	Version  int       `json:"version"`
	Exported time.Time `json:"exported"`
	// Secrets says whether the channels' secrets are in the document.
	Secrets  bool      `json:"secrets"`
	User     User      `json:"user"`
	Profile  *Profile  `json:"profile,omitempty"`
	Watches  []Watch   `json:"watches"`
	Channels []Channel `json:"channels"`
}

// User holds the account's settings (never its credentials).
type User struct {
	Name  string `json:"name"`
	Email string `json:"email,omitempty"`
	// DigestHour is the hour the daily digest is mailed, -1 for none.
	DigestHour int `json:"digest_hour"`
}

// Profile is the user's profile: the FOAF document it was read from and
// what was built from it, with the user's own terms, removals and
// choices of sense.
type Profile struct {
	// Document is the FOAF document as text; DocumentBase64 holds it
	// instead when it is not UTF-8.
	Document       string               `json:"document,omitempty"`
	DocumentBase64 string               `json:"document_base64,omitempty"`
	Profile        changedigest.Profile `json:"built"`
}

// Watch is a watch's definition. ID is the exporting store's, which
// channels' routing refers to; an import gives the watch its own.
type Watch struct {
	ID              int64                     `json:"id"`
	URL             string                    `json:"url"`
	Title           string                    `json:"title,omitempty"`
	Zone            string                    `json:"zone,omitempty"`
	Category        changedigest.Category     `json:"category,omitempty"`
	Every           string                    `json:"every,omitempty"`
	Tags            []string                  `json:"tags,omitempty"`
	Paused          bool                      `json:"paused,omitempty"`
	KeepVersions    int                       `json:"keep_versions,omitempty"`
	KeepDays        int                       `json:"keep_days,omitempty"`
	IgnoreText      []string                  `json:"ignore_text,omitempty"`
	TriggerText     []string                  `json:"trigger_text,omitempty"`
	MinSignificance float64                   `json:"min_significance,omitempty"`
	NotifyTypes     []changedigest.ChangeType `json:"notify_types,omitempty"`
	OnlyInterests   bool                      `json:"only_interests,omitempty"`
	ShowNoise       bool                      `json:"show_noise,omitempty"`
	ValueSelector   string                    `json:"value_selector,omitempty"`
	When            string                    `json:"when,omitempty"`
	Render          changedigest.Render       `json:"render,omitempty"`
	WaitFor         string                    `json:"wait_for,omitempty"`
	Steps           []changedigest.Step       `json:"steps,omitempty"`
}

// Channel is a notification channel. Watches are the exported IDs of the
// watches it routes (Watch.ID). SecretOmitted marks a channel whose
// secret (and, for Slack, Mattermost and Discord, whose URL) the export
// left out.
type Channel struct {
	Name          string                   `json:"name,omitempty"`
	Kind          changedigest.ChannelKind `json:"kind"`
	URL           string                   `json:"url,omitempty"`
	Secret        string                   `json:"secret,omitempty"`
	SecretOmitted bool                     `json:"secret_omitted,omitempty"`
	Room          string                   `json:"room,omitempty"`
	Priority      int                      `json:"priority,omitempty"`
	NtfyTags      []string                 `json:"ntfy_tags,omitempty"`
	Watches       []int64                  `json:"watches,omitempty"`
	Tags          []string                 `json:"tags,omitempty"`
	Select        changedigest.Selection   `json:"select,omitempty"`
	Disabled      bool                     `json:"disabled,omitempty"`
}

// Options are the choices of an export.
type Options struct {
	// Secrets puts the channels' secrets in the document: whoever holds
	// it can then post to those channels.
	Secrets bool
	// Now is the export's time (time.Now when nil).
	Now func() time.Time
}

// Export returns the settings of the user named. Errors: ENOTFOUND for an
// unknown user; the store's.
func Export(ctx context.Context, st Store, name string, opt Options) (*Document, error) {
	u, err := st.UserByName(ctx, name)
	if err != nil {
		return nil, err
	}
	return ExportUser(ctx, st, u, opt)
}

// ExportUser returns the settings of user u. Errors: the store's.
func ExportUser(ctx context.Context, st Target, u *changedigest.User, opt Options) (*Document, error) {
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	d := &Document{Format: Format, Version: Version, Exported: now().UTC(), Secrets: opt.Secrets,
		User: User{Name: u.Name, Email: u.Email, DigestHour: u.DigestHour}, Watches: []Watch{}, Channels: []Channel{}}
	p, doc, err := st.Profile(ctx, u.ID)
	switch {
	case err == nil:
		xp := &Profile{Profile: *p}
		xp.Profile.UserID = 0
		if utf8.Valid(doc) {
			xp.Document = string(doc)
		} else {
			xp.DocumentBase64 = base64.StdEncoding.EncodeToString(doc)
		}
		d.Profile = xp
	case changedigest.ErrorCode(err) != changedigest.ENOTFOUND:
		return nil, err
	}
	ws, err := st.Watches(ctx, u.ID, "")
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		xw := Watch{ID: w.ID, URL: w.URL, Title: w.Title, Zone: w.Zone, Category: w.Category, Tags: w.Tags,
			Paused: w.Paused, KeepVersions: w.KeepVersions, KeepDays: w.KeepDays, IgnoreText: w.IgnoreText,
			TriggerText: w.TriggerText, MinSignificance: w.MinSignificance, NotifyTypes: w.NotifyTypes,
			OnlyInterests: w.OnlyInterests, ShowNoise: w.ShowNoise, ValueSelector: w.ValueSelector, When: w.When,
			Render: w.Render, WaitFor: w.WaitFor, Steps: w.Steps}
		if w.Interval > 0 {
			xw.Every = w.Interval.String()
		}
		d.Watches = append(d.Watches, xw)
	}
	cs, err := st.Channels(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		xc := Channel{Name: c.Name, Kind: c.Kind, URL: c.URL, Room: c.Room, Priority: c.Priority, NtfyTags: c.NtfyTags,
			Watches: c.Watches, Tags: c.Tags, Select: c.Select, Disabled: c.Disabled}
		if opt.Secrets {
			xc.Secret = c.Secret
		} else if c.Secret != "" || c.DisplayURL() != c.URL {
			xc.SecretOmitted = true
			if c.DisplayURL() != c.URL {
				xc.URL = ""
			}
		}
		d.Channels = append(d.Channels, xc)
	}
	return d, nil
}

// Encode writes the document as indented JSON.
func (d *Document) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(d)
}

// Report says what an import did.
type Report struct {
	User string `json:"user"`
	// CreatedUser: the user did not exist and was created (no password).
	CreatedUser bool `json:"created_user,omitempty"`
	Watches     int  `json:"watches"`
	Channels    int  `json:"channels"`
	Profile     bool `json:"profile"`
	// Kept lists what the user already had and was kept; Skipped what
	// was not imported, and why; Notes the rest worth saying.
	Kept    []string `json:"kept,omitempty"`
	Skipped []string `json:"skipped,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Parse reads a document and checks every part of it. Errors: ErrInvalid
// (also EINVALID), listing each problem.
func Parse(r io.Reader) (*Document, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxDocument+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxDocument {
		return nil, invalid([]string{fmt.Sprintf("the document is over %d MB", MaxDocument>>20)})
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, invalid([]string{"the document is empty"})
	}
	var d Document
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, invalid([]string{jsonError(data, err)})
	}
	if dec.More() {
		return nil, invalid([]string{"something follows the document's JSON object"})
	}
	if d.Format != Format {
		return nil, invalid([]string{fmt.Sprintf("format is %q, want %q: not a changedigest user export", d.Format, Format)})
	}
	if d.Version != Version {
		return nil, invalid([]string{fmt.Sprintf("version %d: this program reads version %d", d.Version, Version)})
	}
	var probs []string
	bad := func(where string, format string, args ...any) {
		probs = append(probs, where+": "+fmt.Sprintf(format, args...))
	}
	u := changedigest.User{Name: d.User.Name, Email: d.User.Email, DigestHour: d.User.DigestHour}
	if d.User.Name == "" {
		u.Name = "x" // the name is the importer's choice; only the rest is checked
	}
	if err := u.Validate(); err != nil {
		bad("user", "%s", changedigest.ErrorMessage(err))
	}
	if p := d.Profile; p != nil {
		checkProfile(p, bad)
	}
	ids := map[int64]bool{}
	keys := map[string]int{}
	for i := range d.Watches {
		xw := &d.Watches[i]
		where := fmt.Sprintf("watches[%d]", i)
		if xw.URL != "" {
			where += " (" + xw.URL + ")"
		}
		if xw.ID <= 0 {
			bad(where, "id %d is not a positive number", xw.ID)
		} else if ids[xw.ID] {
			bad(where, "id %d is given to two watches", xw.ID)
		}
		ids[xw.ID] = true
		w, err := xw.watch()
		if err != nil {
			bad(where, "%s", changedigest.ErrorMessage(err))
			continue
		}
		k := w.URL + "\x00" + w.Zone
		if j, dup := keys[k]; dup {
			bad(where, "the same URL and zone as watches[%d]", j)
		}
		keys[k] = i
	}
	if len(d.Channels) > pet.MaxChannels {
		bad("channels", "%d channels is more than the %d a user may have", len(d.Channels), pet.MaxChannels)
	}
	for i := range d.Channels {
		xc := &d.Channels[i]
		where := fmt.Sprintf("channels[%d] (%s %q)", i, xc.Kind, xc.Name)
		for _, id := range xc.Watches {
			if !ids[id] {
				bad(where, "routes watch %d, which the document does not hold", id)
			}
		}
		if xc.SecretOmitted && xc.Secret != "" {
			bad(where, "has a secret and says its secret was left out")
		}
		if xc.SecretOmitted {
			continue // checked on import, where it is left out if it needs one
		}
		c := xc.channel()
		if err := c.Validate(); err != nil {
			bad(where, "%s", changedigest.ErrorMessage(err))
		}
	}
	if len(probs) > 0 {
		return nil, invalid(probs)
	}
	return &d, nil
}

// checkProfile checks the exported profile: its document reads as FOAF,
// its terms are terms.
func checkProfile(p *Profile, bad func(string, string, ...any)) {
	if p.Document != "" && p.DocumentBase64 != "" {
		bad("profile", "has both document and document_base64")
	}
	doc, err := p.document()
	if err != nil {
		bad("profile.document_base64", "%v", err)
		return
	}
	if len(doc) > pet.MaxProfileDocument {
		bad("profile.document", "%d bytes is over the limit of %d", len(doc), pet.MaxProfileDocument)
	} else if len(doc) > 0 {
		if _, err := profile.Parse(profile.Document{Body: bytes.NewReader(doc), Name: "profile"}); err != nil {
			bad("profile.document", "%s", changedigest.ErrorMessage(err))
		}
	}
	for i, in := range p.Profile.Interests {
		where := fmt.Sprintf("profile.built.interests[%d]", i)
		switch {
		case strings.TrimSpace(in.Term) == "":
			bad(where, "the term is empty")
		case len(in.Term) > 200:
			bad(where, "the term %.40q… is longer than 200 bytes", in.Term)
		case math.IsNaN(in.Weight) || in.Weight < 0 || in.Weight > 1:
			bad(where+" ("+in.Term+")", "weight %v is not between 0 and 1", in.Weight)
		}
	}
	for i, s := range p.Profile.Senses {
		if strings.TrimSpace(s.Term) == "" || s.Synset == "" {
			bad(fmt.Sprintf("profile.built.senses[%d]", i), "wants a term and a synset")
		}
	}
}

func (p *Profile) document() ([]byte, error) {
	if p.DocumentBase64 != "" {
		return base64.StdEncoding.DecodeString(p.DocumentBase64)
	}
	return []byte(p.Document), nil
}

// watch is the exported watch as a new watch, validated.
func (xw *Watch) watch() (*changedigest.Watch, error) {
	w := &changedigest.Watch{URL: xw.URL, Title: xw.Title, Zone: xw.Zone, Category: xw.Category, Tags: slices.Clone(xw.Tags),
		Paused: xw.Paused, KeepVersions: xw.KeepVersions, KeepDays: xw.KeepDays, IgnoreText: xw.IgnoreText,
		TriggerText: xw.TriggerText, MinSignificance: xw.MinSignificance, NotifyTypes: xw.NotifyTypes,
		OnlyInterests: xw.OnlyInterests, ShowNoise: xw.ShowNoise, ValueSelector: xw.ValueSelector, When: xw.When,
		Render: xw.Render, WaitFor: xw.WaitFor, Steps: slices.Clone(xw.Steps)}
	if xw.Every != "" {
		d, err := time.ParseDuration(xw.Every)
		if err != nil {
			return nil, changedigest.Errorf(changedigest.EINVALID, "every %q is not a duration such as 30m or 2h", xw.Every)
		}
		w.Interval = d
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if err := w.CheckInput(nil); err != nil {
		return nil, err
	}
	return w, nil
}

// channel is the exported channel as a new channel, its watches not yet
// mapped.
func (xc *Channel) channel() *changedigest.Channel {
	return &changedigest.Channel{Name: xc.Name, Kind: xc.Kind, URL: xc.URL, Secret: xc.Secret, Room: xc.Room,
		Priority: xc.Priority, NtfyTags: slices.Clone(xc.NtfyTags), Tags: slices.Clone(xc.Tags), Select: xc.Select, Disabled: xc.Disabled}
}

// invalidError lists the problems of a document.
type invalidError struct{ probs []string }

func invalid(probs []string) error { return &invalidError{probs} }

func (e *invalidError) Error() string {
	if len(e.probs) == 1 {
		return "the user document is not valid: " + e.probs[0]
	}
	return fmt.Sprintf("the user document is not valid (%d problems):\n  %s", len(e.probs), strings.Join(e.probs, "\n  "))
}

func (e *invalidError) Unwrap() []error {
	return []error{ErrInvalid, changedigest.Errorf(changedigest.EINVALID, "%s", e.Error())}
}

// Problems lists what is wrong with the document.
func (e *invalidError) Problems() []string { return e.probs }

// jsonError says where the JSON went wrong.
func jsonError(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := position(data, se.Offset-1) // Offset is past the byte at fault
		return fmt.Sprintf("not valid JSON at line %d, column %d: %v", line, col, se)
	case errors.As(err, &te):
		line, col := position(data, te.Offset)
		return fmt.Sprintf("at line %d, column %d: %s is a JSON %s, want %s", line, col, orDocument(te.Field), te.Value, jsonKind(te.Type))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends before the document does (cut short?)"
	}
	return strings.TrimPrefix(err.Error(), "json: ") // unknown field "x"
}

// jsonKind names what JSON value a Go type is read from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

func orDocument(field string) string {
	if field == "" {
		return "the document"
	}
	return field
}

// position is the line and column of byte offset off.
func position(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// Import adds the document's settings to the user named, creating the
// user (without a password) when there is none. It checks the document
// whole before writing (Parse does when given raw input); see the
// package comment for what it keeps. Errors: ErrInvalid; the store's.
func Import(ctx context.Context, st Store, name string, d *Document) (*Report, error) {
	if err := changedigest.ValidateUserName(name); err != nil {
		return nil, err
	}
	rep := &Report{User: name}
	u, err := st.UserByName(ctx, name)
	if changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
		u = &changedigest.User{Name: name, Email: d.User.Email, DigestHour: d.User.DigestHour}
		if err := st.CreateUser(ctx, u); err != nil {
			return nil, err
		}
		rep.CreatedUser = true
		return rep, importRest(ctx, st, u, d, rep)
	} else if err != nil {
		return nil, err
	}
	return ImportInto(ctx, st, u, d)
}

// ImportInto adds the document's settings to user u, as Import does.
func ImportInto(ctx context.Context, st Target, u *changedigest.User, d *Document) (*Report, error) {
	rep := &Report{User: u.Name}
	if err := importSettings(ctx, st, u, d, rep); err != nil {
		return nil, err
	}
	return rep, importRest(ctx, st, u, d, rep)
}

// importRest imports the profile, watches and channels.
func importRest(ctx context.Context, st Target, u *changedigest.User, d *Document, rep *Report) error {
	existing, err := st.Channels(ctx, u.ID)
	if err != nil {
		return err
	}
	if n := len(existing) + len(d.Channels); n > pet.MaxChannels && len(d.Channels) > 0 {
		// Counted before any write, at worst (some may be kept).
		kept := 0
		for i := range d.Channels {
			if sameChannel(existing, &d.Channels[i]) != nil {
				kept++
			}
		}
		if n-kept > pet.MaxChannels {
			return invalid([]string{fmt.Sprintf("channels: the user has %d and the document adds %d: more than the %d a user may have", len(existing), len(d.Channels)-kept, pet.MaxChannels)})
		}
	}
	if err := importProfile(ctx, st, u, d, rep); err != nil {
		return err
	}
	ids, err := importWatches(ctx, st, u, d, rep)
	if err != nil {
		return err
	}
	for i := range d.Channels {
		xc := &d.Channels[i]
		label := fmt.Sprintf("channel %q (%s)", xc.Name, xc.Kind)
		if c := sameChannel(existing, xc); c != nil {
			rep.Kept = append(rep.Kept, fmt.Sprintf("%s: the user has it already (channel %d)", label, c.ID))
			continue
		}
		c := xc.channel()
		c.UserID = u.ID
		for _, id := range xc.Watches {
			c.Watches = append(c.Watches, ids[id])
		}
		if xc.SecretOmitted {
			c.Disabled = true
			if c.URL == "" {
				rep.Skipped = append(rep.Skipped, label+": its address is a credential the export left out (export with --secrets)")
				continue
			}
			if err := (*c).Validate(); err != nil {
				rep.Skipped = append(rep.Skipped, label+": it needs the secret the export left out (export with --secrets)")
				continue
			}
		}
		if err := st.CreateChannel(ctx, c); err != nil {
			return fmt.Errorf("userdata: %s: %w", label, err)
		}
		rep.Channels++
		if xc.SecretOmitted {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s was imported disabled: its secret was left out of the export; set it and enable the channel", label))
		}
	}
	return nil
}

// importSettings sets the e-mail address and digest hour a user has not
// set; a different one already set is kept.
func importSettings(ctx context.Context, st Target, u *changedigest.User, d *Document, rep *Report) error {
	email, hour := u.Email, u.DigestHour
	if d.User.Email != "" && d.User.Email != email {
		if email == "" {
			email = d.User.Email
		} else {
			rep.Kept = append(rep.Kept, "e-mail address "+email)
		}
	}
	if d.User.DigestHour >= 0 && d.User.DigestHour != hour {
		if hour < 0 {
			hour = d.User.DigestHour
		} else {
			rep.Kept = append(rep.Kept, fmt.Sprintf("digest hour %d", hour))
		}
	}
	if email == u.Email && hour == u.DigestHour {
		return nil
	}
	nu, err := st.UpdateUser(ctx, u.ID, func(x *changedigest.User) error {
		x.Email, x.DigestHour = email, hour
		return nil
	})
	if err == nil {
		*u = *nu
	}
	return err
}

func importProfile(ctx context.Context, st Target, u *changedigest.User, d *Document, rep *Report) error {
	if d.Profile == nil {
		return nil
	}
	if p, _, err := st.Profile(ctx, u.ID); err == nil {
		rep.Kept = append(rep.Kept, fmt.Sprintf("the profile the user has (%d interests); the document's was not imported", len(p.Interests)))
		return nil
	} else if changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		return err
	}
	doc, err := d.Profile.document()
	if err != nil {
		return err
	}
	p := d.Profile.Profile
	p.UserID = u.ID
	if len(doc) == 0 {
		doc = nil
	}
	if err := st.PutProfile(ctx, &p, doc); err != nil {
		return fmt.Errorf("userdata: profile: %w", err)
	}
	rep.Profile = true
	return nil
}

// importWatches creates the watches the user lacks and maps the
// document's watch IDs to the store's.
func importWatches(ctx context.Context, st Target, u *changedigest.User, d *Document, rep *Report) (map[int64]int64, error) {
	have, err := st.Watches(ctx, u.ID, "")
	if err != nil {
		return nil, err
	}
	ids := map[int64]int64{}
	for i := range d.Watches {
		xw := &d.Watches[i]
		w, err := xw.watch()
		if err != nil {
			return nil, err // Parse checked it
		}
		if j := slices.IndexFunc(have, func(x changedigest.Watch) bool { return x.URL == w.URL && x.Zone == w.Zone }); j >= 0 {
			ids[xw.ID] = have[j].ID
			rep.Kept = append(rep.Kept, fmt.Sprintf("watch %d (%s): the user watches it already", have[j].ID, w.URL))
			continue
		}
		w.UserID = u.ID
		if err := st.CreateWatch(ctx, w); err != nil {
			return nil, fmt.Errorf("userdata: watch %s: %w", w.URL, err)
		}
		ids[xw.ID] = w.ID
		rep.Watches++
	}
	return ids, nil
}

// sameChannel finds the user's channel of the same kind, address and room.
func sameChannel(have []changedigest.Channel, xc *Channel) *changedigest.Channel {
	c := xc.channel()
	c.Validate() // normalises; the address may be missing
	for i := range have {
		h := &have[i]
		if h.Kind == c.Kind && h.Room == c.Room && (h.URL == c.URL || c.URL == "" && h.Name == c.Name) {
			return h
		}
	}
	return nil
}
