package pet

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
	"github.com/changedigest/changedigest/segmenter"
)

// TestSubPack stores the text of every segment of real pages as runs of
// its HTML and reads it back, and checks that the runs are no larger
// than the text deflated against its HTML (the encoding they replace).
func TestSubPack(t *testing.T) {
	root := testenv.Corpus(t, "versions")
	var files []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".html") && len(files) < 60 && strings.HasSuffix(p, "1.html") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Skip("no pages under " + root)
	}
	s := segmenter.New()
	var segs, runs, sub, dict, text int
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := s.Detect(segmenter.Input{Body: body})
		if err != nil {
			continue
		}
		for _, sg := range snap.Segments {
			if sg.Start < 0 || sg.End <= sg.Start || len(sg.Text) < minCompress {
				continue
			}
			segs++
			html := body[sg.Start:sg.End]
			p := subPack([]byte(sg.Text), html)
			d := packDict([]byte(sg.Text), html)
			text += len(sg.Text)
			dict += len(d)
			if p == nil {
				sub += len(d)
				continue
			}
			runs++
			sub += len(p)
			got, err := unpackDict(p, html, maxText)
			if err != nil || string(got) != sg.Text {
				t.Fatalf("%s segment %d: read back %q (%v), want %q", f, sg.Index, got, err, sg.Text)
			}
		}
	}
	t.Logf("%d pages, %d segments, %d stored as runs; text %d bytes, as runs (else deflated) %d, deflated against the HTML %d",
		len(files), segs, runs, text, sub, dict)
	if runs < segs*9/10 {
		t.Errorf("only %d of %d segment texts are stored as runs of their HTML", runs, segs)
	}
	if sub > dict*5/4 {
		t.Errorf("runs take %d bytes, deflate %d", sub, dict)
	}
}

// TestSubUnpackBad checks that corrupt runs give an error, never a panic
// or a read past the dictionary.
func TestSubUnpackBad(t *testing.T) {
	dict := []byte("<p>hello <b>world</b></p>")
	good := subPack([]byte("hello world, hello world"), dict)
	if good == nil {
		t.Fatal("no runs for a text made of its dictionary")
	}
	if got, err := unpackDict(good, dict, 100); err != nil || string(got) != "hello world, hello world" {
		t.Fatalf("read back %q, %v", got, err)
	}
	for _, bad := range [][]byte{
		{blobSub, 5, 'a'},           // literal longer than the rest
		{blobSub, 0, 200, 1, 1},     // skip past the end
		{blobSub, 0, 1, 0, 0, 3, 0}, // skip before the start
		{blobSub, 0, 0, 100},        // copy past the end
		{blobSub, 0, 0},             // no copy
		{blobSub, 0x80},             // bad varint
	} {
		if _, err := unpackDict(bad, dict, 100); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := unpackDict(good, nil, 100); err == nil {
		t.Error("runs read without their dictionary")
	}
	if _, err := unpackDict(good, dict, 5); err == nil {
		t.Error("runs read past the limit")
	}
	if p := subPack(bytes.Repeat([]byte("zq"), 2000), dict); p != nil {
		t.Error("runs for a text that is not in its dictionary")
	}
}

// FuzzSubPack checks that runs read back as the text they were made of,
// and that any bytes read as runs give text or an error, never a panic.
func FuzzSubPack(f *testing.F) {
	f.Add([]byte("hello world, hello world and more"), []byte("<p>hello <b>world</b></p> and more"))
	f.Add([]byte("Amazon Device in Couple's Home"), []byte(`<a href="x">Publix</a> <em>Amazon Device in Couple&#39;s Home</em>`))
	f.Fuzz(func(t *testing.T, text, dict []byte) {
		if p := subPack(text, dict); p != nil {
			got, err := unpackDict(p, dict, len(text))
			if err != nil || !bytes.Equal(got, text) {
				t.Fatalf("read back %q (%v), want %q", got, err, text)
			}
		}
		if len(text) > 0 {
			unpackDict(append([]byte{blobSub}, text...), dict, 1<<16)
		}
	})
}

// TestBodyCheck decodes version headers in each of the forms records have
// been written in (MD5 of the body, SHA-256 prefix, CRC-32C with or
// without an MD5 body hash) and checks that each accepts its body and
// refuses one changed byte.
func TestBodyCheck(t *testing.T) {
	body := []byte("<html><body><p>the body of a version</p></body></html>")
	md5hex := fmt.Sprintf("%x", md5.Sum(body))
	headers := map[string]versionHeader{
		"md5":        {BodyHash: md5hex, bodyMD5: true},
		"sha256":     {BodyHash: "not an md5", Sum: bodySum(body)},
		"crc+md5":    {BodyHash: md5hex, bodyMD5: true, CRC: crc32.Checksum(body, castagnoli), hasCRC: true},
		"crc+other":  {BodyHash: "ABC", CRC: crc32.Checksum(body, castagnoli), hasCRC: true},
		"crc, empty": {CRC: crc32.Checksum(body, castagnoli), hasCRC: true},
	}
	changed := bytes.Replace(body, []byte("body of"), []byte("bodY of"), 1)
	for name, h := range headers {
		h.Size, h.Status = len(body), 200
		rec := &versionRec{hdr: h, chunks: []uint64{1}}
		v, err := rec.encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeVersion(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.hdr.BodyHash != h.BodyHash || got.hdr.hasCRC != h.hasCRC || got.hdr.bodyMD5 != h.bodyMD5 {
			t.Errorf("%s: decoded as %+v", name, got.hdr)
		}
		if !got.hdr.check(body) {
			t.Errorf("%s: refuses its body", name)
		}
		if got.hdr.check(changed) {
			t.Errorf("%s: accepts a changed body", name)
		}
	}
	for h, want := range map[string]bool{md5hex: true, strings.ToUpper(md5hex): false, md5hex[:31]: false, "": false} {
		if isHexMD5(h) != want {
			t.Errorf("isHexMD5(%q) = %v", h, !want)
		}
	}
}

// TestUnpackSizes reads blobs of many sizes back: each comes out whole, in
// a slice of its own about as long (not doubled as it grew; the buffers inflate reuses are not
// shared with what it returns), and one byte over the limit is refused.
func TestUnpackSizes(t *testing.T) {
	var kept [][]byte
	var want [][]byte
	for _, n := range []int{0, 1, 47, 48, 4 << 10, 32<<10 - 1, 32 << 10, 100_000, 1 << 20, 3 << 20} {
		p := make([]byte, n)
		for i := range p {
			p[i] = "<p>some text of a page</p>\n"[i%27] + byte(i/4096)
		}
		blob := pack(p)
		got, err := unpack(blob, n)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !bytes.Equal(got, p) || cap(got) > len(got)+len(got)/8+64 {
			t.Fatalf("%d bytes: read back %d bytes, capacity %d", n, len(got), cap(got))
		}
		if n > 0 {
			if _, err := unpack(blob, n-1); err == nil {
				t.Errorf("%d bytes: read with a limit of %d", n, n-1)
			}
		}
		kept, want = append(kept, got), append(want, p)
	}
	for i := range kept {
		if !bytes.Equal(kept[i], want[i]) {
			t.Fatalf("blob %d changed after later reads", i)
		}
	}
}

// TestDecodeHeader reads the header of version records whose changes
// take from a few bytes to far more than the first piece inflated, and
// with segment lists of any size after it: it equals the header the whole
// record decodes to, and stays so after later reads. A record cut short,
// or a header that is not whole, is an error.
func TestDecodeHeader(t *testing.T) {
	var kept, wholes []*versionHeader
	for _, nc := range []int{0, 1, 40, 400, 4000} {
		for _, ns := range []int{0, 3, 5000} {
			h := versionHeader{Status: 200, Title: "a page", BodyHash: "x", Size: 10}
			for i := range nc {
				h.Changes = append(h.Changes, changedigest.Change{
					Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, Segment: i,
					OldText: fmt.Sprintf("old words %d of the page", i), NewText: fmt.Sprintf("new text %d", i*7919),
					Path: "html|body|div[2]|p[" + fmt.Sprint(i) + "]",
				})
			}
			rec := &versionRec{hdr: h, chunks: []uint64{1}}
			for i := range ns {
				rec.segs = append(rec.segs, segRef{id: uint64(i*13 + 1), start: i * 2, end: i*2 + 2, flags: refRanged | refPath, path: fmt.Sprintf("html|body|p[%d]", i)})
			}
			v, err := rec.encode()
			if err != nil {
				t.Fatal(err)
			}
			whole, err := decodeVersion(v)
			if err != nil {
				t.Fatalf("%d changes, %d segments: %v", nc, ns, err)
			}
			got, err := decodeHeader(v)
			if err != nil {
				t.Fatalf("%d changes, %d segments: %v", nc, ns, err)
			}
			if !reflect.DeepEqual(*got, whole.hdr) {
				t.Fatalf("%d changes, %d segments: header differs from the whole record's", nc, ns)
			}
			kept, wholes = append(kept, got), append(wholes, &whole.hdr)
			if nc == 4000 {
				// the header alone is larger than 64 KB: cut inside it
				body, _ := unpack(v[1:], 1<<30)
				cut := append([]byte{recordFormat}, pack(body[:len(body)/2])...)
				if _, err := decodeHeader(cut); err == nil && ns == 0 {
					t.Errorf("%d changes: a record cut inside its header decodes", nc)
				}
			}
		}
	}
	if _, err := decodeHeader([]byte{recordFormat, blobFlate, 0xff, 0xff}); err == nil {
		t.Error("a broken deflate stream decodes")
	}
	// The headers' strings share no buffer that later reads reuse.
	for i := range kept {
		if !reflect.DeepEqual(kept[i], wholes[i]) {
			t.Fatalf("header %d changed after later reads", i)
		}
	}
}

// TestChangePlaceRoundTrip checks that the changes' places (Where) are
// kept, that a record without any reads as before, and that a place
// beside the other optional fields does not shift them.
func TestChangePlaceRoundTrip(t *testing.T) {
	for _, places := range [][]string{{"", ""}, {"under ‘Blue kettle, 1.7 l’", ""}, {"", "in the navigation"}} {
		item := 3
		h := versionHeader{Status: 200, Title: "shop", BodyHash: "x", Size: 10, Changes: []changedigest.Change{
			{Type: changedigest.ChangeContent, Op: changedigest.OpUpdate, OldText: "24", NewText: "29", Before: "costs ", After: " euros", Where: places[0]},
			{Type: changedigest.ChangeContent, Op: changedigest.OpInsert, NewText: "item", NewItem: &item, Title: "t", Noise: "n", Where: places[1]},
		}}
		v, err := (&versionRec{hdr: h, chunks: []uint64{1}}).encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.hdr.Changes, h.Changes) {
			t.Errorf("places %q: got %+v, want %+v", places, got.hdr.Changes, h.Changes)
		}
	}
}
