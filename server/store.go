package server

import (
	"context"
	"time"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/pet"
)

// Store is the store as the handlers see it. Methods taking a user id
// treat another user's records as not found. In a cluster every write
// of accounts goes through the cluster's accounts bucket (cluster.Store
// overrides each of them): a write method added here needs its cluster
// twin, or it would change one node's copy alone.
type Store interface {
	User(ctx context.Context, id int64) (*changedigest.User, error)
	UserByName(ctx context.Context, name string) (*changedigest.User, error)
	UserByFeedToken(ctx context.Context, token string) (*changedigest.User, error)
	UpdateUser(ctx context.Context, id int64, fn func(*changedigest.User) error) (*changedigest.User, error)
	CreateUser(ctx context.Context, u *changedigest.User) error
	Users(ctx context.Context) ([]changedigest.User, error)
	DeleteUser(ctx context.Context, id int64) error

	CreateSession(ctx context.Context, userID int64, ttl time.Duration) (string, error)
	Session(ctx context.Context, token string) (*pet.Session, error)
	DeleteSession(ctx context.Context, token string) error
	DeleteUserSessions(ctx context.Context, userID int64) error
	Sessions(ctx context.Context, userID int64) ([]pet.SessionRecord, error)
	TouchSession(ctx context.Context, token, agent string) error
	EndSession(ctx context.Context, userID int64, hash []byte) error

	// Account administration (accounts.go).
	Registration(ctx context.Context) (changedigest.Registration, error)
	SetRegistration(ctx context.Context, mode changedigest.Registration) error
	CreateTicket(ctx context.Context, t *pet.Ticket) (string, error)
	Ticket(ctx context.Context, secret string) (*pet.Ticket, error)
	UseTicket(ctx context.Context, secret string) (*pet.Ticket, error)
	Tickets(ctx context.Context) ([]pet.Ticket, error)
	DeleteTicketHash(ctx context.Context, hash []byte) error
	AddAudit(ctx context.Context, e *pet.AuditEntry) error
	Audit(ctx context.Context, limit int) ([]pet.AuditEntry, error)

	CreateToken(ctx context.Context, userID int64, name string) (string, *pet.Token, error)
	UserByToken(ctx context.Context, secret string) (*changedigest.User, *pet.Token, error)
	Tokens(ctx context.Context, userID int64) ([]pet.Token, error)
	RevokeToken(ctx context.Context, userID, id int64) error

	Profile(ctx context.Context, userID int64) (*changedigest.Profile, []byte, error)
	PutProfile(ctx context.Context, p *changedigest.Profile, document []byte) error

	CreateWatch(ctx context.Context, w *changedigest.Watch) error
	Watch(ctx context.Context, userID, id int64) (*changedigest.Watch, error)
	Watches(ctx context.Context, userID int64, tag string) ([]changedigest.Watch, error)
	WatchPage(ctx context.Context, userID int64, q pet.WatchQuery) (*pet.WatchPage, error)
	UpdateWatch(ctx context.Context, userID, id int64, fn func(*changedigest.Watch) error) (*changedigest.Watch, error)
	DeleteWatch(ctx context.Context, userID, id int64) error

	Track(ctx context.Context, watchID int64) (pet.TrackInfo, error)
	Version(ctx context.Context, watchID int64, seq int) (*changedigest.Snapshot, error)
	Versions(ctx context.Context, watchID int64, before, limit int) ([]changedigest.Snapshot, error)
	Body(ctx context.Context, watchID int64, seq int) ([]byte, error)
	Screenshot(ctx context.Context, watchID int64, seq int) (*changedigest.Screenshot, error)
	Search(ctx context.Context, q pet.Query) (*pet.Results, error)

	CreateChannel(ctx context.Context, c *changedigest.Channel) error
	Channel(ctx context.Context, userID, id int64) (*changedigest.Channel, error)
	Channels(ctx context.Context, userID int64) ([]changedigest.Channel, error)
	UpdateChannel(ctx context.Context, userID, id int64, fn func(*changedigest.Channel) error) (*changedigest.Channel, error)
	DeleteChannel(ctx context.Context, userID, id int64) error
	Deliveries(ctx context.Context, f pet.DeliveryFilter) ([]changedigest.Delivery, error)
	Subscriptions(ctx context.Context, userID int64) ([]changedigest.Subscription, error)
}

// Checker checks watches now, as the "check now" button asks.
type Checker interface {
	CheckNow(ctx context.Context, progress func(crawl.Report), watches ...*changedigest.Watch) (crawl.Summary, error)
}
