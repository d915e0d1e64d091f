package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/crawl/crawltest"
	"github.com/changedigest/changedigest/segmenter"
)

// TestBigFeedWatch checks a feed of 40,000 items through the API's
// "check now": the check succeeds, and the watch says, in the API and on
// its page, that only the newest items are kept.
func TestBigFeedWatch(t *testing.T) {
	cfg := crawltest.BigFeedConfig{Items: 40000}
	v1, _ := crawltest.BigFeed(cfg)
	body := crawltest.BigFeedBody(cfg, v1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		w.Write(body)
	}))
	defer origin.Close()

	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	fetcher := crawl.NewFetcher()
	fetcher.AllowPrivate = true
	sched := crawl.NewScheduler(e.store, crawl.NewPipeline(fetcher, e.seg, e.store))
	sched.Logger = discardLogger()
	e.srv.Checker = sched
	w := e.mustWatch(ann, origin.URL+"/feed.xml")

	api := e.api(ann)
	var check struct {
		Result string `json:"result"`
		Watch  struct {
			FeedItems     int `json:"feed_items"`
			FeedItemsKept int `json:"feed_items_kept"`
		} `json:"watch"`
	}
	api.call(http.MethodPost, fmt.Sprintf("/watches/%d/check", w.ID), nil, http.StatusOK, &check)
	if check.Result != "first version" || check.Watch.FeedItems != 40000 || check.Watch.FeedItemsKept != segmenter.DefaultMaxItems {
		t.Fatalf("check: %+v; want a first version of 40000 items, %d kept", check, segmenter.DefaultMaxItems)
	}
	info, err := e.store.Track(context.Background(), w.ID)
	if err != nil || info.Latest != 1 {
		t.Fatalf("track: %+v, %v", info, err)
	}
	_, page := e.login("ann", "correct horse").get(fmt.Sprintf("/watches/%d", w.ID))
	mustContain(t, page, "Only the newest items are watched",
		"the feed has 40,000 items; the newest "+groupDigits(segmenter.DefaultMaxItems)+" are kept")
}
