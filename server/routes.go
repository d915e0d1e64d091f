package server

import (
	"bytes"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/render"
	"github.com/changedigest/changedigest/templates"
)

// Handler returns the service's routes behind its middleware, in this
// order: request id, client address, logging, recovery, timeout,
// security headers, compression, body limit.
func (s *Server) Handler() http.Handler {
	s.init()
	r := chi.NewRouter()
	r.Use(requestID, s.realClient, s.logRequests, s.recoverer, s.timeout, s.securityHeaders, compress, s.limitBody)
	r.NotFound(s.page(func(w http.ResponseWriter, r *http.Request) error {
		return changedigest.Errorf(changedigest.ENOTFOUND, "there is no page at %s", clip(r.URL.Path))
	}))
	r.MethodNotAllowed(s.page(func(w http.ResponseWriter, r *http.Request) error {
		return changedigest.Errorf(changedigest.EINVALID, "%s is not allowed on %s", r.Method, clip(r.URL.Path))
	}))

	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	r.Get("/readyz", s.handleReady)
	r.Handle("/static/*", s.staticFiles())

	// Feed readers cannot log in: the secret feed token is in the path.
	r.Route("/feeds/{token}", func(r chi.Router) {
		r.Get("/atom.xml", s.feed(s.handleUserFeed))
		r.Get("/watches/{id}.xml", s.feed(s.handleWatchFeed))
		r.Get("/tags/{tag}.xml", s.feed(s.handleTagFeed))
		r.Get("/rss.xml", s.feedAs(formatRSS, s.handleUserFeed))
		r.Get("/feed.json", s.feedAs(formatJSON, s.handleUserFeed))
		r.Get("/watches/{id}.rss", s.feedAs(formatRSS, s.handleWatchFeed))
		r.Get("/watches/{id}.json", s.feedAs(formatJSON, s.handleWatchFeed))
		r.Get("/tags/{tag}.rss", s.feedAs(formatRSS, s.handleTagFeed))
		r.Get("/tags/{tag}.json", s.feedAs(formatJSON, s.handleTagFeed))
	})
	r.Post(HubPath, s.handleHub)
	r.Route("/api/v1", s.apiRoutes)
	s.agentRoutes(r)

	r.Group(func(r chi.Router) {
		r.Use(s.loadSession, s.checkCSRF)
		r.Get("/login", s.page(s.handleLoginForm))
		r.Post("/login", s.page(s.handleLogin))
		r.Post("/logout", s.page(s.handleLogout))
		s.joinRoutes(r)

		r.Group(func(r chi.Router) {
			r.Use(s.requireUser)
			r.Get("/", s.page(s.handleDashboard))
			r.Get("/watches/new", s.page(s.handleNewWatch))
			r.Post("/watches", s.page(s.handleCreateWatch))
			r.Route("/watches/{id}", func(r chi.Router) {
				r.Get("/", s.page(s.handleWatch))
				r.Post("/", s.page(s.handleUpdateWatch))
				r.Get("/edit", s.page(s.handleEditWatch))
				r.Post("/delete", s.page(s.handleDeleteWatch))
				r.Post("/check", s.page(s.handleCheckWatch))
				r.Post("/agent", s.page(s.handleSetAgent))
				r.Get("/compare", s.page(s.handleCompare))
				r.Get("/pick", s.page(s.handlePick))
				r.Post("/pick", s.page(s.handleSetPickedZone))
				r.Get("/versions/{seq}", s.page(s.handleVersion))
				r.Get("/versions/{seq}/content", s.page(s.handleVersionContent))
				r.Get("/versions/{seq}/source", s.page(s.handleVersionSource))
				r.Get("/versions/{seq}/screenshot.png", s.page(s.handleScreenshot))
				r.Get("/versions/{seq}/overlay.png", s.page(s.handleOverlay))
			})
			r.Get("/tags/{tag}", s.page(s.handleTag))
			r.Get("/profile", s.page(s.handleProfile))
			r.Post("/profile/foaf", s.page(s.handleUploadFOAF))
			r.Post("/profile/terms", s.page(s.handleAddTerm))
			r.Post("/profile/terms/remove", s.page(s.handleRemoveTerm))
			r.Post("/profile/senses", s.page(s.handleChooseSense))
			r.Get("/search", s.page(s.handleSearch))
			r.Get("/opml", s.page(s.handleExportOPML))
			r.Post("/opml", s.page(s.handleImportOPML))
			r.Get("/digest", s.page(s.handleDigest))
			r.Get("/digest/{day}", s.page(s.handleDigest))
			r.Get("/settings", s.page(s.handleSettings))
			r.Post("/settings", s.page(s.handleSaveSettings))
			r.Post("/settings/password", s.page(s.handlePassword))
			r.Get("/settings/export", s.page(s.handleExportSettings))
			r.Post("/settings/import", s.page(s.handleImportSettings))
			r.Post("/settings/tokens", s.page(s.handleCreateToken))
			r.Post("/settings/tokens/{tid}/revoke", s.page(s.handleRevokeToken))
			r.Post("/settings/feed-token", s.page(s.handleRotateFeedToken))
			r.Get("/settings/channels", s.page(s.handleChannels))
			r.Post("/settings/channels", s.page(s.handleCreateChannel))
			r.Post("/settings/channels/preview", s.page(s.handlePreviewChannel))
			r.Post("/settings/channels/{cid}", s.page(s.handleUpdateChannel))
			r.Post("/settings/channels/{cid}/test", s.page(s.handleTestChannel))
			r.Post("/settings/channels/{cid}/toggle", s.page(s.handleToggleChannel))
			r.Post("/settings/channels/{cid}/delete", s.page(s.handleDeleteChannel))
			r.Post("/settings/deliveries/redeliver", s.page(s.handleRedeliver))
			r.Post("/settings/sessions/{sid}/end", s.page(s.handleEndSession))
			r.Post("/settings/sessions/end-others", s.page(s.handleEndOtherSessions))
			r.Route("/admin", s.adminRoutes)
		})
	})
	if prefix := s.Render.Prefix(); prefix != "" {
		root := chi.NewRouter()
		root.Mount(prefix, r)
		return root
	}
	return r
}

// staticFiles serves the embedded style sheets, and 404 for anything
// else, directories included. Links carry a content version, so the
// files may be cached for a long time.
func (s *Server) staticFiles() http.Handler {
	sub, err := fs.Sub(templates.FS, "static")
	if err != nil {
		panic(err) // the embedded tree always has static/
	}
	prefix := s.Render.Path("/static/")
	files := http.StripPrefix(prefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Files only: a directory is not listed.
		name := strings.TrimPrefix(r.URL.Path, prefix)
		if fi, err := fs.Stat(sub, name); err != nil || fi.IsDir() {
			s.pageError(w, r, changedigest.Errorf(changedigest.ENOTFOUND, "there is no file at %s", clip(r.URL.Path)))
			return
		}
		if r.URL.Query().Get("v") != "" {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "public, max-age=3600")
		}
		files.ServeHTTP(w, r)
	})
}

// pageData fills the frame of a page: the user, the flash, the CSRF token.
func (s *Server) pageData(w http.ResponseWriter, r *http.Request, nav, title string, data any) render.Page {
	return render.Page{Title: title, User: currentUser(r), Nav: nav, Flash: s.takeFlash(w, r),
		CSRF: s.csrfToken(w, r), Data: data}
}

// renderPage renders a page into a buffer, then sends it.
func (s *Server) renderPage(w http.ResponseWriter, r *http.Request, status int, name, nav, title string, data any) error {
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer putPageBuffer(buf)
	buf.Reset()
	if err := s.Render.Render(buf, name, s.pageData(w, r, nav, title, data)); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// pageBuffers holds the buffers pages are rendered into: a dashboard
// runs to a hundred kilobytes, which a fresh buffer reached by doubling
// at every request.
var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledPage is the largest buffer kept for the next page.
const maxPooledPage = 1 << 20

func putPageBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledPage {
		pageBuffers.Put(b)
	}
}

// redirect sends the browser to a path of the site after a form post.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, path string) error {
	http.Redirect(w, r, s.Render.Path(path), http.StatusSeeOther)
	return nil
}

// idParam reads a positive integer URL parameter.
func idParam(r *http.Request, name string) (int64, error) {
	v := chi.URLParam(r, name)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, changedigest.Errorf(changedigest.ENOTFOUND, "%q is not a valid %s", clip(v), name)
	}
	return id, nil
}

// userWatch loads the watch named by the {id} parameter, if it is the user's.
func (s *Server) userWatch(r *http.Request) (*changedigest.Watch, error) {
	u, err := requestUser(r)
	if err != nil {
		return nil, err
	}
	id, err := idParam(r, "id")
	if err != nil {
		return nil, err
	}
	return s.Store.Watch(r.Context(), u.ID, id)
}

// requestUser is the logged-in user of a route behind requireUser or
// requireToken: an EUNAUTHORIZED error elsewhere.
func requestUser(r *http.Request) (*changedigest.User, error) {
	u := currentUser(r)
	if u == nil || u.ID <= 0 {
		return nil, changedigest.Errorf(changedigest.EUNAUTHORIZED, "please log in")
	}
	return u, nil
}

func chiParam(r *http.Request, name string) string { return chi.URLParam(r, name) }

func pathEscape(s string) string { return url.PathEscape(s) }
