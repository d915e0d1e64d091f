// Package backup writes and reads the archive of a data directory that
// `changedigest backup` makes and `changedigest restore` reads.
//
// An archive is a tar stream: the store's database as of one moment
// (pet.Store.Backup, a consistent copy taken while the service runs), the
// small files beside it that are not derived from it (the forms' key, the
// tag authority), and last a manifest naming each file with its size and
// SHA-256. The search index is not in it: Open rebuilds it from the
// store. Nor are a cluster of one's stream files: the store is its track
// of record, and the next serve imports it into a new cluster of one.
//
// Read takes an archive whole or not at all: one cut short (no manifest at
// its end), altered (a size or hash that differs) or not an archive at all
// is an error that says which, and the caller keeps nothing it wrote. A
// gzip-compressed archive (backup - | gzip) is read too.
package backup

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"time"

	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/secret"
)

// Format and Version name the archive's layout in its manifest.
const (
	Format  = "changedigest-backup"
	Version = 1
)

// ManifestName is the archive's last entry.
const ManifestName = "MANIFEST.json"

// Files are the files of a data directory an archive may hold: the store,
// then the small files beside it (the key of the service's cookies, the
// feeds' tag authority, the key that opens the watches' secrets). The
// store is required.
var Files = []string{pet.DBFile, "server.key", "tag-authority", secret.KeyFile}

// Sentinel errors of Read, to compare with errors.Is.
var (
	// ErrFormat: the input is not a changedigest backup, or one of a
	// version this program does not read.
	ErrFormat = errors.New("not a changedigest backup")
	// ErrTruncated: the archive ends before its manifest: it was cut short.
	ErrTruncated = errors.New("the backup is cut short")
	// ErrDamaged: a file of the archive differs from what its manifest says.
	ErrDamaged = errors.New("the backup is damaged")
)

// File is one file of an archive, as its manifest lists it.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Manifest is the archive's last entry.
type Manifest struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Created time.Time `json:"created"`
	// Source says how the copy was taken: "service" (through a running
	// serve) or "store" (the store opened directly, no service running).
	Source string `json:"source"`
	// Program is the version of changedigest that wrote it.
	Program string `json:"program,omitempty"`
	Files   []File `json:"files"`
}

// File returns the manifest's entry for name.
func (m *Manifest) File(name string) (File, bool) {
	for _, f := range m.Files {
		if f.Name == name {
			return f, true
		}
	}
	return File{}, false
}

// Writer writes an archive. Add the files (the store first), then Close.
type Writer struct {
	tw *tar.Writer
	m  Manifest
}

// NewWriter starts an archive on w; created is its time (also every
// entry's), source and program go into its manifest.
func NewWriter(w io.Writer, created time.Time, source, program string) *Writer {
	return &Writer{
		tw: tar.NewWriter(w),
		m:  Manifest{Format: Format, Version: Version, Created: created.UTC().Truncate(time.Second), Source: source, Program: program},
	}
}

// header is the tar header of a file of the archive.
func (w *Writer) header(name string, size int64) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o600, ModTime: w.m.Created}
}

// AddStore adds a consistent copy of the store's database (Files[0]).
func (w *Writer) AddStore(ctx context.Context, st *pet.Store) error {
	h := sha256.New()
	n, err := st.Backup(ctx, func(size int64) (io.Writer, error) {
		if err := w.tw.WriteHeader(w.header(pet.DBFile, size)); err != nil {
			return nil, err
		}
		return io.MultiWriter(w.tw, h), nil
	})
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	w.m.Files = append(w.m.Files, File{Name: pet.DBFile, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}

// Add adds a small file, one of Files.
func (w *Writer) Add(name string, data []byte) error {
	return w.AddReader(name, int64(len(data)), bytes.NewReader(data))
}

// AddReader adds the file name, one of Files, of size bytes read from r:
// the store as copied beforehand (pet.Store.Backup), or a small file.
func (w *Writer) AddReader(name string, size int64, r io.Reader) error {
	if !slices.Contains(Files, name) {
		return fmt.Errorf("backup: %s is not a file of a backup", name)
	}
	if err := w.tw.WriteHeader(w.header(name, size)); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w.tw, h), io.LimitReader(r, size))
	if err == nil && n != size {
		err = fmt.Errorf("%s is %d bytes, not %d", name, n, size)
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	w.m.Files = append(w.m.Files, File{Name: name, Size: size, SHA256: hexSum(h)})
	return nil
}

// Close writes the manifest and ends the archive; it does not close the
// underlying writer. It returns the manifest.
func (w *Writer) Close() (Manifest, error) {
	b, err := json.MarshalIndent(w.m, "", "  ")
	if err != nil {
		return w.m, err
	}
	b = append(b, '\n')
	if err := w.tw.WriteHeader(w.header(ManifestName, int64(len(b)))); err != nil {
		return w.m, fmt.Errorf("backup: %w", err)
	}
	if _, err := w.tw.Write(b); err != nil {
		return w.m, fmt.Errorf("backup: %w", err)
	}
	if err := w.tw.Close(); err != nil {
		return w.m, fmt.Errorf("backup: %w", err)
	}
	return w.m, nil
}

// Read reads an archive from r, writing each of its files to what create
// returns for its name (closed once written), and checks it whole against
// its manifest. Until Read returns nil, what it wrote may be incomplete or
// wrong: write to a place of one's own and keep it only then.
//
// Errors: ErrFormat for input that is not an archive of this version;
// ErrTruncated for one cut short; ErrDamaged for one whose files differ
// from its manifest (or lacks the store); create's error; a read error.
func Read(r io.Reader, create func(name string) (io.WriteCloser, error)) (Manifest, error) {
	var m Manifest
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return m, fmt.Errorf("backup: %w: %v", ErrFormat, err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	tr := tar.NewReader(r)
	seen := map[string]File{}
	for first := true; ; first = false {
		hd, err := tr.Next()
		if err == io.EOF {
			if first {
				return m, fmt.Errorf("backup: %w: the input is empty", ErrFormat)
			}
			return m, fmt.Errorf("backup: %w: it ends before its manifest", ErrTruncated)
		}
		if err != nil {
			return m, readErr(err, first, "")
		}
		if hd.Typeflag != tar.TypeReg {
			return m, fmt.Errorf("backup: %w: it holds %q, which is not a file", ErrFormat, hd.Name)
		}
		if hd.Name == ManifestName {
			return readManifest(tr, hd, seen)
		}
		if !slices.Contains(Files, hd.Name) {
			return m, fmt.Errorf("backup: %w: it holds %q, which no backup holds", ErrFormat, hd.Name)
		}
		if _, dup := seen[hd.Name]; dup {
			return m, fmt.Errorf("backup: %w: it holds %s twice", ErrDamaged, hd.Name)
		}
		f, err := copyFile(tr, hd.Name, create)
		if err != nil {
			return m, err
		}
		seen[hd.Name] = f
	}
}

// copyFile copies the archive's current file to what create returns for
// name, and hashes it.
func copyFile(tr *tar.Reader, name string, create func(string) (io.WriteCloser, error)) (File, error) {
	out, err := create(name)
	if err != nil {
		return File{}, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), tr)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return File{}, readErr(err, false, name)
	}
	return File{Name: name, Size: n, SHA256: hexSum(h)}, nil
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// readManifest reads the manifest and checks the files seen against it,
// and that nothing follows it.
func readManifest(tr *tar.Reader, hd *tar.Header, seen map[string]File) (Manifest, error) {
	var m Manifest
	if hd.Size > 1<<20 {
		return m, fmt.Errorf("backup: %w: its manifest is %d bytes", ErrFormat, hd.Size)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		return m, readErr(err, false, ManifestName)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("backup: %w: its manifest does not read: %v", ErrFormat, err)
	}
	if m.Format != Format {
		return m, fmt.Errorf("backup: %w: its manifest names the format %q", ErrFormat, m.Format)
	}
	if m.Version != Version {
		return m, fmt.Errorf("backup: %w: it is of version %d, this program reads version %d", ErrFormat, m.Version, Version)
	}
	if _, ok := m.File(pet.DBFile); !ok {
		return m, fmt.Errorf("backup: %w: its manifest lists no %s", ErrDamaged, pet.DBFile)
	}
	for _, want := range m.Files {
		got, ok := seen[want.Name]
		switch {
		case !ok:
			return m, fmt.Errorf("backup: %w: %s is listed in its manifest but missing", ErrDamaged, want.Name)
		case got.Size != want.Size:
			return m, fmt.Errorf("backup: %w: %s is %d bytes, its manifest says %d", ErrDamaged, want.Name, got.Size, want.Size)
		case got.SHA256 != want.SHA256:
			return m, fmt.Errorf("backup: %w: %s does not have the SHA-256 its manifest says", ErrDamaged, want.Name)
		}
		delete(seen, want.Name)
	}
	for name := range seen {
		return m, fmt.Errorf("backup: %w: %s is not listed in its manifest", ErrDamaged, name)
	}
	if _, err := tr.Next(); err != io.EOF {
		if err == nil {
			return m, fmt.Errorf("backup: %w: something follows its manifest", ErrDamaged)
		}
		return m, readErr(err, false, "")
	}
	return m, nil
}

// readErr names what a failed read of the archive means.
func readErr(err error, first bool, name string) error {
	where := ""
	if name != "" {
		where = " in " + name
	}
	switch {
	case first && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tar.ErrHeader)):
		return fmt.Errorf("backup: %w: it does not start as a tar archive", ErrFormat)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("backup: %w: it ends%s", ErrTruncated, where)
	case errors.Is(err, tar.ErrHeader) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum):
		if first {
			return fmt.Errorf("backup: %w (%v)", ErrFormat, err)
		}
		return fmt.Errorf("backup: %w: %v", ErrDamaged, err)
	}
	return fmt.Errorf("backup: read%s: %w", where, err)
}
