// Package demo serves a small web site on loopback whose pages and feed
// change every few seconds, and a sample FOAF profile to go with it, so a
// newcomer can see changedigest detect, type and personalise changes with
// no internet: `changedigest serve --demo`.
//
// The site is a pure function of time: step n = (now - start) / Period
// decides every page, so two fetches in the same step are byte-identical
// and each new step brings a known set of edits:
//
//   - /news: a front page whose headline list slides by one story per step
//     (content insert and delete), a weather box whose reading changes
//     (content update), a banner whose colour changes every third step
//     (cosmetic) and an analytics script whose version changes every fourth
//     step (behavioural);
//   - /club: a sports club page whose fixtures table gains a row every
//     second step and whose two sidebar blocks swap places every fifth step
//     (structural move);
//   - /feed.xml: an Atom feed of the news stories, newest first, whose
//     entries keep their ids while the stories slide through it; its
//     <updated> changes every step even when no story does.
package demo

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// Profile is a sample FOAF profile (Turtle) whose interests meet the demo
// stories directly and through WordNet (football finds "soccer" and
// "rugby"; election finds "primary" and "general election").
//
//go:embed profile.ttl
var Profile []byte

// Site is the demo web site. Set the knobs, then Start.
type Site struct {
	// Period is how long each step lasts; 5 s unless set.
	Period time.Duration
	// Now is the clock; time.Now unless set.
	Now func() time.Time

	start time.Time
	ln    net.Listener
	srv   *http.Server
}

// New returns a site with a 5 s period.
func New() *Site {
	return &Site{Period: 5 * time.Second, Now: time.Now}
}

// Start listens on a free loopback port and serves the site until Close.
func (s *Site) Start() error {
	if s.Period <= 0 {
		s.Period = 5 * time.Second
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	s.start = s.Now()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("demo: listen: %w", err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener was closed under us; Close reports nothing more
		}
	}()
	return nil
}

// URL is the site's base address, e.g. http://127.0.0.1:41234.
func (s *Site) URL() string { return "http://" + s.ln.Addr().String() }

// AddrPort is the site's loopback address and port.
func (s *Site) AddrPort() netip.AddrPort {
	return s.ln.Addr().(*net.TCPAddr).AddrPort()
}

// Pages are the addresses a demo user watches.
func (s *Site) Pages() []string {
	return []string{s.URL() + "/news", s.URL() + "/club", s.URL() + "/feed.xml"}
}

// Close stops the site.
func (s *Site) Close() error {
	if s.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Step is the current step number.
func (s *Site) Step() int {
	if s.start.IsZero() {
		s.start = s.Now()
	}
	return int(s.Now().Sub(s.start) / s.Period)
}

// Handler serves the site; each response is a function of the step.
func (s *Site) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		write(w, r, "text/html; charset=utf-8", indexPage(s.URL()), s.stepTime())
	})
	mux.HandleFunc("GET /news", func(w http.ResponseWriter, r *http.Request) {
		write(w, r, "text/html; charset=utf-8", NewsPage(s.Step()), s.stepTime())
	})
	mux.HandleFunc("GET /club", func(w http.ResponseWriter, r *http.Request) {
		write(w, r, "text/html; charset=utf-8", ClubPage(s.Step()), s.stepTime())
	})
	mux.HandleFunc("GET /feed.xml", func(w http.ResponseWriter, r *http.Request) {
		write(w, r, "application/atom+xml; charset=utf-8", Feed(s.URL(), s.Step(), s.stepTime()), s.stepTime())
	})
	return mux
}

func (s *Site) stepTime() time.Time {
	return s.start.Add(time.Duration(s.Step()) * s.Period).UTC().Truncate(time.Second)
}

// write serves body with an ETag so conditional GETs can answer 304.
func write(w http.ResponseWriter, r *http.Request, ctype, body string, mod time.Time) {
	etag := fmt.Sprintf(`"%x"`, hash(body))
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", mod.Format(http.TimeFormat))
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write([]byte(body))
}

func hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func indexPage(base string) string {
	return `<!DOCTYPE html><html><head><title>Demo site</title></head><body><h1>Demo site</h1><ul>` +
		`<li><a href="/news">News</a></li><li><a href="/club">Club</a></li><li><a href="/feed.xml">Feed</a></li></ul></body></html>`
}

// Story is one news story of the demo.
type Story struct {
	Title, Body string
}

// Stories are the demo's news stories; the news page shows a window of
// five that slides by one each step.
var Stories = []Story{
	{"Council approves new cycle lanes", "The city council voted to build twelve kilometres of protected cycle lanes along the river."},
	{"Soccer club signs young striker", "The local soccer club signed a nineteen-year-old striker from the regional academy on a three-year deal."},
	{"Library extends opening hours", "From next month the central library opens until nine in the evening on weekdays."},
	{"Primary results surprise pollsters", "Turnout in the party primary was the highest in a decade, and the favourite finished third."},
	{"Rugby final moved to Saturday", "The regional rugby final will be played on Saturday afternoon because of the storm forecast."},
	{"Bakery wins national prize", "A family bakery on Mill Street won the national prize for its rye bread."},
	{"Linked data project opens city records", "The city published its planning records as linked data, so anyone can query them on the semantic web."},
	{"General election date announced", "The prime minister announced that the general election will be held on the second Thursday of May."},
	{"Electric automobile chargers installed", "Forty new chargers for electric automobiles were installed in the station car park."},
	{"Marathon raises record sum", "Runners in the spring marathon raised a record sum for the children's hospital."},
	{"Tennis courts reopen after repairs", "The park's tennis courts reopened after a winter of repairs to the surface and the fences."},
	{"School choir tours abroad", "The school choir leaves on Friday for a two-week tour of concert halls abroad."},
	{"Museum shows medieval maps", "A new exhibition at the museum shows forty medieval maps, some never displayed before."},
	{"Football stadium gets solar roof", "The football stadium's new roof carries two thousand solar panels and powers the floodlights."},
	{"Farmers market moves indoors", "The Saturday farmers market moves into the old tram depot for the winter months."},
	{"Ballot papers printed in three languages", "For the first time, ballot papers for the local election will be printed in three languages."},
}

func storyAt(i int) Story { return Stories[((i%len(Stories))+len(Stories))%len(Stories)] }

// NewsPage is the /news page at step n.
func NewsPage(n int) string {
	var b strings.Builder
	colours := []string{"#1d4ed8", "#b91c1c", "#047857"}
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Riverside Daily</title>\n")
	fmt.Fprintf(&b, "<script src=\"/static/analytics.js?v=%d\"></script>\n", 1+n/4)
	b.WriteString("</head>\n<body>\n")
	fmt.Fprintf(&b, "<div id=\"banner\" style=\"background:%s;color:#fff;padding:8px\">Riverside Daily: news from the river towns</div>\n", colours[(n/3)%len(colours)])
	b.WriteString("<nav id=\"menu\"><ul><li><a href=\"/\">Home</a></li><li><a href=\"/club\">Sport</a></li><li><a href=\"/feed.xml\">Feed</a></li></ul></nav>\n")
	b.WriteString("<main id=\"stories\">\n")
	for i := 0; i < 5; i++ {
		st := storyAt(n + i)
		fmt.Fprintf(&b, "<article class=\"story\">\n<h2>%s</h2>\n<p>%s</p>\n</article>\n", html.EscapeString(st.Title), html.EscapeString(st.Body))
	}
	b.WriteString("</main>\n")
	fmt.Fprintf(&b, "<aside id=\"weather\"><h3>Weather</h3><p>Today %d degrees, wind from the %s.</p></aside>\n",
		8+(n*7)%9, []string{"north", "west", "south", "east"}[n%4])
	b.WriteString("<footer><p>Riverside Daily, 1 Quay Street. Letters to the editor welcome.</p></footer>\n</body>\n</html>\n")
	return b.String()
}

var opponents = []string{"Harbour Rovers", "Mill Town", "Castle United", "Bridge Athletic", "North End", "Valley Wanderers"}

// ClubPage is the /club page at step n.
func ClubPage(n int) string {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Riverside Football Club</title>\n</head>\n<body>\n")
	b.WriteString("<h1>Riverside Football Club</h1>\n")
	b.WriteString("<section id=\"fixtures\">\n<h2>Fixtures</h2>\n<table>\n<tr><th>Round</th><th>Opponent</th><th>Ground</th></tr>\n")
	for i := 0; i <= n/2 && i < 40; i++ {
		ground := "home"
		if i%2 == 1 {
			ground = "away"
		}
		fmt.Fprintf(&b, "<tr><td>%d</td><td>%s</td><td>%s</td></tr>\n", i+1, opponents[i%len(opponents)], ground)
	}
	b.WriteString("</table>\n</section>\n")
	shop := "<div id=\"shop\"><h2>Club shop</h2><p>New home shirts are in stock, in all sizes.</p></div>\n"
	youth := "<div id=\"youth\"><h2>Youth teams</h2><p>Training for the under-twelves is on Tuesday evenings.</p></div>\n"
	if (n/5)%2 == 1 {
		shop, youth = youth, shop
	}
	b.WriteString("<aside>\n" + shop + youth + "</aside>\n")
	b.WriteString("<footer><p>Riverside Football Club, Meadow Lane.</p></footer>\n</body>\n</html>\n")
	return b.String()
}

// Feed is the Atom feed at step n: the ten newest stories, each keeping
// its id for as long as it stays in the feed.
func Feed(base string, n int, updated time.Time) string {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n")
	b.WriteString("<title>Riverside Daily</title>\n")
	fmt.Fprintf(&b, "<id>%s/feed.xml</id>\n<link href=\"%s/news\"/>\n<updated>%s</updated>\n", base, base, updated.Format(time.RFC3339))
	for i := n + 4; i >= n-5 && i >= 0; i-- {
		st := storyAt(i)
		fmt.Fprintf(&b, "<entry>\n<id>%s/story/%d</id>\n<title>%s</title>\n<link href=\"%s/story/%d\"/>\n<updated>%s</updated>\n<summary>%s</summary>\n</entry>\n",
			base, i, html.EscapeString(st.Title), base, i, updated.Format(time.RFC3339), html.EscapeString(st.Body))
	}
	b.WriteString("</feed>\n")
	return b.String()
}
