package ghapp

import (
	"context"
	"errors"
	"fmt"
)

// IsTeamMember reports whether login is an active member of the team slug
// of organization org (a pending invitation is not membership). A missing
// team or user is no membership. The App needs the organization's
// members: read permission; without it GitHub answers 403, an error here.
func (c *Client) IsTeamMember(ctx context.Context, org, slug, login string) (bool, error) {
	m, _, err := c.gh.Teams.GetTeamMembershipBySlug(ctx, org, slug, login)
	if err != nil {
		err = apiError(err)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("membership of %s in team %s/%s: %w", login, org, slug, err)
	}
	return m.GetState() == "active", nil
}
