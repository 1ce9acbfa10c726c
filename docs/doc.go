// Package docs holds the project's reference documentation (the Markdown
// files next to this one) and the tests that keep it and the top-level
// README.md, CONTRIBUTING.md, SECURITY.md and deploy/README.md true of the
// code: every operator setting and every key of .github/agent-fix.yml is
// documented in configuration.md, the "where things are" table of
// architecture.md names exactly the directories that exist, the README
// lists every priced model and its cost estimate follows from the price
// table, and every relative link resolves. It has no code of its own.
package docs
