package secret

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBox(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, KeyFile)
	b := NewBox(path)
	if _, err := b.Open("v1.AAAA"); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Open before any key: %v, want ErrNoKey", err)
	}
	b = NewBox(path)
	s1, err := b.Seal("hunter2-very-secret")
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := b.Seal("hunter2-very-secret")
	if s1 == s2 || strings.Contains(s1, "hunter2") || !strings.HasPrefix(s1, "v1.") {
		t.Errorf("sealed values %q and %q", s1, s2)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 32 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	// Another box on the same file (a restart) opens it.
	got, err := NewBox(path).Open(s1)
	if err != nil || got != "hunter2-very-secret" {
		t.Errorf("Open = %q, %v", got, err)
	}
	// A value changed in one byte, or sealed under another key, does not open.
	bad := s1[:len(s1)-2] + "AA"
	if _, err := b.Open(bad); !errors.Is(err, ErrOpen) {
		t.Errorf("tampered value: %v", err)
	}
	other, _ := NewBox(filepath.Join(dir, "other.key")).Seal("x")
	if _, err := b.Open(other); !errors.Is(err, ErrOpen) {
		t.Errorf("value of another key: %v", err)
	}
	if _, err := b.Open("plain text"); !errors.Is(err, ErrOpen) {
		t.Errorf("plain text: %v", err)
	}
}
