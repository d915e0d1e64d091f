package changedigest

import (
	"net/mail"
	"net/url"
	"strings"
	"time"
)

// ChannelKind is the service a notification channel delivers to.
type ChannelKind string

// Channel kinds.
const (
	// ChannelWebhook POSTs a JSON document signed with HMAC-SHA256.
	ChannelWebhook ChannelKind = "webhook"
	// ChannelSlack, ChannelMattermost and ChannelDiscord POST to an
	// incoming-webhook URL in the service's own message format.
	ChannelSlack      ChannelKind = "slack"
	ChannelMattermost ChannelKind = "mattermost"
	ChannelDiscord    ChannelKind = "discord"
	// ChannelMatrix sends an m.room.message through a homeserver's
	// client-server API with an access token.
	ChannelMatrix ChannelKind = "matrix"
	// ChannelNtfy publishes to an ntfy topic URL.
	ChannelNtfy ChannelKind = "ntfy"
	// ChannelEmail e-mails each change.
	ChannelEmail ChannelKind = "email"
	// ChannelGotify posts a message to a Gotify server (URL) with an
	// application token (Secret).
	ChannelGotify ChannelKind = "gotify"
	// ChannelTelegram sends a message through the Telegram Bot API (URL,
	// https://api.telegram.org) with a bot token (Secret) to a chat (Room:
	// its numeric id or @channelname).
	ChannelTelegram ChannelKind = "telegram"
	// ChannelPushover sends a message through the Pushover API (URL,
	// https://api.pushover.net) with an application token (Secret) to a
	// user or group key (Room).
	ChannelPushover ChannelKind = "pushover"
)

// ChannelKinds lists the kinds in display order.
var ChannelKinds = []ChannelKind{ChannelWebhook, ChannelSlack, ChannelMattermost, ChannelDiscord,
	ChannelMatrix, ChannelNtfy, ChannelGotify, ChannelTelegram, ChannelPushover, ChannelEmail}

// Selection says which versions of the routed watches go to a channel.
type Selection string

// Selections.
const (
	// SelectAll sends every version with a change that is not noise.
	SelectAll Selection = "all"
	// SelectSignificant sends versions whose significance reaches the
	// watch's threshold.
	SelectSignificant Selection = "significant"
	// SelectInterests sends versions with a change matching the user's
	// interests.
	SelectInterests Selection = "interests"
)

// Channel is one place a user's notifications go, with its routing rule.
type Channel struct {
	ID     int64       `json:"id"`
	UserID int64       `json:"user_id"`
	Name   string      `json:"name"`
	Kind   ChannelKind `json:"kind"`
	// URL is the webhook, homeserver or ntfy topic address; for e-mail
	// the recipient address.
	URL string `json:"url"`
	// Secret signs webhook bodies (HMAC-SHA256); for Matrix it is the
	// access token, for ntfy an optional access token. Never shown again
	// once stored.
	Secret string `json:"-"`
	// Room is the Matrix room id ("!id:server") or alias, the Telegram
	// chat (numeric id or @channelname) or the Pushover user key.
	Room string `json:"room,omitempty"`
	// Priority is the ntfy or Gotify priority, 1 (min) to 5 (max); 0 =
	// default.
	Priority int `json:"priority,omitempty"`
	// Tags are ntfy tags (emoji short codes or words).
	NtfyTags []string `json:"ntfy_tags,omitempty"`
	// Template, when set, is a Go text/template that writes the message
	// in place of the default one (see notify.MessageData for what it
	// sees and notify.ParseTemplate for its bounds); "" keeps the
	// default message.
	Template string `json:"template,omitempty"`

	// Routing: the watches and tags whose versions go here (both empty:
	// every watch), and which of their versions.
	Watches  []int64   `json:"watches,omitempty"`
	Tags     []string  `json:"tags,omitempty"`
	Select   Selection `json:"select"`
	Disabled bool      `json:"disabled,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// HasSecret reports whether a secret or token is set.
func (c *Channel) HasSecret() bool { return c.Secret != "" }

// Validate checks the fields a user sets and normalises them in place.
func (c *Channel) Validate() error {
	c.Name = strings.TrimSpace(c.Name)
	c.URL = strings.TrimSpace(c.URL)
	c.Room = strings.TrimSpace(c.Room)
	if len(c.Name) > 100 {
		return Errorf(EINVALID, "channel name is longer than 100 characters")
	}
	known := false
	for _, k := range ChannelKinds {
		known = known || k == c.Kind
	}
	if !known {
		return Errorf(EINVALID, "unknown channel kind %q (want webhook, slack, mattermost, discord, matrix, ntfy, gotify, telegram, pushover or email)", c.Kind)
	}
	if c.URL == "" {
		return Errorf(EINVALID, "a %s channel needs an address", c.Kind)
	}
	if len(c.URL) > 2048 {
		return Errorf(EINVALID, "channel address is longer than 2048 characters")
	}
	if c.Kind == ChannelEmail {
		a, err := mail.ParseAddress(c.URL)
		if err != nil || a.Name != "" {
			return Errorf(EINVALID, "%q is not an e-mail address", c.URL)
		}
		c.URL = a.Address
	} else {
		u, err := url.Parse(c.URL)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return Errorf(EINVALID, "channel address %q is not an absolute http or https URL", c.URL)
		}
		if u.User != nil {
			return Errorf(EINVALID, "channel address must not hold a user name or password; use the secret field")
		}
	}
	if c.Kind == ChannelMatrix {
		if c.Room == "" || (c.Room[0] != '!' && c.Room[0] != '#') || !strings.Contains(c.Room, ":") {
			return Errorf(EINVALID, "Matrix room %q is not a room id (!id:server) or alias (#name:server)", c.Room)
		}
		if c.Secret == "" {
			return Errorf(EINVALID, "a Matrix channel needs an access token")
		}
	}
	switch c.Kind {
	case ChannelGotify:
		if c.Secret == "" {
			return Errorf(EINVALID, "a Gotify channel needs the application's token")
		}
	case ChannelTelegram:
		if !telegramToken(c.Secret) {
			return Errorf(EINVALID, "a Telegram channel needs the bot's token (digits, a colon, then letters, digits, - and _)")
		}
		if !telegramChat(c.Room) {
			return Errorf(EINVALID, "Telegram chat %q is not a chat id (a number) or a channel name (@name)", c.Room)
		}
	case ChannelPushover:
		if c.Secret == "" {
			return Errorf(EINVALID, "a Pushover channel needs the application's token")
		}
		if !pushoverKey(c.Room) {
			return Errorf(EINVALID, "Pushover user key %q is not 30 letters and digits", c.Room)
		}
	}
	if len(c.Template) > 16<<10 {
		return Errorf(EINVALID, "message template is longer than 16384 bytes")
	}
	if strings.TrimSpace(c.Template) == "" {
		c.Template = ""
	}
	if len(c.Secret) > 1024 {
		return Errorf(EINVALID, "channel secret is longer than 1024 characters")
	}
	if c.Priority < 0 || c.Priority > 5 {
		return Errorf(EINVALID, "ntfy priority %d is not between 1 and 5", c.Priority)
	}
	c.NtfyTags = NormaliseTags(c.NtfyTags)
	c.Tags = NormaliseTags(c.Tags)
	switch c.Select {
	case "":
		c.Select = SelectAll
	case SelectAll, SelectSignificant, SelectInterests:
	default:
		return Errorf(EINVALID, "unknown selection %q (want all, significant or interests)", c.Select)
	}
	if c.Name == "" {
		c.Name = string(c.Kind)
	}
	return nil
}

// telegramChat reports whether s names a Telegram chat: a number (a
// group's is negative) or @name.
func telegramChat(s string) bool {
	if name, ok := strings.CutPrefix(s, "@"); ok {
		return len(name) >= 4 && len(name) <= 64 && strings.IndexFunc(name, func(r rune) bool {
			return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) < 0
	}
	s = strings.TrimPrefix(s, "-")
	return s != "" && len(s) <= 20 && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// telegramToken reports whether s looks like a bot token ("123456:AA…"):
// it goes into the API's path.
func telegramToken(s string) bool {
	id, key, ok := strings.Cut(s, ":")
	return ok && id != "" && key != "" && len(s) <= 200 &&
		strings.IndexFunc(id, func(r rune) bool { return r < '0' || r > '9' }) < 0 &&
		strings.IndexFunc(key, func(r rune) bool {
			return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) < 0
}

// pushoverKey reports whether s is a Pushover user or group key.
func pushoverKey(s string) bool {
	return len(s) == 30 && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0
}

// Routes reports whether the channel takes versions of watch w by its
// watch and tag lists (not by Select).
func (c *Channel) Routes(w *Watch) bool {
	if c.Disabled {
		return false
	}
	if len(c.Watches) == 0 && len(c.Tags) == 0 {
		return true
	}
	for _, id := range c.Watches {
		if id == w.ID {
			return true
		}
	}
	for _, t := range c.Tags {
		if w.HasTag(t) {
			return true
		}
	}
	return false
}

// DeliveryState is where a delivery stands.
type DeliveryState string

// Delivery states.
const (
	DeliveryPending   DeliveryState = "pending"
	DeliveryDelivered DeliveryState = "delivered"
	// DeliveryDead: every try failed; it waits for a redelivery on demand.
	DeliveryDead DeliveryState = "dead"
)

// Delivery is one notification on its way to one channel or WebSub
// subscriber. Its ID is the idempotency key carried in the payload.
type Delivery struct {
	ID     string `json:"id"`
	UserID int64  `json:"user_id"`
	// ChannelID is the channel, or 0 for a WebSub content distribution to
	// Callback for Topic.
	ChannelID int64  `json:"channel_id,omitempty"`
	Callback  string `json:"callback,omitempty"`
	Topic     string `json:"topic,omitempty"`
	// WatchID and Seq name the version; Test marks a test message.
	WatchID int64 `json:"watch_id"`
	Seq     int   `json:"seq"`
	Test    bool  `json:"test,omitempty"`

	State       DeliveryState `json:"state"`
	Attempts    int           `json:"attempts"`
	NextAttempt time.Time     `json:"next_attempt,omitzero"`
	LastError   string        `json:"last_error,omitempty"`
	LastStatus  int           `json:"last_status,omitempty"`
	CreatedAt   time.Time     `json:"created_at"`
	DeliveredAt time.Time     `json:"delivered_at,omitzero"`
}

// Subscription is a WebSub subscriber's verified interest in a feed.
type Subscription struct {
	// Topic is the feed URL; UserID its owner.
	Topic    string `json:"topic"`
	Callback string `json:"callback"`
	UserID   int64  `json:"user_id"`
	// WatchID or Tag narrow the topic to one watch's or one tag's feed.
	WatchID int64  `json:"watch_id,omitempty"`
	Tag     string `json:"tag,omitempty"`
	// Format is the feed format of the topic: "atom", "rss" or "json".
	Format string `json:"format,omitempty"`
	// Secret, when set, signs distributions (X-Hub-Signature).
	Secret    string    `json:"-"`
	Lease     int       `json:"lease_seconds"`
	Expires   time.Time `json:"expires"`
	CreatedAt time.Time `json:"created_at"`
}

// Covers reports whether the subscription's feed carries versions of w.
func (s *Subscription) Covers(w *Watch) bool {
	if s.UserID != w.UserID {
		return false
	}
	if s.WatchID != 0 {
		return s.WatchID == w.ID
	}
	if s.Tag != "" {
		return w.HasTag(s.Tag)
	}
	return true
}

// SecretHint shows that a secret is set without giving it away: its last
// four characters when it is long enough that they say little, "set"
// otherwise, and "" when there is none.
func (c *Channel) SecretHint() string {
	switch {
	case c.Secret == "":
		return ""
	case len(c.Secret) >= 16:
		return "…" + c.Secret[len(c.Secret)-4:]
	}
	return "set"
}

// DisplayURL is the address to show back to the user. An incoming-webhook
// URL of Slack, Mattermost or Discord is itself the credential, so only
// its host, first path segment and last four characters are shown; the
// others are shown whole (their credentials are in Secret).
func (c *Channel) DisplayURL() string {
	switch c.Kind {
	case ChannelSlack, ChannelMattermost, ChannelDiscord:
	default:
		return c.URL
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return "(hidden)"
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	tail := ""
	if p := u.Path + u.RawQuery; len(p) > 12 {
		tail = p[len(p)-4:]
	}
	return u.Scheme + "://" + u.Host + "/" + first + "/…" + tail
}
