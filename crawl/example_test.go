package crawl_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/crawl/crawltest"
)

func ExampleFetcher_Fetch() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		w.Write([]byte("<p>Caf\xe9</p>"))
	}))
	defer srv.Close()

	f := crawl.NewFetcher()
	f.AllowPrivate = true // the test server is on loopback
	res, err := f.Fetch(context.Background(), crawl.Request{URL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.Charset, res.ETag, string(res.Body))

	res, err = f.Fetch(context.Background(), crawl.Request{URL: srv.URL, ETag: res.ETag})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.NotModified)
	// Output:
	// 200 windows-1252 "v1" <p>Café</p>
	// 304 true
}

// A check pipeline as the scheduler sees it: fetch conditionally, and on
// a new body segment and store it (here: only compare its length).
func ExampleScheduler() {
	farm := crawltest.NewFarm(exampleTB{}, crawltest.FarmConfig{Pages: 3, Rate: func(int) float64 { return 0 }})
	defer farm.Close()
	store := crawltest.NewMemStore(farm.Watches(changedigest.CategoryNews)...)

	f := crawl.NewFetcher()
	f.AllowPrivate = true
	lengths := map[int64]int{}
	check := crawl.CheckFunc(func(ctx context.Context, w *changedigest.Watch) (crawl.Outcome, error) {
		res, err := f.Fetch(ctx, crawl.WatchRequest(w))
		if err != nil {
			return crawl.Outcome{}, err // recorded on the watch, nothing stored
		}
		if res.NotModified {
			return res.Outcome(crawl.NotModified), nil
		}
		prev, seen := lengths[w.ID] // the pipeline would segment and store here
		lengths[w.ID] = len(res.Body)
		switch {
		case !seen:
			return res.Outcome(crawl.FirstVersion), nil
		case prev != len(res.Body):
			return res.Outcome(crawl.Changed), nil
		}
		return res.Outcome(crawl.Unchanged), nil
	})

	s := crawl.NewScheduler(store, check)
	s.Workers = 1
	s.HostGap = 0
	for pass := range 2 {
		sum, err := s.CheckNow(context.Background(), nil, store.Watches()...)
		fmt.Println(pass, sum.Checked, sum.FirstVersion, sum.NotModified, err)
	}
	// Run(ctx) would keep checking the watches as they fall due.

	// Output:
	// 0 3 3 0 <nil>
	// 1 3 0 3 <nil>
}

// exampleTB lets an example start a farm; examples have no testing.TB.
type exampleTB struct{}

func (exampleTB) Helper()        {}
func (exampleTB) Cleanup(func()) {}
