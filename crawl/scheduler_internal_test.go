package crawl

import "testing"

func TestHostKey(t *testing.T) {
	tests := []struct{ url, want string }{
		{"http://Example.org/a", "example.org"},
		{"https://example.org/b", "example.org"},
		{"http://example.org:80/", "example.org"},
		{"https://example.org:443/", "example.org"},
		{"http://example.org:8080/", "example.org:8080"},
		{"https://example.org:80/", "example.org:80"},
		{"http://127.0.0.1:41234/p/1", "127.0.0.1:41234"},
		{"http://[::1]:8080/", "[::1]:8080"},
		{"not a url", "not a url"},
	}
	for _, tt := range tests {
		if got := HostKey(tt.url); got != tt.want {
			t.Errorf("HostKey(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
