package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// Subjects of the questions every node answers from its view.
const (
	searchSubject  = "cd.search"
	changesSubject = "cd.changes"
)

// answer is one node's answer to a question about its view.
type answer struct {
	Node string          `json:"node"`
	Data json.RawMessage `json:"data,omitempty"`
	Err  string          `json:"err,omitempty"`
	// NotFound marks an error that means "not in this view"; Served, a
	// "not found" of the node serving the watch's shard asked about, its
	// view caught up (servedError): the cluster holds no such thing.
	NotFound bool `json:"not_found,omitempty"`
	Served   bool `json:"served,omitempty"`
	// Code and Message are the error's code and its message for users
	// (changedigest.ErrorCode and ErrorMessage).
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// failed records err in the answer.
func (r *answer) failed(err error) {
	var served servedError
	r.Err, r.NotFound = err.Error(), errors.Is(err, pet.ErrNotFound)
	r.Served = r.NotFound && errors.As(err, &served)
	r.Code, r.Message = changedigest.ErrorCode(err), changedigest.ErrorMessage(err)
}

// err is the error a node answered, with its code: a node that could
// not answer for the cluster is errUnavailable here too.
func (r *answer) err(subject string) error {
	switch r.Code {
	case changedigest.EBUSY:
		return fmt.Errorf("cluster: %s on %s: %w (%s)", subject, r.Node, errUnavailable, r.Err)
	case "", changedigest.EINTERNAL:
		return fmt.Errorf("cluster: %s on %s: %s", subject, r.Node, r.Err)
	}
	return fmt.Errorf("cluster: %s on %s: %w", subject, r.Node, &changedigest.Error{Code: r.Code, Message: r.Message})
}

// serveQuestions answers the other nodes' searches, change listings and
// delivery questions with this node's view.
func (n *Node) serveQuestions() ([]*nats.Subscription, error) {
	var subs []*nats.Subscription
	for subject, ask := range map[string]func(context.Context, []byte) (any, error){
		searchSubject: func(ctx context.Context, data []byte) (any, error) {
			var q pet.Query
			if err := json.Unmarshal(data, &q); err != nil {
				return nil, err
			}
			return n.Store.Search(ctx, q)
		},
		watchSubject:      n.answerWatch,
		deliveriesSubject: n.answerDeliveries,
		redeliverSubject:  n.answerRedeliver,
		changesSubject: func(ctx context.Context, data []byte) (any, error) {
			var f pet.ChangeFilter
			if err := json.Unmarshal(data, &f); err != nil {
				return nil, err
			}
			return n.Store.Changes(ctx, f)
		},
	} {
		sub, err := n.Conn.nc.Subscribe(subject, func(m *nats.Msg) {
			r := answer{Node: n.Conn.Config.Name}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := ask(ctx, m.Data)
			cancel()
			if err != nil {
				r.failed(err)
			} else if r.Data, err = json.Marshal(res); err != nil {
				r.failed(err)
			}
			data, _ := json.Marshal(r)
			m.Respond(data)
		})
		if err != nil {
			for _, s := range subs {
				s.Unsubscribe()
			}
			return nil, err
		}
		subs = append(subs, sub)
	}
	return subs, nil
}

// Search runs q on the views of every live node (each holds the shards it
// owns) and merges their hits newest first, as one store would list
// them: each node gives its first Offset+Limit hits (in pages of 100, the
// store's most), and the page is cut from the merged list. Every live
// node must answer (see scatter).
func (n *Node) Search(ctx context.Context, q pet.Query) (*pet.Results, error) {
	if n.servesAll() {
		return n.Store.Search(ctx, q)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	need := q.Offset + limit
	merged := &pet.Results{}
	for off := 0; off < need; off += 100 {
		sub := q
		sub.Offset, sub.Limit = off, min(100, need-off)
		answers, err := n.scatter(ctx, searchSubject, sub)
		if err != nil {
			return nil, err
		}
		more := false
		for _, a := range answers {
			r := &pet.Results{}
			if err := json.Unmarshal(a, r); err != nil {
				return nil, fmt.Errorf("cluster: search: %w", err)
			}
			if off == 0 {
				merged.Total += r.Total
			}
			merged.Hits = append(merged.Hits, r.Hits...)
			more = more || len(r.Hits) == sub.Limit
		}
		if !more {
			break
		}
	}
	// In each node's order among a watch's hits of one time, which the
	// hits do not tell.
	slices.SortStableFunc(merged.Hits, pet.CompareHits)
	if q.Offset >= len(merged.Hits) {
		merged.Hits = nil
	} else {
		merged.Hits = merged.Hits[q.Offset:]
	}
	if len(merged.Hits) > limit {
		merged.Hits = merged.Hits[:limit]
	}
	return merged, nil
}

// gather decodes the nodes' answers, each a list, into one list.
func gather[T any](answers []json.RawMessage, what string) ([]T, error) {
	var out []T
	for _, a := range answers {
		var part []T
		if err := json.Unmarshal(a, &part); err != nil {
			return nil, fmt.Errorf("cluster: %s: %w", what, err)
		}
		out = append(out, part...)
	}
	return out, nil
}

// scatter asks every live node the question and gathers the answers
// ("not in this view" answers are left out; when every node gave one,
// pet.ErrNotFound, with errServedNotFound when the node serving the watch
// asked about gave it). A node that gives no answer within the wait (a
// lease and a second) is left out when its lease has run out meanwhile:
// it stopped, and its shards go to the others. Any other silence, or
// JetStream not answering, is errUnavailable (EBUSY); an error a node
// answers keeps its code.
func (n *Node) scatter(ctx context.Context, subject string, question any) ([]json.RawMessage, error) {
	c := n.Conn
	live, err := n.liveNow(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s: list nodes: %w", subject, unavailable(err))
	}
	data, err := json.Marshal(question)
	if err != nil {
		return nil, err
	}
	// Room for every live node's answer and a few more (a node that
	// joined meanwhile): a synchronous subscription would allocate room
	// for 65,536 at each question.
	inbox := c.nc.NewRespInbox()
	replies := make(chan *nats.Msg, len(live)+8)
	sub, err := c.nc.ChanSubscribe(inbox, replies)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", subject, unavailable(err))
	}
	defer sub.Unsubscribe()
	if err := c.nc.PublishRequest(subject, inbox, data); err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", subject, unavailable(err))
	}
	var (
		out      []json.RawMessage
		notFound error
	)
	answered := map[string]bool{}
	wait := c.Config.Lease + time.Second
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for len(answered) < len(live) {
		var m *nats.Msg
		select {
		case m = <-replies:
		case <-wctx.Done():
		}
		if m == nil {
			break
		}
		var r answer
		if err := json.Unmarshal(m.Data, &r); err != nil || answered[r.Node] {
			continue
		}
		answered[r.Node] = true
		switch {
		case r.NotFound && r.Served:
			notFound = fmt.Errorf("%w: %w: %s", pet.ErrNotFound, errServedNotFound, r.Err)
		case r.NotFound:
			if notFound == nil {
				notFound = fmt.Errorf("%w: %s", pet.ErrNotFound, r.Err)
			}
		case r.Err != "":
			// The same mistake (a bad query) on every node: say it once.
			return nil, r.err(subject)
		default:
			out = append(out, r.Data)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(answered) < len(live) {
		still, err := n.liveNow(ctx)
		if err != nil {
			return nil, fmt.Errorf("cluster: %s: list nodes: %w", subject, unavailable(err))
		}
		for name := range live {
			if !answered[name] && still[name] {
				return nil, fmt.Errorf("cluster: %s: node %s did not answer within %s: %w", subject, name, wait, errUnavailable)
			}
		}
	}
	if len(out) == 0 && notFound != nil {
		return nil, notFound
	}
	return out, nil
}

// Changes lists the versions that brought changes across every live
// node's view, newest first, at most f.Limit (50 unless set): what feeds
// and digests read.
func (n *Node) Changes(ctx context.Context, f pet.ChangeFilter) ([]pet.Event, error) {
	if n.servesAll() {
		return n.Store.Changes(ctx, f)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	return askAll(ctx, n, changesSubject, f, limit, pet.CompareEvents)
}

// askAll asks every live node the question, whose answers are lists, and
// merges them: sorted by order, the first limit.
func askAll[T any](ctx context.Context, n *Node, subject string, question any, limit int, order func(a, b T) int) ([]T, error) {
	answers, err := n.scatter(ctx, subject, question)
	if err != nil {
		return nil, err
	}
	out, err := gather[T](answers, subject)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, order)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
