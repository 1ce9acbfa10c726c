package ghapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/bradleyfalzon/ghinstallation/v2"
)

// DefaultBranchFile returns the file at path on the default branch of repo,
// read with an installation token scoped to repo alone, so the read reaches
// nothing else. installationID is the App's installation that covers repo;
// 0 asks GitHub which installation of the App does (for another
// repository, such as an organization's .github or the target of an
// _extends). found is false, with no error, when the App cannot read the
// file: no installation of the App covers repo, or the repository or the
// file does not exist. Other failures (network, rate limits) are errors.
func (a *App) DefaultBranchFile(ctx context.Context, installationID int64, repo Repo, path string) (data []byte, found bool, err error) {
	if installationID == 0 {
		inst, _, err := a.gh.Apps.FindRepositoryInstallation(ctx, repo.Owner, repo.Name)
		if errors.Is(apiError(err), ErrNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("find the installation of %s: %w", repo, apiError(err))
		}
		installationID = inst.GetID()
	}
	tok, err := a.Token(ctx, installationID, repo)
	if notCovered(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	c := &Client{app: a, id: installationID, gh: a.newGitHub(staticToken{token: tok.Value, next: a.meter})}
	data, err = c.GetContents(ctx, repo, path, "")
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// notCovered reports whether a token request failed because the
// installation does not cover the repository (GitHub answers 422, or 404
// for an installation that is gone).
func notCovered(err error) bool {
	var herr *ghinstallation.HTTPError
	if !errors.As(err, &herr) || herr.Response == nil {
		return false
	}
	return herr.Response.StatusCode == http.StatusUnprocessableEntity || herr.Response.StatusCode == http.StatusNotFound
}

// staticToken authenticates requests with one installation token.
type staticToken struct {
	token string
	next  http.RoundTripper
}

func (s staticToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "token "+s.token)
	return s.next.RoundTrip(r)
}
