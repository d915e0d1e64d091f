package segmenter

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// feedScanItems is what feedXMLScan reports of body, read with
// encoding/xml (fast false) or by feedFastScan (ok false when it hands
// the feed over).
func feedScanItems(body []byte, fast bool) (items []string, ok bool) {
	each := func(s, e int, open []string) { items = append(items, fmt.Sprint(s, e, open)) }
	b := feedScanBytes(body)
	if fast {
		if !feedFastScan(b, newFeedScanState(nil)) {
			return nil, false
		}
		feedFastScan(b, newFeedScanState(each))
		return items, true
	}
	feedXMLDecode(b, each)
	return items, true
}

// TestFeedFastScan checks that the byte scan of feeds reports the items
// encoding/xml does, on the test feeds and on copies of them with markup
// inserted, cut out or cut off, wherever it does not hand them over.
func TestFeedFastScan(t *testing.T) {
	files, _ := filepath.Glob("testdata/feeds/*")
	muts := []string{"<", ">", "/", "&", "&#0;", "&#x41;", "&#1;", "&#xFFFE;", "&amp", "]]>", "\"", "'", "<!--", "-->", "--",
		"<![CDATA[", "]]", "<?x ?>", "<?xml version=\"1.1\"?>", "<!DOCTYPE x [<!ENTITY a 'b'>]>", "=", " ", "\t", "a:b:c", ":",
		"<item>", "</item>", "<entry/>", "<item a=b c>", "\r\n", "\x00", "\xff", "é", "<é>", "<1>"}
	rng := rand.New(rand.NewSource(1))
	accepted := 0
	check := func(name string, b []byte) {
		fast, ok := feedScanItems(b, true)
		if !ok {
			return
		}
		accepted++
		if slow, _ := feedScanItems(b, false); !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: byte scan %q, encoding/xml %q", name, fast, slow)
		}
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		check(p, b)
		for k := range 400 {
			m := append([]byte(nil), b...)
			for range 1 + rng.Intn(3) {
				if len(m) == 0 {
					break
				}
				at := rng.Intn(len(m))
				switch rng.Intn(3) {
				case 0:
					m = append(m[:at], append([]byte(muts[rng.Intn(len(muts))]), m[at:]...)...)
				case 1:
					m = append(m[:at], m[min(len(m), at+rng.Intn(8)):]...)
				default:
					m = m[:at]
				}
			}
			check(fmt.Sprintf("%s, copy %d", p, k), m)
		}
	}
	if accepted < 1000 {
		t.Errorf("the byte scan read only %d feeds", accepted)
	}
}
