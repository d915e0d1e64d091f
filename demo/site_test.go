package demo

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestPagesChangeByStep(t *testing.T) {
	for name, page := range map[string]func(int) string{"news": NewsPage, "club": ClubPage} {
		if page(3) != page(3) {
			t.Errorf("%s: same step gives different pages", name)
		}
		if page(3) == page(4) {
			t.Errorf("%s: steps 3 and 4 give the same page", name)
		}
	}
	if !strings.Contains(NewsPage(0), storyAt(0).Title) || strings.Contains(NewsPage(1), storyAt(0).Title) {
		t.Error("news window does not slide by one story per step")
	}
}

func TestSiteServesWithETag(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Site{Period: time.Second, Now: func() time.Time { return now }}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	get := func(path, etag string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", s.URL()+path, nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, u := range s.Pages() {
		path := strings.TrimPrefix(u, s.URL())
		resp, body := get(path, "")
		if resp.StatusCode != 200 || body == "" {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		if r2, _ := get(path, resp.Header.Get("ETag")); r2.StatusCode != http.StatusNotModified {
			t.Errorf("%s: same ETag gives %d, want 304", path, r2.StatusCode)
		}
		now = now.Add(2 * time.Second) // the club page changes every second step
		if r3, body3 := get(path, resp.Header.Get("ETag")); r3.StatusCode != 200 || body3 == body {
			t.Errorf("%s: next step gives %d and an unchanged body", path, r3.StatusCode)
		}
		now = now.Add(-2 * time.Second)
	}
}
