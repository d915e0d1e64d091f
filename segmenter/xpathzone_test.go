package segmenter

import (
	"errors"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
)

func TestXPathZone(t *testing.T) {
	page := func(price, news string) []byte {
		return []byte(`<html><body><div class="news"><p>` + news + `</p></div>
<div class="offer"><h2>City bike</h2><p id="price">Price ` + price + ` euros</p></div></body></html>`)
	}
	s := New()
	tests := []struct {
		name, zone string
		old, new   []byte
		changes    int
	}{
		{"price changed, zone on the price", "//p[@id='price']", page("24", "a"), page("29", "a"), 1},
		{"news changed, zone on the price", "//p[@id='price']", page("24", "a"), page("24", "b"), 0},
		{"prefixed, contains()", "xpath: //div[contains(@class,'offer')]", page("24", "a"), page("29", "a"), 1},
		{"prefixed, news outside", "xpath://div[contains(@class,'offer')]", page("24", "a"), page("24", "b"), 0},
		{"text node selects its element", "//h2/following-sibling::p/text()", page("24", "a"), page("29", "a"), 1},
		{"attribute selects its element", "//p/@id", page("24", "a"), page("24", "b"), 0},
		{"union in any order", "//p[@id='price'] | //div[@class='news']", page("24", "a"), page("24", "b"), 1},
		{"absolute path", "/html/body/div[2]", page("24", "a"), page("24", "b"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := s.DiffPages(tt.old, tt.new, tt.zone)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Changes) != tt.changes {
				t.Errorf("%d changes, want %d: %s", len(d.Changes), tt.changes, dump(d.Changes))
			}
		})
	}
	first, err := s.DetectPage(Input{Body: page("24", "a"), Zone: "//p[@id='price']"})
	if err != nil {
		t.Fatal(err)
	}
	body := page("24", "a")
	for _, sg := range first.Segments {
		if txt := string(body[sg.Start:sg.End]); !strings.Contains(txt, "Price 24") || strings.Contains(txt, "City bike") {
			t.Errorf("segment %q is not the price element", txt)
		}
	}
	if len(first.Segments) == 0 {
		t.Error("no segment in the zone")
	}
}

func TestCheckZoneXPath(t *testing.T) {
	for _, ok := range []string{"//main", "xpath://div[@id='a']//p[2]", "/html/body", "xpath: (//p)[1]"} {
		if err := CheckZone(ok); err != nil {
			t.Errorf("CheckZone(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"//div[", "xpath:", "xpath:count(//p)", "//p[@id='x'", "xpath:'text'", "/html/body/@@"} {
		err := CheckZone(bad)
		if err == nil {
			t.Errorf("CheckZone(%q) accepted", bad)
			continue
		}
		if changedigest.ErrorCode(err) != changedigest.EINVALID || !errors.Is(err, ErrZone) || !strings.Contains(err.Error(), "XPath") {
			t.Errorf("CheckZone(%q) = %v, want an EINVALID zone error naming XPath", bad, err)
		}
	}
	if _, err := New().DiffPages([]byte("<p>a</p>"), []byte("<p>b</p>"), "//p["); err == nil {
		t.Error("DiffPages with an invalid XPath zone did not fail")
	}
}

// FuzzXPathZone: any zone written as XPath is refused with an error or
// taken, and a page diffed within a zone that was taken does not fail.
func FuzzXPathZone(f *testing.F) {
	for _, z := range []string{"//p", "xpath://div[@id='a']", "/html/body/div[2]", "//p[", "xpath:count(//p)", "(//p)[last()]", "//a/@href", "//*[contains(text(),'x')]"} {
		f.Add(z)
	}
	page := []byte(`<html><body><div id="a"><p>one <a href="/x">x</a></p></div><div><p>two</p></div></body></html>`)
	other := []byte(`<html><body><div id="a"><p>one <a href="/y">y</a></p></div><div><p>three</p></div></body></html>`)
	s := New()
	f.Fuzz(func(t *testing.T, zone string) {
		if len(zone) > 200 {
			return
		}
		if !IsXPath(zone) {
			zone = "/" + zone
		}
		if CheckZone(zone) != nil {
			return
		}
		if _, err := s.DiffPages(page, other, zone); err != nil {
			t.Errorf("DiffPages with the zone %q CheckZone took: %v", zone, err)
		}
	})
}
