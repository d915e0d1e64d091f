package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/changedigest/changedigest/pet"
)

const searchSubject = "cd.search"

// searchReply is one node's answer to a search.
type searchReply struct {
	Node    string       `json:"node"`
	Results *pet.Results `json:"results,omitempty"`
	Err     string       `json:"err,omitempty"`
}

// serveSearch answers searches from the other nodes with this node's view.
func (n *Node) serveSearch() (*nats.Subscription, error) {
	return n.Conn.nc.Subscribe(searchSubject, func(m *nats.Msg) {
		var q pet.Query
		r := searchReply{Node: n.Conn.Config.Name}
		if err := json.Unmarshal(m.Data, &q); err != nil {
			r.Err = "malformed query: " + err.Error()
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := n.Store.Search(ctx, q)
			cancel()
			if err != nil {
				r.Err = err.Error()
			}
			r.Results = res
		}
		data, _ := json.Marshal(r)
		m.Respond(data)
	})
}

// Search runs q on the views of every live node (each holds the shards it
// owns) and merges their hits newest first, as one store would list
// them: each node gives its first Offset+Limit hits (in pages of 100, the
// store's most), and the page is cut from the merged list. Every live
// node must answer within 5 s.
func (n *Node) Search(ctx context.Context, q pet.Query) (*pet.Results, error) {
	live, err := liveNodes(ctx, n.Conn, n.now())
	if err != nil {
		return nil, fmt.Errorf("cluster: search: list nodes: %w", err)
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
		got, err := n.scatter(ctx, sub, live)
		if err != nil {
			return nil, err
		}
		more := false
		for _, r := range got {
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
	slices.SortStableFunc(merged.Hits, func(a, b pet.Hit) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.WatchID, b.WatchID), cmp.Compare(a.Segment, b.Segment))
	})
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

// scatter asks every node for q and waits for the live ones.
func (n *Node) scatter(ctx context.Context, q pet.Query, live map[string]bool) ([]*pet.Results, error) {
	c := n.Conn
	data, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	inbox := c.nc.NewRespInbox()
	replies, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("cluster: search: %w", err)
	}
	defer replies.Unsubscribe()
	if err := c.nc.PublishRequest(searchSubject, inbox, data); err != nil {
		return nil, fmt.Errorf("cluster: search: %w", err)
	}
	var out []*pet.Results
	answered := map[string]bool{}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for len(answered) < len(live) {
		m, err := replies.NextMsgWithContext(wctx)
		if err != nil {
			break
		}
		var r searchReply
		if err := json.Unmarshal(m.Data, &r); err != nil || answered[r.Node] {
			continue
		}
		if r.Err != "" {
			// The same mistake (a bad query) on every node: say it once.
			return nil, fmt.Errorf("cluster: search on %s: %s", r.Node, r.Err)
		}
		answered[r.Node] = true
		if r.Results != nil {
			out = append(out, r.Results)
		}
	}
	for name := range live {
		if !answered[name] {
			return nil, fmt.Errorf("cluster: search: node %s did not answer within 5 s", name)
		}
	}
	return out, nil
}

// Store is the node's store as the web server sees it: its own view,
// with search across the cluster.
type Store struct {
	*pet.Store
	Node *Node
}

// Search searches every node's view.
func (s Store) Search(ctx context.Context, q pet.Query) (*pet.Results, error) {
	return s.Node.Search(ctx, q)
}
