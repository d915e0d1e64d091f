package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/pet"
)

// "Check now" on a cluster. A watch's schedule (last check, learnt change
// rate, validators) is kept by the node serving its shard, whose
// scheduler updates it after each check: a check asked for on another
// node (the watch's page, the API) is run by the serving node's
// scheduler, so that the watch's page shows it, as on a single node.

// checkNowSubject carries "check now" for the watches of shard s to the
// node serving it, which alone listens on it.
func checkNowSubject(s int) string { return "cd.checknow." + strconv.Itoa(s) }

// checkNowAnswer is what the serving node's scheduler made of the check.
type checkNowAnswer struct {
	Summary crawl.Summary       `json:"summary"`
	Watch   *changedigest.Watch `json:"watch,omitempty"`
	Outcome crawl.Outcome       `json:"outcome"`
	Start   time.Time           `json:"start"`
	// Failed holds the check's error, with its code (empty: none).
	Failed *answer `json:"failed,omitempty"`
}

// Checker is the server's "check now" on a cluster node: Local, this
// node's scheduler, checks the watches the node serves; the node serving
// each of the others checks it with its own.
type Checker struct {
	Node  *Node
	Local *crawl.Scheduler
}

// CheckNow checks the watches now (see crawl.Scheduler.CheckNow).
func (c Checker) CheckNow(ctx context.Context, progress func(crawl.Report), watches ...*changedigest.Watch) (crawl.Summary, error) {
	var sum crawl.Summary
	var here []*changedigest.Watch
	for _, w := range watches {
		if w == nil {
			continue
		}
		if c.Node.serves(w.ID) {
			here = append(here, w)
			continue
		}
		r, s, err := c.askCheck(ctx, w)
		if err != nil {
			return sum, err
		}
		sum.Add(s)
		if progress != nil && s.Checked > 0 {
			progress(r)
		}
	}
	if len(here) == 0 {
		return sum, nil
	}
	// A version stored by another node's worker reaches this node's view
	// a moment after the check's outcome: wait for it, as a single node's
	// check returns once its version is stored.
	stored := map[int64]int{}
	s, err := c.Local.CheckNow(ctx, func(r crawl.Report) {
		if r.Err == nil && r.Outcome.Seq > 0 && r.Watch != nil {
			stored[r.Watch.ID] = r.Outcome.Seq
		}
		if progress != nil {
			progress(r)
		}
	}, here...)
	for id, seq := range stored {
		c.Node.AwaitVersion(ctx, id, seq)
	}
	sum.Add(s)
	return sum, err
}

// askCheck has the node serving w check it now, and waits for the report.
func (c Checker) askCheck(ctx context.Context, w *changedigest.Watch) (crawl.Report, crawl.Summary, error) {
	data, _ := json.Marshal(w.ID)
	m, err := c.Node.askServing(ctx, checkNowSubject(ShardOf(w.ID, c.Node.Conn.Config.Shards)), w.ID, data)
	if err != nil {
		return crawl.Report{}, crawl.Summary{}, err
	}
	var a checkNowAnswer
	if err := json.Unmarshal(m.Data, &a); err != nil {
		return crawl.Report{}, crawl.Summary{}, fmt.Errorf("cluster: malformed check answer: %w", err)
	}
	if a.Failed != nil && a.Summary.Checked == 0 {
		return crawl.Report{}, a.Summary, a.Failed.err("check now")
	}
	r := crawl.Report{Watch: a.Watch, Outcome: a.Outcome, Start: a.Start, Done: 1, Total: 1}
	if r.Watch == nil {
		r.Watch = w
	}
	if a.Failed != nil {
		r.Err = a.Failed.err("check")
	}
	return r, a.Summary, nil
}

// serveCheckNow checks, when asked, the watches of shard s, which this
// node serves, with its scheduler (while its view of s runs).
func (n *Node) serveCheckNow(s int) (*nats.Subscription, error) {
	return n.Conn.nc.Subscribe(checkNowSubject(s), func(m *nats.Msg) {
		var id int64
		if n.Scheduler == nil || json.Unmarshal(m.Data, &id) != nil || !n.serves(id) {
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var a checkNowAnswer
			fail := func(err error) {
				a.Failed = &answer{Node: n.Conn.Config.Name}
				a.Failed.failed(err)
			}
			w, err := n.Store.Watch(ctx, pet.AnyUser, id)
			if err != nil {
				fail(err)
			} else {
				// This node serves w: the local path, which answers once the
				// view holds the version (the page shown next reads it).
				var rep crawl.Report
				a.Summary, err = Checker{Node: n, Local: n.Scheduler}.CheckNow(ctx, func(r crawl.Report) { rep = r }, w)
				switch {
				case err != nil:
					fail(err)
				case rep.Watch != nil:
					a.Watch, a.Outcome, a.Start = rep.Watch, rep.Outcome, rep.Start
					if rep.Err != nil {
						fail(rep.Err)
					}
				}
			}
			data, _ := json.Marshal(a)
			m.Respond(data)
		}()
	})
}
