package runs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"
)

// MetaVersion is the "v" of the meta.json this package writes.
const MetaVersion = 1

// Statuses of a run record besides the final outcomes the worker sets
// (see Meta.Status).
const (
	StatusRunning     = "running"
	StatusInterrupted = "interrupted"
)

// Meta is a run's metadata, meta.json. The worker fills it; Status is
// "running" while the job runs and then its outcome (for example
// "pr_opened", "draft_opened", "no_changes", "failed", "cancelled").
type Meta struct {
	V     int    `json:"v"`
	RunID string `json:"run_id"`
	// Kind is the job kind: "fix", "revise", or an automatic round's "ci"
	// or "conflict".
	Kind       string `json:"kind"`
	TaskID     string `json:"task_id,omitempty"`
	DeliveryID string `json:"delivery_id,omitempty"`
	// Repo is "owner/name"; Number the issue (fix) or pull request
	// (revise) the job is for.
	Repo      string `json:"repo"`
	Number    int    `json:"number"`
	Requester string `json:"requester,omitempty"`
	Status    string `json:"status"`
	// ExitStatus and ExitReason are the agent's (DESIGN.md §6).
	ExitStatus string        `json:"exit_status,omitempty"`
	ExitReason string        `json:"exit_reason,omitempty"`
	Steps      int           `json:"steps"`
	CostUSD    float64       `json:"cost_usd"`
	Tokens     Tokens        `json:"tokens"`
	Model      string        `json:"model,omitempty"`
	PR         int           `json:"pr,omitempty"`
	PRURL      string        `json:"pr_url,omitempty"`
	Started    time.Time     `json:"started"`
	Ended      time.Time     `json:"ended,omitzero"`
	Duration   time.Duration `json:"duration_ns,omitempty"`
}

// Tokens counts a run's model tokens.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty"`
}

// idFormat is the time prefix of run ids; with the suffix it sorts by time.
const idFormat = "20060102T150405Z"

var idPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$`)

// NewID returns a fresh run id for a run started at now.
func NewID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return now.UTC().Format(idFormat) + "-" + hex.EncodeToString(b[:])
}

// ValidID reports whether id has the shape NewID gives, so it is safe in a
// path and a Redis key.
func ValidID(id string) bool { return idPattern.MatchString(id) }

func checkID(id string) error {
	if !ValidID(id) {
		return fmt.Errorf("run id %q is not of the form 20060102T150405Z-0123abcd", id)
	}
	return nil
}
