package backup_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/backup"
	"github.com/changedigest/changedigest/pet"
)

// archive makes an archive of a small store with a user and a watch, and
// a key file.
func archive(t *testing.T) []byte {
	t.Helper()
	ctx := context.Background()
	st := pet.New(t.TempDir())
	st.NoSync = true
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u := &changedigest.User{Name: "ann", DigestHour: -1}
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateWatch(ctx, &changedigest.Watch{UserID: u.ID, URL: "https://example.org/"}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w := backup.NewWriter(&b, time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC), "store", "test")
	if err := w.AddStore(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := w.Add("server.key", []byte("0123456789abcdef0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// read reads an archive into memory.
func read(r io.Reader) (map[string][]byte, backup.Manifest, error) {
	files := map[string][]byte{}
	m, err := backup.Read(r, func(name string) (io.WriteCloser, error) {
		return &sink{files: files, name: name}, nil
	})
	return files, m, err
}

type sink struct {
	bytes.Buffer
	files map[string][]byte
	name  string
}

func (s *sink) Close() error { s.files[s.name] = s.Bytes(); return nil }

func TestReadWhole(t *testing.T) {
	a := archive(t)
	files, m, err := read(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 2 || m.Files[0].Name != pet.DBFile || m.Source != "store" || string(files["server.key"]) != "0123456789abcdef0123456789abcdef" {
		t.Errorf("manifest %+v, files %d", m, len(files))
	}
	if f, _ := m.File(pet.DBFile); int(f.Size) != len(files[pet.DBFile]) {
		t.Errorf("pet.db: %d bytes, manifest says %d", len(files[pet.DBFile]), f.Size)
	}
	// Compressed, the same.
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(a)
	zw.Close()
	if _, _, err := read(&z); err != nil {
		t.Errorf("gzip-compressed: %v", err)
	}
}

// TestReadCutShort: an archive cut at any point before the end of its
// manifest is refused, as cut short (or, cut within its first header, as
// not an archive). What follows the manifest is the tar format's padding.
func TestReadCutShort(t *testing.T) {
	a := archive(t)
	manifestEnd := bytes.LastIndex(a, []byte("}\n")) + 2
	for n := 0; n < manifestEnd; n += 97 {
		_, _, err := read(bytes.NewReader(a[:n]))
		if !errors.Is(err, backup.ErrTruncated) && !errors.Is(err, backup.ErrFormat) {
			t.Fatalf("cut at %d of %d: %v", n, len(a), err)
		}
		if n >= 1024 && !errors.Is(err, backup.ErrTruncated) {
			t.Fatalf("cut at %d of %d: %v, want ErrTruncated", n, len(a), err)
		}
	}
	for _, n := range []int{manifestEnd - 1, manifestEnd - 100} {
		if _, _, err := read(bytes.NewReader(a[:n])); !errors.Is(err, backup.ErrTruncated) {
			t.Errorf("cut in the manifest, at %d: %v", n, err)
		}
	}
}

// TestReadAltered: a byte changed in the store, a file left out of the
// archive, or a file added to it, is refused as damaged.
func TestReadAltered(t *testing.T) {
	a := archive(t)
	flipped := bytes.Clone(a)
	flipped[512+4096+100] ^= 0x40 // in pet.db's second page
	if _, _, err := read(bytes.NewReader(flipped)); !errors.Is(err, backup.ErrDamaged) || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("a byte changed: %v", err)
	}

	// Rewrite the archive without server.key, and with another file.
	rewrite := func(skip string, extra *tar.Header) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		tr := tar.NewReader(bytes.NewReader(a))
		for {
			hd, err := tr.Next()
			if err == io.EOF {
				break
			}
			if hd.Name == skip {
				continue
			}
			if hd.Name == backup.ManifestName && extra != nil {
				tw.WriteHeader(extra)
				tw.Write(make([]byte, extra.Size))
			}
			tw.WriteHeader(hd)
			io.Copy(tw, tr)
		}
		tw.Close()
		return b.Bytes()
	}
	if _, _, err := read(bytes.NewReader(rewrite("server.key", nil))); !errors.Is(err, backup.ErrDamaged) || !strings.Contains(err.Error(), "server.key is listed in its manifest but missing") {
		t.Errorf("a file left out: %v", err)
	}
	if _, _, err := read(bytes.NewReader(rewrite("", &tar.Header{Name: "tag-authority", Size: 3, Mode: 0o600, Typeflag: tar.TypeReg}))); !errors.Is(err, backup.ErrDamaged) {
		t.Errorf("a file added: %v", err)
	}
	if _, _, err := read(bytes.NewReader(rewrite("", &tar.Header{Name: "../etc/passwd", Size: 3, Mode: 0o600, Typeflag: tar.TypeReg}))); !errors.Is(err, backup.ErrFormat) {
		t.Errorf("a path out of the directory: %v", err)
	}
}

// TestReadNotABackup: other input is refused as not a backup.
func TestReadNotABackup(t *testing.T) {
	var other bytes.Buffer
	tw := tar.NewWriter(&other)
	tw.WriteHeader(&tar.Header{Name: "notes.txt", Size: 2, Mode: 0o600, Typeflag: tar.TypeReg})
	tw.Write([]byte("hi"))
	tw.Close()
	for name, input := range map[string]string{
		"empty":       "",
		"JSON":        `{"format":"changedigest-user","version":1,"watches":[]}` + strings.Repeat(" ", 600),
		"short text":  "hello",
		"another tar": other.String(),
		"bad gzip":    "\x1f\x8bnot really",
	} {
		if _, _, err := read(strings.NewReader(input)); !errors.Is(err, backup.ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
}
