package server

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/userdata"
)

// handleExportSettings sends the user's watches, profile, channels and
// settings as userdata's JSON document (GET /settings/export; with
// ?secrets=1 the channels' secrets too), as `changedigest user export`
// writes it.
func (s *Server) handleExportSettings(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	d, err := userdata.ExportUser(r.Context(), s.Store, u, userdata.Options{Secrets: r.URL.Query().Get("secrets") == "1"})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := d.Encode(&buf); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": "changedigest-" + u.Name + ".json"}))
	h.Set("Cache-Control", "no-store")
	_, err = w.Write(buf.Bytes())
	return err
}

// handleImportSettings adds the settings of the uploaded file (form
// field "settings", a document of user export) to the user's, keeping
// what the user has, and says on the settings page what came of it.
func (s *Server) handleImportSettings(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		switch changedigest.ErrorCode(err) {
		case changedigest.EINVALID, changedigest.ETOOLARGE:
			msg := strings.ReplaceAll(changedigest.ErrorMessage(err), "\n  ", "; ")
			s.setFlash(w, "error", "Nothing was imported: "+msg)
			return s.redirect(w, r, "/settings")
		}
		return err
	}
	data, _, err := s.readUpload(r, "settings", "choose a file of exported settings to import", "the file")
	if err != nil {
		return fail(err)
	}
	d, err := userdata.Parse(bytes.NewReader(data))
	if err != nil {
		return fail(err)
	}
	rep, err := userdata.ImportInto(r.Context(), s.Store, u, d)
	if err != nil {
		return fail(err)
	}
	s.setFlash(w, "info", importSummary(rep))
	return s.redirect(w, r, "/settings")
}

// importSummary says in a sentence or two what an import did.
func importSummary(rep *userdata.Report) string {
	profile := ""
	if rep.Profile {
		profile = " and the profile"
	}
	msg := fmt.Sprintf("Imported %d watches, %d channels%s.", rep.Watches, rep.Channels, profile)
	if len(rep.Kept) > 0 {
		msg += fmt.Sprintf(" Kept as they were: %d things you had already.", len(rep.Kept))
	}
	for _, x := range rep.Skipped {
		msg += " Not imported: " + x + "."
	}
	for _, x := range rep.Notes {
		msg += " " + strings.ToUpper(x[:1]) + x[1:] + "."
	}
	return msg
}
