package config

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// JobLimits bound one job of the agent. A zero limit means none of that
// kind.
type JobLimits struct {
	MaxSteps    int
	MaxCostUSD  float64
	MaxDuration time.Duration
}

// JobLimits returns the operator's per-job limits.
func (a *App) JobLimits() JobLimits {
	return JobLimits{MaxSteps: a.MaxSteps, MaxCostUSD: a.MaxCostUSD, MaxDuration: a.MaxDuration}
}

// CappedLimit is a limit a repository set above the operator's, which
// therefore did not apply.
type CappedLimit struct {
	// Key is the key in RepoFile, e.g. "max_steps".
	Key string
	// Requested and Applied are the repository's and the operator's value,
	// written as in the file ("200", "5.00", "2h").
	Requested, Applied string
}

// String says what happened, for the status comment and help.
func (c CappedLimit) String() string {
	return fmt.Sprintf("%s: %s is above the operator's limit; %s applies", c.Key, c.Requested, c.Applied)
}

// Limits returns the limits of a job in this repository: the operator's,
// lowered by the repository's max_steps, max_cost_usd and max_duration.
// A repository can never raise a limit: a higher value is ignored and
// listed in the returned CappedLimits so the requester can be told.
func (r RepoSettings) Limits(op JobLimits) (JobLimits, []CappedLimit) {
	var capped []CappedLimit
	eff := op
	if r.MaxSteps > 0 {
		if op.MaxSteps == 0 || r.MaxSteps <= op.MaxSteps {
			eff.MaxSteps = r.MaxSteps
		} else {
			capped = append(capped, CappedLimit{"max_steps", strconv.Itoa(r.MaxSteps), strconv.Itoa(op.MaxSteps)})
		}
	}
	if r.MaxCostUSD > 0 {
		if op.MaxCostUSD == 0 || r.MaxCostUSD <= op.MaxCostUSD {
			eff.MaxCostUSD = r.MaxCostUSD
		} else {
			capped = append(capped, CappedLimit{"max_cost_usd", fmt.Sprintf("%.2f", r.MaxCostUSD), fmt.Sprintf("%.2f", op.MaxCostUSD)})
		}
	}
	if r.MaxDuration > 0 {
		if op.MaxDuration == 0 || r.MaxDuration <= op.MaxDuration {
			eff.MaxDuration = r.MaxDuration
		} else {
			capped = append(capped, CappedLimit{"max_duration", shortDuration(r.MaxDuration), shortDuration(op.MaxDuration)})
		}
	}
	return eff, capped
}

// shortDuration renders d without zero units: "2h", "1h30m", "45s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// TeamChecker answers whether a user is an active member of a team of an
// organization (GitHub's team membership API; the App needs the
// members: read permission).
type TeamChecker interface {
	IsTeamMember(ctx context.Context, org, slug, login string) (bool, error)
}

// MayTrigger reports whether login may trigger the bot under the
// repository's allowed_users and allowed_teams. It narrows, never widens:
// the caller checks write access first. With neither key set everyone
// passes; a login listed in allowed_users (case-insensitively) passes
// without asking teams; otherwise each team is asked in order.
func (r RepoSettings) MayTrigger(ctx context.Context, login string, teams TeamChecker) (bool, error) {
	if len(r.AllowedUsers) == 0 && len(r.AllowedTeams) == 0 {
		return true, nil
	}
	for _, u := range r.AllowedUsers {
		if strings.EqualFold(u, login) {
			return true, nil
		}
	}
	if len(r.AllowedTeams) > 0 && teams == nil {
		return false, fmt.Errorf("check teams of %s: no team checker", login)
	}
	for _, t := range r.AllowedTeams {
		org, slug, _ := strings.Cut(t, "/")
		ok, err := teams.IsTeamMember(ctx, org, slug, login)
		if err != nil {
			return false, fmt.Errorf("check membership of %s in team %s: %w", login, t, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}
