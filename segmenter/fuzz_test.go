package segmenter

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

// watchdog fails the process with the inputs and every goroutine's stack
// when a fuzz iteration takes more than ten seconds (the fuzzer reports
// hangs badly on its own); call the returned function when done.
func watchdog(t *testing.T, old, new []byte) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			os.WriteFile(filepath.Join(os.TempDir(), "segmenter-hang.txt"), fmt.Appendf(nil, "old %q\nnew %q\n\n%s", old, new, buf[:n]), 0o644)
			panic(fmt.Sprintf("fuzz iteration hangs: old %q new %q", old, new))
		}
	}()
	return func() { close(done) }
}

func addSeeds(f *testing.F) {
	f.Add([]byte("<p>a</p>"), []byte("<p>b</p>"))
	f.Add([]byte("<div><p>x<div>y</p></div>"), []byte("<table><td>a<tr>b</table>"))
	f.Add([]byte("<svg><path/><g><title>t</title></g></svg><p>x"), []byte("<svg><path></path></svg>"))
	f.Add([]byte("<script>a<b</script><style>x</style>"), []byte("<script>a<b </script>"))
	f.Add([]byte("<a href='x'>&amp;&#65;<b>y</a></b>"), []byte("<a href=x>&A<b>y</b></a>"))
	f.Add([]byte("\xef\xbb\xbf<html><body>\x00</body>"), []byte("<html><body>\xff\xfe</body></html>"))
	files, _ := filepath.Glob("testdata/pairs/*.html")
	base, _ := os.ReadFile("testdata/pairs/base.html")
	for _, name := range files {
		b, _ := os.ReadFile(name)
		f.Add(base, b)
	}
}

// FuzzDiffPages: no input panics; a document diffed with itself has no
// change; changes are well formed.
func FuzzDiffPages(f *testing.F) {
	addSeeds(f)
	s := New()
	f.Fuzz(func(t *testing.T, old, new []byte) {
		defer watchdog(t, old, new)()
		if d, err := s.DiffPages(old, old, ""); err == nil && (len(d.Changes) != 0 || d.Similarity != 1) {
			t.Fatalf("document diffed with itself: %d changes, similarity %v: %s", len(d.Changes), d.Similarity, dump(d.Changes))
		}
		d, err := s.DiffPages(old, new, "")
		if err != nil {
			if code := changedigest.ErrorCode(err); code != changedigest.EINVALID && code != changedigest.ETOOLARGE {
				t.Fatalf("error %v with code %q", err, code)
			}
			return
		}
		if d.Changes == nil || d.Similarity < 0 || d.Similarity > 1 {
			t.Fatalf("diff %+v", d)
		}
		for _, c := range d.Changes {
			if _, err := changedigest.ParseChangeType(string(c.Type)); err != nil {
				t.Fatalf("change type %q", c.Type)
			}
			switch c.Op {
			case changedigest.OpInsert, changedigest.OpUpdate, changedigest.OpMove:
				if c.Segment < 0 || c.Segment >= max(1, d.New.Segments) {
					t.Fatalf("change %v in segment %d of %d", c, c.Segment, d.New.Segments)
				}
			case changedigest.OpDelete:
				if c.Segment < 0 || c.Segment >= max(1, d.Old.Segments) {
					t.Fatalf("deletion in segment %d of %d", c.Segment, d.Old.Segments)
				}
			default:
				t.Fatalf("op %q", c.Op)
			}
		}
	})
}

// FuzzDetectPage: the track's path (a first version, then a later one cut
// along its layout) never panics, its segments tile the body, and the
// same body again has no change.
func FuzzDetectPage(f *testing.F) {
	addSeeds(f)
	s := New()
	f.Fuzz(func(t *testing.T, old, new []byte) {
		defer watchdog(t, old, new)()
		first, err := s.DetectPage(Input{Body: old})
		if err != nil {
			return
		}
		again, err := s.DetectPage(Input{Body: old, Prev: first, PrevBody: old})
		if err != nil || len(again.Changes) != 0 {
			t.Fatalf("same body again: %v %s", err, dump(again.Changes))
		}
		next, err := s.DetectPage(Input{Body: new, Prev: first, PrevBody: old})
		if err != nil {
			return
		}
		end := 0
		for _, sg := range next.Segments {
			if sg.Start != end || sg.End < sg.Start {
				t.Fatalf("segment %d: %d..%d after %d", sg.Index, sg.Start, sg.End, end)
			}
			end = sg.End
		}
		if end != len(new) {
			t.Fatalf("segments end at %d of %d", end, len(new))
		}
		// the stored layout of the later version is usable for the next one
		if _, ok := s.knobs().usableLayout(Input{Body: old, Prev: next, PrevBody: new}); !ok {
			t.Fatalf("layout of a later version is not usable: %q", next.Layout)
		}
	})
}
