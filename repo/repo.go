// Package repo names GitHub repositories: the one repository identity the
// edge, the queue payloads, the worker and the GitHub client share, and the
// one parser of "owner/name" they all use, so a name the edge accepts is
// one the worker can use.
package repo

import (
	"fmt"
	"strings"
)

// Name is a repository as GitHub names it: owner and repository name.
type Name struct {
	Owner, Name string
}

// maxPart bounds an owner or repository name (GitHub allows 39 characters
// for an account and 100 for a repository).
const maxPart = 100

// Parse parses "owner/name": exactly one slash, and on each side a name
// GitHub could have made — letters, digits, '-', '_' and '.', not "." or
// "..", at most 100 characters.
func Parse(s string) (Name, error) {
	owner, name, ok := strings.Cut(s, "/")
	if !ok || !ValidPart(owner) || !ValidPart(name) {
		return Name{}, fmt.Errorf("repository %q: want owner/name of letters, digits, '-', '_' and '.'", s)
	}
	return Name{Owner: owner, Name: name}, nil
}

// ValidPart reports whether s can be a GitHub owner or repository name.
func ValidPart(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > maxPart {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// String returns "owner/name".
func (n Name) String() string { return n.Owner + "/" + n.Name }

// Key is the name in lower case: GitHub compares names without case, so
// Redis keys and maps use this.
func (n Name) Key() string { return strings.ToLower(n.String()) }

// Equal reports whether n and o name the same repository (without case).
func (n Name) Equal(o Name) bool {
	return strings.EqualFold(n.Owner, o.Owner) && strings.EqualFold(n.Name, o.Name)
}
