package webhook

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/repo"
)

// The checks below refuse what GitHub never sends in the fields a task
// uses (the package doc's "Refused or ignored"). The handlers call them
// once a delivery would start or stop work, after the checks that ignore
// it (action, label, bot sender, no installation, no command), so a
// delivery that asks nothing of the bot is never refused for a field it
// does not use.

// checkInstallation refuses a negative installation id; 0, no installation
// at all, is a delivery that is not the App's, which handlers ignore.
func checkInstallation(id int64) error {
	if id < 0 {
		return fmt.Errorf("installation.id must be positive, got %d", id)
	}
	return nil
}

// checkTarget checks the repository and the issue or pull request number
// a task names: full_name must be one the worker's parser (repo.Parse)
// accepts, the number positive.
func checkTarget(r jobs.Repo, number int) error {
	if err := checkRepo(r); err != nil {
		return err
	}
	if number <= 0 {
		return fmt.Errorf("the issue or pull request number must be positive, got %d", number)
	}
	return nil
}

// checkRepo checks a repository's full_name with repo.Parse.
func checkRepo(r jobs.Repo) error {
	if r.FullName == "" {
		return errors.New("repository.full_name is missing")
	}
	if _, err := repo.Parse(r.FullName); err != nil {
		return fmt.Errorf("repository.full_name %q is not owner/name", truncate(r.FullName, 200))
	}
	return nil
}

// checkSender checks the login of the person a task acts for and answers:
// the worker asks GitHub for its permission and mentions it.
func checkSender(u jobs.User) error {
	if u.Login == "" {
		return errors.New("sender.login is missing")
	}
	if !validLogin(u.Login) {
		return fmt.Errorf("sender.login %q is not a GitHub login", truncate(u.Login, 64))
	}
	return nil
}

// maxLogin bounds a login: GitHub allows 39 characters, and an Enterprise
// Managed User's adds its enterprise's short code.
const maxLogin = 100

// validLogin reports whether s can be a GitHub login: letters, digits, '-'
// and '_' (Enterprise Managed Users), with "[bot]" after an App's. Nothing
// that could change the path of an API URL ('/', '.', '%', '?') passes.
func validLogin(s string) bool {
	s = strings.TrimSuffix(s, "[bot]")
	if s == "" || len(s) > maxLogin {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
