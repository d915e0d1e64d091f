package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// Accounts on the web: the administrators' Users page (create, invite,
// reset a password, disable, delete, make admin), the registration
// switch, the pages one-time links open (join by invitation, set a new
// password), open registration, and the audit log of administrators'
// actions. The user's own sessions are on the settings page.

// resetFor is how long a password reset link works.
const resetFor = 24 * time.Hour

// inviteExpiries are the lifetimes an administrator may give an
// invitation link, in hours.
var inviteExpiries = []inviteExpiry{{24, "1 day"}, {72, "3 days"}, {168, "7 days"}, {720, "30 days"}}

type inviteExpiry struct {
	Hours int
	Label string
}

// adminRoutes are the administrators' pages, behind requireUser.
func (s *Server) adminRoutes(r chi.Router) {
	r.Use(s.requireAdmin)
	r.Get("/users", s.page(s.handleUsers))
	r.Post("/users", s.page(s.handleCreateUser))
	r.Post("/invites", s.page(s.handleCreateInvite))
	r.Post("/invites/{hash}/withdraw", s.page(s.handleWithdrawInvite))
	r.Post("/registration", s.page(s.handleSetRegistration))
	r.Route("/users/{uid}", func(r chi.Router) {
		r.Post("/reset", s.page(s.handleResetPassword))
		r.Post("/disable", s.page(s.handleDisableUser(true)))
		r.Post("/enable", s.page(s.handleDisableUser(false)))
		r.Post("/admin", s.page(s.handleSetAdmin))
		r.Get("/delete", s.page(s.handleConfirmDeleteUser))
		r.Post("/delete", s.page(s.handleDeleteUser))
	})
	r.Get("/audit", s.page(s.handleAudit))
}

// joinRoutes are the visitors' pages of accounts: open registration and
// the pages one-time links open.
func (s *Server) joinRoutes(r chi.Router) {
	r.Get("/register", s.page(s.handleRegisterForm))
	r.Post("/register", s.page(s.handleRegister))
	r.Get("/invite/{token}", s.page(s.handleInviteForm))
	r.Post("/invite/{token}", s.page(s.handleAcceptInvite))
	r.Get("/reset/{token}", s.page(s.handleResetForm))
	r.Post("/reset/{token}", s.page(s.handleSetPassword))
}

// requireAdmin refuses users who are not administrators (403).
func (s *Server) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := currentUser(r); u == nil || !u.Admin {
			s.pageError(w, r, changedigest.Errorf(changedigest.EFORBIDDEN, "only administrators may open this page"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fieldErrorf is a form error naming its field.
func fieldErrorf(field, format string, args ...any) error {
	return changedigest.Errorf(changedigest.EINVALID, "%s: %s", field, fmt.Sprintf(format, args...))
}

// fieldError names the field of a validation error; other errors pass.
func fieldError(field string, err error) error {
	if changedigest.ErrorCode(err) != changedigest.EINVALID {
		return err
	}
	return fieldErrorf(field, "%s", changedigest.ErrorMessage(err))
}

// usersPage is the Data of the "users" page.
type usersPage struct {
	Users        []userRow
	Registration changedigest.Registration
	Invites      []inviteRow
	Expiries     []inviteExpiry
	Error        string
	// Link is a one-time link just made (an invitation, a reset), shown
	// once; Password a temporary password just set, shown once.
	Link, LinkFor, Password, PasswordFor string
	// Form keeps what was typed into the "new user" form after an error.
	Form newUserForm
}

type newUserForm struct {
	Name, Email string
	Admin       bool
}

type userRow struct {
	changedigest.User
	Self bool
}

type inviteRow struct {
	ID        string // the hash, in hex
	Note      string
	Admin     bool
	By        string
	CreatedAt time.Time
	ExpiresAt time.Time
}

func (s *Server) usersPage(r *http.Request) (*usersPage, error) {
	me := currentUser(r)
	users, err := s.Store.Users(r.Context())
	if err != nil {
		return nil, err
	}
	p := &usersPage{Expiries: inviteExpiries}
	names := map[int64]string{}
	for _, u := range users {
		names[u.ID] = u.Name
		p.Users = append(p.Users, userRow{User: u, Self: u.ID == me.ID})
	}
	if p.Registration, err = s.Store.Registration(r.Context()); err != nil {
		return nil, err
	}
	tickets, err := s.Store.Tickets(r.Context())
	if err != nil {
		return nil, err
	}
	for _, t := range tickets {
		if t.Kind != pet.TicketInvite {
			continue
		}
		p.Invites = append(p.Invites, inviteRow{ID: hex.EncodeToString(t.Hash), Note: t.Note, Admin: t.Admin,
			By: names[t.CreatedBy], CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt})
	}
	return p, nil
}

func (s *Server) handleUsers(w http.ResponseWriter, r *http.Request) error {
	p, err := s.usersPage(r)
	if err != nil {
		return err
	}
	return s.renderPage(w, r, http.StatusOK, "users", "users", "Users", p)
}

// usersError shows the Users page again with a user error.
func (s *Server) usersError(w http.ResponseWriter, r *http.Request, err error, form newUserForm) error {
	if c := changedigest.ErrorCode(err); c != changedigest.EINVALID && c != changedigest.ECONFLICT {
		return err
	}
	p, perr := s.usersPage(r)
	if perr != nil {
		return perr
	}
	p.Error, p.Form = changedigest.ErrorMessage(err), form
	return s.renderPage(w, r, http.StatusBadRequest, "users", "users", "Users", p)
}

// audit writes an entry of the audit log: the current user did action
// to target.
func (s *Server) audit(r *http.Request, action string, target *changedigest.User, detail string) error {
	me := currentUser(r)
	e := &pet.AuditEntry{Time: s.now(), ActorID: me.ID, ActorName: me.Name, Action: action, Detail: detail}
	if target != nil {
		e.TargetID, e.TargetName = target.ID, target.Name
	}
	if err := s.Store.AddAudit(r.Context(), e); err != nil {
		return fmt.Errorf("server: write the audit log: %w", err)
	}
	s.Logger.Info("admin action", "actor", me.Name, "action", action, "target", e.TargetName, "detail", detail)
	return nil
}

// newAccount checks the fields of a new account's form and returns the
// user to create: name, password typed twice, e-mail address (when
// the form has one).
func newAccount(r *http.Request, withEmail bool) (*changedigest.User, error) {
	u := &changedigest.User{Name: strings.TrimSpace(r.FormValue("name")), DigestHour: -1}
	if err := changedigest.ValidateUserName(u.Name); err != nil {
		return nil, fieldError("Name", err)
	}
	if withEmail {
		if email := strings.TrimSpace(r.FormValue("email")); email != "" {
			a, err := mail.ParseAddress(email)
			if err != nil || a.Name != "" {
				return nil, fieldErrorf("E-mail address", "%q is not an e-mail address", email)
			}
			u.Email = a.Address
		}
	}
	hash, err := newPassword(r)
	if err != nil {
		return nil, err
	}
	u.PasswordHash = hash
	return u, nil
}

// newPassword checks the "password" and "repeat" fields and hashes the
// password.
func newPassword(r *http.Request) ([]byte, error) {
	pw := r.FormValue("password")
	if pw == "" {
		return nil, fieldErrorf("Password", "type a password")
	}
	if pw != r.FormValue("repeat") {
		return nil, fieldErrorf("Password again", "the two passwords differ")
	}
	hash, err := HashPassword(pw)
	return hash, fieldError("Password", err)
}

// nameFree refuses a taken user name before a one-time link is spent.
func (s *Server) nameFree(r *http.Request, name string) error {
	_, err := s.Store.UserByName(r.Context(), name)
	switch changedigest.ErrorCode(err) {
	case changedigest.ENOTFOUND:
		return nil
	case "":
		return fieldErrorf("Name", "the name %q is taken; choose another", name)
	}
	return err
}

func (s *Server) handleCreateUser(w http.ResponseWriter, r *http.Request) error {
	form := newUserForm{Name: strings.TrimSpace(r.FormValue("name")), Email: strings.TrimSpace(r.FormValue("email")),
		Admin: r.FormValue("admin") == "1"}
	u, err := newAccount(r, true)
	if err != nil {
		return s.usersError(w, r, err, form)
	}
	u.Admin = form.Admin
	if err := s.Store.CreateUser(r.Context(), u); err != nil {
		if changedigest.ErrorCode(err) == changedigest.ECONFLICT {
			err = fieldErrorf("Name", "the name %q is taken; choose another", u.Name)
		}
		return s.usersError(w, r, err, form)
	}
	detail := ""
	if u.Admin {
		detail = "as an administrator"
	}
	if err := s.audit(r, "create user", u, detail); err != nil {
		return err
	}
	s.setFlash(w, "info", fmt.Sprintf("User %s created. They can log in now.", u.Name))
	return s.redirect(w, r, "/admin/users")
}

func (s *Server) handleCreateInvite(w http.ResponseWriter, r *http.Request) error {
	mode, err := s.Store.Registration(r.Context())
	if err != nil {
		return err
	}
	if mode == changedigest.RegistrationClosed {
		return s.usersError(w, r, changedigest.Errorf(changedigest.EINVALID,
			"registration is closed, so invitation links do not work: set it to invite only or open first, or create the user yourself"), newUserForm{})
	}
	hours, err := strconv.Atoi(r.FormValue("expires"))
	valid := false
	for _, e := range inviteExpiries {
		valid = valid || (err == nil && e.Hours == hours)
	}
	if !valid {
		return s.usersError(w, r, fieldErrorf("Expires after", "choose how long the link works"), newUserForm{})
	}
	note := strings.TrimSpace(r.FormValue("note"))
	if len(note) > 200 {
		return s.usersError(w, r, fieldErrorf("Note", "write at most 200 characters"), newUserForm{})
	}
	me := currentUser(r)
	t := &pet.Ticket{Kind: pet.TicketInvite, Admin: r.FormValue("admin") == "1", CreatedBy: me.ID, Note: note,
		ExpiresAt: s.now().Add(time.Duration(hours) * time.Hour)}
	secret, err := s.Store.CreateTicket(r.Context(), t)
	if err != nil {
		return s.usersError(w, r, err, newUserForm{})
	}
	detail := fmt.Sprintf("link valid for %d hours", hours)
	if note != "" {
		detail += "; note: " + note
	}
	if t.Admin {
		detail += "; as an administrator"
	}
	if err := s.audit(r, "invite", nil, detail); err != nil {
		return err
	}
	p, err := s.usersPage(r)
	if err != nil {
		return err
	}
	p.Link, p.LinkFor = s.Render.URL("/invite/"+secret), "an invitation"
	return s.renderPage(w, r, http.StatusOK, "users", "users", "Users", p)
}

func (s *Server) handleWithdrawInvite(w http.ResponseWriter, r *http.Request) error {
	hash, err := hex.DecodeString(chiParam(r, "hash"))
	if err != nil || len(hash) != len(pet.SecretHash("")) {
		return changedigest.Errorf(changedigest.ENOTFOUND, "there is no such invitation")
	}
	if err := s.Store.DeleteTicketHash(r.Context(), hash); err != nil {
		return err
	}
	if err := s.audit(r, "withdraw invitation", nil, ""); err != nil {
		return err
	}
	s.setFlash(w, "info", "Invitation withdrawn: its link no longer works.")
	return s.redirect(w, r, "/admin/users")
}

func (s *Server) handleSetRegistration(w http.ResponseWriter, r *http.Request) error {
	mode, err := changedigest.ParseRegistration(r.FormValue("registration"))
	if err != nil || r.FormValue("registration") == "" {
		return s.usersError(w, r, fieldErrorf("Registration", "choose closed, invite only or open"), newUserForm{})
	}
	if err := s.Store.SetRegistration(r.Context(), mode); err != nil {
		return err
	}
	if err := s.audit(r, "set registration", nil, string(mode)); err != nil {
		return err
	}
	s.setFlash(w, "info", "Registration is "+registrationLabel(mode)+".")
	return s.redirect(w, r, "/admin/users")
}

func registrationLabel(mode changedigest.Registration) string {
	switch mode {
	case changedigest.RegistrationOpen:
		return "open: anyone may create an account"
	case changedigest.RegistrationInvite:
		return "by invitation only"
	}
	return "closed: only administrators create accounts"
}

// targetUser is the user the {uid} parameter names.
func (s *Server) targetUser(r *http.Request) (*changedigest.User, error) {
	id, err := idParam(r, "uid")
	if err != nil {
		return nil, err
	}
	return s.Store.User(r.Context(), id)
}

// keepsAnAdmin refuses to take the last enabled administrator away
// (unmaking, disabling or deleting target).
func (s *Server) keepsAnAdmin(r *http.Request, target *changedigest.User) error {
	if !target.Admin || target.Disabled {
		return nil
	}
	users, err := s.Store.Users(r.Context())
	if err != nil {
		return err
	}
	for _, u := range users {
		if u.ID != target.ID && u.Admin && !u.Disabled {
			return nil
		}
	}
	return changedigest.Errorf(changedigest.ECONFLICT, "%s is the last administrator: make another user an administrator first", target.Name)
}

func (s *Server) handleResetPassword(w http.ResponseWriter, r *http.Request) error {
	target, err := s.targetUser(r)
	if err != nil {
		return err
	}
	p := (*usersPage)(nil)
	switch r.FormValue("how") {
	case "link":
		secret, err := s.Store.CreateTicket(r.Context(), &pet.Ticket{Kind: pet.TicketReset, UserID: target.ID,
			CreatedBy: currentUser(r).ID, ExpiresAt: s.now().Add(resetFor)})
		if err != nil {
			return err
		}
		if err := s.audit(r, "reset password", target, "one-time link"); err != nil {
			return err
		}
		if p, err = s.usersPage(r); err != nil {
			return err
		}
		p.Link, p.LinkFor = s.Render.URL("/reset/"+secret), "a new password for "+target.Name+" (valid for 24 hours)"
	case "password":
		pw := temporaryPassword()
		hash, err := HashPassword(pw)
		if err != nil {
			return err
		}
		if err := s.setPassword(r.Context(), target.ID, hash); err != nil {
			return err
		}
		if err := s.audit(r, "reset password", target, "temporary password"); err != nil {
			return err
		}
		if p, err = s.usersPage(r); err != nil {
			return err
		}
		p.Password, p.PasswordFor = pw, target.Name
	default:
		return s.usersError(w, r, fieldErrorf("Reset", "choose a one-time link or a temporary password"), newUserForm{})
	}
	return s.renderPage(w, r, http.StatusOK, "users", "users", "Users", p)
}

// temporaryPassword is a random password of 96 bits.
func temporaryPassword() string {
	b := make([]byte, 12)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *Server) handleDisableUser(disable bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		target, err := s.targetUser(r)
		if err != nil {
			return err
		}
		if disable {
			if target.ID == currentUser(r).ID {
				return s.usersError(w, r, changedigest.Errorf(changedigest.EINVALID, "you cannot disable your own account"), newUserForm{})
			}
			if err := s.keepsAnAdmin(r, target); err != nil {
				return s.usersError(w, r, err, newUserForm{})
			}
		}
		if _, err := s.Store.UpdateUser(r.Context(), target.ID, func(x *changedigest.User) error {
			x.Disabled = disable
			return nil
		}); err != nil {
			return err
		}
		action, msg := "enable user", "%s is enabled and may log in again."
		if disable {
			if err := s.Store.DeleteUserSessions(r.Context(), target.ID); err != nil {
				return err
			}
			action, msg = "disable user", "%s is disabled: logged out everywhere, and cannot log in."
		}
		if err := s.audit(r, action, target, ""); err != nil {
			return err
		}
		s.setFlash(w, "info", fmt.Sprintf(msg, target.Name))
		return s.redirect(w, r, "/admin/users")
	}
}

func (s *Server) handleSetAdmin(w http.ResponseWriter, r *http.Request) error {
	target, err := s.targetUser(r)
	if err != nil {
		return err
	}
	var admin bool
	switch r.FormValue("admin") {
	case "1":
		admin = true
	case "0":
		if err := s.keepsAnAdmin(r, target); err != nil {
			return s.usersError(w, r, err, newUserForm{})
		}
	default:
		return s.usersError(w, r, fieldErrorf("Administrator", "say yes (1) or no (0)"), newUserForm{})
	}
	if _, err := s.Store.UpdateUser(r.Context(), target.ID, func(x *changedigest.User) error {
		x.Admin = admin
		return nil
	}); err != nil {
		return err
	}
	action, msg := "make admin", "%s is an administrator."
	if !admin {
		action, msg = "unmake admin", "%s is no longer an administrator."
	}
	if err := s.audit(r, action, target, ""); err != nil {
		return err
	}
	s.setFlash(w, "info", fmt.Sprintf(msg, target.Name))
	if target.ID == currentUser(r).ID && !admin {
		return s.redirect(w, r, "/settings")
	}
	return s.redirect(w, r, "/admin/users")
}

// deleteUserPage is the Data of the "user-delete" page.
type deleteUserPage struct {
	User    *changedigest.User
	Watches int
	Error   string
}

func (s *Server) handleConfirmDeleteUser(w http.ResponseWriter, r *http.Request) error {
	target, err := s.targetUser(r)
	if err != nil {
		return err
	}
	return s.renderDeleteUser(w, r, http.StatusOK, target, "")
}

func (s *Server) renderDeleteUser(w http.ResponseWriter, r *http.Request, status int, target *changedigest.User, msg string) error {
	list, err := s.Store.WatchPage(r.Context(), target.ID, pet.WatchQuery{Limit: 1})
	if err != nil {
		return err
	}
	return s.renderPage(w, r, status, "user-delete", "users", "Delete "+target.Name,
		&deleteUserPage{User: target, Watches: list.Total, Error: msg})
}

func (s *Server) handleDeleteUser(w http.ResponseWriter, r *http.Request) error {
	target, err := s.targetUser(r)
	if err != nil {
		return err
	}
	if target.ID == currentUser(r).ID {
		return s.renderDeleteUser(w, r, http.StatusBadRequest, target, "You cannot delete your own account here.")
	}
	if !strings.EqualFold(strings.TrimSpace(r.FormValue("confirm")), target.Name) {
		return s.renderDeleteUser(w, r, http.StatusBadRequest, target,
			fmt.Sprintf("Type the name %s to confirm.", target.Name))
	}
	if err := s.keepsAnAdmin(r, target); err != nil {
		return s.renderDeleteUser(w, r, http.StatusBadRequest, target, changedigest.ErrorMessage(err))
	}
	if err := s.Store.DeleteUser(r.Context(), target.ID); err != nil {
		return err
	}
	if err := s.audit(r, "delete user", target, "with all their data"); err != nil {
		return err
	}
	s.setFlash(w, "info", fmt.Sprintf("User %s and all their data are deleted.", target.Name))
	return s.redirect(w, r, "/admin/users")
}

// auditPage is the Data of the "audit" page.
type auditPage struct{ Entries []pet.AuditEntry }

// auditShown is how many entries the audit page shows.
const auditShown = 500

func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request) error {
	es, err := s.Store.Audit(r.Context(), auditShown)
	if err != nil {
		return err
	}
	return s.renderPage(w, r, http.StatusOK, "audit", "users", "Audit log", &auditPage{Entries: es})
}

// joinPage is the Data of the "join" page: open registration or an
// invitation's form.
type joinPage struct {
	Action string // where the form posts
	Invite bool
	Name   string
	Error  string
}

// joinLimit holds back account creation from one address: each new
// account costs a password hash and room in the store.
func (s *Server) joinLimit(r *http.Request) error {
	if s.joins == nil {
		return nil
	}
	if d := s.joins.Take(addrKey(clientIP(r)), s.now()); d > 0 {
		return rateLimitedFor(d, "too many accounts asked for from your address")
	}
	return nil
}

func (s *Server) handleRegisterForm(w http.ResponseWriter, r *http.Request) error {
	if err := s.registrationOpen(r); err != nil {
		return err
	}
	return s.renderPage(w, r, http.StatusOK, "join", "login", "Create an account", &joinPage{Action: "/register"})
}

// registrationOpen refuses registration unless it is open.
func (s *Server) registrationOpen(r *http.Request) error {
	mode, err := s.Store.Registration(r.Context())
	if err != nil {
		return err
	}
	if mode != changedigest.RegistrationOpen {
		return changedigest.Errorf(changedigest.EFORBIDDEN, "this server does not take new accounts: ask its administrator for one")
	}
	return nil
}

func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) error {
	if err := s.registrationOpen(r); err != nil {
		return err
	}
	if err := s.joinLimit(r); err != nil {
		return err
	}
	p := &joinPage{Action: "/register", Name: strings.TrimSpace(r.FormValue("name"))}
	u, err := newAccount(r, false)
	if err == nil {
		err = s.Store.CreateUser(r.Context(), u)
		if changedigest.ErrorCode(err) == changedigest.ECONFLICT {
			err = fieldErrorf("Name", "the name %q is taken; choose another", u.Name)
		}
	}
	if err != nil {
		if changedigest.ErrorCode(err) != changedigest.EINVALID {
			return err
		}
		p.Error = changedigest.ErrorMessage(err)
		return s.renderPage(w, r, http.StatusBadRequest, "join", "login", "Create an account", p)
	}
	if err := s.startSession(w, r, u); err != nil {
		return err
	}
	s.setFlash(w, "info", "Welcome, "+u.Name+": your account is ready.")
	return s.redirect(w, r, "/")
}

// linkTicket is the live one-time link of the {token} parameter, of the
// kind; a wrong token counts against the address as a wrong feed token
// does.
func (s *Server) linkTicket(r *http.Request, kind string) (*pet.Ticket, error) {
	t, err := s.Store.Ticket(r.Context(), chiParam(r, "token"))
	if err == nil && t.Kind != kind {
		err = changedigest.Errorf(changedigest.ENOTFOUND, "the link is not valid")
	}
	if changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
		return nil, s.tokenFailed(r, changedigest.Errorf(changedigest.ENOTFOUND,
			"this link does not work: it was used already, has expired or was withdrawn; ask for a new one"))
	}
	return t, err
}

// invitesAccepted refuses invitations while registration is closed.
func (s *Server) invitesAccepted(r *http.Request) error {
	mode, err := s.Store.Registration(r.Context())
	if err != nil {
		return err
	}
	if mode == changedigest.RegistrationClosed {
		return changedigest.Errorf(changedigest.EFORBIDDEN, "this server does not take new accounts now: ask its administrator")
	}
	return nil
}

func (s *Server) handleInviteForm(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.linkTicket(r, pet.TicketInvite); err != nil {
		return err
	}
	if err := s.invitesAccepted(r); err != nil {
		return err
	}
	return s.renderPage(w, r, http.StatusOK, "join", "login", "Create your account",
		&joinPage{Action: "/invite/" + chiParam(r, "token"), Invite: true})
}

func (s *Server) handleAcceptInvite(w http.ResponseWriter, r *http.Request) error {
	if err := s.joinLimit(r); err != nil {
		return err
	}
	if _, err := s.linkTicket(r, pet.TicketInvite); err != nil {
		return err
	}
	if err := s.invitesAccepted(r); err != nil {
		return err
	}
	p := &joinPage{Action: "/invite/" + chiParam(r, "token"), Invite: true, Name: strings.TrimSpace(r.FormValue("name"))}
	u, err := newAccount(r, false)
	if err == nil {
		err = s.nameFree(r, u.Name)
	}
	if err != nil {
		if changedigest.ErrorCode(err) != changedigest.EINVALID {
			return err
		}
		p.Error = changedigest.ErrorMessage(err)
		return s.renderPage(w, r, http.StatusBadRequest, "join", "login", "Create your account", p)
	}
	// The link is spent before the account is made, so that two forms
	// sent at once make one account.
	t, err := s.Store.UseTicket(r.Context(), chiParam(r, "token"))
	if err != nil {
		return err
	}
	u.Admin = t.Admin
	if err := s.Store.CreateUser(r.Context(), u); err != nil {
		return err
	}
	if err := s.startSession(w, r, u); err != nil {
		return err
	}
	s.setFlash(w, "info", "Welcome, "+u.Name+": your account is ready.")
	return s.redirect(w, r, "/")
}

// resetPage is the Data of the "reset" page.
type resetPage struct {
	Action string
	Name   string
	Error  string
}

func (s *Server) handleResetForm(w http.ResponseWriter, r *http.Request) error {
	t, err := s.linkTicket(r, pet.TicketReset)
	if err != nil {
		return err
	}
	u, err := s.Store.User(r.Context(), t.UserID)
	if err != nil {
		return err
	}
	return s.renderPage(w, r, http.StatusOK, "reset", "login", "Choose a new password",
		&resetPage{Action: "/reset/" + chiParam(r, "token"), Name: u.Name})
}

func (s *Server) handleSetPassword(w http.ResponseWriter, r *http.Request) error {
	if err := s.joinLimit(r); err != nil {
		return err
	}
	t, err := s.linkTicket(r, pet.TicketReset)
	if err != nil {
		return err
	}
	u, err := s.Store.User(r.Context(), t.UserID)
	if err != nil {
		return err
	}
	hash, err := newPassword(r)
	if err != nil {
		if changedigest.ErrorCode(err) != changedigest.EINVALID {
			return err
		}
		return s.renderPage(w, r, http.StatusBadRequest, "reset", "login", "Choose a new password",
			&resetPage{Action: "/reset/" + chiParam(r, "token"), Name: u.Name, Error: changedigest.ErrorMessage(err)})
	}
	if _, err := s.Store.UseTicket(r.Context(), chiParam(r, "token")); err != nil {
		return err
	}
	if err := s.setPassword(r.Context(), u.ID, hash); err != nil {
		return err
	}
	s.setFlash(w, "info", "Your new password is set. Log in with it.")
	return s.redirect(w, r, "/login")
}

// sessionRow is a login session as the settings page lists it.
type sessionRow struct {
	ID        string // the hash of its token, in hex
	Device    string
	CreatedAt time.Time
	LastSeen  time.Time
	Current   bool
}

// sessionRows lists the user's live sessions, the current one first.
func (s *Server) sessionRows(r *http.Request, u *changedigest.User) ([]sessionRow, error) {
	rs, err := s.Store.Sessions(r.Context(), u.ID)
	if err != nil {
		return nil, err
	}
	var cur []byte
	if sid, ok := r.Context().Value(keySession).(string); ok {
		cur = pet.SecretHash(sid)
	}
	now := s.now()
	var out []sessionRow
	for _, x := range rs {
		if !now.Before(x.ExpiresAt) {
			continue
		}
		row := sessionRow{ID: hex.EncodeToString(x.Hash), Device: describeAgent(x.UserAgent), CreatedAt: x.CreatedAt,
			LastSeen: x.LastSeen, Current: string(x.Hash) == string(cur)}
		if row.LastSeen.IsZero() {
			row.LastSeen = x.CreatedAt
		}
		if row.Current {
			out = append([]sessionRow{row}, out...)
		} else {
			out = append(out, row)
		}
	}
	return out, nil
}

// handleEndSession signs one of the user's sessions out; the current one
// logs this browser out.
func (s *Server) handleEndSession(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	hash, err := hex.DecodeString(chiParam(r, "sid"))
	if err != nil || len(hash) != len(pet.SecretHash("")) {
		return changedigest.Errorf(changedigest.ENOTFOUND, "there is no such session")
	}
	if err := s.Store.EndSession(r.Context(), u.ID, hash); err != nil {
		return err
	}
	if sid, ok := r.Context().Value(keySession).(string); ok && string(pet.SecretHash(sid)) == string(hash) {
		http.SetCookie(w, &http.Cookie{Name: s.cookieName(sessionCookie), Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure})
		return s.redirect(w, r, "/login")
	}
	s.setFlash(w, "info", "That session is signed out.")
	return s.redirect(w, r, "/settings")
}

// handleEndOtherSessions signs out every session of the user but this one.
func (s *Server) handleEndOtherSessions(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	rs, err := s.Store.Sessions(r.Context(), u.ID)
	if err != nil {
		return err
	}
	var cur []byte
	if sid, ok := r.Context().Value(keySession).(string); ok {
		cur = pet.SecretHash(sid)
	}
	n := 0
	for _, x := range rs {
		if string(x.Hash) == string(cur) {
			continue
		}
		if err := s.Store.EndSession(r.Context(), u.ID, x.Hash); err != nil && changedigest.ErrorCode(err) != changedigest.ENOTFOUND {
			return err
		}
		n++
	}
	s.setFlash(w, "info", fmt.Sprintf("Signed out everywhere else (%s).", plural(n, "session", "sessions")))
	return s.redirect(w, r, "/settings")
}

// describeAgent names the browser and system of a User-Agent, roughly:
// "Firefox on Linux". Unknown parts are left out; none at all gives
// "Unknown browser".
func describeAgent(ua string) string {
	if ua == "" {
		return "Unknown browser"
	}
	browser := ""
	for _, b := range []struct{ token, name string }{
		{"Edg/", "Edge"}, {"OPR/", "Opera"}, {"Firefox/", "Firefox"}, {"Chrome/", "Chrome"},
		{"Safari/", "Safari"}, {"curl/", "curl"}, {"Go-http-client", "Go program"},
	} {
		if strings.Contains(ua, b.token) {
			browser = b.name
			break
		}
	}
	system := ""
	for _, o := range []struct{ token, name string }{
		{"Android", "Android"}, {"iPhone", "iPhone"}, {"iPad", "iPad"}, {"Windows", "Windows"},
		{"Mac OS X", "macOS"}, {"CrOS", "ChromeOS"}, {"Linux", "Linux"},
	} {
		if strings.Contains(ua, o.token) {
			system = o.name
			break
		}
	}
	switch {
	case browser != "" && system != "":
		return browser + " on " + system
	case browser != "":
		return browser
	case system != "":
		return "A browser on " + system
	}
	return clipTo(ua, 60)
}

// setPassword is SetPassword in the server's store.
func (s *Server) setPassword(ctx context.Context, id int64, hash []byte) error {
	return SetPassword(ctx, s.Store, id, hash)
}

// PasswordStore is where SetPassword writes: a store, or a cluster's.
type PasswordStore interface {
	UpdateUser(ctx context.Context, id int64, fn func(*changedigest.User) error) (*changedigest.User, error)
	DeleteUserSessions(ctx context.Context, userID int64) error
}

// SetPassword gives user id the password of hash (HashPassword) and ends
// all its sessions: whoever knew the old one is logged out.
func SetPassword(ctx context.Context, st PasswordStore, id int64, hash []byte) error {
	if _, err := st.UpdateUser(ctx, id, func(x *changedigest.User) error {
		x.PasswordHash = hash
		return nil
	}); err != nil {
		return err
	}
	return st.DeleteUserSessions(ctx, id)
}
