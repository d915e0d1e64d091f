package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/expand"
	"github.com/changedigest/changedigest/profile"
)

// profilePage is the Data of the "profile" page.
type profilePage struct {
	Profile    *changedigest.Profile
	HasFOAF    bool
	Expansions map[string][]expand.Term
	// Senses are the meanings of each interest term, by term.
	Senses     map[string]*senseView
	PageErrors []string
	Error      string
}

// senseView is the meaning chosen for an interest, why, and the others
// a user may pick instead.
type senseView struct {
	Gloss   string
	Reason  string
	ByUser  bool
	Options []expand.Option
	// Notes say of each option (by synset ID) what kind of thing it is
	// and its words: "an activity · chess, chess game".
	Notes map[string]string
}

// loadProfile returns the user's profile and FOAF document; an empty
// profile when there is none yet.
func (s *Server) loadProfile(r *http.Request, u *changedigest.User) (*changedigest.Profile, []byte, error) {
	p, doc, err := s.Store.Profile(r.Context(), u.ID)
	if changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
		return &changedigest.Profile{UserID: u.ID}, nil, nil
	}
	return p, doc, err
}

func (s *Server) profilePage(r *http.Request, u *changedigest.User) (*profilePage, error) {
	p, doc, err := s.loadProfile(r, u)
	if err != nil {
		return nil, err
	}
	pp := &profilePage{Profile: p, HasFOAF: len(doc) > 0, Expansions: map[string][]expand.Term{}, Senses: map[string]*senseView{}}
	if s.Expander != nil && len(p.Interests) > 0 {
		exps, err := s.Expander.Expand(*p)
		if err != nil {
			return nil, err
		}
		for _, x := range exps {
			for _, t := range x.Terms {
				if t.Relation != expand.RelTerm && t.Relation != expand.RelKeyTerm {
					pp.Expansions[x.Interest.Term] = append(pp.Expansions[x.Interest.Term], t)
				}
			}
			if x.Sense != nil {
				sv := &senseView{Gloss: x.Sense.Gloss, Reason: x.Reason, ByUser: x.ChosenBy == expand.ChosenByUser,
					Options: x.Options, Notes: map[string]string{}}
				for _, o := range x.Options {
					sv.Notes[o.ID] = kindOfLexname(o.Lexname) + " · " + strings.Join(o.Words, ", ")
				}
				pp.Senses[x.Interest.Term] = sv
			}
		}
	}
	return pp, nil
}

func (s *Server) handleProfile(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	pp, err := s.profilePage(r, u)
	if err != nil {
		return err
	}
	return s.renderPage(w, r, http.StatusOK, "profile", "profile", "Your profile", pp)
}

// profileError shows the profile page again with a user error.
func (s *Server) profileError(w http.ResponseWriter, r *http.Request, u *changedigest.User, err error) error {
	switch changedigest.ErrorCode(err) {
	case changedigest.EINVALID, changedigest.ETOOLARGE, changedigest.ECONFLICT:
	default:
		return err
	}
	pp, perr := s.profilePage(r, u)
	if perr != nil {
		return perr
	}
	pp.Error = changedigest.ErrorMessage(err)
	return s.renderPage(w, r, http.StatusBadRequest, "profile", "profile", "Your profile", pp)
}

// handleUploadFOAF reads a FOAF document (a file, or pasted text), builds
// the profile with key terms of the linked pages, and keeps the user's
// manual terms and exclusions.
func (s *Server) handleUploadFOAF(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	var data []byte
	name, ctype := "profile", ""
	if f, hdr, err := r.FormFile("foaf"); err == nil {
		defer f.Close()
		if data, err = io.ReadAll(io.LimitReader(f, s.MaxUpload+1)); err != nil {
			return err
		}
		name, ctype = hdr.Filename, hdr.Header.Get("Content-Type")
	} else if !errors.Is(err, http.ErrMissingFile) {
		return s.profileError(w, r, u, changedigest.Errorf(changedigest.EINVALID, "the upload could not be read: %v", err))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte(r.FormValue("foaf_text"))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return s.profileError(w, r, u, changedigest.Errorf(changedigest.EINVALID, "choose a FOAF file or paste one"))
	}
	if int64(len(data)) > s.MaxUpload {
		return s.profileError(w, r, u, changedigest.Errorf(changedigest.ETOOLARGE, "the FOAF document is larger than %d bytes", s.MaxUpload))
	}
	p, pageErrs, err := s.storeFOAF(r, u, data, name, ctype)
	if err != nil {
		return s.profileError(w, r, u, err)
	}
	msg := "Profile updated: " + plural(len(p.Interests), "interest", "interests") + "."
	if len(pageErrs) > 0 {
		var urls []string
		for _, pe := range pageErrs {
			urls = append(urls, pe.URL)
		}
		msg += " Some linked pages could not be read: " + strings.Join(urls, ", ")
	}
	s.setFlash(w, "info", msg)
	return s.redirect(w, r, "/profile")
}

func (s *Server) handleAddTerm(w http.ResponseWriter, r *http.Request) error {
	return s.editTerms(w, r, func(p *changedigest.Profile, term string) (string, error) {
		if err := profile.AddInterest(p, term); err != nil {
			return "", err
		}
		return "Added " + term + ".", nil
	})
}

func (s *Server) handleRemoveTerm(w http.ResponseWriter, r *http.Request) error {
	return s.editTerms(w, r, func(p *changedigest.Profile, term string) (string, error) {
		ok, err := profile.RemoveInterest(p, term)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", changedigest.Errorf(changedigest.EINVALID, "%q is not one of your interests", term)
		}
		return "Removed " + term + "; it stays out when the profile is rebuilt.", nil
	})
}

func (s *Server) editTerms(w http.ResponseWriter, r *http.Request, edit func(*changedigest.Profile, string) (string, error)) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	term := strings.TrimSpace(r.FormValue("term"))
	var msg string
	if err := s.editProfile(r, u, func(p *changedigest.Profile) (err error) {
		msg, err = edit(p, term)
		return err
	}); err != nil {
		return s.profileError(w, r, u, err)
	}
	s.setFlash(w, "info", msg)
	return s.redirect(w, r, "/profile")
}

// storeFOAF builds the user's profile from a FOAF document (with the key
// terms of the pages it links), keeps the user's manual terms and
// exclusions, and stores it with the document. The web form and the API
// both upload through it.
func (s *Server) storeFOAF(r *http.Request, u *changedigest.User, data []byte, name, ctype string) (*changedigest.Profile, []profile.PageError, error) {
	if s.Profiles == nil {
		return nil, nil, changedigest.Errorf(changedigest.EUNAVAILABLE, "profiles cannot be built in this server")
	}
	fresh, pageErrs, err := s.Profiles.Build(r.Context(), profile.Document{Body: bytes.NewReader(data), Name: name, ContentType: ctype})
	if err != nil {
		return nil, nil, err
	}
	old, _, err := s.loadProfile(r, u)
	if err != nil {
		return nil, nil, err
	}
	p := profile.Merge(old, fresh)
	p.UserID = u.ID
	if err := s.Store.PutProfile(r.Context(), p, data); err != nil {
		return nil, nil, err
	}
	return p, pageErrs, nil
}

// editProfile applies edit to the user's profile and stores it with its
// FOAF document.
func (s *Server) editProfile(r *http.Request, u *changedigest.User, edit func(*changedigest.Profile) error) error {
	p, doc, err := s.loadProfile(r, u)
	if err != nil {
		return err
	}
	if err := edit(p); err != nil {
		return err
	}
	return s.Store.PutProfile(r.Context(), p, doc)
}

// handleChooseSense records the meaning the user chose for an interest
// term (one click on the profile page), or forgets it when sense is empty.
func (s *Server) handleChooseSense(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	term, sense := strings.TrimSpace(r.FormValue("term")), strings.TrimSpace(r.FormValue("sense"))
	if err := s.chooseSense(r, u, term, sense); err != nil {
		return s.profileError(w, r, u, err)
	}
	msg := "The meaning of " + term + " is chosen automatically again."
	if sense != "" {
		msg = "The meaning of " + term + " is set; it stays when the profile is built again."
	}
	s.setFlash(w, "info", msg)
	return s.redirect(w, r, "/profile#interests-h")
}

// chooseSense sets (or, with an empty sense, forgets) the user's choice
// of meaning for term, which must be one of the term's WordNet senses.
// Errors: EINVALID for a term that is not an interest or a sense that is
// not one of its meanings.
func (s *Server) chooseSense(r *http.Request, u *changedigest.User, term, sense string) error {
	return s.editProfile(r, u, func(p *changedigest.Profile) error {
		if err := profile.ChooseSense(p, term, sense); err != nil {
			return err
		}
		if sense == "" || s.Expander == nil {
			return nil
		}
		exps, err := s.Expander.Expand(*p)
		if err != nil {
			return err
		}
		for _, x := range exps {
			if !strings.EqualFold(strings.Join(strings.Fields(x.Interest.Term), " "), strings.Join(strings.Fields(term), " ")) {
				continue
			}
			for _, o := range x.Options {
				if o.ID == sense {
					return nil
				}
			}
		}
		return changedigest.Errorf(changedigest.EINVALID, "%s is not one of the meanings WordNet has for %q", clip(sense), clip(term))
	})
}

// kindOfLexname says in words what a lexicographer file holds.
func kindOfLexname(lex string) string {
	pos, kind, _ := strings.Cut(lex, ".")
	switch pos {
	case "verb":
		return "a verb"
	case "adj", "adv":
		return "an adjective"
	}
	switch kind {
	case "act":
		return "an activity"
	case "animal":
		return "an animal"
	case "artifact":
		return "a made thing"
	case "cognition":
		return "a field or idea"
	case "communication":
		return "a work or genre"
	case "food":
		return "food or drink"
	case "plant":
		return "a plant"
	case "person":
		return "a person"
	case "location":
		return "a place"
	case "group":
		return "a group"
	case "object":
		return "a natural thing"
	case "event":
		return "an event"
	case "substance":
		return "a substance"
	}
	return "a " + kind
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return itoa(n) + " " + many
}
