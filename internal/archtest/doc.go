// Package archtest holds the test that enforces DESIGN.md §2: which project
// packages each package may reach through its transitive (non-test) imports.
package archtest
