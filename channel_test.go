package changedigest

import (
	"strings"
	"testing"
)

// TestChannelValidate checks what each kind needs: an http(s) address
// (an e-mail address for e-mail), the Matrix room and token, the Gotify
// token, the Telegram bot token and chat, the Pushover token and user key.
func TestChannelValidate(t *testing.T) {
	const key = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG"
	cases := []struct {
		c    Channel
		want string // "" for valid
	}{
		{Channel{Kind: ChannelNtfy, URL: "https://ntfy.sh/news"}, ""},
		{Channel{Kind: "pager", URL: "https://x.example"}, "unknown channel kind"},
		{Channel{Kind: ChannelWebhook, URL: "ftp://x.example"}, "not an absolute http or https URL"},
		{Channel{Kind: ChannelEmail, URL: "ann@example.org"}, ""},
		{Channel{Kind: ChannelMatrix, URL: "https://matrix.example.org", Room: "!r:example.org"}, "access token"},
		{Channel{Kind: ChannelGotify, URL: "https://gotify.example.org"}, "Gotify channel needs"},
		{Channel{Kind: ChannelGotify, URL: "https://gotify.example.org", Secret: "AbC"}, ""},
		{Channel{Kind: ChannelTelegram, URL: "https://api.telegram.org", Secret: "1:x", Room: "-1001234"}, ""},
		{Channel{Kind: ChannelTelegram, URL: "https://api.telegram.org", Secret: "1:x", Room: "@town_news"}, ""},
		{Channel{Kind: ChannelTelegram, URL: "https://api.telegram.org", Secret: "1:x", Room: "town news"}, "is not a chat id"},
		{Channel{Kind: ChannelTelegram, URL: "https://api.telegram.org", Room: "42"}, "bot's token"},
		{Channel{Kind: ChannelTelegram, URL: "https://api.telegram.org", Secret: "1:x/../../other?a=%zz", Room: "42"}, "bot's token"},
		{Channel{Kind: ChannelPushover, URL: "https://api.pushover.net", Secret: "tok", Room: key}, ""},
		{Channel{Kind: ChannelPushover, URL: "https://api.pushover.net", Secret: "tok", Room: "short"}, "is not 30 letters"},
	}
	for _, c := range cases {
		err := c.c.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %q: %v", c.c.Kind, c.c.Room, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %q: %v, want %q", c.c.Kind, c.c.Room, err, c.want)
		}
	}
}
