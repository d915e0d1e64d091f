package segmenter

import (
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

// TestScriptsToldByWhatChanged: an edited script is told by the part that
// changed (a long inline state by a bounded piece, its lengths given),
// named by where it comes from; a JSON script is compared as data, value
// by value with the key path, and an offer's price in structured data is
// a content change.
func TestScriptsToldByWhatChanged(t *testing.T) {
	page := func(state, price, tracker string) string {
		return `<html><head><title>Kettle</title>` +
			`<script type="application/ld+json">{"@type":"Product","name":"Blue kettle","offers":{"@type":"Offer","price":"` + price + `","priceCurrency":"EUR"}}</script>` +
			`<script id="__NEXT_DATA__" type="application/json">{"props":{"page":{"views":` + tracker + `,"items":["a","b"]}},"buildId":"x1"}</script>` +
			`<script>window.__STATE__=` + state + `;</script>` +
			`</head><body><main><h1>Blue kettle</h1><p>A kettle of 1.7 litres that boils fast.</p></main></body></html>`
	}
	long := strings.Repeat(`{"k":"value of a long inline state","n":1},`, 2000)
	old := page("["+long+`{"last":"old"}]`, "24.00", "41")
	new := page("["+long+`{"last":"new"}]`, "29.00", "42")
	d, err := New().Diff([]byte(old), []byte(new), "")
	if err != nil {
		t.Fatal(err)
	}
	byWhere := map[string]changedigest.Change{}
	for _, c := range d.Changes {
		byWhere[c.Where] = c
		if len(c.OldText) > maxScriptChange || len(c.NewText) > maxScriptChange {
			t.Errorf("%s: %d and %d bytes told", c.Where, len(c.OldText), len(c.NewText))
		}
	}
	price, ok := byWhere["in the page's structured data at ‘offers.price’"]
	if !ok || price.Type != changedigest.ChangeContent || price.OldText != "24.00" || price.NewText != "29.00" {
		t.Errorf("the offer's price: %+v (changes %v)", price, keysOf(byWhere))
	}
	views, ok := byWhere["in the page data #__NEXT_DATA__ at ‘props.page.views’"]
	if !ok || views.Type != changedigest.ChangeBehavioural || views.OldText != "41" || views.NewText != "42" {
		t.Errorf("the page data's value: %+v (changes %v)", views, keysOf(byWhere))
	}
	state, ok := byWhere["in an inline script"]
	if !ok || !strings.Contains(state.OldText, "old") || !strings.Contains(state.NewText, "new") {
		t.Errorf("the inline state: %+v (changes %v)", state, keysOf(byWhere))
	}
	if got := scriptName(`<script async="" src="https://www.googletagmanager.com/gtag/js?id=G-1">`); got != "in the script from www.googletagmanager.com" {
		t.Errorf("named %q", got)
	}
}

func keysOf(m map[string]changedigest.Change) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
