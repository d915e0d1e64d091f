package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/agent"
	"github.com/changedigest/changedigest/crawl"
)

// Page agents and polling clients on a cluster. A watch's agent work
// (serving the digester, taking reports, making the watch due, telling a
// confirmed report from a refuted one) is done by the agent manager of
// the node serving the watch's shard: that node keeps the watch's
// schedule, and its scheduler learns each check's outcome. Any node may
// receive a page's agent request or a report (a load balancer in front);
// Agents hands it to the serving node over NATS, on a subject of the
// watch's shard that only the serving node listens on.

// agentSubject carries agent work for the watches of shard s to the node
// serving the shard, which alone listens on it.
func agentSubject(s int) string { return "cd.agent." + strconv.Itoa(s) }

// agentWait bounds how long a node waits for the serving node's answer.
const agentWait = 3 * time.Second

// agentQuestion is one piece of agent work for the serving node.
type agentQuestion struct {
	Op    string `json:"op"`
	Watch int64  `json:"watch"`
	// script
	Key    string `json:"key,omitempty"`
	GzipOK bool   `json:"gzip_ok,omitempty"`
	// report
	Report *agent.ReportIn `json:"report,omitempty"`
	// client report
	Reporter string    `json:"reporter,omitempty"`
	Base     int       `json:"base,omitempty"`
	Now      time.Time `json:"now,omitzero"`
}

// agentAnswer is the serving node's answer.
type agentAnswer struct {
	Script   []byte        `json:"script,omitempty"`
	Gzipped  bool          `json:"gzipped,omitempty"`
	Stats    agent.Stats   `json:"stats"`
	Seq      int           `json:"seq,omitempty"`
	BodyHash string        `json:"body_hash,omitempty"`
	Summary  agent.Summary `json:"summary"`
}

// Agents is the page agent of a cluster node (the server's Agent, the
// polling clients' Detector): Local, this node's manager, for the
// watches it serves; the serving node's for the others.
type Agents struct {
	Node  *Node
	Local *agent.Manager
}

// ScriptEncoded answers an agent request (see agent.Manager.ScriptEncoded).
func (a Agents) ScriptEncoded(ctx context.Context, key string, gzipOK bool) ([]byte, bool, error) {
	id, err := agent.KeyWatch(key)
	if err != nil {
		return nil, false, err
	}
	if a.Node.serves(id) {
		return a.Local.ScriptEncoded(ctx, key, gzipOK)
	}
	ans, err := a.ask(ctx, agentQuestion{Op: "script", Watch: id, Key: key, GzipOK: gzipOK})
	if err != nil {
		return nil, false, err
	}
	return ans.Script, ans.Gzipped, nil
}

// Report takes a digester's report (see agent.Manager.Report).
func (a Agents) Report(ctx context.Context, in agent.ReportIn) error {
	id, err := agent.TokenWatch(in.Token)
	if err != nil {
		return err
	}
	if a.Node.serves(id) {
		return a.Local.Report(ctx, in)
	}
	_, err = a.ask(ctx, agentQuestion{Op: "report", Watch: id, Report: &in})
	return err
}

// Stats are the agent's counts for watch id, from the node serving it
// (zero when it does not answer in time).
func (a Agents) Stats(id int64) agent.Stats {
	if a.Node.serves(id) {
		return a.Local.Stats(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), agentWait)
	defer cancel()
	ans, err := a.ask(ctx, agentQuestion{Op: "stats", Watch: id})
	if err != nil {
		return agent.Stats{}
	}
	return ans.Stats
}

// Forget drops what the serving node's manager keeps of watch id (its
// agent settings changed).
func (a Agents) Forget(id int64) {
	a.Local.Forget(id)
	if a.Node.serves(id) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), agentWait)
	defer cancel()
	a.ask(ctx, agentQuestion{Op: "forget", Watch: id})
}

// Latest is the version polling clients compare watch id's page with.
func (a Agents) Latest(ctx context.Context, id int64) (int, string, agent.Summary, error) {
	if a.Node.serves(id) {
		return a.Local.Latest(ctx, id)
	}
	ans, err := a.ask(ctx, agentQuestion{Op: "latest", Watch: id})
	if err != nil {
		return 0, "", agent.Summary{}, err
	}
	return ans.Seq, ans.BodyHash, ans.Summary, nil
}

// ClientReport takes a polling client's report of a change.
func (a Agents) ClientReport(ctx context.Context, reporter string, watchID int64, base int, now time.Time) error {
	if a.Node.serves(watchID) {
		return a.Local.ClientReport(ctx, reporter, watchID, base, now)
	}
	_, err := a.ask(ctx, agentQuestion{Op: "clientreport", Watch: watchID, Reporter: reporter, Base: base, Now: now})
	return err
}

// OnCheck is the scheduler's OnCheck on a cluster node: it tells the
// node's manager how each check of its watches ended, wherever the check
// ran. A check that stored a version confirms the report waiting for it
// once the view holds the version (a check run by another node's worker
// may report back before the view applied it).
func (a Agents) OnCheck(r crawl.Report) {
	if r.Err != nil || r.Outcome.Seq == 0 || !a.Local.Knows(r.Watch.ID) {
		a.Local.CheckedAt(r.Watch.ID, r.Start, r.Err != nil)
		return
	}
	go func() {
		a.Node.AwaitVersion(context.Background(), r.Watch.ID, r.Outcome.Seq)
		a.Local.Stored(r.Watch, &changedigest.Snapshot{WatchID: r.Watch.ID, Seq: r.Outcome.Seq})
		a.Local.CheckedAt(r.Watch.ID, r.Start, false)
	}()
}

// ask sends q to the node serving its watch and waits for the answer.
func (a Agents) ask(ctx context.Context, q agentQuestion) (*agentAnswer, error) {
	data, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, agentWait)
	defer cancel()
	m, err := a.Node.askServing(rctx, agentSubject(ShardOf(q.Watch, a.Node.Conn.Config.Shards)), q.Watch, data)
	if err != nil {
		return nil, err
	}
	if e := m.Header.Get(hdrAgentErr); e != "" {
		var r answer
		if err := json.Unmarshal([]byte(e), &r); err != nil {
			return nil, fmt.Errorf("cluster: malformed agent answer: %w", err)
		}
		return nil, r.err("agent work")
	}
	if q.Op == "script" {
		return &agentAnswer{Script: m.Data, Gzipped: m.Header.Get(hdrAgentGzip) != ""}, nil
	}
	var ans agentAnswer
	if err := json.Unmarshal(m.Data, &ans); err != nil {
		return nil, fmt.Errorf("cluster: malformed agent answer: %w", err)
	}
	return &ans, nil
}

// Headers of an agent answer: the error (an answer in JSON), and that a
// script, sent as it is, is gzip-encoded.
const (
	hdrAgentErr  = "Cd-Agent-Err"
	hdrAgentGzip = "Cd-Agent-Gzip"
)

// serveAgents answers agent work for the watches of shard s, which this
// node serves, with its manager (while its view of s runs).
func (n *Node) serveAgents(s int) (*nats.Subscription, error) {
	return n.Conn.nc.Subscribe(agentSubject(s), func(m *nats.Msg) {
		var q agentQuestion
		if n.Agent == nil || json.Unmarshal(m.Data, &q) != nil || !n.serves(q.Watch) {
			return
		}
		// The work is done apart from the subscription's goroutine: a
		// report's summary, a store read, may take a while.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), agentWait)
			defer cancel()
			out := &nats.Msg{Header: nats.Header{}}
			ans, err := n.agentWork(ctx, q)
			switch {
			case err != nil:
			case q.Op == "script":
				// The script as it is: most agent work is this.
				out.Data = ans.Script
				if ans.Gzipped {
					out.Header.Set(hdrAgentGzip, "1")
				}
			default:
				out.Data, err = json.Marshal(ans)
			}
			if err != nil {
				r := answer{Node: n.Conn.Config.Name}
				r.failed(err)
				e, _ := json.Marshal(r)
				out.Header.Set(hdrAgentErr, string(e))
			}
			m.RespondMsg(out)
		}()
	})
}

// agentWork does q with this node's manager.
func (n *Node) agentWork(ctx context.Context, q agentQuestion) (*agentAnswer, error) {
	ag := n.Agent
	var ans agentAnswer
	var err error
	switch q.Op {
	case "script":
		ans.Script, ans.Gzipped, err = ag.ScriptEncoded(ctx, q.Key, q.GzipOK)
	case "report":
		if q.Report == nil {
			return nil, changedigest.Errorf(changedigest.EINVALID, "the report is missing")
		}
		err = ag.Report(ctx, *q.Report)
	case "stats":
		ans.Stats = ag.Stats(q.Watch)
	case "forget":
		ag.Forget(q.Watch)
	case "latest":
		ans.Seq, ans.BodyHash, ans.Summary, err = ag.Latest(ctx, q.Watch)
	case "clientreport":
		err = ag.ClientReport(ctx, q.Reporter, q.Watch, q.Base, q.Now)
	default:
		err = fmt.Errorf("cluster: unknown agent work %q", q.Op)
	}
	if err != nil {
		return nil, err
	}
	return &ans, nil
}
