package changedigest

import (
	"strings"
	"testing"
)

func TestParseStep(t *testing.T) {
	tests := []struct {
		line string
		want Step
		err  string
	}{
		{"click #accept", Step{Action: "click", Selector: "#accept"}, ""},
		{"  Click   button.more  ", Step{Action: "click", Selector: "button.more"}, ""},
		{"wait main .results li", Step{Action: "wait", Selector: "main .results li"}, ""},
		{"type #q hello world", Step{Action: "type", Selector: "#q", Value: "hello world"}, ""},
		{`type "form input[name=q]" red kettle`, Step{Action: "type", Selector: "form input[name=q]", Value: "red kettle"}, ""},
		{"type #q", Step{}, "text to type is missing"},
		{`type "form input hello`, Step{}, "no closing quote"},
		{"click", Step{}, "needs a CSS selector"},
		{"press #ok", Step{}, `unknown action "press"`},
		{"", Step{}, "action is missing"},
		{"wait " + strings.Repeat("a", 1025), Step{}, "longer than 1024"},
	}
	for _, tc := range tests {
		got, err := ParseStep(tc.line)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || ErrorCode(err) != EINVALID {
				t.Errorf("ParseStep(%q) = %+v, %v; want an EINVALID error with %q", tc.line, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseStep(%q) = %+v, %v; want %+v", tc.line, got, err, tc.want)
			continue
		}
		// String writes what ParseStep reads.
		if back, err := ParseStep(got.String()); err != nil || back != got {
			t.Errorf("ParseStep(%q.String() = %q) = %+v, %v", tc.line, got.String(), back, err)
		}
	}
}

func TestWatchSteps(t *testing.T) {
	w := Watch{URL: "https://shop.example/", Render: RenderBrowser, Steps: []Step{{Action: "click", Selector: "#accept"}}}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	w.Render = RenderFetch
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "rendered in a browser") {
		t.Errorf("steps on a fetched page: %v", err)
	}
	w.Render = RenderBrowser
	w.Steps = make([]Step, MaxSteps+1)
	for i := range w.Steps {
		w.Steps[i] = Step{Action: "wait", Selector: "p"}
	}
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "more than 10") {
		t.Errorf("too many steps: %v", err)
	}
	w.Steps = []Step{{Action: "click", Selector: "#a"}, {Action: "wait", Selector: "#b", Value: "x"}}
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "step 2: wait takes no text") {
		t.Errorf("a wait with text: %v", err)
	}
}

// TestLearnPageFeedItems learns a feed past the item limit, then the same
// feed back under it: the watch says how many items it had and kept, then
// nothing, and a definition without them keeps the stored watch's.
func TestLearnPageFeedItems(t *testing.T) {
	w := &Watch{}
	big := &Snapshot{Kind: KindFeed, FeedItems: 40000, Segments: make([]Segment, 2000)}
	if !w.LearnPage(big, false) || w.FeedItems != 40000 || w.FeedItemsKept != 2000 {
		t.Fatalf("after a big version: %d of %d", w.FeedItemsKept, w.FeedItems)
	}
	if w.LearnPage(big, false) {
		t.Error("the same version again reports a change")
	}
	def := &Watch{URL: "https://example.org/feed"}
	def.KeepLearned(w, "")
	if def.FeedItems != 40000 || def.FeedItemsKept != 2000 {
		t.Errorf("a definition keeps %d of %d", def.FeedItemsKept, def.FeedItems)
	}
	if !w.LearnPage(&Snapshot{Kind: KindFeed, Segments: make([]Segment, 30)}, false) || w.FeedItems != 0 || w.FeedItemsKept != 0 {
		t.Errorf("after a version under the limit: %d of %d", w.FeedItemsKept, w.FeedItems)
	}
}

// TestWatchURLWithoutScheme: a URL written as people write them, without
// a scheme, is read as https; other schemes and odd text are refused as
// before.
func TestWatchURLWithoutScheme(t *testing.T) {
	for in, want := range map[string]string{
		"example.org":             "https://example.org",
		"example.org/news?x=1":    "https://example.org/news?x=1",
		"www.example.org:8443/a":  "https://www.example.org:8443/a",
		"http://example.org/":     "http://example.org/",
		"localhost:8080/feed.xml": "https://localhost:8080/feed.xml",
	} {
		w := Watch{URL: in}
		if err := w.Validate(); err != nil || w.URL != want {
			t.Errorf("%q: %q, %v; want %q", in, w.URL, err, want)
		}
	}
	for _, in := range []string{"news", "ftp://example.org/", "/local/path", "not a url"} {
		w := Watch{URL: in}
		if err := w.Validate(); err == nil {
			t.Errorf("%q taken as %q", in, w.URL)
		}
	}
}
