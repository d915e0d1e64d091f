package crawl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/crawl"
	"github.com/changedigest/changedigest/crawl/crawltest"
	"github.com/changedigest/changedigest/internal/testenv"
)

type capture struct {
	File      string `json:"file"`
	URL       string `json:"url"`
	Timestamp string `json:"timestamp"`
	Status    int    `json:"wayback_status"`
	Type      string `json:"content_type"`
	body      []byte
}

// captureSeries reads the EDGI captures of one page, oldest first.
func captureSeries(t *testing.T, urlPrefix string) []capture {
	t.Helper()
	dir := testenv.Corpus(t, "versions", "edgi-wayback-mementos", "web-monitoring-processing")
	b, err := os.ReadFile(filepath.Join(dir, "mementos.json"))
	if err != nil {
		t.Fatal(err)
	}
	var all, series []capture
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if strings.HasPrefix(c.URL, urlPrefix) {
			if c.body, err = os.ReadFile(filepath.Join(dir, c.File)); err != nil {
				t.Fatal(err)
			}
			series = append(series, c)
		}
	}
	slices.SortFunc(series, func(a, b capture) int { return strings.Compare(a.Timestamp, b.Timestamp) })
	if len(series) < 2 {
		t.Fatalf("no capture series for %s", urlPrefix)
	}
	return series
}

// TestFailedFetchesAreNotChanges replays real capture series through the
// fetcher, a hashing checker and the scheduler, one capture per check.
// The highways.dot.gov page was captured eight times in four hours: seven
// "Access Denied" pages (each with its own reference number) and one real
// page. Served with their 403 status, or with 200 as a soft error, the
// error pages must be recorded as failures and never as versions or
// changes. Two byte-identical EPA captures make one version, no change.
func TestFailedFetchesAreNotChanges(t *testing.T) {
	highways := captureSeries(t, "https://highways.dot.gov/")
	epa := captureSeries(t, "https://www.epa.gov/hfstudy/")
	tests := []struct {
		name        string
		series      []capture
		statusAs200 bool
		want        []string // per check: the result, or the error kind
	}{
		{"highways 403s", highways, false, []string{"403", "403", "first version", "403", "403", "403", "403", "403"}},
		{"highways 403 bodies served with 200", highways, true, []string{"error page", "error page", "first version", "error page", "error page", "error page", "error page", "error page"}},
		{"identical EPA pair", epa, false, []string{"first version", "unchanged"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			next := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				c := tt.series[min(next, len(tt.series)-1)]
				next++
				mu.Unlock()
				w.Header().Set("Content-Type", c.Type)
				if !tt.statusAs200 {
					w.WriteHeader(c.Status)
				}
				w.Write(c.body)
			}))
			defer srv.Close()

			watch := &changedigest.Watch{ID: 1, URL: srv.URL + "/page", Category: changedigest.CategoryNews}
			store := crawltest.NewMemStore(watch)
			s := crawl.NewScheduler(store, newHashChecker())
			s.Logger = quiet
			var got []string
			for range tt.series {
				w := store.Watch(1)
				_, err := s.CheckNow(context.Background(), func(r crawl.Report) {
					var he *crawl.HTTPError
					switch {
					case errors.As(r.Err, &he):
						got = append(got, fmt.Sprint(he.StatusCode))
					case errors.Is(r.Err, crawl.ErrErrorPage):
						got = append(got, "error page")
					case r.Err != nil:
						got = append(got, r.Err.Error())
					default:
						got = append(got, r.Outcome.Result.String())
					}
				}, w)
				if err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("checks:\n got %q\nwant %q", got, tt.want)
			}
			w := store.Watch(1)
			successes := 0
			for _, r := range tt.want {
				if r == "first version" || r == "unchanged" {
					successes++
				}
			}
			if w.Checks != successes {
				t.Errorf("Checks %d, want %d successful checks", w.Checks, successes)
			}
			if w.ChangeChecks != 0 || !w.LastChange.IsZero() {
				t.Errorf("a change was counted: %d change checks, last change %v", w.ChangeChecks, w.LastChange)
			}
			wantErrs := 0
			for _, r := range slices.Backward(tt.want) {
				if r == "first version" || r == "unchanged" {
					break
				}
				wantErrs++
			}
			if w.ErrorCount != wantErrs {
				t.Errorf("ErrorCount %d, want %d consecutive failures at the end", w.ErrorCount, wantErrs)
			}
		})
	}
}
