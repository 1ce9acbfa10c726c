package ghapp

import "testing"

func TestGraphQLURL(t *testing.T) {
	tests := []struct {
		name, api, want string
	}{
		{"github.com", "https://api.github.com/", "https://api.github.com/graphql"},
		{"default", "", "https://api.github.com/graphql"},
		{"enterprise server", "https://ghe.example.com/api/v3/", "https://ghe.example.com/api/graphql"},
		{"enterprise server without the slash", "https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"},
		{"enterprise server with a port", "http://127.0.0.1:8080/api/v3/", "http://127.0.0.1:8080/api/graphql"},
		{"enterprise server under a prefix", "https://example.com/github/api/v3/", "https://example.com/github/api/graphql"},
		{"other base path", "https://proxy.example.com/github/", "https://proxy.example.com/github/graphql"},
		{"host only", "http://localhost:9000", "http://localhost:9000/graphql"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api, err := parseAPIURL(tt.api)
			if err != nil {
				t.Fatalf("parseAPIURL(%q): %v", tt.api, err)
			}
			before := api.String()
			if got := graphQLURL(api).String(); got != tt.want {
				t.Errorf("graphQLURL(%q) = %q, want %q", tt.api, got, tt.want)
			}
			if api.String() != before {
				t.Errorf("graphQLURL changed the REST URL to %q", api)
			}
		})
	}
}
