package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/pet"
)

// Deliveries are kept by the node whose dispatcher made them (the node
// that stored the version, or where a test message was asked for): a
// user's list is gathered from every live node, and a redelivery is made
// by the node that holds the delivery.

// Subjects of the delivery questions every node answers.
const (
	deliveriesSubject = "cd.deliveries"
	redeliverSubject  = "cd.redeliver"
)

// redeliverQuestion asks for a user's delivery to be made pending again.
type redeliverQuestion struct {
	UserID int64  `json:"user_id"`
	ID     string `json:"id"`
}

// answerDeliveries lists this node's deliveries for the filter asked.
func (n *Node) answerDeliveries(ctx context.Context, data []byte) (any, error) {
	var f pet.DeliveryFilter
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	return n.Store.Deliveries(ctx, f)
}

// answerRedeliver makes the delivery pending again through this node's
// dispatcher, when this node holds it.
func (n *Node) answerRedeliver(ctx context.Context, data []byte) (any, error) {
	var q redeliverQuestion
	if err := json.Unmarshal(data, &q); err != nil {
		return nil, err
	}
	if n.Redeliver == nil {
		return nil, fmt.Errorf("%w: node %s delivers nothing", pet.ErrNotFound, n.Conn.Config.Name)
	}
	return n.Redeliver(ctx, q.UserID, q.ID)
}

// Deliveries lists a user's deliveries on every live node, newest first,
// as one store would list them (at most f.Limit: 50 unless set, 1000 at
// most).
func (n *Node) Deliveries(ctx context.Context, f pet.DeliveryFilter) ([]changedigest.Delivery, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	f.Limit = min(limit, 1000)
	return askAll(ctx, n, deliveriesSubject, f, f.Limit, func(a, b changedigest.Delivery) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
}

// RedeliverAnywhere makes the user's delivery pending again on the node
// that holds it, whose dispatcher tries it at once. Errors: ENOTFOUND
// when no live node holds it.
func (n *Node) RedeliverAnywhere(ctx context.Context, userID int64, id string) (*changedigest.Delivery, error) {
	answers, err := n.scatter(ctx, redeliverSubject, redeliverQuestion{userID, id})
	if errors.Is(err, pet.ErrNotFound) || err == nil && len(answers) == 0 {
		return nil, changedigest.Errorf(changedigest.ENOTFOUND, "delivery %q not found", id)
	}
	if err != nil {
		return nil, err
	}
	var d changedigest.Delivery
	if err := json.Unmarshal(answers[0], &d); err != nil {
		return nil, fmt.Errorf("cluster: redeliver %s: %w", id, err)
	}
	return &d, nil
}
