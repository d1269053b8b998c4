package hookd_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/egress"
)

// TestConfigValidate: every bad combination is refused with a message that
// names the setting both ways (field and flag), and Open refuses it too.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, 32)
	cases := []struct {
		name string
		cfg  hookd.Config
		want string // "" = valid
	}{
		{"defaults", hookd.Config{MasterKey: key}, ""},
		{"no master key", hookd.Config{}, "master key is 0 bytes, want 32"},
		{"http above job", hookd.Config{MasterKey: key, HTTPTimeout: 20 * time.Second}, "HTTPTimeout (--http-timeout) 20s must be shorter than JobTimeout (--job-timeout) 15s"},
		{"http equals job", hookd.Config{MasterKey: key, HTTPTimeout: 15 * time.Second}, "HTTPTimeout (--http-timeout) 15s must be shorter than JobTimeout (--job-timeout) 15s"},
		{"job above lease", hookd.Config{MasterKey: key, JobTimeout: 25 * time.Second}, "JobTimeout (--job-timeout) 25s must be shorter than LeaseFor (--lease-for) 20s"},
		{"job above rescue", hookd.Config{MasterKey: key, JobTimeout: 15 * time.Second, LeaseFor: 2 * time.Minute, RescueStuckJobsAfter: 10 * time.Second}, "JobTimeout (--job-timeout) 15s must be shorter than RescueStuckJobsAfter (--rescue-after) 10s"},
		{"short nest ok", hookd.Config{MasterKey: key, HTTPTimeout: time.Second, JobTimeout: 2 * time.Second, LeaseFor: 3 * time.Second, RescueStuckJobsAfter: 3 * time.Second}, ""},
		{"negative", hookd.Config{MasterKey: key, BusySnooze: -time.Second}, "BusySnooze -1s is negative"},
		{"negative workers", hookd.Config{MasterKey: key, Workers: -1}, "Workers (--workers) -1 is negative"},
		{"negative slow workers", hookd.Config{MasterKey: key, SlowWorkers: -1}, "SlowWorkers (--slow-workers) -1 is negative"},
		{"owner share over 1", hookd.Config{MasterKey: key, OwnerShare: 1.5}, "OwnerShare (--owner-share) 1.5 is out of range"},
		{"negative owner share", hookd.Config{MasterKey: key, OwnerShare: -0.5}, "OwnerShare (--owner-share) -0.5 is out of range"},
		{"negative slow after", hookd.Config{MasterKey: key, SlowAfter: -time.Second}, "SlowAfter (--slow-after) -1s is negative"},
		{"unknown profile", hookd.Config{MasterKey: key, DefaultProfile: "svix"}, "DefaultProfile (--default-profile)"},
		{"bad type", hookd.Config{MasterKey: key, EventTypes: []hookd.EventType{{Name: "Order Created"}}}, `event type "Order Created" is not valid`},
		{"retention under a minute", hookd.Config{MasterKey: key, Retention: 30 * time.Second}, "Retention (--retention) 30s is too short"},
		{"retention of minutes ok", hookd.Config{MasterKey: key, Retention: 2 * time.Minute}, ""},
		{"negative audit retention", hookd.Config{MasterKey: key, AuditRetention: -time.Hour}, "AuditRetention (--audit-retention) -1h0m0s is negative"},
		{"key signin off alone", hookd.Config{MasterKey: key, ConsoleKeySigninOff: true}, "nobody could sign in (set --oidc-issuer"},
		{"oidc no issuer", hookd.Config{MasterKey: key, OIDC: &hookd.OIDCConfig{ClientID: "hookd", OperatorValues: []string{"ops"}}}, "OIDC needs an issuer URL (--oidc-issuer"},
		{"oidc no client", hookd.Config{MasterKey: key, OIDC: &hookd.OIDCConfig{Issuer: "https://sso.example.com", OperatorValues: []string{"ops"}}}, "OIDC needs a client id (--oidc-client-id"},
		{"oidc no role", hookd.Config{MasterKey: key, OIDC: &hookd.OIDCConfig{Issuer: "https://sso.example.com", ClientID: "hookd"}}, "OIDC maps no claim value to a role"},
		{"oidc bad owner", hookd.Config{MasterKey: key, OIDC: &hookd.OIDCConfig{Issuer: "https://sso.example.com", ClientID: "hookd", AdminValues: map[string]string{"team": "no such owner!"}}}, "--oidc-admin-group team=no such owner!"},
		{"unknown destination kind", hookd.Config{MasterKey: key, Destinations: []string{"http", "ftp"}}, `destinations (--destinations): "ftp" is no destination kind: use some of http, amqp, nats, kafka, sqs, gcppubsub, redis`},
		{"destination kinds", hookd.Config{MasterKey: key, Destinations: []string{"SQS", "https"}}, ""},
		{"oidc only", hookd.Config{MasterKey: key, ConsoleKeySigninOff: true, OIDC: &hookd.OIDCConfig{Issuer: "https://sso.example.com", ClientID: "hookd", AdminValues: map[string]string{"team": "acme"}}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate = %v, want it to say %q", err, c.want)
			}
			c.cfg.Database = filepath.Join(t.TempDir(), "hookd.db")
			if _, err := hookd.Open(context.Background(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open = %v, want the same refusal", err)
			}
		})
	}
}

// TestDefaultsPinTheProfiles: the defaults are the numbers both profiles
// promise. An attempt gets 10 s to answer, inside a 15 s job (the standard
// profile; kwork also gives a receiver 10 s); a job that meets its
// endpoint's lease held snoozes 2 s (standard: "endpoint busy"); kwork
// deletes finished delivery records after 30 days; and a lease (20 s)
// outlasts the job, so a dead holder's endpoint is free soon after.
func TestDefaultsPinTheProfiles(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{
		{"DefaultHTTPTimeout", hookd.DefaultHTTPTimeout, 10 * time.Second},
		{"DefaultJobTimeout", hookd.DefaultJobTimeout, 15 * time.Second},
		{"DefaultBusySnooze", hookd.DefaultBusySnooze, 2 * time.Second},
		{"DefaultRetention", hookd.DefaultRetention, 30 * 24 * time.Hour},
		{"DefaultLeaseFor", hookd.DefaultLeaseFor, 20 * time.Second},
		{"egress.DefaultTimeout", egress.DefaultTimeout, 10 * time.Second},
		{"delivery.DefaultJobTimeout", delivery.DefaultJobTimeout, 15 * time.Second},
	} {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
		}
	}
	// Validate checks a zero field as its default: a 10 s job timeout
	// meets the default HTTP timeout, 10 s.
	key := bytes.Repeat([]byte{7}, 32)
	want := "HTTPTimeout (--http-timeout) 10s must be shorter than JobTimeout (--job-timeout) 10s"
	if err := (hookd.Config{MasterKey: key, JobTimeout: 10 * time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Validate with JobTimeout 10s = %v, want it to say %q", err, want)
	}
}
