package profile

import (
	"sync"

	"github.com/hookd/hookd/webhook"
)

// signerCache keeps one signer per endpoint key set (the opened sealed
// text: a lone secret or endpoint.Keys), so the key is decoded
// and its HMAC state pooled once rather than on every attempt (the hot
// path). It is bounded: past maxSigners entries it starts over, which costs
// one re-decode per secret.
type signerCache[S any] struct {
	mu    sync.Mutex
	items map[string]S
	make  func(secret string) (S, error)
}

const maxSigners = 10000

func (c *signerCache[S]) get(secret string) (S, error) {
	c.mu.Lock()
	s, ok := c.items[secret]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := c.make(secret)
	if err != nil {
		return s, err
	}
	c.mu.Lock()
	if c.items == nil || len(c.items) >= maxSigners {
		c.items = make(map[string]S)
	}
	c.items[secret] = s
	c.mu.Unlock()
	return s, nil
}

var (
	standardSigners = &signerCache[*keyringSigner]{make: newKeyringSigner}
	kworkSigners    = &signerCache[*webhook.KworkSigner]{make: func(opened string) (*webhook.KworkSigner, error) {
		secret, err := currentSecret(opened)
		if err != nil {
			return nil, err
		}
		return webhook.NewKworkSigner(secret)
	}}
)
