package render

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/templates"
)

var screenshots = flag.String("screenshots", "", "write headless Chromium screenshots of the digest and the sample pages to this directory")

// samplePages renders each page the package ships with the fixture.
func samplePages(t *testing.T, e *Engine, fx fixture) map[string][]byte {
	t.Helper()
	user := fx.User
	dp, err := e.DiffPage(fx.Events[0], 11, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The other pages take the server's page data; the server's tests
	// render them.
	pages := map[string]Page{
		"diff":  {User: user, Nav: "dashboard", CSRF: `tok"en<&>`, Flash: &Flash{Kind: "info", Message: "Watch saved."}, Data: dp},
		"error": {Title: "Not found", Flash: &Flash{Kind: "error", Message: "No such watch."}, Data: &ErrorPage{Title: "Not found", Message: "There is no watch 99, or it is not yours."}},
	}
	out := map[string][]byte{}
	for name, p := range pages {
		var buf bytes.Buffer
		if err := e.Render(&buf, name, p); err != nil {
			t.Fatalf("Render %s: %v", name, err)
		}
		out[name] = buf.Bytes()
	}
	return out
}

func TestRenderPages(t *testing.T) {
	fx := MustFixture(t)
	e := MustEngine(t)
	for _, name := range []string{"diff", "error", "login", "watch", "dashboard", "version", "profile", "digest", "settings"} {
		if !slices.Contains(e.Pages(), name) {
			t.Errorf("Pages() = %q lacks %q", e.Pages(), name)
		}
	}
	pages := samplePages(t, e, fx)
	// The style sheet versions change with every edit of the CSS.
	golden(t, "diff.html", regexp.MustCompile(`\?v=[0-9a-f]{12}"`).ReplaceAll(pages["diff"], []byte(`?v=HASH"`)))
	for name, b := range pages {
		checkSafeHTML(t, name, string(b))
		if !regexp.MustCompile(`href="/static/style\.css\?v=[0-9a-f]{12}"`).Match(b) {
			t.Errorf("%s: no versioned style sheet link", name)
		}
	}
	diff := string(pages["diff"])
	for _, want := range []string{
		`<title>City sports news, version 12 · changedigest</title>`,
		`<a href="/" aria-current="page">Dashboard</a>`,
		`<input type="hidden" name="csrf_token" value="tok&#34;en&lt;&amp;&gt;">`,
		`<div class="flash flash-info" role="status"><p>Watch saved.</p></div>`,
		`<a href="/watches/1/versions/11" rel="prev">`,
		`<div class="cd-sbs">`, `<p class="cd-sbs-head">Before</p>`,
		`<del class="cd-del"><span class="cd-mk">[-</span>football<span class="cd-mk">-]</span></del>`,
		`<mark class="cd-mark" title="matches your interest football (synonym: soccer)"><strong>soccer</strong></mark>`,
	} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff page lacks %q", want)
		}
	}
	if strings.Contains(diff, "style=\"") {
		t.Error("web pages must not carry inline styles (a strict Content-Security-Policy forbids them)")
	}
	if !strings.Contains(string(pages["error"]), `<div class="flash flash-error" role="alert">`) ||
		!strings.Contains(string(pages["error"]), `<a href="/login">Log in</a>`) {
		t.Error("error page: no alert flash or no login link for a visitor")
	}
}

func TestRenderErrors(t *testing.T) {
	e := MustEngine(t)
	var buf bytes.Buffer
	if err := e.Render(&buf, "nope", Page{}); !errors.Is(err, ErrUnknownPage) {
		t.Errorf("unknown page: %v", err)
	}
	// A failing template sends nothing, not half a page.
	err := e.Render(&buf, "diff", Page{Title: "x", Data: 42})
	if err == nil || buf.Len() != 0 {
		t.Errorf("Render with bad data: err %v, %d bytes written", err, buf.Len())
	}
}

func TestNewEngineSite(t *testing.T) {
	for _, site := range []string{"", "example.org", "/cd", "ftp://example.org", "javascript:alert(1)", "https://example.org/?q=1", "https://"} {
		if _, err := NewEngine(site); changedigest.ErrorCode(err) != changedigest.EINVALID {
			t.Errorf("NewEngine(%q): %v, want an invalid-input error", site, err)
		}
	}
	e, err := NewEngine("https://example.org:8443/cd/")
	if err != nil {
		t.Fatal(err)
	}
	if e.Authority != "example.org" || e.URL("/watches/1") != "https://example.org:8443/cd/watches/1" || e.sitePath("/x") != "/cd/x" {
		t.Errorf("authority %q, URL %q, path %q", e.Authority, e.URL("/watches/1"), e.sitePath("/x"))
	}
	var buf bytes.Buffer
	if err := e.Render(&buf, "error", Page{Data: &ErrorPage{Title: "t"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `href="/cd/static/style.css?v=`) || !strings.Contains(buf.String(), `href="/cd/login"`) {
		t.Error("page links ignore the site's path")
	}
}

// TestStaticFiles checks that every static file is linked and served
// from templates.FS, with a version.
func TestStaticFiles(t *testing.T) {
	e := MustEngine(t)
	for _, name := range []string{"style.css", "changes.css"} {
		if _, err := fs.Stat(templates.FS, "static/"+name); err != nil || e.versions[name] == "" {
			t.Errorf("%s: %v, version %q", name, err, e.versions[name])
		}
	}
}

// TestScreenshots renders the digest and the sample pages, serves them
// with the style sheets from an httptest server and takes headless
// Chromium screenshots at desktop and phone widths. It runs only with
// -screenshots DIR.
func TestScreenshots(t *testing.T) {
	if *screenshots == "" {
		t.Skip("run with -screenshots DIR to take screenshots")
	}
	chromium := testenv.Tool(t, "chromium")
	fx := MustFixture(t)
	e := MustEngine(t)
	pages := samplePages(t, e, fx)
	var digest bytes.Buffer
	if err := e.Digest(&digest, fixtureDigest(fx)); err != nil {
		t.Fatal(err)
	}
	pages["digest"] = digest.Bytes()
	static, err := fs.Sub(templates.FS, "static")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(StaticPath, http.StripPrefix(StaticPath, http.FileServerFS(static)))
	for name, b := range pages {
		mux.HandleFunc("/sample/"+name, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(b)
		})
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	if err := os.MkdirAll(*screenshots, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range pages {
		if err := os.WriteFile(filepath.Join(*screenshots, name+".html"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, size := range []struct{ label, window string }{{"desktop", "1200,1600"}, {"phone", "400,900"}} {
			out := filepath.Join(*screenshots, fmt.Sprintf("%s-%s.png", name, size.label))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
				"--disable-background-networking", "--hide-scrollbars", "--user-data-dir="+t.TempDir(),
				"--screenshot="+out, "--window-size="+size.window, srv.URL+"/sample/"+name)
			if b, err := cmd.CombinedOutput(); err != nil {
				cancel()
				t.Fatalf("chromium %s: %v\n%s", name, err, b)
			}
			cancel()
			t.Logf("wrote %s", out)
		}
	}
}
