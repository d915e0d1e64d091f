package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/changedigest/changedigest/agent"
)

func TestRealClient(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:1::/48")}
	for _, tc := range []struct {
		name, remote, header string
		trusted              []netip.Prefix
		values               map[string][]string
		want                 string
	}{
		{"no proxies trusted: headers ignored", "198.51.100.7:5000", "", nil,
			map[string][]string{"X-Forwarded-For": {"203.0.113.1"}}, "198.51.100.7"},
		{"not from a trusted proxy: headers ignored", "198.51.100.7:5000", "", proxies,
			map[string][]string{"X-Forwarded-For": {"203.0.113.1"}}, "198.51.100.7"},
		{"one proxy", "10.0.0.2:5000", "", proxies,
			map[string][]string{"X-Forwarded-For": {"203.0.113.1"}}, "203.0.113.1"},
		{"what the client wrote left of the proxy's entry is not read", "10.0.0.2:5000", "", proxies,
			map[string][]string{"X-Forwarded-For": {"192.0.2.66, 203.0.113.1"}}, "203.0.113.1"},
		{"two proxies, the header over two lines", "10.0.0.2:5000", "", proxies,
			map[string][]string{"X-Forwarded-For": {"192.0.2.66, 203.0.113.1", "10.1.2.3"}}, "203.0.113.1"},
		{"only proxies named: the farthest", "10.0.0.2:5000", "", proxies,
			map[string][]string{"X-Forwarded-For": {"10.9.9.9, 10.1.2.3"}}, "10.9.9.9"},
		{"no header: the proxy itself", "10.0.0.2:5000", "", proxies, nil, "10.0.0.2"},
		{"garbage ends the walk at the proxy that wrote it", "10.0.0.2:5000", "", proxies,
			map[string][]string{"X-Forwarded-For": {"203.0.113.1, nonsense"}}, "10.0.0.2"},
		{"IPv6 proxy and client", "[2001:db8:1::5]:443", "", proxies,
			map[string][]string{"X-Forwarded-For": {"2001:db8:2::9"}}, "2001:db8:2::9"},
		{"Forwarded is not read when the proxies set X-Forwarded-For", "10.0.0.2:5000", "", proxies,
			map[string][]string{"Forwarded": {"for=192.0.2.66"}, "X-Forwarded-For": {"203.0.113.1"}}, "203.0.113.1"},
		{"Forwarded", "10.0.0.2:5000", "Forwarded", proxies,
			map[string][]string{"Forwarded": {`for=192.0.2.66;proto=https, for="[2001:db8:2::9]:4711";by=10.0.0.2`}, "X-Forwarded-For": {"203.0.113.1"}}, "2001:db8:2::9"},
		{"Forwarded unknown ends the walk", "10.0.0.2:5000", "Forwarded", proxies,
			map[string][]string{"Forwarded": {"for=192.0.2.66, for=unknown"}}, "10.0.0.2"},
		{"Forwarded without for", "10.0.0.2:5000", "Forwarded", proxies,
			map[string][]string{"Forwarded": {"for=192.0.2.66, proto=https"}}, "10.0.0.2"},
		{"an IPv4-mapped proxy address", "[::ffff:10.0.0.2]:5000", "", proxies,
			map[string][]string{"X-Forwarded-For": {"203.0.113.1"}}, "203.0.113.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{TrustedProxies: tc.trusted, ProxyHeader: tc.header}
			var got string
			h := s.realClient(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = clientIP(r) }))
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			for k, vs := range tc.values {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got != tc.want {
				t.Errorf("client %q, want %q", got, tc.want)
			}
		})
	}
}

// addrAgent is a page agent that records the addresses it is told.
type addrAgent struct {
	mu      sync.Mutex
	scripts []string
	reports []string
}

func (a *addrAgent) ScriptEncoded(ctx context.Context, key string, gzipOK bool) ([]byte, bool, error) {
	a.mu.Lock()
	a.scripts = append(a.scripts, agent.ClientFrom(ctx))
	a.mu.Unlock()
	return []byte("/* */"), false, nil
}

func (a *addrAgent) Report(ctx context.Context, in agent.ReportIn) error {
	a.mu.Lock()
	a.reports = append(a.reports, in.Addr)
	a.mu.Unlock()
	return nil
}

func (a *addrAgent) Stats(int64) agent.Stats { return agent.Stats{} }
func (a *addrAgent) Forget(int64)            {}

// TestAgentBehindAProxy: behind a trusted reverse proxy each visitor
// is its own address to the page agent (its limits and ignore list),
// not the proxy's; without the setting, a forwarding header changes
// nothing.
func TestAgentBehindAProxy(t *testing.T) {
	e := mustServer(t)
	a := &addrAgent{}
	e.srv.Agent = a
	visit := func(visitor string) {
		req, _ := http.NewRequest("GET", e.http.URL+"/agent.js?k=1-abc", nil)
		req.Header.Set("X-Forwarded-For", visitor)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		req, _ = http.NewRequest("POST", e.http.URL+"/agent/report", strings.NewReader(url.Values{"t": {"x"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", "192.0.2.66, "+visitor)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	visit("203.0.113.1")
	e.srv.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	visit("203.0.113.1")
	visit("203.0.113.2")
	want := "127.0.0.1 203.0.113.1 203.0.113.2"
	if got := strings.Join(a.scripts, " "); got != want {
		t.Errorf("agent requests from %s, want %s", got, want)
	}
	if got := strings.Join(a.reports, " "); got != want {
		t.Errorf("reports from %s, want %s", got, want)
	}
}
