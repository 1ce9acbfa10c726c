package ghfake

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// GraphQLPath is where the fake serves GraphQL: next to BasePath, as GitHub
// Enterprise Server does (https://HOST/api/graphql).
const GraphQLPath = "/api/graphql"

func (f *Fake) routeGraphQL(mux *http.ServeMux) {
	mux.HandleFunc("POST "+GraphQLPath, f.graphQL)
}

// markReadyRe matches the one operation the fake serves, with the pull
// request's node id as a variable ($name, group 1) or a string literal
// (group 2), and any selection on its payload.
var markReadyRe = regexp.MustCompile(`^\s*mutation\b[^{]*\{\s*markPullRequestReadyForReview\s*\(\s*input\s*:\s*\{\s*pullRequestId\s*:\s*(?:\$(\w+)|"([^"\\]*)")\s*\}\s*\)\s*\{(?:[^{}]|\{[^{}]*\})*\}\s*\}\s*$`)

// graphQL serves POST GraphQLPath with an installation token, like
// GitHub's: the mutation markPullRequestReadyForReview(input:
// {pullRequestId: …}) takes a pull request out of draft and answers its
// pullRequest { id number isDraft }, whatever the selection. A node id the
// token cannot reach answers NOT_FOUND, and any other operation a GraphQL
// error; GraphQL errors come with status 200.
func (f *Fake) graphQL(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tok := f.installationToken(w, r)
	if tok == nil {
		return
	}
	var req struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	m := markReadyRe.FindStringSubmatch(req.Query)
	if m == nil {
		writeGraphQLError(w, "", "ghfake serves only the mutation markPullRequestReadyForReview(input: {pullRequestId: …})")
		return
	}
	id := m[2]
	if m[1] != "" {
		var ok bool
		if id, ok = req.Variables[m[1]].(string); !ok {
			writeGraphQLError(w, "", fmt.Sprintf("Variable $%s of type ID! was provided invalid value", m[1]))
			return
		}
	}
	rp, pr := f.prByNodeID(id)
	if pr == nil || !f.grants(tok, strings.ToLower(rp.fullName()), time.Now()) {
		writeGraphQLError(w, "NOT_FOUND", fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id))
		return
	}
	pr.Draft = false
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{
		"markPullRequestReadyForReview": map[string]any{
			"clientMutationId": nil,
			"pullRequest":      map[string]any{"id": pr.NodeID, "number": pr.Number, "isDraft": pr.Draft},
		},
	}})
}

// writeGraphQLError answers one GraphQL error, with status 200 as GitHub
// does; typ ("NOT_FOUND", …) may be empty.
func writeGraphQLError(w http.ResponseWriter, typ, message string) {
	e := map[string]any{"message": message}
	if typ != "" {
		e["type"] = typ
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": nil, "errors": []any{e}})
}

// prByNodeID finds a pull request by its node id. Callers hold f.mu.
func (f *Fake) prByNodeID(id string) (*repo, *PR) {
	if id == "" {
		return nil, nil
	}
	for _, rp := range f.repos {
		for _, pr := range rp.pulls {
			if pr.NodeID == id {
				return rp, pr
			}
		}
	}
	return nil, nil
}
