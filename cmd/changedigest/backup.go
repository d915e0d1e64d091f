package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/changedigest/changedigest/backup"
	"github.com/changedigest/changedigest/pet"
)

func init() {
	commands["backup"] = command{summary: "copy a data directory consistently, while serve runs or not: backup DIR|FILE|-", run: runBackup}
	commands["restore"] = command{summary: "restore a backup into a data directory: restore FILE|- [--force]", run: runRestore}
}

const backupUsage = `DIR|FILE|- [--data DIR] [--force]

Writes a consistent copy of the data directory's store (users, settings,
watches, every version, channels) with its forms' key to FILE, to a new
file changedigest-backup-TIME.tar in DIR, or to standard output (-). While
serve runs it is asked for the copy through its admin socket (DATA/admin.sock);
otherwise the store is read directly. The search index is not copied:
restore rebuilds it. The archive is checked as it is written; a backup that
fails leaves no file.
`

// runBackup writes a backup archive of the data directory.
func runBackup(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "backup", backupUsage)
	sf.register(fs)
	force := fs.Bool("force", false, "replace FILE when it exists")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return usagef("backup takes one place to write to: a directory, a file or - for standard output")
	}
	if err := refuseNode(sf.data, "backup"); err != nil {
		return err
	}
	start := time.Now()
	out, info := args[0], e.stdout
	if out == "-" {
		if isTerminal(e.stdout) {
			return usagef("backup - writes the archive to standard output, which is a terminal: redirect it to a file or a program")
		}
		info = e.stderr
	} else if st, err := os.Stat(out); err == nil && st.IsDir() {
		out = filepath.Join(out, "changedigest-backup-"+start.UTC().Format("20060102T150405Z")+".tar")
	} else if err == nil && !*force {
		return usagef("%s exists: give --force to replace it, or another name", out)
	}

	src, via, err := openArchive(ctx, sf.data)
	if err != nil {
		return err
	}
	defer src.Close()
	var m backup.Manifest
	if out == "-" {
		tee := io.TeeReader(src, e.stdout)
		if m, err = backup.Read(tee, discardFiles); err == nil {
			_, err = io.Copy(io.Discard, tee)
		}
	} else {
		m, err = writeBackupFile(out, src)
	}
	if err != nil {
		return fmt.Errorf("backup of %s %s: %w", sf.data, via, err)
	}
	var files []string
	for _, f := range m.Files {
		files = append(files, fmt.Sprintf("%s (%s)", f.Name, byteSize(f.Size)))
	}
	fmt.Fprintf(info, "backed up %s %s to %s in %s: %s\n", absData(sf.data), via, out,
		time.Since(start).Round(time.Millisecond), strings.Join(files, ", "))
	return nil
}

// openArchive returns a backup archive of the data directory as a stream:
// from the running service through its admin socket, or, when none runs,
// from the store opened directly. via says which, for messages.
func openArchive(ctx context.Context, data string) (io.ReadCloser, string, error) {
	if c := adminClient(ctx, data); c != nil {
		res, err := adminDo(ctx, c, "GET", "/backup", nil)
		if err != nil {
			return nil, "", err
		}
		return res.Body, "(through the running service)", nil
	}
	if _, err := os.Stat(filepath.Join(data, pet.DBFile)); err != nil {
		return nil, "", usagef("no store in %s to back up (%s is missing)", data, pet.DBFile)
	}
	st := pet.New(data)
	st.OpenTimeout = time.Second
	if err := st.Open(ctx); err != nil {
		if errors.Is(err, pet.ErrLocked) {
			return nil, "", fmt.Errorf("the data directory %s is in use by another changedigest process that does not answer on %s (stop it, or run the backup from the same version of changedigest)", data, adminPath(data))
		}
		return nil, "", err
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := writeArchive(ctx, pw, st, data, "store")
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		pw.CloseWithError(err)
	}()
	return &storeArchive{pr, done}, "(the store, no service running)", nil
}

// storeArchive is the archive of a store opened directly, written as it
// is read; Close stops the writing and waits for the store to be closed.
type storeArchive struct {
	*io.PipeReader
	done chan struct{}
}

func (a *storeArchive) Close() error {
	a.PipeReader.Close()
	<-a.done
	return nil
}

// writeBackupFile writes the archive read from src to the file out,
// checking it as it goes; the file is in place only once whole.
func writeBackupFile(out string, src io.Reader) (backup.Manifest, error) {
	tmp := out + ".partial"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return backup.Manifest{}, err
	}
	tee := io.TeeReader(src, f)
	m, err := backup.Read(tee, discardFiles)
	if err == nil {
		// The tar format's padding after the end, if any, is the file's too.
		_, err = io.Copy(io.Discard, tee)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, out)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return m, err
}

// discardFiles is backup.Read's create for a check that keeps nothing.
func discardFiles(string) (io.WriteCloser, error) { return nopWriteCloser{io.Discard}, nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

const restoreUsage = `FILE|- [--data DIR] [--force]

Restores a backup (from backup; gzip-compressed too) into the data directory,
which must be empty or missing unless --force is given (then the store it
holds is kept aside as pet.db.replaced-TIME, and its search index and cluster
files are dropped). The service must be stopped. The archive is checked whole
(sizes, SHA-256, every page of the store) before anything is replaced; the
search index is rebuilt from the store, and the next serve starts its cluster
of one from it.
`

// runRestore restores a backup archive into a data directory.
func runRestore(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "restore", restoreUsage)
	sf.register(fs)
	force := fs.Bool("force", false, "replace the store of a data directory that is not empty")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return usagef("restore takes one backup: a file, or - for standard input")
	}
	data := sf.data
	if adminClient(ctx, data) != nil {
		return fmt.Errorf("the data directory %s is in use by a running changedigest service: stop it first", data)
	}
	entries, err := os.ReadDir(data)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(entries) > 0 && !*force {
		return usagef("the data directory %s is not empty: restore into a new directory (--data), or give --force to replace its store", data)
	}
	if err := refuseNode(data, "restore"); err != nil {
		return err
	}
	var in io.Reader = e.stdin
	if args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return usagef("%v", err)
		}
		defer f.Close()
		in = f
	}
	// A store in use is locked: try it before reading anything.
	if _, err := os.Stat(filepath.Join(data, pet.DBFile)); err == nil {
		st := pet.New(data)
		st.OpenTimeout = 200 * time.Millisecond
		if err := st.Open(ctx); errors.Is(err, pet.ErrLocked) {
			return fmt.Errorf("the data directory %s is in use by another changedigest process: stop it first", data)
		} else if err == nil {
			st.Close()
		}
	}
	if err := os.MkdirAll(data, 0o750); err != nil {
		return err
	}
	stamp := time.Now().UTC().Format("20060102T150405")
	staging := filepath.Join(data, ".restore-"+stamp)
	if err := os.Mkdir(staging, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	m, err := backup.Read(in, func(name string) (io.WriteCloser, error) {
		return os.OpenFile(filepath.Join(staging, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	})
	if err != nil {
		os.RemoveAll(staging)
		if len(entries) == 0 {
			os.Remove(data) // it was empty or missing: leave it as it was
		}
		if errors.Is(err, backup.ErrFormat) || errors.Is(err, backup.ErrTruncated) || errors.Is(err, backup.ErrDamaged) {
			return usagef("%s: %v (nothing was restored)", args[0], plainBackupError(err))
		}
		return fmt.Errorf("%s: %w (nothing was restored)", args[0], err)
	}
	found, err := pet.CheckFile(ctx, staging)
	if err != nil {
		return err
	}
	if len(found) > 0 {
		return fmt.Errorf("the store in %s does not read whole (nothing was restored): %s", args[0], found[0])
	}
	if err := replaceStore(e, data, staging, m, stamp); err != nil {
		return err
	}
	st := pet.New(data)
	st.Logger = slog.New(slog.DiscardHandler) // replaying the copy's pending index work is no news
	if err := st.Open(ctx); err != nil {
		return err
	}
	defer st.Close()
	if err := st.OpenIndex(ctx); err != nil {
		return err
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		return err
	}
	how := map[string]string{"service": " through the running service", "store": " from the store"}[m.Source]
	fmt.Fprintf(e.stdout, "restored %s (taken %s%s) into %s: %d users, %d watches, %d versions; search index rebuilt\n",
		args[0], m.Created.Local().Format(time.DateTime), how, absData(data), stats.Users, stats.Watches, stats.Versions)
	return nil
}

// plainBackupError is a backup.Read error without its package name.
func plainBackupError(err error) string {
	s := err.Error()
	if len(s) > 8 && s[:8] == "backup: " {
		return s[8:]
	}
	return s
}

// replaceStore moves the restored files from staging into the data
// directory: a store there is kept aside, what is derived from it (the
// index, a cluster of one's files and places) dropped, so that the next
// serve imports the restored store into a new cluster of one.
func replaceStore(e *env, data, staging string, m backup.Manifest, stamp string) error {
	db := filepath.Join(data, pet.DBFile)
	if _, err := os.Stat(db); err == nil {
		aside := db + ".replaced-" + stamp
		if err := os.Rename(db, aside); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "kept the store that was there aside as %s\n", filepath.Base(aside))
	}
	derived := []string{"index.bleve", "nats", "positions.json", "local.json", adminSocket}
	for _, name := range append(derived, backup.Files[1:]...) { // and the small files the archive brings
		if err := os.RemoveAll(filepath.Join(data, name)); err != nil {
			return err
		}
	}
	for _, f := range m.Files {
		if err := os.Rename(filepath.Join(staging, f.Name), filepath.Join(data, f.Name)); err != nil {
			return err
		}
	}
	return nil
}

// byteSize is n bytes for people.
func byteSize(n int64) string {
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
