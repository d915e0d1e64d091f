package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
)

// Responses of text (pages, feeds, the API's JSON, style sheets) are sent
// gzip-compressed to clients that take it: a feed of 20 entries is some
// 240 KB of repetitive markup and about a tenth of that compressed. Each
// such response says "Vary: Accept-Encoding", compressed or not, so a
// cache keeps the two apart; a compressed response's ETag is made weak,
// as it is no longer the same bytes (a conditional request still
// matches it, If-None-Match comparing weakly). Responses under
// minCompress bytes, with a status other than 200, with their own
// Content-Encoding (the page agent's script), or to HEAD requests are
// sent as they are.

// minCompress is the smallest body worth compressing: below about one
// packet, gzip's header and the CPU buy nothing.
const minCompress = 1400

// compressible reports whether a response of this Content-Type is text.
func compressible(ctype string) bool {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"):
		return true
	case mt == "image/svg+xml":
		return true
	case strings.HasPrefix(mt, "application/"):
		sub := mt[len("application/"):]
		return sub == "json" || sub == "xml" || sub == "javascript" ||
			strings.HasSuffix(sub, "+xml") || strings.HasSuffix(sub, "+json")
	}
	return false
}

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return w
}}

// compress is the middleware that gzips text responses for clients that
// accept it.
func compress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		cw := &compressWriter{ResponseWriter: w, accepts: acceptsGzip(r), crossSite: crossSite(r)}
		done := false
		defer func() {
			if done {
				cw.close()
			} else {
				cw.abort() // a panic: what is held is dropped for the error page
			}
		}()
		next.ServeHTTP(cw, r)
		done = true
	})
}

// addVary adds "Accept-Encoding" to h's Vary once.
func addVary(h http.Header) {
	for _, v := range h.Values("Vary") {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), "Accept-Encoding") {
				return
			}
		}
	}
	h.Add("Vary", "Accept-Encoding")
}

// gzipBytes is b gzip-compressed.
func gzipBytes(b []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(b)/4 + 64)
	gz := gzipWriters.Get().(*gzip.Writer)
	gz.Reset(&out)
	gz.Write(b)
	gz.Close()
	gz.Reset(io.Discard)
	gzipWriters.Put(gz)
	return out.Bytes()
}

// compressWriter holds the start of a body until it knows whether to
// compress it: minCompress bytes written, or the handler done.
type compressWriter struct {
	http.ResponseWriter
	accepts bool
	// crossSite is set for a request another site made the browser send:
	// its HTML is not compressed (see crossSite).
	crossSite bool
	status    int    // status asked for, 0 before WriteHeader
	held      []byte // body held while undecided
	decided   bool
	gz        *gzip.Writer // nil: sent as it is
}

func (c *compressWriter) WriteHeader(code int) {
	if c.status != 0 || c.decided {
		return
	}
	c.status = code
	h := c.Header()
	ctype := h.Get("Content-Type")
	text := compressible(ctype)
	if text && (code == http.StatusOK || code == http.StatusNotModified) {
		addVary(h)
	}
	if code == http.StatusNotModified && text && c.accepts {
		weakETag(h) // as the 200 it stands for was sent
	}
	if c.crossSite && strings.HasPrefix(ctype, "text/html") {
		text = false
	}
	if code != http.StatusOK || h.Get("Content-Encoding") != "" || !text || !c.accepts {
		c.start(false) // nothing is held yet: the header goes out as it is
	}
	// Else undecided until minCompress bytes or the end.
}

func (c *compressWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		if c.Header().Get("Content-Type") == "" {
			c.Header().Set("Content-Type", http.DetectContentType(p))
		}
		c.WriteHeader(http.StatusOK)
	}
	if !c.decided {
		if len(c.held)+len(p) < minCompress {
			c.held = append(c.held, p...)
			return len(p), nil
		}
		if err := c.start(true); err != nil {
			return 0, err
		}
	}
	if c.gz != nil {
		return c.gz.Write(p)
	}
	return c.ResponseWriter.Write(p)
}

// start sends the header (compressed or not) and what is held.
func (c *compressWriter) start(gz bool) error {
	c.decided = true
	h := c.Header()
	if gz {
		weakETag(h)
		h.Set("Content-Encoding", "gzip")
		h.Del("Content-Length")
		c.gz = gzipWriters.Get().(*gzip.Writer)
		c.gz.Reset(c.ResponseWriter)
	}
	c.ResponseWriter.WriteHeader(c.status)
	held := c.held
	c.held = nil
	if len(held) == 0 {
		return nil
	}
	var err error
	if c.gz != nil {
		_, err = c.gz.Write(held)
	} else {
		_, err = c.ResponseWriter.Write(held)
	}
	return err
}

// weakETag makes h's ETag weak, for a compressed body.
func weakETag(h http.Header) {
	if et := h.Get("ETag"); et != "" && !strings.HasPrefix(et, "W/") {
		h.Set("ETag", "W/"+et)
	}
}

// abort ends a response whose handler panicked: a body not yet started
// is dropped, a compressed one ended.
func (c *compressWriter) abort() {
	if !c.decided {
		c.held = nil
		return
	}
	c.close()
}

// close ends the body: what is held goes out as it is, a compressed
// body gets its trailer.
func (c *compressWriter) close() {
	if c.status == 0 {
		return // nothing written: net/http sends its own 200
	}
	if !c.decided {
		c.start(false)
	}
	if c.gz != nil {
		c.gz.Close()
		c.gz.Reset(io.Discard)
		gzipWriters.Put(c.gz)
		c.gz = nil
	}
}

// crossSite reports whether a browser sent r for another site (a link,
// a form or a script of its page). A page of this site holds a CSRF token
// beside text a request can choose (a search), and compressed, the size
// of the answer would tell such a site the token byte by byte (BREACH):
// pages asked for that way are sent as they are. Requests without
// Sec-Fetch-Site (feed readers, older browsers) are compressed.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return false
	}
	return true
}
