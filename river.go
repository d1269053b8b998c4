package hookd

import "github.com/riverqueue/river"

// AddWorkers adds hookd's jobs to rc, the config of your own River client
// on the same database (and schema) as hookd: the workers of its job kinds
// (webhook.fanout, webhook.deliver, and webhook.prune for retention), their
// queues "fanout", "deliver" and "deliver_slow" sized by Config.Workers
// and Config.SlowWorkers (a queue of that name already in rc is left as
// you set it), and the hourly prune as a periodic job. Then build the client with river.NewClient and hand it to
// UseRiver.
//
// Leave Config.Work false: your client runs the workers, hookd's never
// starts.
func (h *Hookd) AddWorkers(rc *river.Config) error { return h.a.AddWorkers(rc) }

// UseRiver makes client, your River client built on a config AddWorkers
// filled, the one hookd inserts and reads its jobs with: PublishTx then
// inserts fanout jobs through it, inside your transaction. client is a
// *river.Client[pgx.Tx] (riverpgxv5) on PostgreSQL or a
// *river.Client[*sql.Tx] (riversqlite) on SQLite. Call it before
// publishing; start and stop the client as you do for your own jobs.
func (h *Hookd) UseRiver(client any) error { return h.a.UseRiver(client) }
