package server

import (
	"html/template"
	"strconv"
	"sync"
)

// maxCachedRows bounds the row cache; when it is full it starts again.
const maxCachedRows = 50_000

// rowCache keeps rendered rows of the watches table by what they show.
// A dashboard shows the same rows again and again between checks, and
// rendering a row through html/template costs some 20 µs (every value
// is escaped through reflection), most of a dashboard request.
type rowCache struct {
	mu sync.Mutex
	m  map[string]template.HTML
}

func (c *rowCache) get(key string) (template.HTML, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[key]
	return h, ok
}

func (c *rowCache) put(key string, h template.HTML) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedRows {
		c.m = make(map[string]template.HTML)
	}
	c.m[key] = h
}

// key is everything the "watch-row" template reads of r.
func (r *watchRow) key() string {
	b := make([]byte, 0, 160)
	b = strconv.AppendInt(b, r.ID, 10)
	for _, s := range []string{r.Name, r.URL, string(r.Kind), r.LastError,
		r.Checked.ISO, r.Changed.ISO, r.Next.ISO} {
		b = append(b, 0)
		b = append(b, s...)
	}
	b = append(b, 0)
	b = strconv.AppendBool(b, r.Paused)
	for _, t := range r.Tags {
		b = append(b, 0)
		b = append(b, t...)
	}
	return string(b)
}

// renderRows fills in each row's HTML, from the cache or rendered now; a
// row that fails to render is left to the page's template.
func (s *Server) renderRows(rows []watchRow) {
	for i := range rows {
		k := rows[i].key()
		if h, ok := s.rows.get(k); ok {
			rows[i].HTML = h
			continue
		}
		h, err := s.Render.Component("watch-row", &rows[i])
		if err != nil {
			continue
		}
		s.rows.put(k, h)
		rows[i].HTML = h
	}
}

// panelCacheBytes bounds the memory of the dashboard panels kept.
const panelCacheBytes = 4 << 20

// panel is a recent change of the dashboard rendered both ways: open
// (the newest) and folded.
type panel struct {
	open, folded template.HTML
}
