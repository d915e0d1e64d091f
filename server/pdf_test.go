package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/changedigest/changedigest/internal/pdftest"
	"github.com/changedigest/changedigest/internal/testenv"
)

// TestPDFVersionPages: the pages of a PDF watch's versions show its text
// by page and its changes on their page.
func TestPDFVersionPages(t *testing.T) {
	testenv.Tool(t, "pdftotext")
	e := mustServer(t)
	u := e.mustUser("ann", scenePassword)
	w := e.mustWatch(u, "https://council.example.org/fees.pdf")
	pages := []string{"Parking fees\n\nFirst hour       1.20\nEach hour after  0.90", "Opening hours\n\nMonday to Friday   08:00 to 18:00\nSaturday           09:00 to 13:00"}
	e.addVersion(w, string(pdftest.Pages(pages...)))
	pages[1] = strings.Replace(pages[1], "09:00 to 13:00", "09:00 to 14:00", 1)
	e.addVersion(w, string(pdftest.Pages(pages...)))
	c := e.login("ann", scenePassword)
	base := fmt.Sprintf("/watches/%d", w.ID)
	for _, tc := range []struct {
		path  string
		wants []string
	}{
		{"/versions/2", []string{"on page 2", "14"}},
		{"/versions/2/content", []string{"Page 1", "First hour", "Page 2", "Saturday"}},
		{"/versions/2/source", []string{"--- Page 1 ---\n\nParking fees", "--- Page 2 ---", "Saturday", "09:00 to 14:00"}},
		{"/compare?from=1&to=2", []string{"on page 2"}},
	} {
		resp, body := c.get(base + tc.path)
		mustStatus(t, tc.path, resp, body, http.StatusOK)
		mustContain(t, body, tc.wants...)
	}
}
