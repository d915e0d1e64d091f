package changedigest

import (
	"strings"
	"testing"
)

type upperSealer struct{}

func (upperSealer) Seal(p string) (string, error) { return "sealed(" + strings.ToUpper(p) + ")", nil }

func TestRequestOptionsValidate(t *testing.T) {
	tests := []struct {
		name  string
		opts  RequestOptions
		field string // "" when valid
	}{
		{"post with body", RequestOptions{Method: "post", Body: "q=1"}, ""},
		{"headers", RequestOptions{Headers: []RequestHeader{{Name: "accept-language", Value: "fr"}, {Name: "X-Api-Key", Value: "k"}}}, ""},
		{"method", RequestOptions{Method: "DELETE"}, "method"},
		{"body with GET", RequestOptions{Body: "x"}, "body"},
		{"body too large", RequestOptions{Method: "POST", Body: strings.Repeat("x", MaxRequestBody+1)}, "body"},
		{"Host", RequestOptions{Headers: []RequestHeader{{Name: "host", Value: "evil"}}}, "headers: Host"},
		{"Content-Length", RequestOptions{Headers: []RequestHeader{{Name: "Content-Length", Value: "3"}}}, "headers: Content-Length"},
		{"Cookie header", RequestOptions{Headers: []RequestHeader{{Name: "Cookie", Value: "a=b"}}}, "headers: Cookie"},
		{"CRLF in value", RequestOptions{Headers: []RequestHeader{{Name: "X-A", Value: "a\r\nHost: evil"}}}, "headers: the value of X-A"},
		{"LF in secret value", RequestOptions{Headers: []RequestHeader{{Name: "Authorization", Value: "Bearer a\nb"}}}, "headers: the value of Authorization"},
		{"CR in name", RequestOptions{Headers: []RequestHeader{{Name: "X-A\r\nB", Value: "a"}}}, "headers"},
		{"space in name", RequestOptions{Headers: []RequestHeader{{Name: "X A", Value: "a"}}}, "headers"},
		{"twice", RequestOptions{Headers: []RequestHeader{{Name: "X-A", Value: "a"}, {Name: "x-a", Value: "b"}}}, "headers: X-A is given twice"},
		{"cookie value", RequestOptions{Cookies: []RequestCookie{{Name: "s", Value: Secret{Plain: "a;b"}}}}, "cookies: the value of s"},
		{"cookie name", RequestOptions{Cookies: []RequestCookie{{Name: "a b", Value: Secret{Plain: "x"}}}}, "cookies"},
		{"cookie empty", RequestOptions{Cookies: []RequestCookie{{Name: "s"}}}, "cookies: s has no value"},
		{"auth colon", RequestOptions{BasicAuth: &BasicAuth{User: "a:b", Password: Secret{Plain: "p"}}}, "basic_auth"},
		{"auth no password", RequestOptions{BasicAuth: &BasicAuth{User: "ann"}}, "basic_auth: the password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.field != "" && err == nil:
				t.Errorf("Validate accepted %+v", tt.opts)
			case tt.field != "" && (ErrorCode(err) != EINVALID || !strings.HasPrefix(err.Error(), tt.field)):
				t.Errorf("Validate = %v (%s), want an EINVALID error starting %q", err, ErrorCode(err), tt.field)
			}
		})
	}
	w := Watch{URL: "https://example.org/", Render: RenderBrowser, Request: &RequestOptions{Method: "POST"}}
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "request options") {
		t.Errorf("browser watch with request options: %v", err)
	}
	w = Watch{URL: "https://example.org/", Request: &RequestOptions{Method: "GET"}}
	if err := w.Validate(); err != nil || w.Request != nil {
		t.Errorf("a plain GET is no request options: %v %+v", err, w.Request)
	}
}

func TestRequestOptionsSecrets(t *testing.T) {
	o := &RequestOptions{
		Headers:   []RequestHeader{{Name: "x-api-key", Value: "abcdefgh12341a2b"}, {Name: "Accept-Language", Value: "fr"}},
		Cookies:   []RequestCookie{{Name: "sid", Value: Secret{Plain: "s3cr3t"}}},
		BasicAuth: &BasicAuth{User: "ann", Password: Secret{Plain: "correct horse battery"}},
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Seal(upperSealer{}); err != nil {
		t.Fatal(err)
	}
	h := o.Headers[0]
	if h.Name != "X-Api-Key" || h.Value != "" || h.Secret.Sealed != "sealed(ABCDEFGH12341A2B)" || h.Secret.Hint != "••••1a2b" || h.Secret.Plain != "" {
		t.Errorf("secret header %+v", h)
	}
	if o.Headers[1].Value != "fr" || !o.Headers[1].Secret.Unset() {
		t.Errorf("plain header %+v", o.Headers[1])
	}
	if c := o.Cookies[0].Value; c.Hint != HintPrefix || c.Sealed != "sealed(S3CR3T)" {
		t.Errorf("short cookie value %+v: the hint must not show part of it", c)
	}
	// An edit that leaves secrets empty, or sends back their hints, keeps them.
	edit := &RequestOptions{
		Headers:   []RequestHeader{{Name: "X-Api-Key", Value: "••••1a2b"}, {Name: "Accept-Language", Value: "de"}},
		Cookies:   []RequestCookie{{Name: "sid"}},
		BasicAuth: &BasicAuth{User: "ann"},
	}
	edit.KeepSecrets(o)
	if err := edit.Validate(); err != nil {
		t.Fatal(err)
	}
	if edit.Headers[0].Secret != o.Headers[0].Secret || edit.Cookies[0].Value != o.Cookies[0].Value || edit.BasicAuth.Password != o.BasicAuth.Password {
		t.Errorf("secrets not kept: %+v", edit)
	}
	// Another user name does not inherit the password.
	other := &RequestOptions{BasicAuth: &BasicAuth{User: "bob"}}
	other.KeepSecrets(o)
	if err := other.Validate(); err == nil {
		t.Error("a new user name took the old password")
	}
}
