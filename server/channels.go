package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/notify"
	"github.com/changedigest/changedigest/pet"
)

// Notification channels: the JSON API under /api/v1/channels and the
// settings page /settings/channels. A channel's secret and an
// incoming-webhook URL (itself a credential) are write-only: they are
// shown back as a hint (Channel.SecretHint, Channel.DisplayURL), and an
// update that leaves them out keeps them.

// apiChannel is a channel as the API shows it, with the state of its
// deliveries.
type apiChannel struct {
	ID       int64                    `json:"id"`
	Name     string                   `json:"name"`
	Kind     changedigest.ChannelKind `json:"kind"`
	URL      string                   `json:"url"`
	Secret   string                   `json:"secret,omitempty"`
	Room     string                   `json:"room,omitempty"`
	Priority int                      `json:"priority,omitempty"`
	NtfyTags []string                 `json:"ntfy_tags,omitempty"`
	Watches  []int64                  `json:"watches,omitempty"`
	Tags     []string                 `json:"tags,omitempty"`
	Select   changedigest.Selection   `json:"select"`
	Disabled bool                     `json:"disabled,omitempty"`
	// Template is the channel's message template ("": the default
	// message).
	Template string `json:"template,omitempty"`
	// Dead counts the deliveries that failed for good (up to 1000);
	// LastError is the error of the newest of them.
	Dead        int       `json:"dead"`
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func (s *Server) apiChannelOf(ctx context.Context, c *changedigest.Channel) (apiChannel, error) {
	out := apiChannel{ID: c.ID, Name: c.Name, Kind: c.Kind, URL: c.DisplayURL(), Secret: c.SecretHint(), Room: c.Room,
		Priority: c.Priority, NtfyTags: c.NtfyTags, Watches: c.Watches, Tags: c.Tags, Select: c.Select,
		Disabled: c.Disabled, Template: c.Template, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	dead, err := s.Store.Deliveries(ctx, pet.DeliveryFilter{UserID: c.UserID, ChannelID: c.ID,
		State: changedigest.DeliveryDead, Limit: 1000})
	if err != nil {
		return out, err
	}
	out.Dead = len(dead)
	if len(dead) > 0 {
		out.LastError, out.LastErrorAt = dead[0].LastError, dead[0].CreatedAt
	}
	return out, nil
}

// channelInput is the body of POST and PATCH /channels: absent fields are
// left as they are.
type channelInput struct {
	Name     *string                   `json:"name"`
	Kind     *changedigest.ChannelKind `json:"kind"`
	URL      *string                   `json:"url"`
	Secret   *string                   `json:"secret"`
	Room     *string                   `json:"room"`
	Priority *int                      `json:"priority"`
	NtfyTags []string                  `json:"ntfy_tags"`
	Watches  []int64                   `json:"watches"`
	Tags     []string                  `json:"tags"`
	Select   *changedigest.Selection   `json:"select"`
	Disabled *bool                     `json:"disabled"`
	Template *string                   `json:"template"`
}

// apply sets the fields sent; watches must be the user's.
func (s *Server) applyChannel(ctx context.Context, in *channelInput, c *changedigest.Channel) error {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&c.Name, in.Name)
	set(&c.URL, in.URL)
	set(&c.Secret, in.Secret)
	set(&c.Room, in.Room)
	if in.Kind != nil {
		c.Kind = *in.Kind
	}
	if in.Priority != nil {
		c.Priority = *in.Priority
	}
	if in.NtfyTags != nil {
		c.NtfyTags = in.NtfyTags
	}
	if in.Tags != nil {
		c.Tags = in.Tags
	}
	if in.Select != nil {
		c.Select = *in.Select
	}
	if in.Disabled != nil {
		c.Disabled = *in.Disabled
	}
	if in.Template != nil {
		if err := notify.CheckTemplate(*in.Template); err != nil {
			return err
		}
		c.Template = *in.Template
	}
	if in.Watches != nil {
		for _, id := range in.Watches {
			if _, err := s.Store.Watch(ctx, c.UserID, id); changedigest.ErrorCode(err) == changedigest.ENOTFOUND {
				return changedigest.Errorf(changedigest.EINVALID, "watches: you have no watch %d", id)
			} else if err != nil {
				return err
			}
		}
		c.Watches = in.Watches
	}
	return nil
}

// userChannel loads the channel named by the {cid} parameter, if it is the user's.
func (s *Server) userChannel(r *http.Request) (*changedigest.User, *changedigest.Channel, error) {
	u, err := requestUser(r)
	if err != nil {
		return nil, nil, err
	}
	id, err := idParam(r, "cid")
	if err != nil {
		return nil, nil, err
	}
	c, err := s.Store.Channel(r.Context(), u.ID, id)
	return u, c, err
}

func (s *Server) apiListChannels(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	cs, err := s.Store.Channels(r.Context(), u.ID)
	if err != nil {
		return err
	}
	out := make([]apiChannel, len(cs))
	for i := range cs {
		if out[i], err = s.apiChannelOf(r.Context(), &cs[i]); err != nil {
			return err
		}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"channels": out})
}

func (s *Server) apiCreateChannel(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	var in channelInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	c := &changedigest.Channel{UserID: u.ID}
	if err := s.applyChannel(r.Context(), &in, c); err != nil {
		return err
	}
	if err := s.Store.CreateChannel(r.Context(), c); err != nil {
		return err
	}
	out, err := s.apiChannelOf(r.Context(), c)
	if err != nil {
		return err
	}
	w.Header().Set("Location", s.Render.Path(fmt.Sprintf("/api/v1/channels/%d", c.ID)))
	return writeJSON(w, http.StatusCreated, out)
}

func (s *Server) apiGetChannel(w http.ResponseWriter, r *http.Request) error {
	_, c, err := s.userChannel(r)
	if err != nil {
		return err
	}
	out, err := s.apiChannelOf(r.Context(), c)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) apiUpdateChannel(w http.ResponseWriter, r *http.Request) error {
	u, c, err := s.userChannel(r)
	if err != nil {
		return err
	}
	var in channelInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	nc, err := s.Store.UpdateChannel(r.Context(), u.ID, c.ID, func(x *changedigest.Channel) error {
		return s.applyChannel(r.Context(), &in, x)
	})
	if err != nil {
		return err
	}
	out, err := s.apiChannelOf(r.Context(), nc)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) apiDeleteChannel(w http.ResponseWriter, r *http.Request) error {
	u, c, err := s.userChannel(r)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteChannel(r.Context(), u.ID, c.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// apiTestResult is the outcome of POST /channels/{cid}/test.
type apiTestResult struct {
	OK     bool   `json:"ok"`
	Status int    `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

// testChannel sends a test message to c now.
func (s *Server) testChannel(ctx context.Context, c *changedigest.Channel) (apiTestResult, error) {
	if s.Dispatch == nil {
		return apiTestResult{}, changedigest.Errorf(changedigest.EUNAVAILABLE, "notifications are not running in this server")
	}
	res := s.Dispatch.Test(ctx, c)
	out := apiTestResult{OK: res.Err == nil, Status: res.Status}
	if res.Err != nil {
		out.Error = res.Err.Error()
	}
	return out, nil
}

func (s *Server) apiTestChannel(w http.ResponseWriter, r *http.Request) error {
	_, c, err := s.userChannel(r)
	if err != nil {
		return err
	}
	out, err := s.testChannel(r.Context(), c)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) apiChannelDeliveries(w http.ResponseWriter, r *http.Request) error {
	u, c, err := s.userChannel(r)
	if err != nil {
		return err
	}
	state := changedigest.DeliveryState(r.URL.Query().Get("state"))
	switch state {
	case "", changedigest.DeliveryPending, changedigest.DeliveryDelivered, changedigest.DeliveryDead:
	default:
		return changedigest.Errorf(changedigest.EINVALID, "state: %q is not pending, delivered or dead", state)
	}
	limit, err := queryInt(r.URL.Query(), "limit", 50, 1, 1000)
	if err != nil {
		return err
	}
	ds, err := s.Store.Deliveries(r.Context(), pet.DeliveryFilter{UserID: u.ID, ChannelID: c.ID, State: state, Limit: limit})
	if err != nil {
		return err
	}
	if ds == nil {
		ds = []changedigest.Delivery{}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"deliveries": ds})
}

func (s *Server) apiRedeliver(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	d, err := s.redeliver(r.Context(), u.ID, chiParam(r, "did"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, d)
}

// Redeliverer is a store that makes deliveries pending again itself: a
// cluster node's, whose deliveries are kept by the node that made them.
type Redeliverer interface {
	Redeliver(ctx context.Context, userID int64, id string) (*changedigest.Delivery, error)
}

// redeliver makes the user's delivery pending again where it is kept:
// through the store when it is a Redeliverer, else through the
// dispatcher.
func (s *Server) redeliver(ctx context.Context, userID int64, id string) (*changedigest.Delivery, error) {
	if r, ok := s.Store.(Redeliverer); ok {
		return r.Redeliver(ctx, userID, id)
	}
	if s.Dispatch == nil {
		return nil, changedigest.Errorf(changedigest.EUNAVAILABLE, "notifications are not running in this server")
	}
	return s.Dispatch.Redeliver(ctx, userID, id)
}

// channelsPage is the Data of the "channels" page.
type channelsPage struct {
	Channels []channelRow
	Kinds    []changedigest.ChannelKind
	Watches  []changedigest.Watch
	Tags     []string
	Error    string
	Mail     bool
	// Form holds what was typed when a new channel was refused or its
	// message previewed.
	Form channelForm
	// Preview is a message template rendered against a sample event.
	Preview *templatePreview
}

// templatePreview is a message template rendered against a sample event,
// or why it cannot be.
type templatePreview struct {
	Title, Message, Error string
}

type channelRow struct {
	apiChannel
	Deliveries []changedigest.Delivery
	// Routed marks the watches the channel is limited to, for its edit form.
	Routed map[int64]bool
	// TagList is Tags as typed in the form.
	TagList, NtfyTagList string
}

type channelForm struct {
	Name, Kind, URL, Room, Select, Tags, NtfyTags, Template string
	Priority                                                int
}

func (s *Server) channelsPage(r *http.Request, u *changedigest.User) (*channelsPage, error) {
	ctx := r.Context()
	p := &channelsPage{Kinds: changedigest.ChannelKinds, Mail: s.Notify.Mail != nil,
		Form: channelForm{Kind: string(changedigest.ChannelWebhook), Select: string(changedigest.SelectAll)}}
	cs, err := s.Store.Channels(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	for i := range cs {
		ac, err := s.apiChannelOf(ctx, &cs[i])
		if err != nil {
			return nil, err
		}
		ds, err := s.Store.Deliveries(ctx, pet.DeliveryFilter{UserID: u.ID, ChannelID: cs[i].ID, Limit: 10})
		if err != nil {
			return nil, err
		}
		row := channelRow{apiChannel: ac, Deliveries: ds, Routed: map[int64]bool{},
			TagList: strings.Join(cs[i].Tags, ", "), NtfyTagList: strings.Join(cs[i].NtfyTags, ", ")}
		for _, id := range cs[i].Watches {
			row.Routed[id] = true
		}
		p.Channels = append(p.Channels, row)
	}
	if p.Watches, err = s.Store.Watches(ctx, u.ID, ""); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, w := range p.Watches {
		for _, t := range w.Tags {
			if !seen[t] {
				seen[t] = true
				p.Tags = append(p.Tags, t)
			}
		}
	}
	return p, nil
}

func (s *Server) handleChannels(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	p, err := s.channelsPage(r, u)
	if err != nil {
		return err
	}
	return s.renderPage(w, r, http.StatusOK, "channels", "settings", "Notifications", p)
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

// readChannelForm reads the channel fields of a form into c. An empty
// address or secret leaves c's as they are (an edit keeps them), so
// creating checks that an address was given. Watches must be the user's.
func (s *Server) readChannelForm(r *http.Request, c *changedigest.Channel) (channelForm, error) {
	f := channelForm{Name: r.FormValue("name"), Kind: r.FormValue("kind"), URL: r.FormValue("url"), Room: r.FormValue("room"),
		Select: r.FormValue("select"), Tags: r.FormValue("tags"), NtfyTags: r.FormValue("ntfy_tags"),
		Template: strings.ReplaceAll(r.FormValue("template"), "\r\n", "\n")}
	c.Name, c.Room, c.Select = f.Name, f.Room, changedigest.Selection(f.Select)
	c.Tags, c.NtfyTags = splitList(f.Tags), splitList(f.NtfyTags)
	if f.Kind != "" {
		c.Kind = changedigest.ChannelKind(f.Kind)
	}
	if u := strings.TrimSpace(f.URL); u != "" {
		c.URL = u
	}
	if v := strings.TrimSpace(r.FormValue("secret")); v != "" {
		c.Secret = v
	}
	c.Priority = 0
	if v := r.FormValue("priority"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return f, changedigest.Errorf(changedigest.EINVALID, "priority %q is not a number", v)
		}
		c.Priority, f.Priority = n, n
	}
	if err := notify.CheckTemplate(f.Template); err != nil {
		return f, err
	}
	c.Template = f.Template
	c.Watches = nil
	for _, v := range r.Form["watch"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return f, changedigest.Errorf(changedigest.EINVALID, "watch %q is not a watch id", v)
		}
		if _, err := s.Store.Watch(r.Context(), c.UserID, id); err != nil {
			return f, changedigest.Errorf(changedigest.EINVALID, "you have no watch %d", id)
		}
		c.Watches = append(c.Watches, id)
	}
	return f, nil
}

func (s *Server) handleCreateChannel(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return changedigest.Errorf(changedigest.EINVALID, "the form could not be read: %v", err)
	}
	c := &changedigest.Channel{UserID: u.ID}
	f, err := s.readChannelForm(r, c)
	if err == nil {
		err = s.Store.CreateChannel(r.Context(), c)
	}
	if err != nil {
		return s.channelsError(w, r, u, f, err)
	}
	s.setFlash(w, "info", fmt.Sprintf("Channel %q added. Send it a test message to see that it works.", c.Name))
	return s.redirect(w, r, "/settings/channels")
}

// handleUpdateChannel saves a channel's edit form; an empty address or
// secret keeps the stored one.
// handlePreviewChannel renders the message template of a channel form
// (the new channel's or an edited one's) against a sample event and shows
// it on the channels page, with the new channel's form as it was typed.
func (s *Server) handlePreviewChannel(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return changedigest.Errorf(changedigest.EINVALID, "the form could not be read: %v", err)
	}
	p, err := s.channelsPage(r, u)
	if err != nil {
		return err
	}
	f := channelForm{Name: r.FormValue("name"), Kind: r.FormValue("kind"), URL: r.FormValue("url"), Room: r.FormValue("room"),
		Select: r.FormValue("select"), Tags: r.FormValue("tags"), NtfyTags: r.FormValue("ntfy_tags"),
		Template: strings.ReplaceAll(r.FormValue("template"), "\r\n", "\n")}
	if r.FormValue("new") != "" {
		p.Form = f
	}
	p.Preview = &templatePreview{}
	if strings.TrimSpace(f.Template) == "" {
		p.Preview.Error = "The template is empty: the channel sends its default message."
	} else if title, msg, err := notify.RenderSample(f.Template); err != nil {
		p.Preview.Error = changedigest.ErrorMessage(err)
	} else {
		p.Preview.Title, p.Preview.Message = title, msg
	}
	return s.renderPage(w, r, http.StatusOK, "channels", "settings", "Notifications", p)
}

func (s *Server) handleUpdateChannel(w http.ResponseWriter, r *http.Request) error {
	u, c, err := s.userChannel(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return changedigest.Errorf(changedigest.EINVALID, "the form could not be read: %v", err)
	}
	_, err = s.Store.UpdateChannel(r.Context(), u.ID, c.ID, func(x *changedigest.Channel) error {
		_, ferr := s.readChannelForm(r, x)
		return ferr
	})
	if err != nil {
		p, perr := s.channelsPage(r, u)
		if perr != nil || (changedigest.ErrorCode(err) != changedigest.EINVALID && changedigest.ErrorCode(err) != changedigest.ECONFLICT) {
			return err
		}
		p.Error = fmt.Sprintf("Channel %q was not changed: %s", c.Name, changedigest.ErrorMessage(err))
		return s.renderPage(w, r, http.StatusBadRequest, "channels", "settings", "Notifications", p)
	}
	s.setFlash(w, "info", fmt.Sprintf("Channel %q saved.", c.Name))
	return s.redirect(w, r, "/settings/channels")
}

// channelsError shows the channels page again with a user error and
// what was typed (but not the secret).
func (s *Server) channelsError(w http.ResponseWriter, r *http.Request, u *changedigest.User, f channelForm, err error) error {
	if c := changedigest.ErrorCode(err); c != changedigest.EINVALID && c != changedigest.ECONFLICT {
		return err
	}
	p, perr := s.channelsPage(r, u)
	if perr != nil {
		return perr
	}
	p.Error, p.Form = changedigest.ErrorMessage(err), f
	return s.renderPage(w, r, http.StatusBadRequest, "channels", "settings", "Notifications", p)
}

func (s *Server) handleToggleChannel(w http.ResponseWriter, r *http.Request) error {
	u, c, err := s.userChannel(r)
	if err != nil {
		return err
	}
	nc, err := s.Store.UpdateChannel(r.Context(), u.ID, c.ID, func(x *changedigest.Channel) error {
		x.Disabled = !x.Disabled
		return nil
	})
	if err != nil {
		return err
	}
	state := "resumed"
	if nc.Disabled {
		state = "paused"
	}
	s.setFlash(w, "info", fmt.Sprintf("Channel %q %s.", nc.Name, state))
	return s.redirect(w, r, "/settings/channels")
}

func (s *Server) handleDeleteChannel(w http.ResponseWriter, r *http.Request) error {
	u, c, err := s.userChannel(r)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteChannel(r.Context(), u.ID, c.ID); err != nil {
		return err
	}
	s.setFlash(w, "info", fmt.Sprintf("Channel %q removed.", c.Name))
	return s.redirect(w, r, "/settings/channels")
}

func (s *Server) handleTestChannel(w http.ResponseWriter, r *http.Request) error {
	_, c, err := s.userChannel(r)
	if err != nil {
		return err
	}
	res, err := s.testChannel(r.Context(), c)
	if err != nil {
		return err
	}
	if res.OK {
		s.setFlash(w, "info", fmt.Sprintf("Test message sent to %q.", c.Name))
	} else {
		s.setFlash(w, "error", fmt.Sprintf("The test message to %q failed: %s", c.Name, res.Error))
	}
	return s.redirect(w, r, "/settings/channels")
}

func (s *Server) handleRedeliver(w http.ResponseWriter, r *http.Request) error {
	u, err := requestUser(r)
	if err != nil {
		return err
	}
	if _, err := s.redeliver(r.Context(), u.ID, r.FormValue("delivery")); err != nil {
		return err
	}
	s.setFlash(w, "info", "The notification will be sent again in a moment.")
	return s.redirect(w, r, "/settings/channels")
}
