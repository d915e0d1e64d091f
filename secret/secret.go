// Package secret seals the secrets of watches (basic-auth passwords,
// cookie values, credential headers) for storage: AES-256-GCM under a key
// kept in the data directory, in a file only its owner may read, made on
// first use. A sealed value is "v1." and the base64url of a random
// 12-byte nonce and the ciphertext; the store and every copy of a watch
// hold only that.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
)

// KeyFile is the key's file name in the data directory.
const KeyFile = "secrets.key"

// ErrNoKey is returned by Open when the key file does not exist: the
// values were sealed with a key that is not here.
var ErrNoKey = errors.New("secret: the key file is missing")

// ErrOpen is returned by Open for a value that does not open with the key.
var ErrOpen = errors.New("secret: the value does not open with this key")

// additional is the additional data every value is sealed with.
var additional = []byte("changedigest watch secret v1")

const prefix = "v1."

// Box seals and opens secrets with the key in Path. It reads the key on
// first use and makes it when Seal finds none. A Box is safe for
// concurrent use.
type Box struct {
	Path string

	mu   sync.Mutex
	aead cipher.AEAD
}

// NewBox returns a Box whose key is the file path.
func NewBox(path string) *Box { return &Box{Path: path} }

// Seal seals plain. Errors: the key file's.
func (b *Box) Seal(plain string) (string, error) {
	aead, err := b.key(true)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	rand.Read(nonce)
	out := aead.Seal(nonce, nonce, []byte(plain), additional)
	return prefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open opens a value Seal made. Errors: ErrNoKey when there is no key
// file, ErrOpen for a value that is not one Seal made with this key, the
// key file's otherwise.
func (b *Box) Open(sealed string) (string, error) {
	aead, err := b.key(false)
	if err != nil {
		return "", err
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, prefix))
	if err != nil || !strings.HasPrefix(sealed, prefix) || len(raw) < aead.NonceSize() {
		return "", ErrOpen
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], additional)
	if err != nil {
		return "", ErrOpen
	}
	return string(plain), nil
}

// key returns the cipher, reading the key file, or making it when create
// is set and there is none.
func (b *Box) key(create bool) (cipher.AEAD, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.aead != nil {
		return b.aead, nil
	}
	key, err := readKey(b.Path, create)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	b.aead, err = cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	return b.aead, nil
}

// readKey reads the 32-byte key at path, making it (mode 0600) when it
// does not exist and create is set.
func readKey(path string, create bool) ([]byte, error) {
	key, err := os.ReadFile(path)
	switch {
	case err == nil && len(key) == 32:
		return key, nil
	case err == nil:
		return nil, fmt.Errorf("secret: key file %s holds %d bytes, want 32", path, len(key))
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("secret: read key: %w", err)
	case !create:
		return nil, fmt.Errorf("%w: %s", ErrNoKey, path)
	}
	key = make([]byte, 32)
	rand.Read(key)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process made it first
		return readKey(path, false)
	} else if err != nil {
		return nil, fmt.Errorf("secret: create key: %w", err)
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("secret: write key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("secret: write key: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("secret: write key: %w", err)
	}
	return key, nil
}
