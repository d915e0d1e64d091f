package lazyregexp

import (
	"reflect"
	"regexp"
	"testing"
)

// TestSameAsRegexp: each method gives what regexp gives, and a bad
// expression panics when it is compiled (here, in a test, at New).
func TestSameAsRegexp(t *testing.T) {
	const expr = `(\w+)@(\w+)`
	lazy, re := New(expr), regexp.MustCompile(expr)
	s := "mail ann@example or bob@host, not @here"
	b := []byte(s)
	if lazy.MatchString(s) != re.MatchString(s) ||
		!reflect.DeepEqual(lazy.FindSubmatch(b), re.FindSubmatch(b)) ||
		!reflect.DeepEqual(lazy.FindSubmatchIndex(b), re.FindSubmatchIndex(b)) ||
		!reflect.DeepEqual(lazy.FindStringSubmatch(s), re.FindStringSubmatch(s)) ||
		!reflect.DeepEqual(lazy.FindAllSubmatchIndex(b, -1), re.FindAllSubmatchIndex(b, -1)) ||
		lazy.ReplaceAllString(s, "<$2>") != re.ReplaceAllString(s, "<$2>") ||
		lazy.ReplaceAllStringFunc(s, func(m string) string { return "x" }) != re.ReplaceAllStringFunc(s, func(m string) string { return "x" }) ||
		!reflect.DeepEqual(lazy.Split(s, -1), re.Split(s, -1)) {
		t.Error("a method differs from regexp's")
	}
	defer func() {
		if recover() == nil {
			t.Error("a bad expression did not panic")
		}
	}()
	New(`(unclosed`)
}
