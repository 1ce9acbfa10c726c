package devcontainer_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/devcontainer"
)

func mustParse(t *testing.T, path, src string) *devcontainer.Config {
	t.Helper()
	c, err := devcontainer.Parse(path, []byte(src), "/workspace")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChoose walks the order of the sources; what it tells people is in
// testdata/choose.golden.
func TestChoose(t *testing.T) {
	dc := mustParse(t, ".devcontainer/devcontainer.json", `{"image": "dev:1", "postCreateCommand": "make", "postStartCommand": "x"}`)
	_, unsupported := devcontainer.Parse(".devcontainer/devcontainer.json", []byte(`{"build": {"dockerfile": "Dockerfile"}}`), "/workspace")
	_, broken := devcontainer.Parse(".devcontainer.json", []byte(`{"image": `), "/workspace")
	tests := []struct {
		name   string
		in     devcontainer.Inputs
		source devcontainer.Source
		image  string
	}{
		{"nothing named", devcontainer.Inputs{}, devcontainer.SourceWorker, ""},
		{"operator only", devcontainer.Inputs{OperatorImage: "ops/sandbox:1"}, devcontainer.SourceOperator, "ops/sandbox:1"},
		{"devcontainer over operator", devcontainer.Inputs{Devcontainer: dc, OperatorImage: "ops/sandbox:1"}, devcontainer.SourceDevcontainer, "dev:1"},
		{"repository over all", devcontainer.Inputs{RepoImage: " repo/img:2 ", Devcontainer: dc, OperatorImage: "ops/sandbox:1"}, devcontainer.SourceRepoConfig, "repo/img:2"},
		{"repository over an unsupported devcontainer", devcontainer.Inputs{RepoImage: "repo/img:2", DevcontainerErr: unsupported}, devcontainer.SourceRepoConfig, "repo/img:2"},
		{"unsupported devcontainer falls to the operator", devcontainer.Inputs{DevcontainerErr: unsupported, OperatorImage: "ops/sandbox:1"}, devcontainer.SourceOperator, "ops/sandbox:1"},
		{"unsupported devcontainer falls to the worker", devcontainer.Inputs{DevcontainerErr: unsupported}, devcontainer.SourceWorker, ""},
		{"broken devcontainer falls to the operator", devcontainer.Inputs{DevcontainerErr: broken, OperatorImage: "ops/sandbox:1"}, devcontainer.SourceOperator, "ops/sandbox:1"},
		{"blank repository image", devcontainer.Inputs{RepoImage: "  ", OperatorImage: "ops/sandbox:1"}, devcontainer.SourceOperator, "ops/sandbox:1"},
		{"override over all", devcontainer.Inputs{Override: "mine:3", RepoImage: "repo/img:2", Devcontainer: dc, OperatorImage: "ops/sandbox:1"}, devcontainer.SourceOverride, "mine:3"},
	}
	var golden strings.Builder
	for _, tc := range tests {
		got := devcontainer.Choose(tc.in)
		if got.Source != tc.source || got.Image != tc.image {
			t.Errorf("%s: source %v image %q, want %v %q", tc.name, got.Source, got.Image, tc.source, tc.image)
		}
		if (got.Devcontainer != nil) != (tc.source == devcontainer.SourceDevcontainer) {
			t.Errorf("%s: Devcontainer %v with source %v", tc.name, got.Devcontainer, got.Source)
		}
		fmt.Fprintf(&golden, "%s:\n  environment: %s\n", tc.name, got.Describe("REPO@sha256:0123"))
		for _, n := range got.Notes {
			fmt.Fprintf(&golden, "  note: %s\n", n)
		}
	}
	checkGolden(t, "testdata/choose.golden", golden.String())
}

func TestChooseKeepsTheDevcontainerSetup(t *testing.T) {
	dc := mustParse(t, ".devcontainer.json", `{"image": "dev:1", "onCreateCommand": "a", "postCreateCommand": ["b", "c d"]}`)
	got := devcontainer.Choose(devcontainer.Inputs{Devcontainer: dc})
	want := []devcontainer.Command{{Phase: "onCreateCommand", Shell: "a"}, {Phase: "postCreateCommand", Shell: "b 'c d'"}}
	if diff := cmp.Diff(want, got.Devcontainer.Setup); diff != "" {
		t.Errorf("setup (-want +got):\n%s", diff)
	}
	var u *devcontainer.UnsupportedError
	if _, err := devcontainer.Parse("x", []byte(`{"image": "a", "features": {"f": {}}}`), "/w"); !errors.As(err, &u) {
		t.Errorf("features: %v, want an UnsupportedError", err)
	}
}
