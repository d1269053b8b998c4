package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/hookd/hookd/internal/apperr"
)

// jwksPath is where each owner's JSON Web Key Set is published: public, no
// key needed, only public keys in it.
const jwksPath = "GET /.well-known/hookd/{owner}/jwks.json"

// jwks answers an owner's key set (ops.JWKSOf). Receivers cache it; a
// rotation's new key shows at once and its old key stays while it signs,
// so a few minutes of caching never misses a signature.
func (s *Server) jwks(w http.ResponseWriter, r *http.Request) {
	set, err := s.Ops.JWKSOf(r.Context(), r.PathValue("owner"))
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json") // RFC 7517 §8.5.2
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(set)
}
