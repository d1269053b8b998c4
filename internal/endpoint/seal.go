package endpoint

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"golang.org/x/crypto/nacl/secretbox"
)

// Sealer seals endpoint secrets at rest with NaCl secretbox
// (XSalsa20-Poly1305) under one 32-byte master key. Open is the one place a
// sealed secret becomes readable again.
type Sealer struct {
	key [32]byte
}

// NewSealer returns a Sealer for a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("master key is %d bytes; it must be 32 (base64 of 32 random bytes)", len(key))
	}
	s := &Sealer{}
	copy(s.key[:], key)
	return s, nil
}

// Seal encrypts secret: a fresh random nonce, then the box.
func (s *Sealer) Seal(secret string) ([]byte, error) {
	var nonce [24]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return secretbox.Seal(nonce[:], []byte(secret), &nonce, &s.key), nil
}

// Open decrypts what Seal produced. It is the only function in hookd that
// unseals an endpoint secret.
func (s *Sealer) Open(sealed []byte) (string, error) {
	if len(sealed) < 24+secretbox.Overhead {
		return "", errors.New("unseal: sealed secret too short")
	}
	var nonce [24]byte
	copy(nonce[:], sealed[:24])
	out, ok := secretbox.Open(nil, sealed[24:], &nonce, &s.key)
	if !ok {
		return "", errors.New("unseal: wrong master key or corrupted secret")
	}
	return string(out), nil
}

// LoadMasterKey returns the master key from env (base64 of 32 bytes) when it
// is set; otherwise it reads keyFile, creating it (mode 0600, 32 random bytes,
// base64) on first start and logging where it is.
func LoadMasterKey(env, keyFile string, log *slog.Logger) ([]byte, error) {
	if env != "" {
		return decodeKey(env, "HOOKD_MASTER_KEY")
	}
	b, err := os.ReadFile(keyFile)
	if err == nil {
		return decodeKey(strings.TrimSpace(string(b)), keyFile)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read master key: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("new master key: %w", err)
	}
	f, err := os.OpenFile(keyFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create master key file: %w", err)
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		return nil, fmt.Errorf("write master key file: %w", errors.Join(err, f.Close()))
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write master key file: %w", err)
	}
	log.Info("created master key file; endpoint secrets are sealed with it: back it up, or set HOOKD_MASTER_KEY", "path", keyFile)
	return key, nil
}

func decodeKey(s, from string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("master key from %s must be base64 of 32 bytes (e.g. `openssl rand -base64 32`)", from)
	}
	return key, nil
}
