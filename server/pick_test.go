package server

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"image"
	"image/png"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/segmenter"
)

// pickPageHTML is a browser-rendered page, and pickBoxes where its
// elements were drawn in a 400×300 screenshot.
const pickPageHTML = `<!DOCTYPE html><html><head><title>Timetable</title></head><body>
<header><h1>Harbour ferries</h1></header>
<main id="app"><table class="times"><tr><td>Quay</td><td>09:40</td></tr><tr><td>Island</td><td>10:15</td></tr></table>
<p class="note">Times may change in bad weather.</p><img src="/boat.png" alt=""></main>
<footer><p>Ferry office</p></footer></body></html>`

var pickBoxes = []changedigest.Box{
	{Segment: -1, Path: "html|body", X: 0, Y: 0, W: 400, H: 300},
	{Segment: -1, Path: "html|body|header", X: 0, Y: 0, W: 400, H: 40},
	{Segment: -1, Path: "html|body|header|h1", X: 10, Y: 5, W: 300, H: 30},
	{Segment: -1, Path: "html|body|main-app", X: 0, Y: 50, W: 400, H: 200},
	{Segment: -1, Path: "html|body|main-app|table", X: 10, Y: 60, W: 200, H: 60},
	{Segment: -1, Path: "html|body|main-app|table|tbody|tr", X: 10, Y: 60, W: 200, H: 30},
	{Segment: -1, Path: "html|body|main-app|table|tbody|tr|td[2]", X: 110, Y: 60, W: 100, H: 30},
	{Segment: -1, Path: "html|body|main-app|table|tbody|tr[2]", X: 10, Y: 90, W: 200, H: 30},
	{Segment: -1, Path: "html|body|main-app|table|tbody|tr[2]|td[2]", X: 110, Y: 90, W: 100, H: 30},
	{Segment: -1, Path: "html|body|main-app|p", X: 10, Y: 130, W: 300, H: 20},
	{Segment: -1, Path: "html|body|main-app|img", X: 10, Y: 160, W: 80, H: 60},
	{Segment: -1, Path: "html|body|footer|p", X: 10, Y: 270, W: 200, H: 20},
}

// mustShotWatch stores a watch of u with a fetched version, then a
// browser-rendered one with a screenshot and its element boxes.
func mustShotWatch(t *testing.T, e *testEnv, u *changedigest.User) *changedigest.Watch {
	t.Helper()
	w := e.mustWatch(u, "https://ferries.example.com/", "travel")
	e.addVersion(w, pickPageHTML)
	snap, err := e.seg.Detect(segmenter.Input{Body: []byte(pickPageHTML)})
	if err != nil {
		t.Fatal(err)
	}
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 400, 300))); err != nil {
		t.Fatal(err)
	}
	snap.FetchedAt, snap.Status = e.clock(), 200
	snap.Screenshot = &changedigest.Screenshot{PNG: img.Bytes(), Width: 400, Height: 300, Boxes: pickBoxes}
	if _, err := e.store.AddVersion(context.Background(), w.ID, snap, []byte(pickPageHTML)); err != nil {
		t.Fatal(err)
	}
	return w
}

var hrefRE = regexp.MustCompile(`<a class="button button-secondary" href="([^"]+)">Pick a (larger|smaller) element</a>`)

func TestPick(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	w := mustShotWatch(t, e, ann)
	c := e.login("ann", "correct horse")
	base := fmt.Sprintf("/watches/%d", w.ID)

	// The watch page and its form link to the picker.
	_, page := c.get(base)
	mustContain(t, page, `href="`+base+`/pick"`)
	_, page = c.get(base + "/edit")
	mustContain(t, page, `href="`+base+`/pick"`, "Pick it on the screenshot")

	// The picker shows the newest screenshot as an image button.
	resp, page := c.get(base + "/pick")
	mustStatus(t, "pick", resp, page, http.StatusOK)
	mustContain(t, page, `<input class="pick-image" type="image" name="pick" src="`+base+`/versions/2/screenshot.png" width="400" height="300"`,
		`name="seq" value="2"`, `method="get"`)
	mustNotContain(t, page, "<script", `style="`, "ZgotmplZ", "Use this zone")
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}

	t.Run("click in a cell", func(t *testing.T) {
		resp, page := c.get(base + "/pick?seq=2&pick.x=150&pick.y=100")
		mustStatus(t, "click", resp, page, http.StatusOK)
		sel := "table.times > tbody > tr:nth-of-type(2) > td:nth-of-type(2)"
		mustContain(t, page, `<code class="pick-selector">`+html.EscapeString(sel)+`</code>`, "10:15",
			`<rect class="pick-box" x="110" y="90" width="100" height="30"/>`, "Use this zone", `name="csrf_token"`)
		mustNotContain(t, page, "<script", `style="`, "ZgotmplZ", "Pick a smaller element")
		// A larger element: the row, then the table.
		m := hrefRE.FindStringSubmatch(page)
		if m == nil || m[2] != "larger" {
			t.Fatalf("no link to a larger element in\n%s", excerpt(page))
		}
		_, page = c.get(html.UnescapeString(m[1]))
		mustContain(t, page, `<code class="pick-selector">`+html.EscapeString("table.times > tbody > tr:nth-of-type(2)")+`</code>`,
			"Island 10:15", `<rect class="pick-box" x="10" y="90" width="200" height="30"/>`, "Pick a smaller element")
	})

	t.Run("prefers text", func(t *testing.T) {
		// The image has no text; the element around it has.
		_, page := c.get(base + "/pick?pick.x=20&pick.y=170")
		mustContain(t, page, `<code class="pick-selector">#app</code>`, "Pick a smaller element")
	})

	t.Run("click outside every element", func(t *testing.T) {
		resp, page := c.get(base + "/pick?pick.x=350&pick.y=275")
		mustStatus(t, "miss", resp, page, http.StatusOK)
		mustContain(t, page, "No element was drawn at the point clicked (350, 275)")
		mustNotContain(t, page, "Use this zone")
	})

	t.Run("use this zone", func(t *testing.T) {
		_, page := c.get(base + "/pick?pick.x=20&pick.y=135")
		mustContain(t, page, `<code class="pick-selector">p.note</code>`)
		resp, _ := c.post(base+"/pick", url.Values{"zone": {"p.note"}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != base {
			t.Fatalf("use this zone: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		got, err := e.store.Watch(context.Background(), ann.ID, w.ID)
		if err != nil || got.Zone != "p.note" {
			t.Fatalf("zone %q, %v; want p.note", got.Zone, err)
		}
		_, page = c.get(base)
		mustContain(t, page, "Zone set to p.note")
		// A zone the segmenter refuses is not set.
		if resp, _ := c.post(base+"/pick", url.Values{"zone": {"p["}}); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("invalid zone: status %d, want 400", resp.StatusCode)
		}
		// Without the CSRF token, nothing is set.
		resp, err = c.http.PostForm(c.base+base+"/pick", url.Values{"zone": {"footer"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, _ := e.store.Watch(context.Background(), ann.ID, w.ID); resp.StatusCode == http.StatusSeeOther || got.Zone != "p.note" {
			t.Errorf("post without a CSRF token: status %d, zone %q", resp.StatusCode, got.Zone)
		}
	})

	t.Run("another user's watch", func(t *testing.T) {
		e.mustUser("bob", "battery staple")
		bob := e.login("bob", "battery staple")
		for _, p := range []string{"/pick", "/pick?pick.x=150&pick.y=100"} {
			if resp, _ := bob.get(base + p); resp.StatusCode != http.StatusNotFound {
				t.Errorf("bob gets %s of ann's watch: status %d, want 404", p, resp.StatusCode)
			}
		}
		if resp, _ := bob.post(base+"/pick", url.Values{"zone": {"footer"}}); resp.StatusCode != http.StatusNotFound {
			t.Errorf("bob sets ann's zone: status %d, want 404", resp.StatusCode)
		}
		if resp, _ := e.client().get(base + "/pick"); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("a visitor: status %d, want a redirect to the login", resp.StatusCode)
		}
	})

	t.Run("no screenshot", func(t *testing.T) {
		plain := e.mustWatch(ann, "https://plain.example.com/")
		e.addVersion(plain, pickPageHTML)
		p := fmt.Sprintf("/watches/%d", plain.ID)
		resp, page := c.get(p + "/pick")
		mustStatus(t, "no screenshot", resp, page, http.StatusNotFound)
		mustContain(t, page, "render: browser")
		_, page = c.get(p)
		mustNotContain(t, page, `href="`+p+`/pick"`)
		mustContain(t, page, "render the page with a browser")
		_, page = c.get(p + "/edit")
		mustContain(t, page, "render it with a browser")
	})
}
