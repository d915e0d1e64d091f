package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/backup"
	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/pet"
	"github.com/changedigest/changedigest/userdata"
)

// The admin socket: while serve runs, the data directory is locked by
// it, and the commands that read the whole store (backup) or one user's
// settings (user export, user import) go through the running service
// instead. serve listens on a unix socket in the data directory, of mode
// 0600: only the user the service runs as (and root) may connect, as
// only they may read the directory's files. It speaks HTTP.

// adminSocket names the socket in the data directory.
const adminSocket = "admin.sock"

func adminPath(data string) string { return filepath.Join(data, adminSocket) }

// serveAdmin listens on the admin socket until ctx ends. A path too long
// for a unix socket is a warning, not a failure: backup then needs the
// service stopped.
func (m *Main) serveAdmin(ctx context.Context) error {
	path := adminPath(m.Config.data)
	// The store's lock is this process's: a socket left here is a dead
	// serve's.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("admin socket: %w", err)
	}
	// And so are copies of the store a backup through it left.
	if left, _ := filepath.Glob(filepath.Join(m.Config.data, ".backup-*.db")); len(left) > 0 {
		for _, f := range left {
			os.Remove(f)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		m.Logger.Warn("no admin socket: backup and user export need the service stopped", "path", path, "err", err)
		return nil
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("admin socket: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /backup", m.adminBackup)
	mux.HandleFunc("GET /users/{name}/export", m.adminExport)
	mux.HandleFunc("POST /users/{name}/import", m.adminImport)
	m.adminStoreRoutes(mux)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	m.goRun(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := hs.Shutdown(sctx)
		os.Remove(path)
		return err
	})
	m.goRun(func() error {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	return nil
}

// adminError answers a request of the admin socket with an error: its
// message is the body, for the command to print.
func adminError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, plainError(err))
}

// adminBackup streams a backup archive of the running service's store.
// The store is first copied to a file beside it, in one read transaction,
// at the speed of the disk: a transaction held open while a slow client
// reads would hold up every write that must grow pet.db, and with it the
// reads queued behind that write, for as long as the client takes.
func (m *Main) adminBackup(w http.ResponseWriter, r *http.Request) {
	if m.Config.Cluster.on() {
		adminError(w, http.StatusConflict, errors.New("this serve is a node of a cluster of several: its store is the cluster's copy of its shards, not a backup of the cluster"))
		return
	}
	copied, err := os.CreateTemp(m.Config.data, ".backup-*.db")
	if err != nil {
		adminError(w, http.StatusInternalServerError, fmt.Errorf("copy the store: %w", err))
		return
	}
	defer os.Remove(copied.Name())
	defer copied.Close()
	size, err := m.Store.Backup(r.Context(), func(int64) (io.Writer, error) { return copied, nil })
	if err == nil {
		_, err = copied.Seek(0, io.SeekStart)
	}
	if err != nil {
		adminError(w, http.StatusInternalServerError, fmt.Errorf("copy the store: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	aw := backup.NewWriter(w, time.Now(), "service", buildVersion())
	err = aw.AddReader(pet.DBFile, size, copied)
	if err == nil {
		err = addSmallFiles(aw, m.Config.data)
	}
	if err == nil {
		_, err = aw.Close()
	}
	// An error once the archive has started cuts it short: the command
	// finds no manifest at its end and says so.
	if err != nil {
		m.Logger.Warn("backup through the admin socket", "err", err)
	}
}

// writeArchive writes a backup archive of the open store st of the data
// directory data to w, with no service running.
func writeArchive(ctx context.Context, w io.Writer, st *pet.Store, data, source string) error {
	aw := backup.NewWriter(w, time.Now(), source, buildVersion())
	if err := aw.AddStore(ctx, st); err != nil {
		return err
	}
	if err := addSmallFiles(aw, data); err != nil {
		return err
	}
	_, err := aw.Close()
	return err
}

// addSmallFiles adds the files of the data directory beside the store.
func addSmallFiles(aw *backup.Writer, data string) error {
	for _, name := range backup.Files[1:] {
		b, err := os.ReadFile(filepath.Join(data, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := aw.Add(name, b); err != nil {
			return err
		}
	}
	return nil
}

// adminClient is a client of the admin socket of the data directory, or
// nil when no service answers there.
func adminClient(ctx context.Context, data string) *http.Client {
	path := adminPath(data)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
	// A socket left by a serve that died answers nothing.
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := dial(dctx, "", "")
	if err != nil {
		return nil
	}
	c.Close()
	return &http.Client{Transport: &http.Transport{DialContext: dial}}
}

// adminDo makes a request of the service's admin socket and returns its
// response when it is 200 OK, else the service's message as an error.
func adminDo(ctx context.Context, c *http.Client, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://admin"+path, body)
	if err != nil {
		return nil, err
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the running service: %w", err)
	}
	if res.StatusCode == http.StatusOK {
		return res, nil
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	text := strings.TrimSpace(string(msg))
	if text == "" {
		text = res.Status
	}
	if res.StatusCode == http.StatusBadRequest || res.StatusCode == http.StatusNotFound {
		return nil, usagef("%s", text)
	}
	return nil, errors.New(text)
}

// refuseNode refuses a command on a cluster node's data directory.
func refuseNode(data, what string) error {
	if cluster.IsView(data) {
		return usagef("the data directory %s is a cluster node's (its copy of the cluster's shards): %s works on a single serve's data directory", data, what)
	}
	return nil
}

// adminExport answers the settings of a user as userdata's document.
func (m *Main) adminExport(w http.ResponseWriter, r *http.Request) {
	d, err := userdata.Export(r.Context(), m.clusterStore(), r.PathValue("name"), userdata.Options{Secrets: r.URL.Query().Get("secrets") == "1"})
	if err != nil {
		adminError(w, adminStatus(err), err)
		return
	}
	var buf bytes.Buffer
	if err := d.Encode(&buf); err != nil {
		adminError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(buf.Bytes())
}

// adminImport imports a userdata document into a user's settings and
// answers the report.
func (m *Main) adminImport(w http.ResponseWriter, r *http.Request) {
	d, err := userdata.Parse(http.MaxBytesReader(w, r.Body, userdata.MaxDocument+1))
	if err != nil {
		adminError(w, adminStatus(err), err)
		return
	}
	rep, err := userdata.Import(r.Context(), m.clusterStore(), r.PathValue("name"), d)
	if err != nil {
		adminError(w, adminStatus(err), err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(rep)
}

// adminStatus is the status of an error of the admin socket: 400 for bad
// input, 404 for an unknown user, 500 for the rest.
func adminStatus(err error) int {
	switch changedigest.ErrorCode(err) {
	case changedigest.EINVALID, changedigest.ETOOLARGE, changedigest.ECONFLICT:
		return http.StatusBadRequest
	case changedigest.ENOTFOUND:
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}
