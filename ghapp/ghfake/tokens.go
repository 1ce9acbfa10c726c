package ghfake

// TokenScopes returns, for each installation token issued so far in order,
// the repositories it is limited to (lower-case "owner/name"); nil for a
// token of every repository of its installation.
func (f *Fake) TokenScopes() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][]string, len(f.issued))
	for i, v := range f.issued {
		if t := f.tokens[v]; t != nil && t.repos != nil {
			out[i] = append([]string(nil), t.repos...)
		}
	}
	return out
}
