package cluster

import (
	"context"
	"encoding/json"

	"github.com/changedigest/changedigest"
)

// Definition reads watch id's definition from the watches bucket, for the
// tests of the package's users' view of it.
func (c *Conn) Definition(ctx context.Context, id int64) (*changedigest.Watch, error) {
	e, err := c.watches.Get(ctx, watchKey(ShardOf(id, c.Config.Shards), id))
	if err != nil {
		return nil, err
	}
	var w changedigest.Watch
	if err := json.Unmarshal(e.Value(), &w); err != nil {
		return nil, err
	}
	return &w, nil
}
