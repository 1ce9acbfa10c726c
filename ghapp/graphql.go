package ghapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxGraphQLAnswer caps how much of a GraphQL answer is read.
const maxGraphQLAnswer = 1 << 20

// graphQLURL returns the GraphQL endpoint of the REST base URL api (which
// ends with a slash): https://api.github.com/graphql for GitHub,
// https://HOST/api/graphql for GitHub Enterprise Server (REST under
// /api/v3/), and "graphql" under any other base.
func graphQLURL(api *url.URL) *url.URL {
	u := *api
	if base, ok := strings.CutSuffix(u.Path, "/api/v3/"); ok {
		u.Path = base + "/api/graphql"
	} else {
		u.Path += "graphql"
	}
	u.RawPath = ""
	return &u
}

// GraphQLError is a GraphQL answer that carries errors: GitHub answers 200
// with an "errors" list when an operation fails.
type GraphQLError struct {
	// Messages are the messages of the answer's "errors" list.
	Messages []string
}

func (e *GraphQLError) Error() string {
	return "graphql: " + strings.Join(e.Messages, "; ")
}

// graphQL sends one GraphQL operation with its variables through the
// Client's authenticated, retrying transport and decodes the answer's data
// into out. The operation is sent once after an ambiguous failure unless
// ctx is marked repeatable. A non-200 answer is an *APIError and a 200
// answer with errors a *GraphQLError.
func (c *Client) graphQL(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	endpoint := c.app.gqlURL.String()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.app.ua)
	resp, err := c.gh.Client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxGraphQLAnswer))
	if err != nil {
		return fmt.Errorf("read graphql answer: %w", err)
	}
	var ans struct {
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
		Errors  []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	jerr := json.Unmarshal(data, &ans)
	if resp.StatusCode != http.StatusOK {
		return &APIError{Method: req.Method, Path: req.URL.Path, Status: resp.StatusCode, Message: ans.Message}
	}
	if jerr != nil {
		return fmt.Errorf("decode graphql answer: %w", jerr)
	}
	if len(ans.Errors) > 0 {
		ge := &GraphQLError{}
		for _, e := range ans.Errors {
			ge.Messages = append(ge.Messages, e.Message)
		}
		return ge
	}
	if out == nil || len(ans.Data) == 0 {
		return nil
	}
	if err := json.Unmarshal(ans.Data, out); err != nil {
		return fmt.Errorf("decode graphql data: %w", err)
	}
	return nil
}
