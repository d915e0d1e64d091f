package segmenter

import (
	"fmt"
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

// TestScriptsMatchedByCode: inline scripts without attributes all look
// alike from outside; of a page that adds one, removes one and edits
// another, each is told as what happened to it, not compared with its
// neighbour's code.
func TestScriptsMatchedByCode(t *testing.T) {
	codes := []string{
		`self.__next_f.push([1,"0:{\"P\":null,\"b\":\"18-rGCaCdofm\",\"c\":[\"legal\",\"consumer-terms\"]}"])`,
		`window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());`,
		`document.documentElement.classList.add(localStorage.getItem('theme')||'light')`,
		`self.__next_f.push([1,"2:[\"$\",\"html\",null,{\"lang\":\"en\",\"className\":\"anthropicsans\"}]"])`,
		`(function(w,d){var s=d.createElement('script');s.src='/assets/app.js';d.head.appendChild(s)})(window,document)`,
	}
	page := func(cs []string) string {
		var b strings.Builder
		b.WriteString(`<html><head><title>Terms</title></head><body><main><h1>Terms of service</h1><p>These terms apply to every use of the service.</p></main>`)
		for _, c := range cs {
			b.WriteString(`<script>` + c + `</script>`)
		}
		b.WriteString(`</body></html>`)
		return b.String()
	}
	added := `$RB=[];$RV=function(a){$RT=performance.now();for(var b=0;b<a.length;b+=2){var c=a[b]}}`
	edited := strings.Replace(codes[4], "app.js", "app.2.js", 1)
	new := []string{codes[0], added, codes[1], codes[2], edited} // codes[3] removed
	d, err := New().Diff([]byte(page(codes)), []byte(page(new)), "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range d.Changes {
		got = append(got, fmt.Sprintf("%s %s %q → %q", c.Type, c.Op, c.OldText, c.NewText))
	}
	ok := len(d.Changes) == 3
	for _, c := range d.Changes {
		switch c.Op {
		case changedigest.OpInsert:
			ok = ok && strings.Contains(c.NewText, "$RB=[]")
		case changedigest.OpDelete:
			ok = ok && strings.Contains(c.OldText, "anthropicsans")
		case changedigest.OpUpdate:
			ok = ok && len(c.OldText)+len(c.NewText) <= 6 && strings.Contains(c.NewText, "2") // app.js → app.2.js
		}
	}
	if !ok {
		t.Errorf("want the script added, the one removed and the one edited:\n%s", strings.Join(got, "\n"))
	}
}

// TestStreamedPageData: a page that streams its data (Next.js pushes it
// in many inline scripts, cut where the stream was flushed) and its
// metadata (meta and link tags moved from the head into the body): one
// sentence of the data changed is told once, in the page's streamed
// data, and metadata that moved is no change; a script added whole is
// told by its start tag without its nonce and its first bytes.
func TestStreamedPageData(t *testing.T) {
	meta := `<meta name="description" content="Terms of the service"><link rel="icon" href="/favicon.ico">`
	page := func(head, body string, chunks []string, extra string) string {
		var b strings.Builder
		b.WriteString(`<html><head><title>Terms</title>` + head + `</head><body><main><h1>Terms</h1><p>These terms apply.</p></main>` + body)
		for _, c := range chunks {
			b.WriteString(`<script nonce="MTM5ZjgxZDgtNDdh">self.__next_f.push([1,"` + c + `"])</script>`)
		}
		b.WriteString(extra + `</body></html>`)
		return b.String()
	}
	stream := strings.Repeat(`5:[\"$\",\"p\",null,{\"children\":\"These terms apply to every use.\"}]\n`, 40)
	cut := func(s string, at ...int) []string {
		var out []string
		last := 0
		for _, a := range at {
			out = append(out, s[last:a])
			last = a
		}
		return append(out, s[last:])
	}
	edited := strings.Replace(stream, "every use", "each use", 1)
	old := page(meta, "", cut(stream, 600, 1400, 2200), "")
	new := page("", meta, cut(edited, 900, 1700, 2500), `<script nonce="OTk5OTk5">$RC("B:1","S:1");`+strings.Repeat("void 0;", 40)+`</script>`)
	d, err := New().Diff([]byte(old), []byte(new), "")
	if err != nil {
		t.Fatal(err)
	}
	var streamed, added int
	for _, c := range d.Changes {
		switch {
		case strings.HasPrefix(c.Where, streamedName):
			streamed++
			if !strings.Contains(c.OldText+c.NewText, "every") || !strings.Contains(c.NewText, "each") {
				t.Errorf("streamed data: %q → %q", c.OldText, c.NewText)
			}
		case c.Op == changedigest.OpInsert && c.Type == changedigest.ChangeBehavioural:
			added++
			if strings.Contains(c.NewText, "nonce") || len(c.NewText) > maxWholeScript || !c.Truncated || !strings.HasPrefix(c.NewText, `<script> $RC(`) {
				t.Errorf("script added: %q (truncated %v)", c.NewText, c.Truncated)
			}
		default:
			t.Errorf("%s %s %s: %q → %q", c.Type, c.Op, c.Path, c.OldText, c.NewText)
		}
	}
	if streamed != 1 || added != 1 {
		t.Errorf("%d changes of the streamed data, %d scripts added; want 1 and 1", streamed, added)
	}
}

// TestScriptPlacesOfGeneratedTokens: of a script whose bundle hashes
// changed beside an edit, the edit is told, not the hashes; a script
// whose hashes alone changed is noise.
func TestScriptPlacesOfGeneratedTokens(t *testing.T) {
	page := func(hash, label string) string {
		filler := strings.Repeat(`register("widget", {size: 3, colour: "blue"});`, 20)
		return `<html><head><title>App</title><script>load("/static/chunks/` + hash + `.js");` + filler +
			`menu.add("` + label + `");</script></head><body><p>Welcome.</p></body></html>`
	}
	d, err := New().Diff([]byte(page("50153e5fe01116e8", "Pricing")), []byte(page("1962982119ba7bb0", "Healthcare")), "")
	if err != nil {
		t.Fatal(err)
	}
	var told []changedigest.Change
	for _, c := range d.Changes {
		if c.Type == changedigest.ChangeBehavioural && c.Noise == "" {
			told = append(told, c)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0].NewText, "Healthcare") || strings.Contains(told[0].NewText, "1962982119ba7bb0") {
		t.Errorf("told %+v, want the menu's edit alone", told)
	}
	d, err = New().Diff([]byte(page("50153e5fe01116e8", "Pricing")), []byte(page("1962982119ba7bb0", "Pricing")), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Changes {
		if c.Noise == "" {
			t.Errorf("hashes alone told: %+v", c)
		}
	}
}

// TestLongScriptPlaces: in a script of many long lines (a page's
// streamed data) changed at places far apart, each place is told by its
// own words, not the first bytes of all that lies between them.
func TestLongScriptPlaces(t *testing.T) {
	line := func(i int, word string) string {
		return fmt.Sprintf(`%d:{\"title\":\"%s\",\"text\":\"%s\"}\n`, i, word, strings.Repeat("filler words of a long row ", 400))
	}
	page := func(first, last string) string {
		var b strings.Builder
		b.WriteString(`<html><head><title>App</title></head><body><p>Welcome.</p><script>window.rows="`)
		b.WriteString(line(0, first))
		for i := 1; i < 30; i++ {
			b.WriteString(line(i, "row"))
		}
		b.WriteString(line(30, last))
		b.WriteString(`";</script></body></html>`)
		return b.String()
	}
	d, err := New().Diff([]byte(page("Pricing", "Careers")), []byte(page("Healthcare", "Jobs")), "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range d.Changes {
		if c.Type == changedigest.ChangeBehavioural {
			got = append(got, c.OldText+" → "+c.NewText)
		}
	}
	if len(got) != 2 || !strings.Contains(got[0], "Pricing") || !strings.Contains(got[0], "Healthcare") ||
		!strings.Contains(got[1], "Careers") || !strings.Contains(got[1], "Jobs") {
		t.Errorf("told %q, want the two places", got)
	}
}
