package endpoint

import "time"

// Delivery is one event to one endpoint: hookd's own record of it, kept
// after River has deleted the job row. Its id is stable across retries.
type Delivery struct {
	ID         string        `json:"id"`
	OwnerID    string        `json:"-"`
	EndpointID string        `json:"endpoint_id"`
	EventID    string        `json:"event_id"`
	EventType  string        `json:"event_type"`
	JobID      int64         `json:"job_id"`
	State      DeliveryState `json:"state"`
	// Attempts counts real sends (snoozes are not attempts).
	Attempts      int        `json:"attempts"`
	LastStatus    int        `json:"last_status,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	FinishedAt    *time.Time `json:"finished_at,omitempty"`
}

// DeliveryState is where a delivery stands.
type DeliveryState string

const (
	// Pending means waiting for its first attempt, a retry, or a snooze to end.
	Pending DeliveryState = "pending"
	// Delivered means a 2xx was received.
	Delivered DeliveryState = "delivered"
	// Failed means discarded (permanent failure, attempts exhausted, endpoint
	// disabled or deleted, event pruned). Redeliver brings it back.
	Failed DeliveryState = "failed"
)
