package segmenter

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

const pickPage = `<!doctype html><html><head><title>t</title></head><body>
<div id="main">
  <article class="story featured"><h2>First</h2><p>One</p></article>
  <article class="story"><h2>Second</h2><p>Two</p><img src="x.png"></article>
  <div class="css-1q2w3e"><p>Three</p><p>Four</p></div>
</div>
<div id="a b"><p>Spaced</p></div>
<footer class="site"><p>Foot</p></footer>
</body></html>`

func TestPick(t *testing.T) {
	tests := []struct {
		name  string
		paths []string
		path  string
		sel   string
		text  string
	}{
		{"id", []string{"html|body|div-main"}, "html|body|div-main", "#main", "First One Second Two Three Four"},
		{"class", []string{"html|body|div-main|article"}, "html|body|div-main|article", "article.featured", "First One"},
		{"unique class", []string{"html|body|footer"}, "html|body|footer", "footer.site", "Foot"},
		{"path under id", []string{"html|body|div-main|article[2]|h2"}, "html|body|div-main|article[2]|h2", "#main > article:nth-of-type(2) > h2", "Second"},
		{"generated class skipped", []string{"html|body|div-main|div|p[2]"}, "html|body|div-main|div|p[2]", "#main > div > p:nth-of-type(2)", "Four"},
		{"id with a space", []string{"html|body|div-a b[2]"}, "html|body|div-a b[2]", `div[id="a b"]`, "Spaced"},
		{"prefers text", []string{"html|body|div-main|article[2]|img", "html|body|div-main|article[2]"}, "html|body|div-main|article[2]", "#main > article:nth-of-type(2)", "Second Two"},
		{"first found", []string{"html|body|nav", "html|body|footer|p"}, "html|body|footer|p", "footer.site > p", "Foot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Pick([]byte(pickPage), tt.paths...)
			if err != nil {
				t.Fatal(err)
			}
			if p.Path != tt.path || p.Selector != tt.sel || p.Text != tt.text {
				t.Errorf("Pick = %+v, want path %q selector %q text %q", *p, tt.path, tt.sel, tt.text)
			}
			if err := CheckZone(p.Selector); err != nil {
				t.Errorf("CheckZone(%q) = %v", p.Selector, err)
			}
		})
	}
}

func TestPickMissing(t *testing.T) {
	_, err := Pick([]byte(pickPage), "html|body|nav")
	if !errors.Is(err, ErrNoElement) || changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
		t.Fatalf("err = %v, want ErrNoElement, ENOTFOUND", err)
	}
}

// TestPickEveryElement picks every element of a page below body: each
// gets a selector that selects it alone (Pick checks it), and the
// selector as a zone restricts detection to that element's text.
func TestPickEveryElement(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "pairs", "base.html"))
	if err != nil {
		t.Fatal(err)
	}
	d := scan(nil, body, nil, step{})
	var paths []string
	for ei := range d.elems {
		if p := d.path(int32(ei)); strings.Count(p, "|") >= 2 && !strings.HasPrefix(p, "html|head") {
			paths = append(paths, p)
		}
	}
	d.release()
	if len(paths) < 10 {
		t.Fatalf("only %d elements", len(paths))
	}
	s := New()
	for _, p := range paths {
		got, err := Pick(body, p)
		if err != nil {
			t.Errorf("Pick(%s): %v", p, err)
			continue
		}
		if got.Path != p {
			t.Errorf("Pick(%s) picked %s", p, got.Path)
		}
		if got.Text == "" {
			continue
		}
		snap, err := s.Detect(Input{Body: body, Zone: got.Selector})
		if err != nil {
			t.Errorf("zone %q of %s: %v", got.Selector, p, err)
			continue
		}
		var texts []string
		for _, sg := range snap.Segments {
			texts = append(texts, sg.Text)
		}
		if all := strings.Join(texts, " "); strings.Join(strings.Fields(all), " ") != strings.Join(strings.Fields(got.Text), " ") {
			t.Errorf("zone %q of %s compares %q, want %q", got.Selector, p, all, got.Text)
		}
	}
	t.Logf("%d elements picked", len(paths))
}
