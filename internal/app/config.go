package app

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/scope"
	"github.com/hookd/hookd/internal/store"
	"github.com/hookd/hookd/internal/version"
)

// The defaults of Config's fields, shared with the hookd command's flags
// (the delivery service's own defaults, where it has the setting).
// The timeouts nest: an HTTP request ends inside its job's timeout, and a
// job ends before its endpoint's lease or River's stuck-job rescue could
// hand the endpoint to another process.
const (
	DefaultDatabase             = "hookd.db"
	DefaultProfile              = "standard"
	DefaultWorkers              = 100
	DefaultHTTPTimeout          = delivery.DefaultHTTPTimeout
	DefaultJobTimeout           = delivery.DefaultJobTimeout
	DefaultLeaseFor             = delivery.DefaultLeaseFor
	DefaultRescueStuckJobsAfter = time.Minute
	DefaultBusySnooze           = delivery.DefaultBusySnooze
	DefaultRetention            = delivery.DefaultRetention
	DefaultAuditRetention       = delivery.DefaultAuditRetention
	DefaultPartitionInterval    = store.DefaultPartitionInterval
	DefaultDrainMax             = delivery.DefaultDrainMax
	DefaultOwnerShare           = delivery.DefaultOwnerShare
	DefaultSlowAfter            = delivery.DefaultSlowAfter
)

// Config is what New builds hookd from: package hookd's Config (whose
// fields say what each means) in the internal types, with the command's
// flags setting it directly. Its zero fields mean their defaults.
type Config struct {
	Database           string
	Schema             string
	MasterKey          []byte
	EgressAllow        []netip.Prefix
	EgressProxy        *url.URL
	UserAgent          string
	PortalFrameOrigins []string
	NoTransformations  bool
	// Destinations: the kinds owners may point endpoints at (nil: every
	// kind).
	Destinations []string
	// TransformationTimeLimit: 0 is 50 ms.
	TransformationTimeLimit time.Duration

	Work        bool
	Workers     int
	SlowWorkers int
	OwnerShare  float64
	SlowAfter   time.Duration

	// EventTypes are offered to every owner (their OwnerID empty).
	EventTypes  []event.Type
	Catalogs    []string
	KeepCatalog bool
	// Scope admits scoped events to endpoints attached to a grant (nil:
	// the grants store).
	Scope               scope.Source
	DefaultProfile      string
	Retention           time.Duration
	OIDC                *OIDCConfig
	ConsoleKeySigninOff bool
	AuditRetention      time.Duration
	// PartitionInterval partitions the event and delivery tables by time
	// on PostgreSQL (store.Config.PartitionInterval), a day each
	// (store.DefaultPartitionInterval) if 0; Unpartitioned leaves them as
	// they are.
	PartitionInterval time.Duration
	Unpartitioned     bool

	HTTPTimeout          time.Duration
	JobTimeout           time.Duration
	LeaseFor             time.Duration
	RescueStuckJobsAfter time.Duration

	BusySnooze        time.Duration
	DrainMax          int
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration

	MetricsOwnerLabels bool
	TracerProvider     trace.TracerProvider

	Now func() time.Time
	Log *slog.Logger
}

// partitionInterval is the store's PartitionInterval (0: as they are).
func (c Config) partitionInterval() time.Duration {
	if c.Unpartitioned {
		return 0
	}
	return c.PartitionInterval
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	c.Database = cmp.Or(c.Database, DefaultDatabase)
	c.DefaultProfile = cmp.Or(c.DefaultProfile, DefaultProfile)
	if len(c.Destinations) > 0 {
		if kinds, err := destination.ParseKinds(strings.Join(c.Destinations, ",")); err == nil {
			c.Destinations = kinds // in their names and order (Validate refuses the rest)
		}
	}
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	if !c.Unpartitioned {
		c.PartitionInterval = cmp.Or(c.PartitionInterval, DefaultPartitionInterval)
	}
	c.SlowWorkers = cmp.Or(c.SlowWorkers, c.Workers)
	c.OwnerShare = cmp.Or(c.OwnerShare, DefaultOwnerShare)
	c.SlowAfter = cmp.Or(c.SlowAfter, DefaultSlowAfter)
	c.HTTPTimeout = cmp.Or(c.HTTPTimeout, DefaultHTTPTimeout)
	c.JobTimeout = cmp.Or(c.JobTimeout, DefaultJobTimeout)
	c.LeaseFor = cmp.Or(c.LeaseFor, DefaultLeaseFor)
	c.RescueStuckJobsAfter = cmp.Or(c.RescueStuckJobsAfter, DefaultRescueStuckJobsAfter)
	c.BusySnooze = cmp.Or(c.BusySnooze, DefaultBusySnooze)
	c.Retention = cmp.Or(c.Retention, DefaultRetention)
	c.AuditRetention = cmp.Or(c.AuditRetention, DefaultAuditRetention)
	c.DrainMax = cmp.Or(c.DrainMax, DefaultDrainMax)
	c.UserAgent = cmp.Or(c.UserAgent, defaultUserAgent())
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first setting New would refuse, with the hookd
// command's flag in parentheses: a missing or short master key, a negative
// duration or count, timeouts that do not nest, an unknown default
// profile, or an invalid event type. Zero fields are checked as their
// defaults.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if len(c.MasterKey) != 32 {
		return fmt.Errorf("master key is %d bytes, want 32 (HOOKD_MASTER_KEY or --master-key-file)", len(c.MasterKey))
	}
	if err := c.validateSignin(); err != nil {
		return err
	}
	if len(c.Destinations) > 0 {
		if _, err := destination.ParseKinds(strings.Join(c.Destinations, ",")); err != nil {
			return fmt.Errorf("destinations (--destinations): %v", err)
		}
	}
	for _, o := range c.PortalFrameOrigins {
		if _, err := ops.PortalFrameOrigin(o); err != nil {
			return fmt.Errorf("portal frame origins: %s", apperr.MessageOf(err))
		}
	}
	for _, d := range []struct {
		name, flag string
		v          time.Duration
	}{
		{"HTTPTimeout", "--http-timeout", c.HTTPTimeout},
		{"JobTimeout", "--job-timeout", c.JobTimeout},
		{"LeaseFor", "--lease-for", c.LeaseFor},
		{"RescueStuckJobsAfter", "--rescue-after", c.RescueStuckJobsAfter},
		{"BusySnooze", "", c.BusySnooze},
		{"SlowAfter", "--slow-after", c.SlowAfter},
		{"Retention", "--retention", c.Retention},
		{"AuditRetention", "--audit-retention", c.AuditRetention},
		{"PartitionInterval", "--partition-interval", c.PartitionInterval},
		{"FetchCooldown", "", c.FetchCooldown},
		{"FetchPollInterval", "", c.FetchPollInterval},
	} {
		if d.v < 0 {
			return fmt.Errorf("%s %s is negative; use a positive duration or 0 for the default", label(d.name, d.flag), d.v)
		}
	}
	if c.PartitionInterval > 0 && c.PartitionInterval < time.Hour {
		return fmt.Errorf("%s %s is too short; use at least 1h, or 0 for a day (set Unpartitioned to leave the tables unpartitioned)", label("PartitionInterval", "--partition-interval"), c.PartitionInterval)
	}
	if c.Retention > 0 && c.Retention < time.Minute {
		return fmt.Errorf("%s %s is too short; keep deliveries at least 1m (the pruner runs a tenth of it apart, at least every 10s)", label("Retention", "--retention"), c.Retention)
	}
	if c.Workers < 0 {
		return fmt.Errorf("%s %d is negative; use at least 1, or 0 for %d", label("Workers", "--workers"), c.Workers, DefaultWorkers)
	}
	if c.SlowWorkers < 0 {
		return fmt.Errorf("%s %d is negative; use at least 1, or 0 for Workers (%d)", label("SlowWorkers", "--slow-workers"), c.SlowWorkers, c.Workers)
	}
	if c.OwnerShare < 0 || c.OwnerShare > 1 {
		return fmt.Errorf("%s %g is out of range; use a part of the workers above 0 and at most 1 (1: no cap), or 0 for %g", label("OwnerShare", "--owner-share"), c.OwnerShare, DefaultOwnerShare)
	}
	if c.DrainMax < 0 {
		return fmt.Errorf("DrainMax %d is negative; use at least 1, or 0 for %d", c.DrainMax, DefaultDrainMax)
	}
	if err := c.validateTimeouts(); err != nil {
		return err
	}
	if _, err := profile.Default().Get(c.DefaultProfile); err != nil {
		return fmt.Errorf("%s: %w", label("DefaultProfile", "--default-profile"), err)
	}
	if c.KeepCatalog && (len(c.Catalogs) > 0 || len(c.EventTypes) > 0) {
		return fmt.Errorf("KeepCatalog opens without adding event types, but Catalogs or EventTypes name some: set one or the other")
	}
	for i, t := range c.EventTypes {
		if err := event.ValidateTypeName(t.Name); err != nil {
			return fmt.Errorf("EventTypes[%d]: %w", i, err)
		}
		if _, err := t.CheckSchema(); err != nil {
			return fmt.Errorf("EventTypes[%d] (%s): %w", i, t.Name, err)
		}
	}
	return nil
}

// validateTimeouts: an HTTP request ends inside its job, and the job ends
// before its endpoint's lease runs out and before River takes it for a
// dead process's.
func (c Config) validateTimeouts() error {
	type limit struct {
		name, flag string
		v          time.Duration
	}
	request := limit{"HTTPTimeout", "--http-timeout", c.HTTPTimeout}
	job := limit{"JobTimeout", "--job-timeout", c.JobTimeout}
	for _, pair := range [][2]limit{
		{request, job},
		{job, {"LeaseFor", "--lease-for", c.LeaseFor}},
		{job, {"RescueStuckJobsAfter", "--rescue-after", c.RescueStuckJobsAfter}},
	} {
		lo, hi := pair[0], pair[1]
		if lo.v >= hi.v {
			return fmt.Errorf("timeouts must nest: %s %s must be shorter than %s %s (http timeout < job timeout < lease and rescue)",
				label(lo.name, lo.flag), lo.v, label(hi.name, hi.flag), hi.v)
		}
	}
	return nil
}

// label names a setting both ways: the Config field and the command's flag.
func label(field, flag string) string {
	if flag == "" {
		return field
	}
	return field + " (" + flag + ")"
}

// OIDCConfig is console sign-in through an OpenID Connect provider
// (package hookd's OIDCConfig says what each field means).
type OIDCConfig struct {
	Issuer, ClientID, ClientSecret string
	RedirectURL                    string
	Claim                          string
	OperatorValues                 []string
	AdminValues                    map[string]string
}

// validateSignin checks the console's ways in: OIDC needs an issuer, a
// client id and at least one claim value mapped to a role; API key
// sign-in may be off only with OIDC on.
func (c Config) validateSignin() error {
	o := c.OIDC
	if o == nil {
		if c.ConsoleKeySigninOff {
			return errors.New("console API key sign-in is off and no identity provider is set: nobody could sign in (set --oidc-issuer or drop --console-api-key-signin=false)")
		}
		return nil
	}
	switch {
	case o.Issuer == "":
		return errors.New("OIDC needs an issuer URL (--oidc-issuer, HOOKD_OIDC_ISSUER)")
	case o.ClientID == "":
		return errors.New("OIDC needs a client id (--oidc-client-id, HOOKD_OIDC_CLIENT_ID)")
	case len(o.OperatorValues) == 0 && len(o.AdminValues) == 0:
		return errors.New("OIDC maps no claim value to a role: nobody could sign in (--oidc-operator-group or --oidc-admin-group VALUE=OWNER)")
	}
	for v, ownerID := range o.AdminValues {
		if err := owner.ValidateID(ownerID); err != nil {
			return fmt.Errorf("--oidc-admin-group %s=%s: %s", v, ownerID, apperr.MessageOf(err))
		}
	}
	return nil
}

// defaultUserAgent is "hookd/<version>": the module version, or "devel"
// for a local build (whose "(devel)" is no product token).
func defaultUserAgent() string {
	v := version.Get().Version
	if v == "" || strings.HasPrefix(v, "(") {
		v = "devel"
	}
	return "hookd/" + v
}
