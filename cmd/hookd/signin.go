package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/hookd/hookd/internal/app"
)

// signinFlags are serve's console sign-in settings: the identity provider
// (OIDC) and whether API keys may sign in (docs/operations/signin.md).
type signinFlags struct {
	issuer, clientID, clientSecret, redirect, claim *string
	operators, admins                               *string
	keySignin                                       *bool
}

func (s *signinFlags) register(fs *flag.FlagSet) {
	s.issuer = fs.String("oidc-issuer", os.Getenv("HOOKD_OIDC_ISSUER"), "sign in to the console through this OpenID Connect provider, e.g. https://login.example.com (env HOOKD_OIDC_ISSUER)")
	s.clientID = fs.String("oidc-client-id", os.Getenv("HOOKD_OIDC_CLIENT_ID"), "hookd's client id at the provider (env HOOKD_OIDC_CLIENT_ID)")
	s.clientSecret = fs.String("oidc-client-secret", os.Getenv("HOOKD_OIDC_CLIENT_SECRET"), "hookd's client secret at the provider; prefer the environment, which ps does not show (env HOOKD_OIDC_CLIENT_SECRET)")
	s.redirect = fs.String("oidc-redirect-url", os.Getenv("HOOKD_OIDC_REDIRECT_URL"), "the callback registered with the provider (default: the URL the browser reached + /admin/oidc/callback) (env HOOKD_OIDC_REDIRECT_URL)")
	s.claim = fs.String("oidc-claim", envOr("HOOKD_OIDC_CLAIM", "groups"), "the ID token claim whose values map to roles (env HOOKD_OIDC_CLAIM)")
	s.operators = fs.String("oidc-operator-group", os.Getenv("HOOKD_OIDC_OPERATOR_GROUPS"), "claim values that make an operator (every owner), comma-separated (env HOOKD_OIDC_OPERATOR_GROUPS)")
	s.admins = fs.String("oidc-admin-group", os.Getenv("HOOKD_OIDC_ADMIN_GROUPS"), "VALUE=OWNER pairs, comma-separated: a user with claim value VALUE is OWNER's admin (env HOOKD_OIDC_ADMIN_GROUPS)")
	s.keySignin = fs.Bool("console-api-key-signin", os.Getenv("HOOKD_CONSOLE_API_KEY_SIGNIN") != "false", "let the console's sign-in take an API key; false: the identity provider only (env HOOKD_CONSOLE_API_KEY_SIGNIN=false)")
}

// apply puts the flags in cfg (Validate checks them).
func (s *signinFlags) apply(cfg *app.Config) error {
	cfg.ConsoleKeySigninOff = !*s.keySignin
	if *s.issuer == "" {
		return nil
	}
	o := &app.OIDCConfig{Issuer: *s.issuer, ClientID: *s.clientID, ClientSecret: *s.clientSecret, RedirectURL: *s.redirect,
		Claim: *s.claim, OperatorValues: splitList(*s.operators), AdminValues: map[string]string{}}
	for _, pair := range splitList(*s.admins) {
		value, ownerID, ok := strings.Cut(pair, "=")
		if !ok || value == "" || ownerID == "" {
			return fmt.Errorf("--oidc-admin-group %q: write VALUE=OWNER, e.g. payments-team=payments", pair)
		}
		o.AdminValues[value] = ownerID
	}
	cfg.OIDC = o
	return nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
